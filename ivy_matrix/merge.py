"""Fold new results into a dashboard's state, in run order.

Pure: no I/O. The rules:

- A cell keeps the ``history`` newest entries by run (run id, then attempt, then job id). The
  newest one is what the cell shows, so an older, slower run never overwrites a newer result;
  it only fills in the history behind it, if there is room.
- Two results of the same run for the same cell are combined: the worse outcome wins.
- A row or column is ordered by where it first appeared: the oldest run that had it, then its
  position in that run's results.

Together these make applying results idempotent (the same results twice change nothing) and
order-independent (results of different runs give the same state in any order), which is what
lets concurrent writers retry freely.

Retirement ages every dashboard against the runs the whole store has seen (:func:`store_runs`,
a union of run ids), so a dashboard that no longer gets results ages like the others; and
:func:`prune` removes named dashboards, columns or rows on purpose.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ivy_matrix.errors import InputError
from ivy_matrix.model import Cell, DashboardId, DashboardState, Entry, Row, RunKey, Seen

DEFAULT_HISTORY = 10
# Enough distinct run ids for any retirement setting we accept (see config.MAX_RETIRE_AFTER_RUNS).
RUNS_KEPT = 1000
# Names listed when prune is asked for one that does not exist.
PRUNE_NAMES_SHOWN = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """One update's results for one dashboard: row -> backend -> entry, in first-seen order."""

    dashboard: DashboardId
    cells: Mapping[str, Mapping[str, Entry]]


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeResult:
    """The new state and what changed in what the dashboard shows."""

    state: DashboardState
    changed_cells: int
    new_rows: int
    new_backends: int
    # Whether anything at all changed, history included (then the state must be saved).
    state_changed: bool


def _entry_rank(entry: Entry) -> tuple[int, str]:
    return (entry.outcome.severity, entry.source.url)


def combine(a: Entry, b: Entry) -> Entry:
    """Combine two entries of the same run: the worse outcome wins, then a fixed tie-break.

    When both say the same, the earlier record is kept, so re-applying results later changes
    nothing.
    """
    rank_a, rank_b = _entry_rank(a), _entry_rank(b)
    if rank_a != rank_b:
        return a if rank_a > rank_b else b
    return a if a.source.time <= b.source.time else b


def merge_cell(cell: Cell | None, entry: Entry, history: int) -> Cell:
    """Return ``cell`` with ``entry`` folded in (the same object when nothing changes)."""
    if cell is None:
        return Cell(entries=(entry,))
    entries = list(cell.entries)
    for index, existing in enumerate(entries):
        if existing.run == entry.run:
            if existing is entry or (
                existing.outcome is entry.outcome
                and existing.source.url == entry.source.url
                and existing.source.time <= entry.source.time
            ):
                return cell  # the same result again (a re-run of the same job's results)
            combined = combine(existing, entry)
            if combined == existing:
                return cell
            entries[index] = combined
            return Cell(entries=tuple(entries))
    entries.append(entry)
    entries.sort(key=lambda e: e.run, reverse=True)
    del entries[max(history, 1) :]
    if entries == list(cell.entries):
        return cell
    return Cell(entries=tuple(entries))


def _sorted_rows(rows: Mapping[str, Row]) -> tuple[Row, ...]:
    return tuple(sorted(rows.values(), key=lambda r: (r.first_seen, r.name)))


def _sorted_backends(backends: Mapping[str, Seen]) -> tuple[tuple[str, Seen], ...]:
    return tuple(sorted(backends.items(), key=lambda item: (item[1], item[0])))


def _note_backend(backends: dict[str, Seen], backend: str, seen: Seen) -> int:
    """Record where a column was seen; return 1 if it is new."""
    known = backends.get(backend)
    if known is None or seen < known:
        backends[backend] = seen
    return int(known is None)


def _note_run(
    backend_first: dict[str, tuple[RunKey, int]], runs: set[int], backend: str, run: RunKey
) -> None:
    """Record a backend's oldest run in this batch and its position, and the run id."""
    first = backend_first.get(backend)
    if first is None:
        backend_first[backend] = (run, len(backend_first))
    elif run < first[0]:
        backend_first[backend] = (run, first[1])
    elif run == first[0]:
        return  # the usual case: every cell of a backend comes from one job
    runs.add(run.run_id)


def apply_batch(
    state: DashboardState | None, batch: Batch, *, history: int = DEFAULT_HISTORY
) -> MergeResult:
    """Fold one batch of results into a dashboard's state."""
    if state is None:
        state = DashboardState(id=batch.dashboard)
    rows = {row.name: row for row in state.rows}
    runs = set(state.runs)
    # Per backend in this batch: its position, and the oldest run that reported it here.
    backend_first: dict[str, tuple[RunKey, int]] = {}
    # A new cell holding one entry is shared by every row that gets that same entry.
    fresh: dict[int, Cell] = {}
    changed = new_rows = 0
    state_changed = False
    filled = ((row_name, cells) for row_name, cells in batch.cells.items() if cells)
    for seq, (row_name, cells) in enumerate(filled):
        seen = Seen(min(entry.run for entry in cells.values()), seq)
        row = rows.get(row_name)
        if row is None:
            new_rows += 1
            row_cells: dict[str, Cell] = {}
            first_seen = seen
        else:
            row_cells = dict(row.cells)
            first_seen = min(row.first_seen, seen)
        row_changed = row is None or first_seen != row.first_seen
        for backend, entry in cells.items():
            _note_run(backend_first, runs, backend, entry.run)
            old = row_cells.get(backend)
            if old is None:
                merged = fresh.get(id(entry))
                if merged is None:
                    merged = fresh[id(entry)] = Cell(entries=(entry,))
            else:
                merged = merge_cell(old, entry, history)
            if merged is not old:
                row_changed = True
                row_cells[backend] = merged
                if old is None or old.latest != merged.latest:
                    changed += 1
        if row_changed:
            state_changed = True
            rows[row_name] = Row(name=row_name, first_seen=first_seen, cells=row_cells)
    backends = dict(state.backends)
    new_backends = sum(
        _note_backend(backends, backend, Seen(run, index))
        for backend, (run, index) in backend_first.items()
    )
    new_state = DashboardState(
        id=state.id,
        backends=_sorted_backends(backends),
        rows=_sorted_rows(rows) if state_changed else state.rows,
        runs=tuple(sorted(runs, reverse=True)[:RUNS_KEPT]),
    )
    if not state_changed and new_state == state:
        return MergeResult(
            state=state, changed_cells=0, new_rows=0, new_backends=0, state_changed=False
        )
    return MergeResult(
        state=new_state,
        changed_cells=changed,
        new_rows=new_rows,
        new_backends=new_backends,
        state_changed=True,
    )


def row_newest_run_id(row: Row) -> int:
    """The newest run id that reported this row on any backend."""
    return max((cell.latest.run.run_id for cell in row.cells.values()), default=-1)


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
    return Batch(dashboard=batch.dashboard, cells=cells)


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
            kept.append(row if cells is row.cells else row._replace(cells=cells))
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
