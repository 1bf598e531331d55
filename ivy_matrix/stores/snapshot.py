"""Reading the branch store's branch at one commit: its states, revision and finished legs.

I/O: reads only, through a :class:`GitReads` client (``github.client.GitHubClient``); writes
are in ``branch.py``, the paths in ``stores/layout.py``. :meth:`BranchReader.read` takes
the tip that one try of the compare-and-swap loop (``branch.py``) read, and returns a
:class:`Snapshot`:

- the tip's tree is listed once (recursively; a listing cut short is completed folder by
  folder, by the client);
- the blobs needed are read several at once (the client's ``get_blob_texts``), each once per
  reader: they are cached by git blob sha, so a retry on a fresher tip reads only the blobs
  whose sha changed (and the store adds the blobs it committed itself);
- the finished-legs record and the revision come in the first batch of reads, with a matrix
  leg's own columns; a leg whose run is not complete yet reads only those columns (``whole``
  False), everything else reads every dashboard's state files.

Each state file is checked against its path (a column holds one backend of the dashboard
whose folder it is in, an older one-file state that dashboard): a misplaced file is a
:class:`~ivy_matrix.errors.StoreError` naming it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.paths import column_file
from ivy_matrix.statefile import join_columns, load_state
from ivy_matrix.stores.layout import BranchLayout, Leg, Runs, load_runs, record_leg


class TreeListing(Protocol):
    """A listed tree: its sha and its files (path -> blob sha)."""

    @property
    def sha(self) -> str: ...

    @property
    def files(self) -> Mapping[str, str]: ...


class GitReads(Protocol):
    """The git-data reads of the branch store (``github.client.GitHubClient`` has them)."""

    def get_branch_head(self, repo: str, branch: str) -> str | None: ...

    def get_tree(self, repo: str, tree_ish: str) -> TreeListing: ...

    def get_blob_text(self, repo: str, sha: str) -> str: ...

    def get_blob_texts(self, repo: str, shas: Collection[str]) -> dict[str, str]: ...


def git_blob_sha(text: str) -> str:
    """The git object id of a blob holding ``text`` as UTF-8 (``git hash-object``)."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True, slots=True)
