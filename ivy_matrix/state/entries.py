"""From an update's cells to the batches a store merges: one entry per cell, with its job.

Pure: no I/O. A cell's entry is its result (:class:`~ivy_matrix.results.cells.CellResult`)
with the source that produced it (the job a backend's results came from) and the signature of
its failure line (signature.py). Cells alike share one entry, so that merged they are one cell
object; their durations, which differ from cell to cell, go beside them (``Batch.times``:
the cells' results themselves).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ivy_matrix.model import Entry, Outcome, Source
from ivy_matrix.results.cells import CellResult, Collected
from ivy_matrix.results.signature import Signer
from ivy_matrix.state.merge import Batch


def build_batches(
    collected: Collected,
    source_for: Callable[[str], Source],
    signer: Signer | None = None,
    *,
    take: bool = False,
) -> Iterator[Batch]:
    """Turn gathered cells into batches of entries, one per dashboard, each built when it is
    asked for (a merge holds one dashboard's batch at a time, not every cell twice over).

    ``source_for(backend)`` says which job produced a backend's results (in a fan-in job each
    backend came from its own matrix leg); ``signer`` computes the signature of each failing
    cell's message (the default words when not given). A dashboard that only files recorded
    before reached gets an empty batch. With ``take``, each dashboard's cells leave
    ``collected`` as its batch is built: they are then the batch's alone, and go when it does
    (an update that folds its cells once lets each dashboard's go once it is folded; the
    runs they bring are known before: :func:`runs_brought`).
    """
    signer = signer or Signer()
    # Cells with the same result share one entry (and so, when merged, one cell object): most
    # are one passing case, and one failure line is often that of many cells. Results without
    # a failure line are found by the identity of their outcome and counts first
    # (Collector._commit shares them: cells of different durations hold one counts object),
    # then by value; those with one (each failing cell's counts are its own) by value only.
    # Neither the duration nor the place is part of the entry.
    known: dict[tuple[str, int, int], Entry] = {}
    alike: dict[tuple[str, tuple[object, ...]], Entry] = {}
    # The counts ``known`` is keyed by and no entry holds: kept, so that no other object takes
    # their id while it is a key (with ``take`` the cells read go as they are merged).
    held: list[object] = []

    def entry(backend: str, result: CellResult) -> Entry:
        outcome, counts, message = result[0], result[1], result[2]
        if message:
            return by_value(backend, result)
        key = (backend, id(outcome), id(counts))
        found = known.get(key)
        if found is None:
            found = known[key] = by_value(backend, result)
            if found.counts is not counts:
                held.append(counts)
        return found

    def by_value(backend: str, result: CellResult) -> Entry:
        look = (result[0], result[1], result[2])
        found = alike.get((backend, look))
        if found is None:
            message = result.message if result.outcome is Outcome.FAILURE else ""
            found = alike[backend, look] = Entry(
                source=source_for(backend),
                outcome=result.outcome,
                counts=result.counts,
                message=message,
                signature=signer.signature(message, backend),
            )
        return found

    dashboards = collected.dashboards
    read = list(dashboards)
    for dashboard in read:
        rows = dashboards.pop(dashboard) if take else dashboards[dashboard]
        yield Batch(
            dashboard=dashboard,
            cells={
                row: {backend: entry(backend, result) for backend, result in cells.items()}
                for row, cells in rows.items()
            },
            # The cells' results are their durations (none where no case was timed).
            times=rows,
        )
    # Dashboards only files recorded before reached: an empty batch each, so that the update
    # reports them, unchanged, as a read of those files would.
    reached = set(read)
    for dashboard in collected.touched:
        if dashboard not in reached:
            yield Batch(dashboard=dashboard, cells={})


def runs_brought(collected: Collected, source_for: Callable[[str], Source]) -> set[int]:
    """The run ids the batches of ``collected`` bring results from
    (``retirement.batch_runs`` of :func:`build_batches`), without building them."""
    return {source_for(backend).run.run_id for backend in collected.backends}
