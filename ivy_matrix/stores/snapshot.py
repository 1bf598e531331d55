"""Reading the branch store's branch at one commit: the states asked for, the index and the
revision.

I/O: reads only, through a :class:`~ivy_matrix.stores.remote.BranchRemote` (over git every
read is local once the branch was fetched; over REST a tree listing and a request per blob);
writes are in ``stores/committer.py``, the paths in ``stores/layout.py``.
:meth:`BranchReader.read` takes the tip one try read and returns a :class:`Snapshot`:

- the tip's tree is listed once; the index file (``INDEX``) and ``REVISION`` come in the first
  batch of reads;
- with a valid index that describes this revision, only the dashboards asked for are read
  (one document each); :meth:`BranchReader.more` adds others later (retirement);
- without one (a branch of layout 1, or one an older version wrote since), every state file
  is read, whatever its layout, joined by dashboard, and the summaries are computed: the
  writer then migrates the branch to layout 2 (``stores/commit.py``);
- blobs are cached by sha across tries, so a retry on a fresher tip reads only what changed;
- the dashboards asked for come as a :class:`~ivy_matrix.state.fold.Stored`: each is decoded
  from its blob as the fold reaches it and let go after (their runs read first from each
  blob's start, as the local store reads them), so a fold holds one old state at a time; a
  retry decodes them again. A full read (no index, or every dashboard asked for) decodes
  each blob once, and keeps it.

A branch that holds files but nothing in the state folder is refused
(:class:`~ivy_matrix.errors.StoreError`): it is not a dashboard branch, or it was overwritten,
and the next commit would put the dashboards among its files. Each state file is checked
against its path (a dashboard's document where its name puts it,
a column of an older layout in its dashboard's folder): a misplaced file is a
:class:`~ivy_matrix.errors.StoreError` naming it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace

from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.state.columnar import HEAD_END, Head, head_of
from ivy_matrix.state.fold import Stored
from ivy_matrix.state.statefile import join_columns, load_state
from ivy_matrix.stores.index_file import Summary, load_index, summarize
from ivy_matrix.stores.layout import BranchLayout
from ivy_matrix.stores.remote import BranchRemote
from ivy_matrix.stores.tree import EmptyTree, Snapshot, TreeListing, git_blob_sha

FILES_NAMED = 3  # files of a branch that is not ours, named in the message


class BranchReader:
    """Reads ``branch`` laid out as ``layout``, with one blob cache across reads."""

    def __init__(self, remote: BranchRemote, branch: str, layout: BranchLayout) -> None:
        self.remote = remote
        self.branch = branch
        self.layout = layout
        self._blobs: dict[str, str] = {}
        # A full read's blobs decoded once, however many reads (a fold's, then its render's,
        # a retry's) meet them: a blob's text never changes, and states are frozen values.
        self._decoded: dict[str, DashboardState] = {}

    def remember(self, text: str) -> None:
        """Cache a blob this process wrote, so that the next read does not fetch it."""
        self._blobs[git_blob_sha(text)] = text

    def _fetch(self, shas: Iterable[str]) -> None:
        """Read every blob not read before, in one batch."""
        missing = {sha for sha in shas if sha not in self._blobs}
        if missing:
            self._blobs.update(self.remote.texts(missing))

    def _where(self, path: str) -> str:
        return f"{path} on branch {self.branch}"

    def read(self, tip: str | None, dashboards: Collection[DashboardId] | None) -> Snapshot:
        """The branch at ``tip``: the ``dashboards`` asked for (None: every one), or every
        one when the branch has no valid index (see the module docstring)."""
        if tip is None:
            return Snapshot(None, EmptyTree(), {}, {})
        tree = self.remote.tree(tip)
        layout = self.layout
        self._check_ours(tree)
        small = [layout.summary_path, layout.revision_path]
        wanted = [] if dashboards is None else [layout.state_path(d) for d in dashboards]
        self._fetch(sha for path in [*small, *wanted] if (sha := tree.files.get(path)))
        revision = self._revision(tree)
        found = self._text(tree, layout.summary_path)
        index = None if found is None else load_index(found)
        if index is None or index[0] != revision or dashboards is None:
            states, paths = self._states(tree, None)
            summaries = {dashboard: summarize(state) for dashboard, state in states.items()}
            return Snapshot(
                tip, tree, states, summaries, revision, paths, indexed=index is not None
                and index[0] == revision,
            )  # fmt: skip
        summaries = index[1]
        stored, paths = self._stored(tree, set(dashboards), summaries)
        whole = set(summaries) <= set(stored)
        return Snapshot(tip, tree, stored, summaries, revision, paths, whole=whole)

    def _check_ours(self, tree: TreeListing) -> None:
        """Refuse a branch that holds files but nothing in the state folder: another branch
        (a force-push of unrelated content, a project branch), never one to start afresh on."""
        if not tree.files or any(self.layout.in_state_dir(path) for path in tree.files):
            return
        names = sorted(tree.files)
        shown = ", ".join(names[:FILES_NAMED]) + (", ..." if len(names) > FILES_NAMED else "")
        raise StoreError(
            f"branch {self.branch} holds {len(tree.files)} file(s) but no ivy-matrix state "
            f"(no {self.layout.state_dir}/; it holds {shown}): it is not a dashboard branch, "
            f"or it was overwritten (a force-push), and writing the dashboards there would "
            f"mix them with its files. Restore the branch, delete it to start afresh, or give "
            f"the dashboards another branch"
        )

    def more(self, snapshot: Snapshot, dashboards: Collection[DashboardId]) -> Snapshot:
        """``snapshot`` with these dashboards read too."""
        missing = {d for d in dashboards if d not in snapshot.states}
        if not missing or snapshot.tip is None:
            return snapshot
        if isinstance(snapshot.states, Stored):
            every, found = self._stored(
                snapshot.tree, {*snapshot.states, *missing}, snapshot.summaries
            )
        else:
            paths = {self.layout.state_path(d) for d in missing}
            self._fetch(sha for path in paths if (sha := snapshot.tree.files.get(path)))
            states, found = self._states(snapshot.tree, missing)
            every = {**snapshot.states, **states}
        return replace(
            snapshot,
            states=every,
            paths={**snapshot.paths, **found},
            whole=set(snapshot.summaries) <= set(every),
        )

    def _stored(
        self,
        tree: TreeListing,
        dashboards: set[DashboardId],
        summaries: Mapping[DashboardId, Summary],
    ) -> tuple[Mapping[DashboardId, DashboardState], dict[DashboardId, set[str]]]:
        """The states of ``dashboards`` as a :class:`~ivy_matrix.state.fold.Stored`, each
        decoded as a fold reaches it and not kept (a retry, or a second round of the
        retirement, decodes it again from its text, which is kept), with the runs and backends
        its document's start says (:func:`~ivy_matrix.state.columnar.head_of`, as the local
        store reads them: an index edited by hand cannot mislead the retirement); and the file
        each is in. Read whole (:meth:`_states`) when the index leaves one out."""
        layout = self.layout
        files = {
            dashboard: (path, sha)
            for dashboard in dashboards
            if (sha := tree.files.get(path := layout.state_path(dashboard))) is not None
        }
        if not files.keys() <= summaries.keys():
            return self._states(tree, dashboards)
        self._fetch(sha for _, sha in files.values())
        heads = {dashboard: self._head(path, sha) for dashboard, (path, sha) in files.items()}

        def read(dashboard: DashboardId) -> DashboardState:
            path, sha = files[dashboard]
            state = self._load(path, sha, keep=False)
            head = heads[dashboard]
            if state.id != head.dashboard or state.runs != head.runs:
                # Its start and its whole disagree (a key written twice by hand, say): the
                # retirement window was worked out from the start.
                raise StoreError(
                    f"cannot read dashboard state {self._where(path)}: its title, category or "
                    f"runs are not those its first keys say; restore it from the branch's "
                    f"history"
                )
            return state

        stored = Stored(
            sorted(files, key=lambda d: d.key),
            runs={run for head in heads.values() for run in head.runs},
            backends={name for head in heads.values() for name in head.backends},
            read=read,
        )
        return stored, {dashboard: {path} for dashboard, (path, _) in files.items()}

    def _head(self, path: str, sha: str) -> Head:
        """What the document at ``path`` says of its dashboard as a whole, from its start (the
        whole document, in a layout without one)."""
        text = self._blobs[sha]
        found = text.find(HEAD_END)
        head = head_of(text[:found]) if found >= 0 else None
        return Head.of(self._load(path, sha, keep=False)) if head is None else head

    def _states(
        self, tree: TreeListing, dashboards: set[DashboardId] | None
    ) -> tuple[dict[DashboardId, DashboardState], dict[DashboardId, set[str]]]:
        """The states of ``dashboards`` (None: every state file, any layout), by dashboard,
        and the files each came from."""
        layout = self.layout
        if dashboards is None:
            files = {p: sha for p, sha in tree.files.items() if layout.is_state_file(p)}
        else:
            files = {
                path: sha
                for d in dashboards
                if (sha := tree.files.get(path := layout.state_path(d))) is not None
            }
        self._fetch(files.values())
        parts: dict[DashboardId, list[DashboardState]] = {}
        found: dict[DashboardId, set[str]] = {}
        for path, sha in sorted(files.items()):
            state = self._load(path, sha)
            parts.setdefault(state.id, []).append(state)
            found.setdefault(state.id, set()).add(path)
        states = {dashboard: join_columns(columns) for dashboard, columns in parts.items()}
        return states, found

    def _load(self, path: str, sha: str, *, keep: bool = True) -> DashboardState:
        """One state file, checked against its path (see the module docstring); ``keep``: in
        the cache of decoded blobs."""
        layout = self.layout
        where = self._where(path)
        state = self._decoded.get(sha)
        if state is None:
            state = load_state(self._blobs[sha], where=where)
            if keep:
                self._decoded[sha] = state
        names = state.backend_names
        column = len(names) == 1 and path == layout.column_path(state.id, names[0])
        if path not in {layout.state_path(state.id), layout.one_file_path(state.id)} and not column:
            raise StoreError(
                f"cannot read dashboard state {where}: it holds dashboard {state.key!r}, "
                f"whose state belongs in {layout.state_path(state.id)}; move or delete the file"
            )
        return state

    def _text(self, tree: TreeListing, path: str) -> str | None:
        sha = tree.files.get(path)
        return None if sha is None else self._blobs[sha]

    def text(self, tree: TreeListing, path: str) -> str | None:
        """The text of the file at ``path`` in ``tree`` (None when it has none), read once."""
        sha = tree.files.get(path)
        if sha is None:
            return None
        self._fetch([sha])
        return self._blobs[sha]

    def _revision(self, tree: TreeListing) -> int:
        text = self._text(tree, self.layout.revision_path)
        if text is None:
            return 0
        if not (text.strip().isascii() and text.strip().isdigit()):
            raise StoreError(
                f"cannot read {self._where(self.layout.revision_path)}: expected a number, "
                f"found {text[:40]!r}; delete the file to start again at 0"
            )
        return int(text.strip())
