"""From an update's cells to the batches a store merges: one entry per cell, with its job.

Pure: no I/O. A cell's entry is its result (:class:`~ivy_matrix.results.cells.CellResult`)
with the source that produced it (the job a backend's results came from) and the signature of
its failure line (signature.py). Cells alike share one entry, so that merged they are one cell
object; their durations, which differ from cell to cell, go beside them (``Batch.times``:
the cells' results themselves).
"""

from __future__ import annotations

from collections.abc import Callable

from ivy_matrix.model import Entry, Outcome, Source
from ivy_matrix.results.cells import CellResult, Collected
from ivy_matrix.results.signature import Signer
from ivy_matrix.state.merge import Batch


def build_batches(
    collected: Collected, source_for: Callable[[str], Source], signer: Signer | None = None
) -> list[Batch]:
    """Turn gathered cells into batches of entries, one per dashboard.

    ``source_for(backend)`` says which job produced a backend's results (in a fan-in job each
    backend came from its own matrix leg); ``signer`` computes the signature of each failing
    cell's message (the default words when not given). A dashboard that only files recorded
    before reached gets an empty batch.
    """
    signer = signer or Signer()
    # Cells with the same result share one entry (and so, when merged, one cell object): most
    # are one passing case, and one failure line is often that of many cells. Results are
    # found by the identity of their outcome and counts and by their failure line first
    # (Collector._commit shares them: cells of different durations hold one counts object),
    # then by value. Neither the duration nor the place is part of the entry.
    known: dict[tuple[str, int, int, str], Entry] = {}
    alike: dict[tuple[str, tuple[object, ...]], Entry] = {}

    def entry(backend: str, result: CellResult) -> Entry:
        outcome, counts, message = result[0], result[1], result[2]
        key = (backend, id(outcome), id(counts), message)
        found = known.get(key)
        if found is None:
            look = (outcome, counts, message)
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
            known[key] = found
        return found

    batches = [
        Batch(
            dashboard=dashboard,
            cells={
                row: {backend: entry(backend, result) for backend, result in cells.items()}
                for row, cells in rows.items()
            },
            # The cells' results are their durations (none where no case was timed).
            times=rows,
        )
        for dashboard, rows in collected.dashboards.items()
    ]
    # Dashboards only files recorded before reached: an empty batch each, so that the update
    # reports them, unchanged, as a read of those files would.
    batches.extend(
        Batch(dashboard=dashboard, cells={})
        for dashboard in collected.touched
        if dashboard not in collected.dashboards
    )
    return batches
