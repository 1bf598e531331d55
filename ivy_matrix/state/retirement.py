r"""Retirement and prune: what leaves the dashboards, by age or on purpose.

Pure: no I/O. Retirement ages every dashboard against the runs the whole store has seen
(:func:`store_runs`, a union of run ids), so a dashboard that no longer gets results ages like
the others: a row or column that none of the store's last ``retire-after-runs`` runs reported
goes, and a dashboard with no row left goes too. :func:`prune` removes named dashboards,
columns or rows on purpose. Both return :class:`Removal`\ s.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ivy_matrix.errors import InputError
from ivy_matrix.model import DashboardId, DashboardState, Row
from ivy_matrix.state.durations import without_backends
from ivy_matrix.state.merge import RUNS_KEPT, Batch

# Names listed when prune is asked for one that does not exist.
PRUNE_NAMES_SHOWN = 20


def store_runs(states: Iterable[DashboardState]) -> tuple[int, ...]:
    """The runs the store as a whole has seen: every run id that brought results to any of its
    dashboards, newest first (at most ``RUNS_KEPT``).

    A union of sets: it does not depend on the order results arrived in, and a run counts once
    however many legs or attempts it has.
    """
    runs: set[int] = set()
    for state in states:
        runs.update(state.runs)
    return tuple(sorted(runs, reverse=True)[:RUNS_KEPT])


# The fewest run ids a dashboard keeps: the index file's trend parts look at its newest two,
# and the expectation rules at the store's last 10 by default (expect/proposal.py).
MIN_RUNS_KEPT = 20


def runs_kept(after_runs: int) -> int:
    """How many of its newest run ids each dashboard keeps (``DashboardState.runs``) when
    rows retire after ``after_runs`` runs: ``after_runs`` (at least ``MIN_RUNS_KEPT``), or
    ``RUNS_KEPT`` when nothing retires.

    The window needs no more: the store's newest N runs are each the newest N of some
    dashboard's (a run among the store's newest N is among the newest N of any dashboard
    that has it), so each dashboard keeping its newest N gives the same horizon. Without it
    the list grew by one id every run, to ``RUNS_KEPT`` (11 KB per dashboard, in its state
    and in the branch's index file). Raising ``--retire-after-runs`` later finds fewer runs
    than the new window: nothing retires until the store has seen that many again.
    """
    if after_runs <= 0:
        return RUNS_KEPT
    return max(after_runs, MIN_RUNS_KEPT)


def retirement_horizon(runs: Sequence[int], after_runs: int) -> int | None:
    """The oldest run id among the newest ``after_runs`` of ``runs`` (newest first).

    A result older than it is outside the retirement window. ``None`` when nothing can retire:
    ``after_runs <= 0`` (never retire) or fewer runs than that seen so far.
    """
    if after_runs <= 0 or len(runs) < after_runs:
        return None
    return runs[after_runs - 1]


def batch_runs(batches: Iterable[Batch]) -> set[int]:
    """The run ids that ``batches`` bring results from."""
    return {
        entry.run.run_id
        for batch in batches
        for cells in batch.cells.values()
        for entry in cells.values()
    }


def within_window(batch: Batch, horizon: int | None) -> Batch:
    """``batch`` without the results older than ``horizon``: they would retire at once.

    Dropping them first is what keeps retirement idempotent: a row that retired and came back
    with newer results does not get its old results back when an old update is applied again.
    """
    if horizon is None:
        return batch
    cells = {}
    for row, by_backend in batch.cells.items():
        kept = {b: e for b, e in by_backend.items() if e.run.run_id >= horizon}
        if kept:
            cells[row] = kept
    if len(cells) == len(batch.cells) and all(
        len(cells[row]) == len(by_backend) for row, by_backend in batch.cells.items()
    ):
        return batch
    return Batch(dashboard=batch.dashboard, cells=cells, times=batch.times)


@dataclass(frozen=True, slots=True, kw_only=True)
class Removal:
    """What retiring or pruning takes out of one dashboard.

    ``state`` is what is left, or ``None`` when nothing is: then the dashboard itself goes.
    ``rows`` and ``backends`` name what was removed, in display order.
    """

    state: DashboardState | None
    rows: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()


def without(
    state: DashboardState, rows: Collection[str] = (), backends: Collection[str] = ()
) -> Removal:
    """``state`` without the given rows and backends (columns).

    A row left with no cell goes too, and so does a column left with no cell; when no row is
    left, so is the dashboard (``Removal.state`` is ``None``).
    """
    kept: list[Row] = []
    removed_rows: list[str] = []
    drop = set(backends)
    for row in state.rows:
        cells = row.cells
        if drop and not drop.isdisjoint(cells):
            cells = {backend: cell for backend, cell in cells.items() if backend not in drop}
        if row.name in rows or not cells:
            removed_rows.append(row.name)
        else:
            kept.append(row if cells is row.cells else without_backends(row, cells))
    used = {backend for row in kept for backend in row.cells}
    removed_backends = tuple(name for name, _ in state.backends if name not in used)
    if not removed_rows and not removed_backends:
        return Removal(state=state)
    left = (
        DashboardState(
            id=state.id,
            backends=tuple(item for item in state.backends if item[0] in used),
            rows=tuple(kept),
            runs=state.runs,
        )
        if kept
        else None
    )
    return Removal(state=left, rows=tuple(removed_rows), backends=removed_backends)


def retire(state: DashboardState, horizon: int | None) -> Removal:
    """Retire what no run since ``horizon`` (see :func:`retirement_horizon`) reported.

    A row whose newest result on every backend is older than the horizon goes; so does a column
    whose newest result in every row is older (a backend dropped from the matrix), with its
    cells; a dashboard left with no row goes too. ``horizon`` ``None`` retires nothing.

    The decisions depend only on the state and the horizon, so retiring twice retires nothing
    more, and a dashboard that no update reaches ages like every other one.
    """
    if horizon is None:
        return Removal(state=state)
    stale_rows: set[str] = set()
    # Columns not yet seen with a result inside the window: usually empty after the first row.
    stale_backends = set(state.backend_names)
    for row in state.rows:
        cells = row.cells
        if not any(cell.latest.run.run_id >= horizon for cell in cells.values()):
            stale_rows.add(row.name)
        elif stale_backends:
            for backend in [b for b in stale_backends if b in cells]:
                if cells[backend].latest.run.run_id >= horizon:
                    stale_backends.discard(backend)
    if not stale_rows and not stale_backends:
        return Removal(state=state)
    return without(state, stale_rows, stale_backends)


def _names(kind: str, wanted: str, existing: Iterable[str], where: str) -> str:
    """Why ``wanted`` cannot be pruned: it is not in ``where``; with what is there."""
    names = sorted(set(existing))
    if not names:
        return f"no {kind} {wanted!r} in {where}: it has none"
    nearest = difflib.get_close_matches(wanted, names, n=3, cutoff=0.5)
    shown = ", ".join(names[:PRUNE_NAMES_SHOWN]) + (
        f", ... ({len(names)} in all)" if len(names) > PRUNE_NAMES_SHOWN else ""
    )
    hint = f"did you mean {', '.join(nearest)}? " if nearest else ""
    return f"no {kind} {wanted!r} in {where}; {hint}it has: {shown}"


def prune(
    states: Mapping[DashboardId, DashboardState],
    *,
    dashboards: Sequence[DashboardId] = (),
    backends: Sequence[str] = (),
    rows: Sequence[str] = (),
    where: str = "the store",
) -> dict[DashboardId, Removal]:
    """What removing named things on purpose does to each dashboard it changes.

    With only ``dashboards``: those dashboards go. With ``backends``: those columns go from the
    named dashboards, or from every dashboard when none is named. With ``rows`` (``dashboards``
    needed): those rows go from the named dashboards. As with retirement, a row or column left
    with no cell goes too, and so does a dashboard left with no row.

    Raises :class:`InputError` when nothing is named, or a name is not in ``where`` (each
    backend and row must be in at least one of the dashboards it is removed from); the message
    lists what exists and the nearest names.
    """
    if not (dashboards or backends or rows):
        raise InputError(
            "prune: nothing to remove; name what goes with --dashboard, --backend or --row"
        )
    if rows and not dashboards:
        raise InputError("prune: --row needs --dashboard: name the dashboard(s) the row(s) go from")
    by_key = {dashboard.key: dashboard for dashboard in states}
    for dashboard in dashboards:
        if dashboard not in states:
            raise InputError(_names("dashboard", dashboard.key, by_key, where))
    if not (backends or rows):
        return {
            dashboard: Removal(
                state=None,
                rows=tuple(row.name for row in states[dashboard].rows),
                backends=states[dashboard].backend_names,
            )
            for dashboard in dashboards
        }
    scope = list(dict.fromkeys(dashboards)) or sorted(states, key=lambda d: d.key)
    in_scope = f"{where} ({', '.join(d.key for d in dashboards)})" if dashboards else where
    known_backends = {name for d in scope for name in states[d].backend_names}
    for backend in backends:
        if backend not in known_backends:
            raise InputError(_names("backend", backend, known_backends, in_scope))
    known_rows = {row.name for d in scope for row in states[d].rows}
    for row in rows:
        if row not in known_rows:
            raise InputError(_names("row", row, known_rows, in_scope))
    removals = {}
    for dashboard in scope:
        removal = without(states[dashboard], set(rows), backends)
        if removal.state is not states[dashboard]:
            removals[dashboard] = removal
    return removals
