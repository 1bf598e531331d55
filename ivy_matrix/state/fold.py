"""The changes a store folds in: one update's results, or a prune, as a typed :class:`Merged`.

Pure: no I/O. :func:`merge_batches` applies an update's batches (merge.py) and then the
retirement policy over the whole store (retirement.py); :func:`prune_change` removes what
``prune`` names. Both are safe to repeat on a fresher read, which is what lets the branch store
retry them (stores/__init__.py).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

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
    said first, each batch built as it is merged and let go after).

    Retirement looks at every dashboard of the store, not only those that got results: rows
    and columns age against the runs the whole store has seen (retirement.retire).
    ``other_runs`` are the runs of the store's dashboards not in ``states`` (a store that
    reads only what it touches keeps them apart): they count in the window; retiring in
    those dashboards is the store's to do (it reads the ones with something to retire).
    """
    merged = dict(states)
    changed: list[str] = []
    reports: dict[str, DashboardReport] = {}
    if isinstance(batches, Batches):
        brought, each = set(batches.runs), batches.each
    else:
        brought, each = batch_runs(batches), batches
    runs = set(store_runs(states.values())) | brought | set(other_runs)
    horizon = retirement_horizon(sorted(runs, reverse=True), retire_after_runs)
    kept = runs_kept(retire_after_runs)
    made = Made()  # what the batches share (apply_batch)
    for given in each:
        batch = within_window(given, horizon)
        if not batch.cells and batch.dashboard not in merged:
            continue  # only results older than the window, for a dashboard that is gone
        result = apply_batch(
            merged.get(batch.dashboard), batch, history=history, runs_kept=kept, made=made
        )
        merged[result.state.id] = result.state
        if result.state_changed:
            changed.append(result.state.key)
        reports[result.state.key] = DashboardReport(
            changed_cells=result.changed_cells,
            new_rows=result.new_rows,
            new_backends=result.new_backends,
        )
    removed = _retire_all(
        states, merged, changed, reports, retire_after_runs, other_runs=other_runs
    )
    return Merged(
        states=merged,
        changed=tuple(changed),
        removed=removed,
        reports=reports,
        runs=tuple(sorted(brought)),
    )


def retire_merged(
    before: Mapping[DashboardId, DashboardState],
    merged: Merged,
    *,
    retire_after_runs: int,
    other_runs: Collection[int] = (),
) -> Merged:
    """``merged`` (a change of ``before``) with the retirement policy applied to each of its
    dashboards; ``other_runs`` as for :func:`merge_batches`."""
    states = dict(merged.states)
    changed = list(merged.changed)
    reports = dict(merged.reports)
    removed = _retire_all(
        before, states, changed, reports, retire_after_runs, other_runs=other_runs
    )
    return Merged(
        states=states,
        changed=tuple(changed),
        removed=(*merged.removed, *removed),
        reports=reports,
        runs=merged.runs,
        trend=merged.trend,
    )


def window_horizon(
    states: Mapping[DashboardId, DashboardState], after_runs: int, other_runs: Collection[int]
) -> int | None:
    """The retirement horizon of a store whose dashboards are ``states`` and others whose
    runs are ``other_runs``."""
    runs = set(store_runs(states.values())) | set(other_runs)
    return retirement_horizon(sorted(runs, reverse=True)[:RUNS_KEPT], after_runs)


def _retire_all(
    before: Mapping[DashboardId, DashboardState],
    merged: dict[DashboardId, DashboardState],
    changed: list[str],
    reports: dict[str, DashboardReport],
    after_runs: int,
    *,
    other_runs: Collection[int] = (),
) -> tuple[DashboardState, ...]:
    """Retire in every dashboard of ``merged`` (in place); return the dashboards that went."""
    horizon = window_horizon(merged, after_runs, other_runs)
    removed: list[DashboardState] = []
    for dashboard, state in sorted(merged.items(), key=lambda item: item[1].key):
        removal = retire(state, horizon)
        if removal.state is state:
            continue
        report = reports.get(state.key, DashboardReport())
        reports[state.key] = DashboardReport(
            changed_cells=report.changed_cells,
            new_rows=report.new_rows,
            new_backends=report.new_backends,
            retired_rows=removal.rows,
            retired_backends=removal.backends,
            removed=removal.state is None,
        )
        if removal.state is None:
            del merged[dashboard]
            removed.append(state)
            if state.key in changed:
                changed.remove(state.key)
        elif removal.state == before.get(dashboard):
            # Results older than the window came back and retired again: nothing to save.
            merged[dashboard] = before[dashboard]
            if state.key in changed:
                changed.remove(state.key)
        else:
            merged[dashboard] = removal.state
            if state.key not in changed:
                changed.append(state.key)
    return tuple(removed)


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