class _EmptyTree:
    """The tree of a branch that does not exist yet."""

    sha: str = ""
    files: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The branch at ``tip`` (None: no branch yet), as one try of an update read it."""

    tip: str | None
    tree: TreeListing
    states: dict[DashboardId, DashboardState]
    revision: int = 0
    legs: Runs = field(default_factory=dict)
    # Every dashboard's state files on the branch (columns, and the one-file form of older
    # versions), by dashboard; only for the dashboards read.
    paths: dict[DashboardId, set[str]] = field(default_factory=dict)
    whole: bool = True  # every dashboard was read


class BranchReader:
    """Reads ``branch`` of ``repo`` laid out as ``layout``, with one blob cache across reads."""

    def __init__(self, client: GitReads, repo: str, branch: str, layout: BranchLayout) -> None:
        self.client = client
        self.repo = repo
        self.branch = branch
        self.layout = layout
        self._blobs: dict[str, str] = {}
        self._trees: dict[str, TreeListing] = {}
        # Each blob decoded once, however many reads (a fold's, then its render's, a retry's)
        # meet it: a blob's text never changes, and states are frozen values.
        self._states: dict[str, DashboardState] = {}

    def remember(self, text: str) -> None:
        """Cache a blob this process wrote, so that the next read does not fetch it."""
        self._blobs[git_blob_sha(text)] = text

    def _blob(self, sha: str) -> str:
        text = self._blobs.get(sha)
        if text is None:
            text = self._blobs[sha] = self.client.get_blob_text(self.repo, sha)
        return text

    def _fetch(self, shas: Iterable[str]) -> None:
        """Read every blob not read before, in one batch (the client reads several at once)."""
        missing = {sha for sha in shas if sha not in self._blobs}
        if missing:
            self._blobs.update(self.client.get_blob_texts(self.repo, missing))

    def _load(self, path: str, sha: str) -> DashboardState:
        """One state file (a column, or an older one-file state), checked against its path."""
        layout = self.layout
        where = f"{path} on branch {self.branch} of {self.repo}"
        state = self._states.get(sha)
        if state is None:
            state = self._states[sha] = load_state(self._blob(sha), where=where)
        names = state.backend_names
        column = len(names) == 1 and path == layout.column_path(state.id, names[0])
        if path != layout.state_path(state.id) and not column:
            raise StoreError(
                f"cannot read dashboard state {where}: it holds dashboard {state.key!r}, "
                f"whose state belongs in {layout.state_path(state.id)} or its columns in "
                f"{layout.state_dir}/{column_file(state.id, '*')}; move or delete the file"
            )
        return state

    def read(self, tip: str | None, leg: Leg | None, *, whole: bool = True) -> Snapshot:
        """The branch at ``tip``: every dashboard, or only ``leg``'s columns (``whole``
        False), unless this leg completes its run (then it reads everything: it renders)."""
        if leg is None or whole:
            return self.read_paths(tip, None, lambda _: True)
        return self.read_paths(
            tip, self.layout.leg_paths(leg), lambda legs: record_leg(legs, leg)[1]
        )

    def read_columns(
        self, tip: str | None, paths: Collection[str]
    ) -> dict[DashboardId, DashboardState]:
        """The state files in ``paths`` at ``tip`` joined by dashboard, and no other file (a
        pull request's leg needs neither the finished-legs record nor the revision)."""
        if tip is None:
            return {}
        tree = self._trees.get(tip) or self.client.get_tree(self.repo, tip)
        self._trees = {tip: tree}
        files = {path: tree.files[path] for path in sorted(paths) if path in tree.files}
        self._fetch(files.values())
        parts: dict[DashboardId, list[DashboardState]] = {}
        for path, sha in files.items():
            state = self._load(path, sha)
            parts.setdefault(state.id, []).append(state)
        return {dashboard: join_columns(columns) for dashboard, columns in parts.items()}

    def read_paths(
        self, tip: str | None, paths: Collection[str] | None, complete: Callable[[Runs], bool]
    ) -> Snapshot:
        """The branch at ``tip``: the state files in ``paths`` (None: every dashboard), or
        every dashboard when ``complete`` says the finished-legs record at ``tip`` makes a
        run complete (the writer then renders)."""
        if tip is None:
            return Snapshot(None, _EmptyTree(), {}, whole=paths is None or complete({}))
        tree = self._trees.get(tip) or self.client.get_tree(self.repo, tip)
        self._trees = {tip: tree}  # a commit's tree never changes: kept for the next read
        layout = self.layout
        # The small files every try needs, and the wanted columns, in one batch of reads.
        first = [tree.files.get(layout.legs_path), tree.files.get(layout.revision_path)]
        first += [tree.files.get(path) for path in paths or ()]
        self._fetch(sha for sha in first if sha is not None)
        legs = self._legs(tree)
        wanted = None if paths is None or complete(legs) else set(paths)
        files = {
            path: sha
            for path, sha in sorted(tree.files.items())
            if layout.is_state_file(path) and (wanted is None or path in wanted)
        }
        self._fetch(files.values())
        parts: dict[DashboardId, list[DashboardState]] = {}
        found: dict[DashboardId, set[str]] = {}
        for path, sha in files.items():
            state = self._load(path, sha)
            parts.setdefault(state.id, []).append(state)
            found.setdefault(state.id, set()).add(path)
        states = {dashboard: join_columns(columns) for dashboard, columns in parts.items()}
        return Snapshot(tip, tree, states, self._revision(tree), legs, found, whole=wanted is None)

    def text(self, tree: TreeListing, path: str) -> str | None:
        """The text of the file at ``path`` in ``tree`` (None when it has none)."""
        sha = tree.files.get(path)
        return None if sha is None else self._blob(sha)

    def read_files(self, trees: Sequence[TreeListing]) -> list[list[DashboardState]]:
        """The state files of each listed tree that is not the branch (a leg's inbox
        object), each checked against its path; the blobs of all of them in one batch."""
        files = [
            {path: sha for path, sha in tree.files.items() if self.layout.is_state_file(path)}
            for tree in trees
        ]
        self._fetch(sha for found in files for sha in found.values())
        return [[self._load(path, sha) for path, sha in sorted(f.items())] for f in files]

    def _revision(self, tree: TreeListing) -> int:
        path = self.layout.revision_path
        sha = tree.files.get(path)
        if sha is None:
            return 0
        text = self._blob(sha).strip()
        if not text.isdigit():
            raise StoreError(
                f"cannot read {path} on branch {self.branch} of {self.repo}: "
                f"expected a number, found {text[:40]!r}; delete the file to start again at 0"
            )
        return int(text)

    def _legs(self, tree: TreeListing) -> Runs:
        path = self.layout.legs_path
        sha = tree.files.get(path)
        if sha is None:
            return {}
        return load_runs(self._blob(sha), where=f"{path} on branch {self.branch}")
