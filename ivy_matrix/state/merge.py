"""Fold new results into a dashboard's state, in run order.

Pure: no I/O. The rules:

- A cell keeps the ``history`` newest entries by run (run id, then attempt, then job id). The
  newest one is what the cell shows, so an older, slower run never overwrites a newer result;
  it only fills in the history behind it, if there is room.
- Two results of the same run for the same cell are combined: the worse outcome wins.
- A row or column is ordered by where it first appeared: the oldest run that had it, then its
  position in that run's results.
- A result's duration (durations.py) goes where the result goes: it is kept, combined away or
  dropped with it.

Together these make applying results idempotent (the same results twice change nothing) and
order-independent (results of different runs give the same state in any order), which is what
lets concurrent writers retry freely.

Retirement and prune are in retirement.py; fold.py folds one update's batches into the
store's states with both. :func:`union_states` joins two states by the rules above.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from ivy_matrix.model import (
    NO_TIMES,
    Cell,
    DashboardId,
    DashboardState,
    Entry,
    Row,
    RunKey,
    Seen,
    Timed,
    times_of,
)
from ivy_matrix.state.durations import (
    CODE_WIDTH,
    MILLISECOND_CODES,
    encode,
    joined_times,
    merge_times,
)

DEFAULT_HISTORY = 10
# Enough distinct run ids for any retirement setting we accept (see config.MAX_RETIRE_AFTER_RUNS);
# an update keeps fewer, as many as its retirement window needs (retirement.runs_kept).
RUNS_KEPT = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """One update's results for one dashboard: row -> backend -> entry, in first-seen order,
    and their durations (``times``: row -> backend -> a Timing, or the cell's result as the
    update read it; none where missing or of no timed case)."""

    dashboard: DashboardId
    cells: Mapping[str, Mapping[str, Entry]]
    times: Mapping[str, Mapping[str, Timed]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Batches:
    """An update's batches (``each``: an iterable gone through once, so that they can be
    built one at a time as they are merged) and the run ids they bring results from
    (``runs``: known before, as the retirement window needs them first)."""

    runs: Collection[int]
    each: Iterable[Batch]


@dataclass(slots=True)
class Made:
    """What the batches of one merge share as :func:`apply_batch` makes it: each row's first
    place (every dashboard's rows are seen at the same few hundred places of one run), each
    new cell of one entry, by the entry's id (the cell holds the entry, so the id stays its
    while the cell lives), and each row's dict of cells (rows of the same cells, in the same
    order, hold one: a few thousand at 20k rows; nothing changes a row's cells in place, a
    merge changes a copy): one object each, not one per row or per dashboard."""

    places: dict[tuple[RunKey, int], Seen] = field(default_factory=dict)
    cells: dict[int, Cell] = field(default_factory=dict)
    # Each row's cells, by its backends then the ids of its cells (the dict holds the cells,
    # so the ids stay theirs while it is kept).
    row_cells: dict[tuple[object, ...], dict[str, Cell]] = field(default_factory=dict)


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


def join_batches(batches: Iterable[Batch]) -> list[Batch]:
    """One batch per dashboard out of several (a fan-in job's legs): rows in first-seen order.

    A cell that two batches both fill keeps the entry the dashboard would show: the newer run,
    or for the same run the worse outcome (:func:`combine`). Each dashboard is then merged
    once, so its report counts each changed cell once.
    """
    joined: dict[DashboardId, dict[str, dict[str, Entry]]] = {}
    timed: dict[DashboardId, dict[str, dict[str, Timed]]] = {}
    for batch in batches:
        rows = joined.setdefault(batch.dashboard, {})
        times = timed.setdefault(batch.dashboard, {})
        for row, cells in batch.cells.items():
            mine = rows.setdefault(row, {})
            timings = batch.times.get(row, {})
            for backend, entry in cells.items():
                old = mine.get(backend)
                if old is None or old.run < entry.run:
                    kept = entry
                elif old.run == entry.run:
                    kept = combine(old, entry)
                else:
                    continue
                mine[backend] = kept
                if kept is entry:
                    timing = timings.get(backend)
                    if timing is not None:
                        times.setdefault(row, {})[backend] = timing
                    elif old is not None:
                        times.get(row, {}).pop(backend, None)
    return [
        Batch(dashboard=dashboard, cells=rows, times=timed[dashboard])
        for dashboard, rows in joined.items()
    ]


def merge_cell(cell: Cell | None, entry: Entry, history: int) -> Cell:
    """Return ``cell`` with ``entry`` folded in (the same object when nothing changes)."""
    if cell is None or entry.run > cell.entries[0].run:
        # The usual case: a newer run's result goes first, the oldest falls out.
        older = () if cell is None else cell.entries[: max(history, 1) - 1]
        return Cell(entries=(entry, *older))
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


_run_of = attrgetter("source.run")  # an entry's run, in C (Entry.run is a Python property)


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


# Longer than the usual 60 lines: the per-cell merge loop runs once per cell of every update
# (28,000 at Ivy's size) and is kept as one flat loop over local names.
def apply_batch(  # noqa: C901, PLR0912, PLR0915  -- the per-cell loop, kept flat (see above)
    state: DashboardState | None,
    batch: Batch,
    *,
    history: int = DEFAULT_HISTORY,
    runs_kept: int = RUNS_KEPT,
    made: Made | None = None,
) -> MergeResult:
    """Fold one batch of results into a dashboard's state, which keeps its newest
    ``runs_kept`` run ids. ``made``: what the other batches of one merge made, shared with
    them (:class:`Made`)."""
    if made is None:
        made = Made()
    places = made.places
    if state is None:
        state = DashboardState(id=batch.dashboard)
    rows = {row.name: row for row in state.rows}
    runs = set(state.runs)
    # Per backend in this batch: its position, and the oldest run that reported it here.
    backend_first: dict[str, tuple[RunKey, int]] = {}
    # A new cell holding one entry is shared by every row that gets that same entry.
    fresh = made.cells
    cells_alike = made.row_cells
    alike: dict[tuple[int, int], Cell] = {}
    changed = new_rows = 0
    state_changed = False
    filled = ((row_name, cells) for row_name, cells in batch.cells.items() if cells)
    new_seen = tuple.__new__  # Seen's own __new__ is a Python function: one call per row
    batch_times = batch.times
    no_timing: Mapping[str, Timed] = {}
    encoded = MILLISECOND_CODES.get  # the code of a duration of whole milliseconds under 1 s
    for seq, (row_name, cells) in enumerate(filled):
        place = (min(map(_run_of, cells.values())), seq)
        seen = places.get(place)
        if seen is None:
            seen = places[place] = new_seen(Seen, place)
        row = rows.get(row_name)
        old_times: Mapping[str, str] = NO_TIMES
        if row is None:
            new_rows += 1
            row_cells: dict[str, Cell] = {}
            first_seen = seen
        else:
            row_cells = dict(row.cells)
            old_times = row.times
            first_seen = min(row.first_seen, seen)
        timings = batch_times.get(row_name, no_timing)
        row_times: dict[str, str] | None = None  # made when a duration changes
        row_changed = row is None or first_seen != row.first_seen
        for backend, entry in cells.items():
            first = backend_first.get(backend)
            if first is None or entry.source.run != first[0]:
                _note_run(backend_first, runs, backend, entry.source.run)
            old = row_cells.get(backend)
            if old is None:
                merged = fresh.get(id(entry))
                if merged is None:
                    merged = fresh[id(entry)] = Cell(entries=(entry,))
            else:
                # Cells alike (one stored history, one new entry) merge into one shared cell:
                # merge_cell is a function of the two, and sharing keeps every later pass
                # (saving, drawing, totals) to one look per distinct cell.
                key = (id(old), id(entry))
                merged = alike.get(key)
                if merged is None:
                    merged = alike[key] = merge_cell(old, entry, history)
            if merged is not old:
                row_changed = True
                row_cells[backend] = merged
                if old is None or old.latest != merged.latest:
                    changed += 1
                before = old_times.get(backend)
                timing = timings.get(backend)
                after: str | None
                if timing is None:
                    # No duration in this result: none on either side, or the older ones'.
                    after = (
                        None if before is None else merge_times(old, before, merged, entry, None)
                    )
                elif (
                    (timed := timing.timed)
                    and (counts := entry.counts) is not None
                    and timed == sum(counts)
                    and (entries := merged.entries)[0] is entry
                    and (old is None or len(entries) == 1 or entries[1] is old.entries[0])
                    and (before is None or "|" not in before)
                ):
                    # The usual cell: a new one, or a newer result of all its cases timed on
                    # top of the older ones (merge_times' first case, without a call).
                    seconds = timing.seconds
                    after = encoded(seconds) or encode(seconds)
                    if before and old is not None:
                        after = (after + before)[: CODE_WIDTH * len(entries)].rstrip("~")
                else:
                    after = merge_times(old, before, merged, entry, timing)
                if after is not before:
                    if row_times is None:
                        row_times = dict(old_times) if old_times else {}
                    if after is None:
                        del row_times[backend]
                    else:
                        row_times[backend] = after
        if row_changed:
            state_changed = True
            # Changed durations held as a Times (model.py): a tuple, not a dict a row.
            row_times_held = old_times if row_times is None else times_of(row_times)
            held_cells = cells_alike.setdefault(
                (*row_cells, *map(id, row_cells.values())), row_cells
            )
            rows[row_name] = Row(row_name, first_seen, held_cells, row_times_held)
    backends = dict(state.backends)
    new_backends = sum(
        _note_backend(backends, backend, Seen(run, index))
        for backend, (run, index) in backend_first.items()
    )
    new_state = DashboardState(
        id=state.id,
        backends=_sorted_backends(backends),
        rows=_sorted_rows(rows) if state_changed else state.rows,
        runs=tuple(sorted(runs, reverse=True)[:runs_kept]),
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


def union_states(
    a: DashboardState, b: DashboardState, *, history: int = DEFAULT_HISTORY
) -> DashboardState:
    """Both states' results in one, by the rules above (newest run shows).

    Used when two issues of one dashboard turn up (two jobs created one at once): what was
    written into the one that is closed is folded into the one that is kept.
    """
    rows: dict[str, Row] = {row.name: row for row in a.rows}
    for row in b.rows:
        mine = rows.get(row.name)
        if mine is None:
            rows[row.name] = row
            continue
        cells: dict[str, Cell] = dict(mine.cells)
        times: dict[str, str] = dict(mine.times)
        for backend, cell in row.cells.items():
            merged = cells.get(backend)
            for entry in cell.entries:
                merged = merge_cell(merged, entry, history)
            if merged is not None:
                parts = [(cell, row.times.get(backend))]
                if backend in mine.cells:
                    parts.insert(0, (mine.cells[backend], mine.times.get(backend)))
                cells[backend] = merged
                joined = joined_times(merged, parts)
                if joined is None:
                    times.pop(backend, None)
                else:
                    times[backend] = joined
        rows[row.name] = Row(
            row.name, min(mine.first_seen, row.first_seen), cells, times or NO_TIMES
        )
    backends: dict[str, Seen] = dict(a.backends)
    for name, seen in b.backends:
        _note_backend(backends, name, seen)
    return DashboardState(
        id=a.id,
        backends=_sorted_backends(backends),
        rows=_sorted_rows(rows),
        runs=tuple(sorted(set(a.runs) | set(b.runs), reverse=True)[:RUNS_KEPT]),
    )
