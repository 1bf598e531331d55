"""The changes a store folds in: one update's results, or a prune, as a typed :class:`Merged`.

Pure: no I/O. :func:`merge_batches` applies an update's batches (merge.py) and the
retirement policy over the whole store (retirement.py), one dashboard at a time, so that a
store's states may be read as it reaches them and go once folded (:class:`Stored`);
:func:`prune_change` removes what ``prune`` names. Both are safe to repeat on a fresher read,
which is what lets the branch store retry them (stores/__init__.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

from ivy_matrix.model import DashboardId, DashboardState, Trend
from ivy_matrix.state.merge import DEFAULT_HISTORY, RUNS_KEPT, Batch, Batches, Made, apply_batch
from ivy_matrix.state.retirement import (
    Removal,
    batch_runs,
    retire,
    retirement_horizon,
    runs_kept,
    store_runs,
    within_window,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class DashboardReport:
    """What one update changed in one dashboard (``--summary-json`` shows these)."""

    changed_cells: int = 0
    new_rows: int = 0
    new_backends: int = 0
    retired_rows: tuple[str, ...] = ()
    retired_backends: tuple[str, ...] = ()
    # Every row retired: the dashboard's state, file and index entry go.
    removed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Merged:
    """Every dashboard's state after a change, and what the change did.

    ``changed`` are the keys whose state must be saved (anything changed, history included);
    ``removed`` the dashboards that are gone (their state and files are deleted); ``reports``
    has one entry per dashboard the change reached; ``runs`` the run ids whose results the
    change brought. Stores fold this in and hand it back; a store that keeps a trend
    (trend.py) adds it as ``trend`` when it renders (None: it keeps none, or did not render).

    A store that numbers its revisions (the local store's ledger, ledger.py) adds
    ``revision``, the revision these states are, and ``revision_before``, the one they were
    read at when nothing else changed them since (None: unknown), so that the output folder
    renders only ``changed`` and ``removed`` when it shows ``revision_before``
    (targets/files.py).
    """

    states: Mapping[DashboardId, DashboardState]
    changed: tuple[str, ...] = ()
    removed: tuple[DashboardState, ...] = ()
    reports: Mapping[str, DashboardReport] = field(default_factory=dict)
    runs: tuple[int, ...] = ()
    trend: Trend | None = None
    revision: str | None = None
    revision_before: str | None = None

    @property
    def changed_cells(self) -> int:
        return sum(report.changed_cells for report in self.reports.values())

    def ordered(self) -> list[DashboardState]:
        """Every dashboard's state, by key."""
        return sorted(self.states.values(), key=lambda s: s.key)

    def to_save(self) -> dict[DashboardId, DashboardState]:
        """The states whose key is in ``changed``, in that order."""
        by_key = {state.key: state for state in self.states.values()}
        return {by_key[key].id: by_key[key] for key in self.changed}


class Stored(Mapping[DashboardId, DashboardState]):
    """A store's dashboards, each state read when it is asked for and kept only until it is
    folded, so that a fold holds one dashboard's old state at a time.

    Like :class:`~ivy_matrix.state.merge.Batches`, what the whole store holds is said first:
    ``runs``, every run id its dashboards hold (the retirement window needs them before any
    dashboard is folded), and ``backends``, their backends. ``read`` reads one dashboard's
    state; a state asked for again is the same object until :func:`merge_batches` has folded
    it (a change that looks at every state before it changes any, as prune does, holds them
    all, as a dict would). ``folded`` hears each dashboard's state once it is folded (``None``:
    the dashboard went) and whether it must be saved, while the state read is still there:
    the store takes what it needs of it then (the local store: the text to save).
    """

    __slots__ = ("_dashboards", "_kept", "_read", "backends", "folded", "runs")

    def __init__(
        self,
        dashboards: Iterable[DashboardId],
        *,
        runs: Collection[int],
        backends: Collection[str],
        read: Callable[[DashboardId], DashboardState],
        folded: Folded | None = None,
    ) -> None:
        self._dashboards = dict.fromkeys(dashboards)
        self._read = read
        self._kept: dict[DashboardId, DashboardState] = {}
        self.runs = runs
        self.backends = backends
        self.folded = folded

    def __getitem__(self, dashboard: DashboardId) -> DashboardState:
        if dashboard not in self._dashboards:
            raise KeyError(dashboard)
        state = self._kept.get(dashboard)
        if state is None:
            state = self._kept[dashboard] = self._read(dashboard)
        return state

    def __contains__(self, dashboard: object) -> bool:
        return dashboard in self._dashboards

    def __iter__(self) -> Iterator[DashboardId]:
        return iter(self._dashboards)

    def __len__(self) -> int:
        return len(self._dashboards)

    def let_go(self, dashboard: DashboardId, state: DashboardState | None, *, save: bool) -> None:
        """``dashboard`` is folded into ``state``: the store hears it, and the state read goes."""
        if self.folded is not None:
            self.folded(dashboard, state, save)
        self._kept.pop(dashboard, None)


# What a :class:`Stored` hears as each dashboard is folded: its id, its state after the fold
# (None: it went) and whether that state must be saved.
Folded = Callable[[DashboardId, "DashboardState | None", bool], None]


def held_runs(states: Mapping[DashboardId, DashboardState]) -> Collection[int]:
    """Every run id ``states`` hold (a :class:`Stored` says them without reading a state)."""
    if isinstance(states, Stored):
        return states.runs
    return store_runs(states.values())


def held_backends(states: Mapping[DashboardId, DashboardState]) -> Collection[str]:
    """Every backend of ``states`` (a :class:`Stored` says them without reading a state)."""
    if isinstance(states, Stored):
        return states.backends
    return {name for state in states.values() for name in state.backend_names}


def merge_batches(
    states: Mapping[DashboardId, DashboardState],
    batches: Sequence[Batch] | Batches,
    *,
    history: int = DEFAULT_HISTORY,
    retire_after_runs: int = 0,
    other_runs: Collection[int] = (),
) -> Merged:
    """Apply every batch, then the retirement policy. Safe to repeat on a fresh read.

    ``batches``: a sequence, or :class:`~ivy_matrix.state.merge.Batches` (the runs they bring
    said first, each batch built as it is merged and let go after); one per dashboard
    (merge.join_batches joins those of several legs).

    Retirement looks at every dashboard of the store, not only those that got results: rows
    and columns age against the runs the whole store has seen (retirement.retire).
    ``other_runs`` are the runs of the store's dashboards not in ``states`` (a store that
    reads only what it touches keeps them apart): they count in the window; retiring in
    those dashboards is the store's to do (it reads the ones with something to retire).

    Each dashboard is merged, retired and let go in turn: its batch's, then the others' in
    key order. The window is known first (the runs held, brought and others'), and it is the
    retirement's too: a merge adds only runs inside it. So ``states`` may be a
    :class:`Stored`, whose old states are then read one at a time and go once folded.
    """
    if isinstance(batches, Batches):
        brought, each = set(batches.runs), batches.each
    else:
        brought, each = batch_runs(batches), batches
    runs = set(held_runs(states)) | brought | set(other_runs)
    horizon = retirement_horizon(sorted(runs, reverse=True), retire_after_runs)
    fold = _Fold(states, horizon)
    kept = runs_kept(retire_after_runs)
    made = Made()  # what the batches share (apply_batch)
    for given in each:
        batch = within_window(given, horizon)
        if batch.dashboard in fold.reached:
            raise ValueError(f"two batches for dashboard {batch.dashboard.key}: join them first")
        before = states.get(batch.dashboard)
        if not batch.cells and before is None:
            continue  # only results older than the window, for a dashboard that is gone
        result = apply_batch(before, batch, history=history, runs_kept=kept, made=made)
        fold.reports[result.state.key] = DashboardReport(
            changed_cells=result.changed_cells,
            new_rows=result.new_rows,
            new_backends=result.new_backends,
        )
        fold.settle(batch.dashboard, before, result.state, changed=result.state_changed)
        del before, result  # the old state goes before the next is read
    for dashboard in sorted((d for d in states if d not in fold.reached), key=lambda d: d.key):
        before = states[dashboard]
        fold.settle(dashboard, before, before, changed=False)
        del before
    return Merged(
        states={d: fold.merged[d] for d in chain(states, fold.merged) if d in fold.merged},
        changed=(*fold.changed, *sorted(fold.retired)),
        removed=tuple(sorted(fold.removed, key=lambda s: s.key)),
        reports=fold.reports,
        runs=tuple(sorted(brought)),
    )


def window_horizon(
    states: Mapping[DashboardId, DashboardState], after_runs: int, other_runs: Collection[int]
) -> int | None:
    """The retirement horizon of a store whose dashboards are ``states`` and others whose
    runs are ``other_runs``."""
    runs = set(store_runs(states.values())) | set(other_runs)
    return retirement_horizon(sorted(runs, reverse=True)[:RUNS_KEPT], after_runs)


class _Fold:
    """What :func:`merge_batches` keeps across dashboards: each one's state after the fold,
    what changed (``changed``: by its batch, in their order; ``retired``: by retirement
    alone, said after them in key order), what went, and the reports."""

    def __init__(self, states: Mapping[DashboardId, DashboardState], horizon: int | None) -> None:
        self.horizon = horizon
        self.stored = states if isinstance(states, Stored) else None
        self.reached: set[DashboardId] = set()
        self.merged: dict[DashboardId, DashboardState] = {}
        self.changed: list[str] = []
        self.retired: list[str] = []
        self.removed: list[DashboardState] = []
        self.reports: dict[str, DashboardReport] = {}

    def settle(
        self,
        dashboard: DashboardId,
        before: DashboardState | None,
        state: DashboardState,
        *,
        changed: bool,
    ) -> None:
        """Retire in ``state`` (``before`` merged; ``changed`` by it) and keep what is left."""
        self.reached.add(dashboard)
        removal = retire(state, self.horizon)
        after: DashboardState | None = state
        if removal.state is state:
            if changed:
                self.changed.append(state.key)
        else:
            report = self.reports.get(state.key, DashboardReport())
            self.reports[state.key] = DashboardReport(
                changed_cells=report.changed_cells,
                new_rows=report.new_rows,
                new_backends=report.new_backends,
                retired_rows=removal.rows,
                retired_backends=removal.backends,
                removed=removal.state is None,
            )
            if removal.state is None:
                self.removed.append(state)
                after, changed = None, False
            elif removal.state == before:
                # Results older than the window came back and retired again: nothing to save.
                after, changed = before, False
            else:
                after = removal.state
                (self.changed if changed else self.retired).append(state.key)
                changed = True
        if after is not None:
            self.merged[dashboard] = after
        if self.stored is not None:
            self.stored.let_go(dashboard, after, save=changed)


def prune_change(
    states: Mapping[DashboardId, DashboardState], removals: Mapping[DashboardId, Removal]
) -> Merged:
    """``states`` after ``removals`` (retirement.prune's answer), as a store's change.

    Each changed dashboard's report names what went (``retired_rows``/``retired_backends``,
    ``removed`` when the whole dashboard did).
    """
    left = dict(states)
    changed: list[str] = []
    removed: list[DashboardState] = []
    reports: dict[str, DashboardReport] = {}
    for dashboard, removal in sorted(removals.items(), key=lambda item: item[0].key):
        if removal.state is None:
            removed.append(left.pop(dashboard))
        else:
            left[dashboard] = removal.state
            changed.append(dashboard.key)
        reports[dashboard.key] = DashboardReport(
            retired_rows=removal.rows,
            retired_backends=removal.backends,
            removed=removal.state is None,
        )
    return Merged(states=left, changed=tuple(changed), removed=tuple(removed), reports=reports)
