"""Dashboard state and rendered dashboards, committed to a branch of the repository.

I/O, through a :class:`GitData` client (``github_api.GitHubClient``): this module holds the
compare-and-swap update loop; what is where on the branch (one state object per backend
column, the finished-legs record ``LEGS``, the ``REVISION`` counter) is in
``branch_layout.py``, and reading the branch at a commit (ref, recursive listing, blobs cached
by sha) in ``branch_snapshot.py``.

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

- *One object per column*: see ``branch_layout.py``.
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

import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Protocol
from urllib.parse import quote

from ivy_matrix.changes import Merged
from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.paths import INDEX_NAME, checked_path, dashboard_file
from ivy_matrix.progress import Progress, Quiet
from ivy_matrix.render import RenderedFile, removed_files
from ivy_matrix.statefile import dump_runs
from ivy_matrix.stores import AfterSave, Change, Saved
from ivy_matrix.stores.branch_layout import DEFAULT_STATE_DIR, BranchLayout, Leg, record_leg
from ivy_matrix.stores.branch_snapshot import BranchReader, GitReads, Snapshot, git_blob_sha

MAX_ATTEMPTS = 30
BASE_DELAY = 0.5
MAX_DELAY = 60.0
# A leg that lost the branch waits a random moment in this many times (legs still to land) x
# (one try's duration): see BranchStore._delay.
CONTENTION_SPREAD = 1.0

# The pages to commit beside the states: (every state by key, the keys that changed) -> files.
Render = Callable[[Sequence[DashboardState], Collection[str]], list[RenderedFile]]


class GitData(GitReads, Protocol):
    """The git-data calls the branch store needs (``github_api.GitHubClient`` has them)."""

    def create_branch(self, repo: str, branch: str, sha: str) -> bool: ...

    def create_tree(
        self, repo: str, base_tree: str | None, files: Mapping[str, str | None]
    ) -> str: ...

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str: ...

    def update_branch(self, repo: str, branch: str, sha: str) -> bool: ...


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
        self.layout = BranchLayout(self.state_dir)
        self._reader = BranchReader(client, repo, self.branch, self.layout)
        self._sleep = sleep
        self._rng = rng or random.Random()  # noqa: S311  -- jitter, not cryptography
        self.max_attempts = max(max_attempts, 1)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.leg = leg
        # Render every dashboard, not only those the change changed (``publish``).
        self.render_all = False
        # What the last try saw and took: the legs of this run not landed yet, its duration.
        self._pending = 1
        self._try_seconds = 0.0

    def load(self) -> dict[DashboardId, DashboardState]:
        """Every dashboard's state at the branch tip (empty if the branch does not exist yet)."""
        tip = self.client.get_branch_head(self.repo, self.branch)
        return self._reader.read(tip, self.leg).states

    def _changes(
        self, snapshot: Snapshot, wanted: dict[str, str | None], files: Sequence[RenderedFile]
    ) -> dict[str, str | None]:
        for file in files:
            path = checked_path(file.path)
            if self.layout.in_state_dir(path):
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

    def _apply(self, change: Change, snapshot: Snapshot) -> tuple[Merged, Collection[str]]:
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
        snapshot = self._reader.read(tip, self.leg, whole=False)
        legs, _ = record_leg(snapshot.legs, self.leg)
        if self.leg is not None:
            size, done = legs[self.leg.run_id]
            self._pending = max(size - len(done) + 1, 1)
        complete = snapshot.whole
        merged, keys = self._apply(change, snapshot)
        files = []
        if complete:
            files = self.render(merged.ordered(), keys) if self.render else []
            files += removed_files(merged.removed)
        wanted = self.layout.state_writes(snapshot.paths, merged, complete=complete)
        if self.leg is not None and legs != snapshot.legs:
            wanted[self.layout.legs_path] = dump_runs(legs)
        writes = self._changes(snapshot, wanted, files)
        revision = snapshot.revision
        if not writes:
            return Saved(merged=merged, attempts=attempt, revision=revision, rendered=complete)
        writes[self.layout.revision_path] = f"{revision + 1}\n"
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
                self._reader.remember(text)
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
