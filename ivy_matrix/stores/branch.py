"""Dashboard state and rendered dashboards, committed to a branch of the repository.

I/O, through a :class:`~ivy_matrix.stores.remote.BranchRemote`: git's own protocol (one fetch
to read, one push to write; no REST request) or the REST git-data API. What a commit writes is
``stores/commit.py``, a commit itself ``stores/committer.py``, reading ``stores/snapshot.py``,
the paths ``stores/layout.py``.

*Every commit keeps the branch a render of its state* (layout 2): the dashboards it changed,
their pages, the index file and the index page, in one commit, so the markdown on the branch
always equals a render of the state there.

*One writer per run, compare-and-swap between runs.* An update reads the branch tip, changes
what it read, and commits what differs as one compare-and-swap of the branch; when another
workflow run moved the branch first, it reads again (only what changed: blobs are cached) and
tries again, up to ``max_attempts`` times. With a scope (``update``: it knows the dashboards its
results touch) it reads only those dashboards' documents and the small files (the index file
says what the others hold), and also those the store-wide retirement reaches; without one
(``adopt``, ``prune``, ``publish``, or the site target) it reads every dashboard. Nothing
differs: no write at all (an identical re-run).

*Cheap, spread retries* (chosen by measurement, ``bench/``): a retry waits a random moment in
a window of ``base_delay`` doubled per try and at least one try long ("full jitter").
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.runner.log import Progress, Quiet
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.statefile import join_columns, split_columns
from ivy_matrix.stores import AfterSave, Change, Saved
from ivy_matrix.stores.commit import Writing
from ivy_matrix.stores.committer import Committer
from ivy_matrix.stores.layout import BranchPlace, Scope, page_links
from ivy_matrix.stores.remote import BranchRemote
from ivy_matrix.stores.tree import Snapshot

MAX_ATTEMPTS = 30
BASE_DELAY = 0.5
MAX_DELAY = 60.0
# A writer that lost the branch waits a random moment in at least this many times the duration
# of its last try: see BranchStore._delay.
CONTENTION_SPREAD = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Retries:
    """How an update tries again when another run moved the branch first: at most
    ``max_attempts`` tries, each after a random moment in a window of ``base_delay`` doubled
    per try, at least one try long and at most ``max_delay``; ``sleep`` and ``clock`` wait and
    measure, ``rng`` draws the moment (None: a fresh one)."""

    max_attempts: int = MAX_ATTEMPTS
    base_delay: float = BASE_DELAY
    max_delay: float = MAX_DELAY
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    rng: random.Random | None = None


class BranchStore:
    """Dashboards kept on the branch ``place`` names, reached through ``remote``
    (``commands/choose_store.py`` gives git's, the REST API's, or the automatic choice); its
    commits are as ``writing`` says, its retries as ``retries`` says (see the module
    docstring). ``scope``: what an update touches (None: it reads every dashboard);
    ``after_save``: what keeps the output folder in step."""

    changes_once = False  # again on a fresher read, until its compare-and-swap lands

    def __init__(
        self,
        remote: BranchRemote,
        place: BranchPlace,
        *,
        writing: Writing | None = None,
        retries: Retries | None = None,
        scope: Scope | None = None,
        after_save: AfterSave | None = None,
        log: Progress | None = None,
    ) -> None:
        self.remote = remote
        self.place = place
        self.branch = place.branch
        self.writing = writing or Writing()
        self.retries = retries or Retries()
        self.scope = scope
        self.after_save = after_save
        self.log: Progress = log or Quiet()
        self._rng = self.retries.rng or random.Random()  # noqa: S311  -- jitter, not cryptography
        self._try_seconds = 0.0  # how long the last try took (see _delay)
        self.committer = Committer(remote, place, self.writing, self.log)

    def load(
        self, dashboards: Collection[DashboardId] | None = None
    ) -> dict[DashboardId, DashboardState]:
        """The dashboards' states at the branch tip (``dashboards``: only those; None: all;
        empty when the branch does not exist yet)."""
        tip = self.remote.read_tip(self.branch)
        snapshot = self.committer.read(tip, dashboards)
        if dashboards is None:
            return dict(snapshot.states)
        wanted = set(dashboards)
        return {d: state for d, state in snapshot.states.items() if d in wanted}

    def close(self) -> None:
        self.remote.close()

    def load_columns(
        self, dashboards: Iterable[DashboardId], backends: Iterable[str]
    ) -> tuple[dict[DashboardId, DashboardState], frozenset[str]]:
        """The columns of ``dashboards`` for ``backends`` at the branch tip, and nothing else
        (what a pull request's leg compares its results with): only those dashboards'
        documents are read (layout 2), and a dashboard with none of the backends is left out;
        and every backend those dashboards have a column for (asked for or not)."""
        names = set(backends)
        found = {}
        every: set[str] = set()
        for dashboard, state in self.load(set(dashboards)).items():
            split = split_columns(state)
            every.update(split)
            columns = [c for b, c in split.items() if b in names]
            if columns:
                found[dashboard] = join_columns(columns)
        return found, frozenset(every)

    def _delay(self, attempt: int) -> float:
        """How long to wait before trying again: a random moment ("full jitter") in a window
        that doubles with each try and is at least one try's duration (read to ref update),
        so that writers that lost rarely meet again on their next try."""
        retries = self.retries
        window = retries.base_delay * 2.0 ** (attempt - 1)
        window = max(window, CONTENTION_SPREAD * self._try_seconds)
        return self._rng.uniform(0, min(retries.max_delay, window))

    def update(self, change: Change) -> Saved:
        """Read, change and commit what differs, from a fresh read until the compare-and-swap
        lands (see the module docstring). With a scope, its change is applied (the same result
        as ``change`` on every dashboard); with ``dry_run``, nothing is written and the files
        that would change are reported."""
        retries = self.retries
        tries = max(retries.max_attempts, 1)
        for attempt in range(1, tries + 1):
            started = retries.clock()
            snapshot, merged = self._read_and_change(change)
            saved = self.committer.land(snapshot, merged, attempt=attempt)
            self._try_seconds = retries.clock() - started
            if saved is not None:
                self.committer.report(saved)
                return self._finish(saved)
            if attempt < tries:
                retries.sleep(self._delay(attempt))
        raise StoreError(
            f"cannot update branch {self.branch!r} of {self.place.repo}: other writers moved it "
            f"{tries} times while this update was being written; too many jobs write at once, "
            f"so write from one fan-in job, or re-run this job"
        )

    def _read_and_change(self, change: Change) -> tuple[Snapshot, Merged]:
        """The branch at its tip as one try reads it (with a scope: only what it touches and
        what the retirement reaches), and the change's result on it."""
        tip = self.remote.read_tip(self.branch)
        scope = self.scope
        if scope is None:
            snapshot = self.committer.read(tip, None)
            return snapshot, change(dict(snapshot.states))
        return self.committer.merge(
            self.committer.read(tip, scope.dashboards),
            lambda read: scope.change(read.states, read.other_runs()),
            scope.retire_after_runs,
        )

    def _finish(self, saved: Saved) -> Saved:
        output: tuple[str, ...] = ()
        if self.after_save:
            output = self.after_save(saved.merged)
        urls: Mapping[str, str] = {}
        index_url = None
        place = self.place
        if not self.writing.dry_run and place.server_url is not None:  # where people read them
            urls, index_url = page_links(
                place.server_url, place.repo, place.branch, saved.merged.states.values()
            )
        return replace(saved, output=output, urls=urls, index_url=index_url)
