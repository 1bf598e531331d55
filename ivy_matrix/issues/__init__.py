"""Dashboard issues, whole: an issue per dashboard, an index issue, and the issue-body store.

To change how issues are written, read in this order:

- ``markers.py`` (pure): the hidden markers, the managed region, sizes in UTF-16 units;
- ``bodies.py`` (pure): a dashboard's body and continuation comments, and the index body,
  composed within GitHub's size limit; ``state_block.py`` (pure): the issue-body store's
  hidden state block;
- ``writer.py``: :class:`~ivy_matrix.issues.writer.IssueWriter`, built from an
  :class:`~ivy_matrix.issues.writer.IssueOptions` value, creates or updates one dashboard's
  issue. It holds three collaborators: ``requests.py`` (where calls go, their pace, the
  dry-run plan, the warnings; writes read back and fixed once) and ``finding.py`` (our issues
  listed by marker, created, duplicates closed);
- ``report.py`` (pure): what each call did; ``index.py``: the index issue;
- ``publish.py``: the issue target beside the branch store, which creates a missing issue only
  in the job holding its git-ref lock (``creation_locks.py``: one job creates a dashboard's
  issue);
- ``store.py``: the issue-body store, whose writers take turns with the comment lock of
  ``store_lock.py``.

Everything here reaches GitHub through the protocols of ``github/types.py``
(:class:`~ivy_matrix.github.types.IssueAPI`) and the ones declared here
(``creation_locks.RefAPI``, ``publish.IssueTargetAPI``); nothing takes ``Settings``.
"""
