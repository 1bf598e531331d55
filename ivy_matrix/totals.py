"""Per-backend totals of a dashboard, and over many: what the index shows without the cells.

Pure: no I/O. A backend's totals count its rows by their latest result (``success``,
``failure``, ``flaky``, ``skipped``) and add up the cases of those latest results (passed,
failed, skipped, flaky; only where the counts are known: cells adopted from a table, or
recorded before state version 2, have none). ``passing`` and ``total`` are what the index has
always shown: flaky rows pass, skipped rows count in neither.

The state documents carry each backend's totals (statefile.py), so that a reader (the static
site, a user's script) gets them without reading every cell; the index page, the job summary
and the summary JSON use :func:`backend_totals` and :func:`add_totals`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from ivy_matrix.model import Cell, DashboardState, Outcome


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendTotals:
    """One backend's rows by latest outcome, and the cases of those results."""

    success: int = 0
    failure: int = 0
    flaky: int = 0
    skipped: int = 0
    cases_passed: int = 0
    cases_failed: int = 0
    cases_skipped: int = 0
    cases_flaky: int = 0

    @property
    def passing(self) -> int:
        """Rows passing: a pass after reruns passes."""
        return self.success + self.flaky

    @property
    def total(self) -> int:
        """Rows that ran (skipped rows count in neither passing nor total)."""
        return self.success + self.failure + self.flaky

    @property
    def cases(self) -> int:
        return self.cases_passed + self.cases_failed + self.cases_skipped + self.cases_flaky

    def __add__(self, other: BackendTotals) -> BackendTotals:
        return BackendTotals(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def to_json(self) -> dict[str, int]:
        """The totals as the state documents and the summary JSON write them."""
        document = {f.name: getattr(self, f.name) for f in fields(self)}
        document["passing"] = self.passing
        document["total"] = self.total
        return document


_ROW_FIELD = {
    Outcome.SUCCESS: 0,
    Outcome.FAILURE: 1,
    Outcome.FLAKY: 2,
    Outcome.SKIPPED: 3,
}


def _cell_tally(cell: Cell) -> tuple[int, ...]:
    latest = cell.latest
    tally = [0] * 8
    tally[_ROW_FIELD[latest.outcome]] = 1
    if latest.counts is not None:
        tally[4:] = latest.counts
    return tuple(tally)


def backend_totals(state: DashboardState) -> dict[str, BackendTotals]:
    """Each backend's totals, in the dashboard's column order."""
    # Rows share cell objects (most cells of a run are alike): each distinct cell is tallied
    # once and counted as often as rows hold it.
    uses: Counter[tuple[str, int]] = Counter(
        (backend, id(cell)) for row in state.rows for backend, cell in row.cells.items()
    )
    cells = {id(cell): cell for row in state.rows for cell in row.cells.values()}
    sums: dict[str, list[int]] = {name: [0] * 8 for name in state.backend_names}
    for (backend, key), count in uses.items():
        total = sums.setdefault(backend, [0] * 8)
        for index, value in enumerate(_cell_tally(cells[key])):
            total[index] += value * count
    return {
        name: BackendTotals(
            success=s[0],
            failure=s[1],
            flaky=s[2],
            skipped=s[3],
            cases_passed=s[4],
            cases_failed=s[5],
            cases_skipped=s[6],
            cases_flaky=s[7],
        )
        for name, s in sums.items()
    }


def add_totals(many: Iterable[Mapping[str, BackendTotals]]) -> dict[str, BackendTotals]:
    """Totals of several dashboards added up per backend, in first-seen backend order."""
    summed: dict[str, BackendTotals] = {}
    for totals in many:
        for backend, value in totals.items():
            known = summed.get(backend)
            summed[backend] = value if known is None else known + value
    return summed
