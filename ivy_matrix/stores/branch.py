"""Dashboard state and rendered dashboards, committed to a branch of the repository.

I/O, through a :class:`GitData` client (``github_api.GitHubClient``). The branch
(``ivy-matrix`` by default) holds::

    README.md                                   the index page      (rendered, from the caller)
    core/gradients.md                           one page per dashboard
    .ivy-matrix/state/core/gradients.d/torch.json   one state object per backend column
    .ivy-matrix/state/LEGS                       the matrix legs that finished, per run
    .ivy-matrix/state/REVISION                   raised by one in every commit

One :meth:`BranchStore.update` is a compare-and-swap on the branch tip (PLATFORM.md 3.2):

1. read the tip T (a missing branch is created with the first commit, as a root commit that
   holds only the dashboards; when another leg created it first, GitHub answers "Reference
   already exists" and we merge into what it wrote);
2. list T's tree once (recursively; a listing cut short is completed folder by folder), and
   read the blobs needed, several at once, each once per store (cached by sha across tries);
3. call ``change(states)`` (a :class:`~ivy_matrix.changes.Merged`: the states to save and
   the dashboards to delete), and render the pages of the changed dashboards and the index;
4. compare each file's git blob sha with T's: when nothing differs, stop (no write at all);
5. otherwise one tree (base T's tree, only the changed entries), one commit (parent T), and
   move the branch with ``force=false``. If another writer moved it first, GitHub refuses
   (not a fast forward), and we wait and redo it from a fresh read.

So concurrent matrix legs never lose each other's cells: each retry merges into the newest
state, and merging is order-independent and idempotent (merge.py). ``change`` may therefore be
called several times and must depend only on the states it is given.

**Design, chosen by measurement** (``bench/store_scale.py``, Ivy's shape, 20-80 ms a request):

- *One object per column.* A dashboard's state is split by backend (``statefile.split_columns``;
  each part is an ordinary state document and ``join_columns`` puts them back), so a leg that
  brings one backend's results reads and rewrites only that backend's columns: a leg of ~900
  cases sends ~90 KB instead of every dashboard it touched. Older one-file states
  (``core/gradients.json``) are read as they are and replaced by their columns when written.
- *Render once per run.* With a :class:`Leg` (``--matrix-size``), a leg reads only its
  columns, the finished-legs record and the revision (6 requests a try, plus one per column
  it touches, read 8 at a time; not one per dashboard of the branch), merges without retirement, and commits no markdown: a new run id changes
  every cell's link, so rendering in every leg re-sent MBs. The leg whose commit completes the
  run's set of legs reads everything, applies the store's change (store-wide retirement needs
  every dashboard's runs) and renders every dashboard and the index in the same commit; a
  re-run of failed legs finds the set complete and renders again. Without a leg (local runs,
  a fan-in job, ``publish``) every update reads everything and renders, as before.
- *Cheap, spread retries.* A retry re-reads the ref and the listing and only the blobs whose
  sha changed. Legs that lost wait a random moment ("full jitter") in a window of at least
  ``base_delay`` doubled per try and, for a leg, ``CONTENTION_SPREAD`` x (legs of the run not
  landed) x (one try's duration): k legs can land at best one per try, so spreading them over
  that keeps the number of tries low (measured: 32 legs at most 4-5 tries, mean 2.2-2.3; 128
  legs at most 7-8, mean 2.8-2.9; twice the window gave 3 and 7 tries, but 62 s instead of
  37 s for 32 legs), at the price of wall time: the run takes at least k tries' time, since commits to
  one branch are serial by nature.
- *Not done:* batching several legs' results into one commit (per-leg result refs folded in by
  any writer): that is what a run of 128 committing legs needs to finish within a few legs'
  time; see the README for the set-ups that keep a matrix within GitHub's limits.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol
from urllib.parse import quote

from ivy_matrix.changes import Merged
from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.paths import (
    INDEX_NAME,
    checked_path,
    column_file,
    dashboard_file,
    relative_path,
)
from ivy_matrix.progress import Progress, Quiet
from ivy_matrix.render import RenderedFile, removed_files
from ivy_matrix.statefile import (
    dump_runs,
    dump_state,
    join_columns,
    load_runs,
    load_state,
    split_columns,
)
from ivy_matrix.stores import AfterSave, Change, Saved

DEFAULT_STATE_DIR = ".ivy-matrix/state"
MAX_ATTEMPTS = 30
BASE_DELAY = 0.5
MAX_DELAY = 60.0
# A leg that lost the branch waits a random moment in this many times (legs still to land) x
# (one try's duration): see BranchStore._delay.
CONTENTION_SPREAD = 1.0
# A counter in the state folder, raised by one in every commit. Commits are compare-and-swap,
# so revisions are strictly increasing; projections (issue bodies) carry the revision they
# show, so that a slow writer never replaces a newer projection with an older one.
REVISION_NAME = "REVISION"
# The matrix legs that finished, per run (statefile.dump_runs): the leg that completes a run
# renders the dashboards. Upper case, so no (lower-case) category folder meets it.
LEGS_NAME = "LEGS"

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

    def get_blob_texts(self, repo: str, shas: Collection[str]) -> dict[str, str]: ...

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Leg:
    """One matrix leg's part in a run: what it reads, and when the run is complete.

    ``dashboards`` and ``backends`` are what its results touch (it reads only those columns);
    ``change`` is its change without store-wide retirement (that needs every dashboard, so it
    runs in the leg that completes the run, with the store's own change). ``index`` is the
    leg's ``strategy.job-index``, ``size`` the ``strategy.job-total``.
    """

    run_id: int
    index: int
    size: int
    dashboards: frozenset[DashboardId]
    backends: frozenset[str]
    change: Change


@dataclass(frozen=True, slots=True)
class _Snapshot:
    tip: str | None
    tree: TreeListing
    states: dict[DashboardId, DashboardState]
    revision: int = 0
    legs: dict[int, tuple[int, frozenset[int]]] = field(default_factory=dict)
    # Every dashboard's state files on the branch (columns, and the one-file form of older
    # versions), by dashboard; only for the dashboards read.
    paths: dict[DashboardId, set[str]] = field(default_factory=dict)
    whole: bool = True  # every dashboard was read


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
        leg: Leg | None = None,
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
        self.leg = leg
        # Render every dashboard, not only those the change changed (``publish``).
        self.render_all = False
        self._blobs: dict[str, str] = {}
        # What the last try saw and took: the legs of this run not landed yet, its duration.
        self._pending = 1
        self._try_seconds = 0.0

    @property
    def revision_path(self) -> str:
        return f"{self.state_dir}/{REVISION_NAME}"

    @property
    def legs_path(self) -> str:
        return f"{self.state_dir}/{LEGS_NAME}"

    def state_path(self, dashboard: DashboardId) -> str:
        """Where older versions kept a dashboard's whole state, in one file (read, migrated)."""
        return f"{self.state_dir}/{relative_path(dashboard, '.json').as_posix()}"

    def column_path(self, dashboard: DashboardId, backend: str) -> str:
        """Where one backend's column of a dashboard lives on the branch."""
        return f"{self.state_dir}/{column_file(dashboard, backend)}"

    def _is_state_file(self, path: str) -> bool:
        return path.startswith(self.state_dir + "/") and path.endswith(".json")

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
        where = f"{path} on branch {self.branch} of {self.repo}"
        state = load_state(self._blob(sha), where=where)
        names = state.backend_names
        column = len(names) == 1 and path == self.column_path(state.id, names[0])
        if path != self.state_path(state.id) and not column:
            raise StoreError(
                f"cannot read dashboard state {where}: it holds dashboard {state.key!r}, "
                f"whose state belongs in {self.state_path(state.id)} or its columns in "
                f"{self.state_dir}/{column_file(state.id, '*')}; move or delete the file"
            )
        return state

    def _read(self, tip: str | None, *, whole: bool = True) -> _Snapshot:
        """The branch at ``tip``: every dashboard, or only this leg's columns (``whole``
        False), unless this leg completes its run (then it reads everything: it renders)."""
        if tip is None:
            return _Snapshot(None, _EmptyTree(), {}, whole=whole or self._complete({})[1])
        tree = self.client.get_tree(self.repo, tip)
        leg = self.leg
        # The small files every try needs, and this leg's columns, in one batch of reads.
        first = [tree.files.get(self.legs_path), tree.files.get(self.revision_path)]
        if leg is not None:
            first += [
                tree.files.get(path)
                for dashboard in leg.dashboards
                for path in (
                    self.state_path(dashboard),
                    *(self.column_path(dashboard, backend) for backend in leg.backends),
                )
            ]
        self._fetch(sha for sha in first if sha is not None)
        legs = self._legs(tree)
        wanted: set[str] | None = None
        if not whole and leg is not None and not self._complete(legs)[1]:
            wanted = {
                path
                for dashboard in leg.dashboards
                for path in (
                    self.state_path(dashboard),
                    *(self.column_path(dashboard, backend) for backend in leg.backends),
                )
            }
        files = {
            path: sha
            for path, sha in sorted(tree.files.items())
            if self._is_state_file(path) and (wanted is None or path in wanted)
        }
        self._fetch(files.values())
        parts: dict[DashboardId, list[DashboardState]] = {}
        paths: dict[DashboardId, set[str]] = {}
        for path, sha in files.items():
            state = self._load(path, sha)
            parts.setdefault(state.id, []).append(state)
            paths.setdefault(state.id, set()).add(path)
        states = {dashboard: join_columns(columns) for dashboard, columns in parts.items()}
        return _Snapshot(tip, tree, states, self._revision(tree), legs, paths, whole=wanted is None)

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

    def _legs(self, tree: TreeListing) -> dict[int, tuple[int, frozenset[int]]]:
        sha = tree.files.get(self.legs_path)
        if sha is None:
            return {}
        return load_runs(self._blob(sha), where=f"{self.legs_path} on branch {self.branch}")

    def load(self) -> dict[DashboardId, DashboardState]:
        """Every dashboard's state at the branch tip (empty if the branch does not exist yet)."""
        return self._read(self.client.get_branch_head(self.repo, self.branch)).states

    def _state_writes(
        self, snapshot: _Snapshot, merged: Merged, *, complete: bool
    ) -> dict[str, str | None]:
        """The state files a change's result needs: its dashboards' columns; the one-file
        states it replaces; with ``complete`` (everything read) the columns that went."""
        wanted: dict[str, str | None] = {}
        for dashboard, state in merged.to_save().items():
            if state.id != dashboard:
                raise ValueError(f"state of {state.key!r} returned under {dashboard.key!r}")
            for backend, column in split_columns(state).items():
                wanted[self.column_path(dashboard, backend)] = dump_state(column)
            old = snapshot.paths.get(dashboard, set())
            for path in old:
                if path not in wanted and (complete or path == self.state_path(dashboard)):
                    wanted[path] = None
        for gone in merged.removed:
            for path in snapshot.paths.get(gone.id, set()):
                wanted[path] = None
        return wanted

    def _changes(
        self, snapshot: _Snapshot, wanted: dict[str, str | None], files: Sequence[RenderedFile]
    ) -> dict[str, str | None]:
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
        """How long to wait before trying again: "full jitter" over a window that grows with
        the tries, and (for a matrix leg) with the legs of its run still to land.

        k legs that all want the branch can land at best one per try's duration d (read to
        ref update), so they need about k x d; each leg that lost picks a random moment in
        that window (or the exponential one, if longer), so the next tries rarely meet.
        """
        window = self.base_delay * 2.0 ** (attempt - 1)
        window = max(window, CONTENTION_SPREAD * self._pending * self._try_seconds)
        return self._rng.uniform(0, min(self.max_delay, window))

    def update(self, change: Change) -> Saved:
        """Read, ``change``, and commit what differs, retrying on conflicts; one commit at most.

        With ``dry_run``, stop before the first write and report the files that would change.
        """
        for attempt in range(1, self.max_attempts + 1):
            started = time.monotonic()
            saved = self._try(change, attempt)
            self._try_seconds = time.monotonic() - started
            if saved is not None:
                self._report(saved)
                output: tuple[str, ...] = ()
                if self.after_save and saved.rendered:
                    output = self.after_save(saved.merged)
                urls, index_url = self._links(saved.merged)
                return replace(saved, output=output, urls=urls, index_url=index_url)
            if attempt < self.max_attempts:
                self._sleep(self._delay(attempt))
        raise StoreError(
            f"cannot update branch {self.branch!r} of {self.repo}: other writers moved it "
            f"{self.max_attempts} times while this update was being written; too many jobs write "
            f"at once, so write from one fan-in job, or re-run this job"
        )

    def _complete(
        self, legs: dict[int, tuple[int, frozenset[int]]]
    ) -> tuple[dict[int, tuple[int, frozenset[int]]], bool]:
        """The finished-legs record with this leg in it, and whether its run is complete
        (always, without a leg: every update renders)."""
        leg = self.leg
        if leg is None:
            return legs, True
        size, done = legs.get(leg.run_id, (leg.size, frozenset()))
        size = max(size, leg.size)
        done |= {leg.index}
        return {**legs, leg.run_id: (size, done)}, done >= frozenset(range(size))

    def _apply(self, change: Change, snapshot: _Snapshot) -> tuple[Merged, Collection[str]]:
        """The change's result on ``snapshot``, and the keys of the dashboards to render."""
        if snapshot.whole:
            # Every dashboard was read: the store's own change (store-wide retirement), and
            # the pages of the changed dashboards and the index; a leg that completes its run
            # renders every dashboard (the legs before it rendered none), as does ``publish``.
            merged = change(dict(snapshot.states))
            if self.leg is not None or self.render_all:
                return merged, [state.key for state in merged.ordered()]
            return merged, merged.changed
        # Only a leg reads part of the branch: its own change, without retirement, no pages.
        return (self.leg.change if self.leg else change)(dict(snapshot.states)), ()

    def _try(self, change: Change, attempt: int) -> Saved | None:
        """One read-change-commit; None when another writer moved the branch first."""
        tip = self.client.get_branch_head(self.repo, self.branch)
        snapshot = self._read(tip, whole=False)
        legs, _ = self._complete(snapshot.legs)
        if self.leg is not None:
            size, done = legs[self.leg.run_id]
            self._pending = max(size - len(done) + 1, 1)
        complete = snapshot.whole
        merged, keys = self._apply(change, snapshot)
        files = []
        if complete:
            files = self.render(merged.ordered(), keys) if self.render else []
            files += removed_files(merged.removed)
        wanted = self._state_writes(snapshot, merged, complete=complete)
        if self.leg is not None and legs != snapshot.legs:
            wanted[self.legs_path] = dump_runs(legs)
        writes = self._changes(snapshot, wanted, files)
        revision = snapshot.revision
        if not writes:
            return Saved(merged=merged, attempts=attempt, revision=revision, rendered=complete)
        writes[self.revision_path] = f"{revision + 1}\n"
        if self.dry_run:
            return Saved(
                merged=merged,
                attempts=attempt,
                written=tuple(sorted(writes)),
                revision=revision,
                rendered=complete,
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
            if text is not None and path.startswith(self.state_dir + "/"):
                self._blobs[git_blob_sha(text)] = text
        return Saved(
            merged=merged,
            commit_sha=commit,
            attempts=attempt,
            written=tuple(sorted(writes)),
            revision=revision + 1,
            rendered=complete,
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
