"""Dashboard issues, whole: an issue per dashboard and an index issue, from the branch's state.

To change how issues are written, read in this order:

- ``markers.py`` (pure): the hidden markers, the managed region, sizes in UTF-16 units;
- ``bodies.py`` (pure): a dashboard's body and continuation comments, and the index body,
  composed within GitHub's size limit;
- ``writer.py``: :class:`~ivy_matrix.issues.writer.IssueWriter`, built from an
  :class:`~ivy_matrix.issues.writer.IssueOptions` value, creates or updates one dashboard's
  issue. It holds three collaborators: ``requests.py`` (where calls go, their pace, the
  dry-run plan, the warnings; writes read back and fixed once) and ``finding.py`` (our issues
  listed by marker, created, duplicates closed);
- ``report.py`` (pure): what each call did; ``index_issue.py``: the index issue;
- ``plan.py`` (pure): the hour's budget of content-creating requests (what the last hour's
  runs wrote, recorded in the index issue) and the order in which it serves the issues;
- ``publish.py``: the issue target beside the branch store (one job a run writes the issues,
  within the budget; what does not fit waits for a later run, and the run says so).

Everything here reaches GitHub through :class:`~ivy_matrix.github.types.IssueAPI`
(``github/types.py``); nothing takes ``Settings``.
"""
