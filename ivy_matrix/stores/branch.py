"""Dashboard state and rendered dashboards, committed to a branch of the repository.

I/O, through a :class:`GitData` client (``github.client.GitHubClient``): this module holds the
compare-and-swap update loop; what is where on the branch (one state object per backend
column, the finished-legs record ``LEGS``, the ``REVISION`` counter) is in
``stores/layout.py``, reading the branch at a commit in ``stores/snapshot.py``, and the inbox
of matrix legs in ``stores/inbox.py``.

One :meth:`BranchStore.update` is a compare-and-swap on the branch tip (PLATFORM.md 3.2):

1. read the tip T (a missing branch is created with the first commit, as a root commit that
   holds only the dashboards; when another leg created it first, GitHub answers "Reference
   already exists" and we merge into what it wrote);
2. list T's tree once, and read the blobs needed, several at once, each once per store
   (cached by sha across tries);
3. call ``change(states)`` (a :class:`~ivy_matrix.fold.Merged`: the states to save and
   the dashboards to delete), and render the pages of the changed dashboards (of every one,
   with ``render_all``: ``publish``) and the index;
4. compare each file's git blob sha with T's: when nothing differs, stop (no write at all);
5. otherwise one tree (base T's tree, only the changed entries), one commit (parent T), and
   move the branch with ``force=false``. If another writer moved it first, GitHub refuses
   (not a fast forward), and we wait and redo it from a fresh read.

So concurrent writers never lose each other's cells: each retry merges into the newest state,
and merging is order-independent and idempotent (merge.py). ``change`` may therefore be called
several times and must depend only on the states it is given. Every try, the update loop's
and a fold's alike, is read, change, the files that differ (``_writes``), one commit
(``_land``).

**Design, chosen by measurement** (``bench/store_scale.py``, Ivy's shape, 20-80 ms a request):

- *Render once per run.* With a :class:`Leg` (``--matrix-size``) a leg never renders; the
  writer whose commit completes the run's set of legs reads everything, applies the store's
  change (store-wide retirement needs every dashboard's runs) and renders every dashboard and
  the index in the same commit; a re-run of failed legs finds the set complete and renders
  again. Without a leg (local runs, a fan-in job, ``publish``) every update reads everything.
- *Matrix legs batch through an inbox* (:meth:`BranchStore._update_leg`): each leg publishes
  its results under a ref of its own, and one leg at a time folds every pending ref into the
  branch with one compare-and-swap commit.
- *Cheap, spread retries.* A retry re-reads the ref and the listing and only the blobs whose
  sha changed, after a random moment ("full jitter") in a window of ``base_delay`` doubled
  per try, and at least one try long.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from ivy_matrix.errors import StoreError
from ivy_matrix.fold import Merged
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.paths import checked_path
from ivy_matrix.render import RenderedFile, removed_files
from ivy_matrix.runner.log import Progress, Quiet
from ivy_matrix.stores import AfterSave, Change, Saved
from ivy_matrix.stores.inbox import Inbox, InboxAPI, fold_results, own_reports
from ivy_matrix.stores.layout import (
    DEFAULT_STATE_DIR,
    BranchLayout,
    Leg,
    Runs,
    dump_runs,
    inbox_prefix,
    page_links,
    record_leg,
    record_legs,
)
from ivy_matrix.stores.snapshot import BranchReader, Snapshot, git_blob_sha
from ivy_matrix.trend import DEFAULT_POINTS, TREND_NAME, dump_trend, load_trend, with_trend

MAX_ATTEMPTS = 30
BASE_DELAY = 0.5
MAX_DELAY = 60.0
# A writer that lost the branch waits a random moment in at least this many times the duration
# of its last try: see BranchStore._delay.
CONTENTION_SPREAD = 1.0

# A matrix leg whose results wait in the inbox for another leg to fold them polls the inbox
# this many times before it folds them itself (so a folder that died cannot block anyone).
PATIENCE = 6

# The pages to commit beside the states: (the change's result, with the store's trend; the
# keys of the dashboards whose pages to draw) -> files.
Render = Callable[[Merged, Collection[str]], list[RenderedFile]]


class GitData(InboxAPI, Protocol):
    """The git-data calls the branch store needs (``github.client.GitHubClient`` has them)."""

    def create_branch(self, repo: str, branch: str, sha: str) -> bool: ...

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
        render_all: bool = False,
        trend_points: int = DEFAULT_POINTS,
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
        self.layout = BranchLayout(checked_path(state_dir.strip("/")))
        self._reader = BranchReader(client, repo, self.branch, self.layout)
        self._sleep = sleep
        self._rng = rng or random.Random()  # noqa: S311  -- jitter, not cryptography
        self.max_attempts = max(max_attempts, 1)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.leg = leg
        # Render every dashboard, not only those the change changed (``publish``).
        self.render_all = render_all
        self.trend_points = trend_points
        self._try_seconds = 0.0  # how long the last try took (see _delay)
        self.inbox = Inbox(
            client,
            repo,
            branch=self.branch,
            layout=self.layout,
            reader=self._reader,
            message=message,
        )

    def load(self) -> dict[DashboardId, DashboardState]:
        """Every dashboard's state at the branch tip (empty if the branch does not exist yet)."""
        tip = self.client.get_branch_head(self.repo, self.branch)
        return self._reader.read(tip, self.leg).states

    def load_columns(
        self, dashboards: Iterable[DashboardId], backends: Iterable[str]
    ) -> dict[DashboardId, DashboardState]:
        """The columns of ``dashboards`` for ``backends`` at the branch tip, and nothing else
        (what a pull request's leg compares its results with)."""
        tip = self.client.get_branch_head(self.repo, self.branch)
        names = list(backends)
        paths = {path for d in dashboards for path in self.layout.state_files(d, names)}
        return self._reader.read_columns(tip, paths)

    def _delay(self, attempt: int) -> float:
        """How long to wait before trying again: a random moment ("full jitter") in a window
        that doubles with each try and is at least one try's duration (read to ref update),
        so that writers that lost rarely meet again on their next try."""
        window = self.base_delay * 2.0 ** (attempt - 1)
        window = max(window, CONTENTION_SPREAD * self._try_seconds)
        return self._rng.uniform(0, min(self.max_delay, window))

    def update(self, change: Change) -> Saved:
        """Read, ``change``, and commit what differs, retrying on conflicts; one commit at most.

        With ``dry_run``, stop before the first write and report the files that would change.
        """
        if self.leg is not None:
            return self._finish(self._update_leg(change, self.leg))
        for attempt in range(1, self.max_attempts + 1):
            started = time.monotonic()
            saved = self._try(change, attempt)
            self._try_seconds = time.monotonic() - started
            if saved is not None:
                self._report(saved)
                return self._finish(saved)
            if attempt < self.max_attempts:
                self._sleep(self._delay(attempt))
        raise StoreError(
            f"cannot update branch {self.branch!r} of {self.repo}: other writers moved it "
            f"{self.max_attempts} times while this update was being written; too many jobs write "
            f"at once, so write from one fan-in job, or re-run this job"
        )

    def _finish(self, saved: Saved) -> Saved:
        output: tuple[str, ...] = ()
        if self.after_save and saved.rendered:
            output = self.after_save(saved.merged)
        urls: Mapping[str, str] = {}
        index_url = None
        if not self.dry_run and self.server_url is not None:  # where people read the pages
            urls, index_url = page_links(self.server_url, self.repo, self.branch, saved.merged)
        return replace(saved, output=output, urls=urls, index_url=index_url)

    def _read(self, leg: Leg | None) -> Snapshot:
        """The branch at its tip now: every dashboard, or only ``leg``'s columns."""
        tip = self.client.get_branch_head(self.repo, self.branch)
        return self._reader.read(tip, leg, whole=False)

    def _try(self, change: Change, attempt: int) -> Saved | None:
        """One read-change-commit of every dashboard; None when another writer moved the
        branch first. It renders the pages of the dashboards the change changed (of every
        dashboard with ``render_all``) and the index."""
        snapshot = self._read(None)
        merged = self._with_trend(change(dict(snapshot.states)), snapshot)
        files = self._pages(merged, every=self.render_all)
        writes = self._writes(snapshot, merged, files, complete=snapshot.whole)
        return self._land(snapshot, merged, writes, attempt=attempt, rendered=snapshot.whole)

    def _pages(self, merged: Merged, *, every: bool) -> list[RenderedFile]:
        """The pages of the changed dashboards (of ``every`` one) and the index, rendered, and
        the removal of the pages of the dashboards removed."""
        keys = [state.key for state in merged.ordered()] if every else merged.changed
        files = self.render(merged, keys) if self.render else []
        return files + removed_files(merged.removed)

    def _writes(
        self,
        snapshot: Snapshot,
        merged: Merged,
        files: Sequence[RenderedFile] = (),
        *,
        legs: Runs | None = None,
        complete: bool,
    ) -> dict[str, str | None]:
        """The files that differ from ``snapshot`` once a change's result is saved (path ->
        text, None to delete): its state files (with ``complete``, everything read, also the
        removal of the columns that went), the finished-legs record ``legs`` and the pages."""
        wanted = self.layout.state_writes(snapshot.paths, merged, complete=complete)
        if legs is not None and legs != snapshot.legs:
            wanted[self.layout.legs_path] = dump_runs(legs)
        trend = merged.trend
        # The trend, once it has a point (trend.py): the store's own memory of past runs.
        if trend is not None and (trend.points or TREND_NAME in snapshot.tree.files):
            wanted[TREND_NAME] = dump_trend(trend)
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

    def _land(
        self,
        snapshot: Snapshot,
        merged: Merged,
        writes: dict[str, str | None],
        *,
        attempt: int,
        rendered: bool,
    ) -> Saved | None:
        """Commit ``writes`` on ``snapshot``'s tip with the revision raised by one; None when
        another writer moved the branch first. Nothing to write: no commit; a dry run: the
        files it would commit."""
        revision = snapshot.revision
        saved = Saved(
            merged=merged, attempts=attempt, revision=revision, rendered=rendered, at=snapshot.tip
        )
        if not writes:
            return saved
        writes[self.layout.revision_path] = f"{revision + 1}\n"
        if self.dry_run:
            return replace(saved, written=tuple(sorted(writes)))
        commit = self._commit(snapshot.tip, snapshot.tree.sha or None, writes)
        if commit is None:
            return None
        return replace(
            saved,
            commit_sha=commit,
            at=commit,
            written=tuple(sorted(writes)),
            revision=revision + 1,
        )

    def _commit(
        self, tip: str | None, base_tree: str | None, writes: dict[str, str | None]
    ) -> str | None:
        """One tree, one commit, and the branch moved to it with compare-and-swap: the commit,
        or None when another writer moved the branch first."""
        tree = self.client.create_tree(self.repo, base_tree, writes)
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
            if text is not None and (self.layout.in_state_dir(path) or path == TREND_NAME):
                self._reader.remember(text)
        return commit

    # ------------------------------------------------------------------ matrix legs: the inbox

    def _update_leg(self, change: Change, leg: Leg) -> Saved:
        """A matrix leg: publish its results under an inbox ref of its own, then fold the
        inbox into the branch, or wait until another leg has (see the module docstring)."""
        snapshot = self._read(leg)
        legs, complete = record_leg(snapshot.legs, leg)
        # The leg that completes its run read every dashboard: the store's own change
        # (store-wide retirement); the others read their columns only: the leg's change.
        merged = (change if snapshot.whole else leg.change)(dict(snapshot.states))
        writes = self._writes(snapshot, merged, legs=legs, complete=False)
        if not writes or self.dry_run:
            saved = Saved(
                merged=merged,
                revision=snapshot.revision,
                written=tuple(sorted(writes)),
                rendered=complete and not writes,
            )
            self._report(saved)
            return saved
        ref = self.inbox.publish(leg)
        return self._fold_until_in(change, leg, ref, merged)

    def _fold_until_in(self, change: Change, leg: Leg, ref: str, merged: Merged) -> Saved:
        """Until ``ref`` is folded: fold the inbox when this leg's ref is its run's first
        pending one (or the k-th, after ``PATIENCE`` + k polls), else wait for the folder."""
        tries = polls = 0
        run = f"{inbox_prefix(self.branch)}{leg.run_id}-"
        while True:
            pending = self.inbox.pending()
            if ref not in pending:
                self.log.info(
                    f"results of this leg are on branch {self.branch} of {self.repo}, "
                    f"folded in by another leg ({polls} poll(s) of the inbox)"
                )
                return Saved(merged=merged, attempts=max(tries, 1), rendered=False)
            # The run's first pending ref folds; the k-th takes over after PATIENCE + k
            # polls, so a folder that died is replaced by one leg, not by all at once.
            rank = sorted(name for name in pending if name.startswith(run)).index(ref)
            if rank and polls < PATIENCE + rank:
                polls += 1
                window = self.base_delay * 2.0 ** min(polls - 1, 2)
                self._sleep(self._rng.uniform(window / 2, window))
                continue
            tries += 1
            saved = self._fold(change, leg, pending, tries)
            if saved is not None:
                self._report(saved)
                # What this leg's results changed, as its own read saw it (the fold merged
                # them before the change ran, so the fold's reports would say nothing).
                return replace(saved, merged=own_reports(saved.merged, merged))
            if tries >= self.max_attempts:
                raise StoreError(
                    f"cannot update branch {self.branch!r} of {self.repo}: other writers moved "
                    f"it {tries} times while this leg folded the results waiting in "
                    f"{inbox_prefix(self.branch)}; they stay there and the next update folds "
                    f"them, or re-run this job"
                )
            self._sleep(self._delay(tries))

    def _fold(
        self, change: Change, leg: Leg, pending: Mapping[str, str], attempt: int
    ) -> Saved | None:
        """One compare-and-swap that folds every pending inbox ref into the branch, then
        deletes them; None when another writer moved the branch first."""
        finished = self.inbox.legs(pending)
        results = self.inbox.states(pending)
        tip = self.client.get_branch_head(self.repo, self.branch)
        paths = {p for r in results for p in self.layout.state_files(r.id, r.backend_names)}
        snapshot = self._reader.read_paths(tip, paths, lambda legs: record_legs(legs, finished)[1])
        legs, _ = record_legs(snapshot.legs, finished)
        states = fold_results(snapshot.states, results, leg.history)
        files: list[RenderedFile] = []  # a leg that does not complete a run renders nothing
        touched = sorted({states[result.id].key for result in results})
        if snapshot.whole:
            # The store's change (retirement) on top; the folded dashboards are saved even
            # where the change finds nothing new (the results were folded in before it).
            merged = change(states)
            keys = {state.key for state in merged.states.values()}
            changed = [*merged.changed, *(key for key in touched if key in keys)]
            merged = replace(merged, changed=tuple(dict.fromkeys(changed)))
            merged = self._with_trend(merged, snapshot)
            files = self._pages(merged, every=True)
        else:
            merged = Merged(states=states, changed=tuple(touched))
        writes = self._writes(snapshot, merged, files, legs=legs, complete=snapshot.whole)
        # A fold of results the branch already holds (refs another folder had not deleted
        # yet) completes nothing new: the pages are already a render of the state.
        rendered = snapshot.whole and bool(writes)
        saved = self._land(snapshot, merged, writes, attempt=attempt, rendered=rendered)
        if saved is not None:
            # Only now that the branch holds their results: folding them again changes nothing.
            self.inbox.delete(pending)
            self.log.info(f"folded {len(pending)} leg(s)' results from {self.inbox.prefix}")
        return saved

    def _with_trend(self, merged: Merged, snapshot: Snapshot) -> Merged:
        """``merged`` with the trend at the branch's root and the points of the runs the
        change brought (trend.py); it is written beside the pages."""
        where = f"{TREND_NAME} on branch {self.branch} of {self.repo}"
        previous = load_trend(self._reader.text(snapshot.tree, TREND_NAME), where=where)
        return with_trend(merged, previous, cap=self.trend_points)

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
