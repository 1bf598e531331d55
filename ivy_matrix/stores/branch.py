"""Dashboard state and rendered dashboards, committed to a branch of the repository.

I/O, through a :class:`GitData` client (``github_api.GitHubClient``). The branch
(``ivy-matrix`` by default) holds::

    README.md                          the index page          (rendered, from the caller)
    core/gradients.md                  one page per dashboard  (rendered, from the caller)
    .ivy-matrix/state/core/gradients.json   one state file per dashboard (statefile.py)

One :meth:`BranchStore.update` is a compare-and-swap on the branch tip (PLATFORM.md 3.2):

1. read the tip T (a missing branch is created with the first commit, as a root commit that
   holds only the dashboards; when another leg created it first, GitHub answers "Reference
   already exists" and we merge into what it wrote);
2. list T's tree once and read every state file (one blob each, cached by sha across tries);
3. call ``change(states)`` (a :class:`~ivy_matrix.changes.Merged`: the states to save and
   the dashboards to delete), and render the pages of the changed dashboards and the index;
4. compare each file's git blob sha with T's: when nothing differs, stop (no write at all);
5. otherwise one tree (base T's tree), one commit (parent T), and move the branch with
   ``force=false``. If another writer moved it first, GitHub refuses (not a fast forward),
   and we wait a jittered, growing delay and redo everything from a fresh read.

So concurrent matrix legs never lose each other's cells: each retry merges into the newest
state, and merging is order-independent and idempotent (merge.py). ``change`` may therefore be
called several times and must depend only on the states it is given; the last call is the one
whose result was committed. Every update makes one commit for all the files it changes.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol
from urllib.parse import quote

from ivy_matrix.changes import Merged
from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.paths import INDEX_NAME, checked_path, dashboard_file, relative_path
from ivy_matrix.progress import Progress, Quiet
from ivy_matrix.render import RenderedFile, removed_files
from ivy_matrix.statefile import dump_state, load_state
from ivy_matrix.stores import AfterSave, Change, Saved

DEFAULT_STATE_DIR = ".ivy-matrix/state"
MAX_ATTEMPTS = 30
BASE_DELAY = 0.5
MAX_DELAY = 15.0
# A counter in the state folder, raised by one in every commit. Commits are compare-and-swap,
# so revisions are strictly increasing; projections (issue bodies) carry the revision they
# show, so that a slow writer never replaces a newer projection with an older one.
REVISION_NAME = "REVISION"

# The pages to commit beside the states: (every state by key, the keys that changed) -> files.
Render = Callable[[Sequence[DashboardState], Collection[str]], list[RenderedFile]]


class TreeListing(Protocol):
    """A listed tree: its sha and its files (path -> blob sha)."""

    @property
    def sha(self) -> str: ...

    @property
    def files(self) -> Mapping[str, str]: ...


class GitData(Protocol):
    """The git-data calls the branch store needs (``github_api.GitHubClient`` has them)."""

    def get_branch_head(self, repo: str, branch: str) -> str | None: ...

    def create_branch(self, repo: str, branch: str, sha: str) -> bool: ...

    def get_tree(self, repo: str, tree_ish: str) -> TreeListing: ...

    def get_blob_text(self, repo: str, sha: str) -> str: ...

    def create_tree(
        self, repo: str, base_tree: str | None, files: Mapping[str, str | None]
    ) -> str: ...

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str: ...

    def update_branch(self, repo: str, branch: str, sha: str) -> bool: ...


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
class _Snapshot:
    tip: str | None
    tree: TreeListing
    states: dict[DashboardId, DashboardState]
    revision: int = 0


class BranchStore:
    """Dashboards kept on a branch; safe for many concurrent writers (see the module docstring)."""

    def __init__(
        self,
        client: GitData,
        repo: str,
        branch: str,
        state_dir: str = DEFAULT_STATE_DIR,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        max_attempts: int = MAX_ATTEMPTS,
        base_delay: float = BASE_DELAY,
        max_delay: float = MAX_DELAY,
        message: str = "ivy-matrix: update",
        render: Render | None = None,
        dry_run: bool = False,
        log: Progress | None = None,
        after_save: AfterSave | None = None,
        server_url: str | None = None,
    ) -> None:
        self.client = client
        self.message = message
        self.render = render
        self.dry_run = dry_run
        self.log: Progress = log or Quiet()
        self.after_save = after_save
        self.server_url = server_url
        self.repo = repo
        self.branch = branch.removeprefix("refs/heads/")
        self.state_dir = checked_path(state_dir.strip("/"))
        self._sleep = sleep
        self._rng = rng or random.Random()  # noqa: S311  -- jitter, not cryptography
        self.max_attempts = max(max_attempts, 1)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._blobs: dict[str, str] = {}

    @property
    def revision_path(self) -> str:
        return f"{self.state_dir}/{REVISION_NAME}"

    def state_path(self, dashboard: DashboardId) -> str:
        """Where a dashboard's state file lives on the branch."""
        return f"{self.state_dir}/{relative_path(dashboard, '.json').as_posix()}"

    def _is_state_file(self, path: str) -> bool:
        return path.startswith(self.state_dir + "/") and path.endswith(".json")

    def _blob(self, sha: str) -> str:
        text = self._blobs.get(sha)
        if text is None:
            text = self._blobs[sha] = self.client.get_blob_text(self.repo, sha)
        return text

    def _read(self, tip: str) -> _Snapshot:
        tree = self.client.get_tree(self.repo, tip)
        states: dict[DashboardId, DashboardState] = {}
        for path, sha in sorted(tree.files.items()):
            if not self._is_state_file(path):
                continue
            where = f"{path} on branch {self.branch} of {self.repo}"
            state = load_state(self._blob(sha), where=where)
            if self.state_path(state.id) != path:
                raise StoreError(
                    f"cannot read dashboard state {where}: it holds dashboard {state.key!r}, "
                    f"whose state belongs in {self.state_path(state.id)}; move or delete the file"
                )
            states[state.id] = state
        return _Snapshot(tip=tip, tree=tree, states=states, revision=self._revision(tree))

    def _revision(self, tree: TreeListing) -> int:
        sha = tree.files.get(self.revision_path)
        if sha is None:
            return 0
        text = self._blob(sha).strip()
        if not text.isdigit():
            raise StoreError(
                f"cannot read {self.revision_path} on branch {self.branch} of {self.repo}: "
                f"expected a number, found {text[:40]!r}; delete the file to start again at 0"
            )
        return int(text)

    def load(self) -> dict[DashboardId, DashboardState]:
        """Every dashboard's state at the branch tip (empty if the branch does not exist yet)."""
        tip = self.client.get_branch_head(self.repo, self.branch)
        return {} if tip is None else self._read(tip).states

    def _changes(
        self,
        snapshot: _Snapshot,
        states: Mapping[DashboardId, DashboardState | None],
        files: Sequence[RenderedFile],
    ) -> dict[str, str | None]:
        wanted: dict[str, str | None] = {}
        for dashboard, state in states.items():
            if state is None:
                wanted[self.state_path(dashboard)] = None
                continue
            if state.id != dashboard:
                raise ValueError(f"state of {state.key!r} returned under {dashboard.key!r}")
            wanted[self.state_path(dashboard)] = dump_state(state)
        for file in files:
            path = checked_path(file.path)
            if path == self.state_dir or path.startswith(self.state_dir + "/"):
                raise ValueError(f"rendered file {path!r} would overwrite the state folder")
            wanted[path] = file.text
        current = snapshot.tree.files
        return {
            path: text
            for path, text in wanted.items()
            if (path in current if text is None else current.get(path) != git_blob_sha(text))
        }

    def _delay(self, attempt: int) -> float:
        # "Full jitter": spreads legs that collided over the whole window, so they rarely meet again.
        return self._rng.uniform(0, min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1)))

    def update(self, change: Change) -> Saved:
        """Read, ``change``, and commit what differs, retrying on conflicts; one commit at most.

        With ``dry_run``, stop before the first write and report the files that would change.
        """
        for attempt in range(1, self.max_attempts + 1):
            saved = self._try(change, attempt)
            if saved is not None:
                self._report(saved)
                output = self.after_save(saved.merged) if self.after_save else ()
                urls, index_url = self._links(saved.merged)
                return replace(saved, output=output, urls=urls, index_url=index_url)
            if attempt < self.max_attempts:
                self._sleep(self._delay(attempt))
        raise StoreError(
            f"cannot update branch {self.branch!r} of {self.repo}: other writers moved it "
            f"{self.max_attempts} times while this update was being written; too many jobs write "
            f"at once, so write from one fan-in job, or re-run this job"
        )

    def _try(self, change: Change, attempt: int) -> Saved | None:
        """One read-change-commit; None when another writer moved the branch first."""
        tip = self.client.get_branch_head(self.repo, self.branch)
        snapshot = self._read(tip) if tip else _Snapshot(None, _EmptyTree(), {})
        merged = change(dict(snapshot.states))
        files = self.render(merged.ordered(), merged.changed) if self.render else []
        states: dict[DashboardId, DashboardState | None] = dict(merged.to_save())
        states.update((gone.id, None) for gone in merged.removed)
        writes = self._changes(snapshot, states, [*files, *removed_files(merged.removed)])
        revision = snapshot.revision
        if not writes:
            return Saved(merged=merged, attempts=attempt, revision=revision)
        writes[self.revision_path] = f"{revision + 1}\n"
        if self.dry_run:
            return Saved(
                merged=merged, attempts=attempt, written=tuple(sorted(writes)), revision=revision
            )
        tree = self.client.create_tree(self.repo, snapshot.tree.sha or None, writes)
        if tip is None:
            # A new branch starts from its own root commit: it holds only dashboards, not
            # the project's files. If another leg created it first, GitHub answers
            # "Reference already exists" and we merge into what that leg wrote.
            commit = self.client.create_commit(self.repo, self.message, tree, [])
            landed = self.client.create_branch(self.repo, self.branch, commit)
        else:
            commit = self.client.create_commit(self.repo, self.message, tree, [tip])
            landed = self.client.update_branch(self.repo, self.branch, commit)
        if not landed:
            return None
        for path, text in writes.items():
            if text is not None and (self._is_state_file(path) or path == self.revision_path):
                self._blobs[git_blob_sha(text)] = text
        return Saved(
            merged=merged,
            commit_sha=commit,
            attempts=attempt,
            written=tuple(sorted(writes)),
            revision=revision + 1,
        )

    def _report(self, saved: Saved) -> None:
        where = f"branch {self.branch} of {self.repo}"
        if self.dry_run:
            self.log.info(f"dry run: would commit {len(saved.written)} file(s) to {where}")
            for path in saved.written:
                self.log.info(f"  {path}")
        elif saved.commit_sha:
            self.log.info(
                f"committed {len(saved.written)} file(s) to {where} "
                f"(revision {saved.revision}, {saved.attempts} attempt(s))"
            )
        else:
            self.log.info(f"{where} already shows these results: nothing to commit")

    def _links(self, merged: Merged) -> tuple[dict[str, str], str | None]:
        """Where people read the committed pages (none in a dry run, or without a server)."""
        if self.dry_run or self.server_url is None:
            return {}, None
        base = f"{self.server_url.rstrip('/')}/{self.repo}/blob/{quote(self.branch)}"
        urls = {s.key: f"{base}/{quote(dashboard_file(s))}" for s in merged.states.values()}
        return urls, f"{base}/{INDEX_NAME}"
