"""Gather one update's results into cells: dashboard -> row -> backend -> cell result.

Pure apart from reading the streams it is handed. Each file's cases are gathered on their own
first and added to the rest only when the whole file was read: a file that turns out broken
halfway adds nothing, and is reported, instead of leaving half its cells behind. Memory grows
with the number of cells, not with the size of the files.

A cell's result is its worst outcome, how many of its cases passed, failed, were skipped or
flaky (a row collapses a test's parametrizations; the counts keep what the row hides), and
the first line of its first failure's message; :func:`build_batches` adds the message's
signature (signature.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import BinaryIO, NamedTuple

from ivy_matrix.junit import cap_name, scan_junit
from ivy_matrix.merge import Batch
from ivy_matrix.model import (
    CaseCounts,
    CaseResult,
    CaseStatus,
    DashboardId,
    Entry,
    Failure,
    FileCounts,
    Outcome,
    ParseProblem,
    Source,
    Totals,
    worst,
)
from ivy_matrix.naming import UNNAMED, Namer, row_name, test_id
from ivy_matrix.signature import Signer


class CellResult(NamedTuple):
    """One cell as an update read it: its worst outcome, its cases and its first failure line."""

    outcome: Outcome
    counts: CaseCounts
    message: str = ""


def combine_results(a: CellResult, b: CellResult) -> CellResult:
    """Two parts of one cell (two files of one update): the worse outcome, the counts added,
    the first message."""
    return CellResult(
        worst(a.outcome, b.outcome),
        CaseCounts(*(x + y for x, y in zip(a.counts, b.counts, strict=True))),
        a.message or b.message,
    )


@dataclass(slots=True)
class Collected:
    """What one update read: per-file counts, problems, and the cells it found."""

    files: list[FileCounts] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)
    # Cases whose backend no rule could name, by file.
    unassigned: dict[str, int] = field(default_factory=dict)
    # How many paths and test ids the backend regexes were tried on, and the first few that
    # they did not match (for the message when none matched).
    paths_tried: int = 0
    unmatched_paths: list[str] = field(default_factory=list)
    ids_tried: int = 0
    unmatched_ids: list[str] = field(default_factory=list)
    # Test cases without a name, by file: how many, and the line of the first.
    nameless: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Per backend: test cases read, failed, errors, skipped (the log's per-backend summary).
    by_backend: dict[str, list[int]] = field(default_factory=dict)
    dashboards: dict[DashboardId, dict[str, dict[str, CellResult]]] = field(default_factory=dict)
    # The first failures read, for annotations (at most FAILURES_KEPT).
    failures: list[Failure] = field(default_factory=list)

    @property
    def backends(self) -> list[str]:
        """Every backend that has a cell, in first-seen order."""
        found: dict[str, None] = {}
        for rows in self.dashboards.values():
            for cells in rows.values():
                found.update(dict.fromkeys(cells))
        return list(found)

    def totals(self) -> Totals:
        """The tallies over every file read."""
        files = self.files
        return Totals(
            files=len(files),
            tests=sum(f.tests for f in files),
            passed=sum(f.passed for f in files),
            failed=sum(f.failed for f in files),
            errors=sum(f.errors for f in files),
            skipped=sum(f.skipped for f in files),
            flaky=sum(f.flaky for f in files),
            problems=len(self.problems),
            unassigned=sum(self.unassigned.values()),
        )


FAILURES_KEPT = 50
SAMPLES_KEPT = 2  # paths or test ids a message shows as not matched
# Where a case's status is counted in a backend's tally: tests, failed, errors, skipped.
_TALLY = {CaseStatus.FAILED: 1, CaseStatus.ERROR: 2, CaseStatus.SKIPPED: 3}
# Outcomes as their severity (model.py) while gathering, so "worst wins" is an int comparison.
_CODES = tuple(sorted(Outcome, key=lambda outcome: outcome.severity))
_SKIPPED, _SUCCESS, _FLAKY, _FAILURE = (
    outcome.severity
    for outcome in (Outcome.SKIPPED, Outcome.SUCCESS, Outcome.FLAKY, Outcome.FAILURE)
)
# A pending cell is a list: [worst code, passed, failed, skipped, flaky]; a case adds one to
# the slot of its bucket.
_PASSED_SLOT, _FAILED_SLOT, _SKIPPED_SLOT, _FLAKY_SLOT = 1, 2, 3, 4


class Collector:
    """Reads result files one at a time into a :class:`Collected`."""

    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self.collected = Collected()
        self._dashboards: list[DashboardId] = []
        self._dashboard_index: dict[DashboardId, int] = {}
        # (classname, file, suite) -> (dashboard index, row prefix): the same few classnames
        # come back for every case, so the split is done once per classname (the one cache
        # of naming: Namer itself is stateless).
        self._places: dict[tuple[str, str, str], tuple[int, str]] = {}

    def _index(self, dashboard: DashboardId) -> int:
        index = self._dashboard_index.get(dashboard)
        if index is None:
            index = self._dashboard_index[dashboard] = len(self._dashboards)
            self._dashboards.append(dashboard)
        return index

    # Longer than the usual 60 lines: ``on_case`` runs once per test case (millions), so it is
    # one flat closure over local names, with no call it can avoid.
    def add_file(self, stream: BinaryIO, *, source: str) -> FileCounts:  # noqa: C901, PLR0915  -- the per-case closure is the hot loop, kept flat
        """Read one result file; its cells count only if all of it could be read."""
        namer = self.namer
        collected = self.collected
        file_backend = namer.backend_for_file(source)
        if file_backend is not None:
            file_backend = cap_name(file_backend)
        elif namer.matches_paths:
            collected.paths_tried += 1
            if len(collected.unmatched_paths) < SAMPLES_KEPT:
                collected.unmatched_paths.append(source)
        per_case = namer.needs_test_id
        # This file's tallies, added to the rest only when the whole file was read.
        by_backend: dict[str, list[int]] = {}
        unmatched_ids = collected.unmatched_ids
        tried = 0
        nameless: list[int] = []
        pending: dict[tuple[int, str, str], list[int]] = {}
        # The first failure line of each failing cell.
        messages: dict[tuple[int, str, str], str] = {}
        places = self._places
        unassigned = 0
        failures: list[Failure] = []
        room = FAILURES_KEPT - len(self.collected.failures)

        def on_case(case: CaseResult) -> None:  # noqa: C901, PLR0912, PLR0915  -- the hot loop, kept flat
            nonlocal unassigned, tried
            backend = file_backend
            if backend is None and per_case:
                tried += 1
                backend = namer.backend_for_case(case)
                if backend is not None:
                    backend = cap_name(backend)
                    # Per case only here: with a file's backend the file's counts say it all.
                    counted = by_backend.get(backend)
                    if counted is None:
                        counted = by_backend[backend] = [0, 0, 0, 0]
                    counted[0] += 1
                    column = _TALLY.get(case.status)
                    if column is not None:
                        counted[column] += 1
                elif len(unmatched_ids) < SAMPLES_KEPT:
                    unmatched_ids.append(test_id(case))
            if backend is None:
                unassigned += 1
                return
            key = (case.classname, case.file, case.suite)
            place = places.get(key)
            if place is None:
                dashboard, prefix = namer.locate(case)
                place = places[key] = (self._index(dashboard), prefix)
            index, prefix = place
            if per_case:
                ruled = namer.ruled(case)
                if ruled is not None:
                    index = self._index(ruled)
                row = row_name(prefix, case.name)
            else:
                name = case.name
                if name[-1:] == "]":
                    head = name.partition("[")[0]
                    if head:
                        name = head
                row = prefix + name if name else prefix + UNNAMED
            status = case.status
            if status is CaseStatus.PASSED:
                if case.flaky:
                    code, slot = _FLAKY, _FLAKY_SLOT
                else:
                    code, slot = _SUCCESS, _PASSED_SLOT
            elif status is CaseStatus.SKIPPED:
                code, slot = _SKIPPED, _SKIPPED_SLOT
            else:
                code, slot = _FAILURE, _FAILED_SLOT
                if len(failures) < room:
                    failures.append(
                        Failure(
                            test=test_id(case),
                            backend=backend,
                            message=case.message,
                            result_file=source,
                            test_file=case.file,
                        )
                    )
            cell = (index, row, backend)
            tally = pending.get(cell)
            if tally is None:
                tally = pending[cell] = [code, 0, 0, 0, 0]
            elif code > tally[0]:
                tally[0] = code
            tally[slot] += 1
            if code == _FAILURE and case.message and cell not in messages:
                messages[cell] = case.message

        counts, problem = scan_junit(
            stream, source=source, on_case=on_case, on_nameless=nameless.append
        )
        collected.ids_tried += tried
        if nameless:
            counts = replace(counts, nameless=len(nameless))
        collected.files.append(counts)
        if problem is not None:
            collected.problems.append(problem)
            return counts
        if nameless:
            collected.nameless[source] = (len(nameless), nameless[0])
        if file_backend is not None:
            by_backend[file_backend] = [counts.tests, counts.failed, counts.errors, counts.skipped]
        for backend, numbers in by_backend.items():
            total = collected.by_backend.setdefault(backend, [0, 0, 0, 0])
            for slot, count in enumerate(numbers):
                total[slot] += count
        if unassigned:
            collected.unassigned[source] = unassigned
        collected.failures.extend(failures)
        self._commit(pending, messages)
        return counts

    def _commit(
        self,
        pending: dict[tuple[int, str, str], list[int]],
        messages: dict[tuple[int, str, str], str],
    ) -> None:
        """Add one fully read file's cells to the rest (a cell in two files: combined)."""
        dashboards = self.collected.dashboards
        ids = self._dashboards
        # Most cells hold one passing case: their counts are one shared tuple.
        counts_of: dict[tuple[int, ...], CaseCounts] = {}
        for cell, (code, *numbers) in pending.items():
            index, row, backend = cell
            rows = dashboards.setdefault(ids[index], {})
            cells = rows.setdefault(row, {})
            key = tuple(numbers)
            counts = counts_of.get(key)
            if counts is None:
                counts = counts_of[key] = CaseCounts(*key)
            result = CellResult(_CODES[code], counts, messages.get(cell, ""))
            old = cells.get(backend)
            cells[backend] = result if old is None else combine_results(old, result)


def build_batches(
    collected: Collected, source_for: Callable[[str], Source], signer: Signer | None = None
) -> list[Batch]:
    """Turn gathered cells into batches of entries, one per dashboard.

    ``source_for(backend)`` says which job produced a backend's results (in a fan-in job each
    backend came from its own matrix leg); ``signer`` computes the signature of each failing
    cell's message (the default words when not given). Cells with the same result share one
    entry.
    """
    signer = signer or Signer()
    entries: dict[tuple[str, CellResult], Entry] = {}

    def entry(backend: str, result: CellResult) -> Entry:
        found = entries.get((backend, result))
        if found is None:
            message = result.message if result.outcome is Outcome.FAILURE else ""
            found = entries[backend, result] = Entry(
                source=source_for(backend),
                outcome=result.outcome,
                counts=result.counts,
                message=message,
                signature=signer.signature(message, backend),
            )
        return found

    return [
        Batch(
            dashboard=dashboard,
            cells={
                row: {backend: entry(backend, result) for backend, result in cells.items()}
                for row, cells in rows.items()
            },
        )
        for dashboard, rows in collected.dashboards.items()
    ]
