"""Gather one update's results into cells: dashboard -> row -> backend -> outcome.

Pure apart from reading the streams it is handed. Each file's cases are gathered on their own
first and added to the rest only when the whole file was read: a file that turns out broken
halfway adds nothing, and is reported, instead of leaving half its cells behind. Memory grows
with the number of cells, not with the size of the files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from ivy_matrix.junit import scan_junit
from ivy_matrix.merge import Batch
from ivy_matrix.model import (
    CaseResult,
    DashboardId,
    Entry,
    FileCounts,
    Outcome,
    ParseProblem,
    Source,
    outcome_of,
    worst,
)
from ivy_matrix.naming import Namer


@dataclass(slots=True)
class Collected:
    """What one update read: per-file counts, problems, and the cells it found."""

    files: list[FileCounts] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)
    # Cases whose backend no rule could name, by file.
    unassigned: dict[str, int] = field(default_factory=dict)
    dashboards: dict[DashboardId, dict[str, dict[str, Outcome]]] = field(default_factory=dict)

    @property
    def case_count(self) -> int:
        return sum(f.tests for f in self.files)

    @property
    def cell_count(self) -> int:
        return sum(len(b) for rows in self.dashboards.values() for b in rows.values())


class Collector:
    """Reads result files one at a time into a :class:`Collected`."""

    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self.collected = Collected()

    def add_file(self, stream: BinaryIO, *, source: str) -> FileCounts:
        """Read one result file; its cells count only if all of it could be read."""
        namer = self.namer
        file_backend = namer.backend_for_file(source)
        pending: dict[tuple[DashboardId, str, str], Outcome] = {}
        unassigned = 0

        def on_case(case: CaseResult) -> None:
            nonlocal unassigned
            backend = file_backend or namer.backend_for_case(case)
            if backend is None:
                unassigned += 1
                return
            dashboard, row = namer.place(case)
            key = (dashboard, row, backend)
            outcome = outcome_of(case.status, flaky=case.flaky)
            old = pending.get(key)
            pending[key] = outcome if old is None else worst(old, outcome)

        counts, problem = scan_junit(stream, source=source, on_case=on_case)
        collected = self.collected
        collected.files.append(counts)
        if problem is not None:
            collected.problems.append(problem)
            return counts
        if unassigned:
            collected.unassigned[source] = unassigned
        dashboards = collected.dashboards
        for (dashboard, row, backend), outcome in pending.items():
            rows = dashboards.setdefault(dashboard, {})
            cells = rows.setdefault(row, {})
            old = cells.get(backend)
            cells[backend] = outcome if old is None else worst(old, outcome)
        return counts


def build_batches(collected: Collected, source_for: Callable[[str], Source]) -> list[Batch]:
    """Turn gathered outcomes into batches of entries, one per dashboard.

    ``source_for(backend)`` says which job produced a backend's results (in a fan-in job each
    backend came from its own matrix leg).
    """
    entries: dict[tuple[str, Outcome], Entry] = {}

    def entry(backend: str, outcome: Outcome) -> Entry:
        found = entries.get((backend, outcome))
        if found is None:
            found = entries[backend, outcome] = Entry(source=source_for(backend), outcome=outcome)
        return found

    return [
        Batch(
            dashboard=dashboard,
            cells={
                row: {backend: entry(backend, outcome) for backend, outcome in cells.items()}
                for row, cells in rows.items()
            },
        )
        for dashboard, rows in collected.dashboards.items()
    ]
