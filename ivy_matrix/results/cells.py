"""What one update's reading yields: each cell's result, and the whole of what was read.

Pure: no I/O. ``results/collector.py`` makes them from result files, ``results/legs.py`` from
leg files; ``state/entries.py`` turns the cells into the entries a store merges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ivy_matrix.model import (
    CaseCounts,
    DashboardId,
    Failure,
    FileCounts,
    FileRecord,
    Outcome,
    ParseProblem,
    Totals,
    worst,
)
from ivy_matrix.results.timed_cases import TimedCases


class CellResult(NamedTuple):
    """One cell as an update read it: its worst outcome, its cases, its first failure line,
    where its first failing case is (``where``: its file and line, 0 when the result file
    gives none; None when it names no file), for annotations, and its duration: ``seconds``,
    the sum of the ``time`` of its ``timed`` cases (the others had none)."""

    outcome: Outcome
    counts: CaseCounts
    message: str = ""
    where: tuple[str, int] | None = None
    seconds: float = 0.0
    timed: int = 0


def combine_results(a: CellResult, b: CellResult) -> CellResult:
    """Two parts of one cell (two files of one update, two legs): the worse outcome, the
    counts and durations added, the first message and place."""
    return CellResult(
        worst(a.outcome, b.outcome),
        CaseCounts(*(x + y for x, y in zip(a.counts, b.counts, strict=True))),
        a.message or b.message,
        a.where or b.where,
        a.seconds + b.seconds,
        a.timed + b.timed,
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
    # Result files recorded before and not read again (their cells are in the store already;
    # commands/reading.py), by path, size and SHA-256, and the dashboards they reached.
    kept: list[tuple[str, int, str]] = field(default_factory=list)
    touched: dict[DashboardId, None] = field(default_factory=dict)
    # What the files read this time are, for the store's ledger (when asked for: ledger.py).
    records: list[FileRecord] = field(default_factory=list)
    # The result files' suite properties (pytest's record_testsuite_property), recorded with
    # the environment (environment.py).
    properties: dict[str, str] = field(default_factory=dict)
    # Each timed case's seconds by backend, then by the start of its pytest node id
    # (naming.node_prefix: ``path.py::Class::``), then by its name: the durations file.
    durations: TimedCases = field(default_factory=TimedCases)

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
