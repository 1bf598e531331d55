"""Per-backend totals of a dashboard, and over many: what the index shows without the cells.

Pure: no I/O. A backend's totals count its rows by their latest result (``success``,
``failure``, ``flaky``, ``skipped``) and add up the cases of those latest results (passed,
failed, skipped, flaky; only where the counts are known: cells adopted from a table, or
recorded before state version 2, have none). ``passing`` and ``total`` are what the index has
always shown: flaky rows pass, skipped rows count in neither. ``seconds`` adds up the
durations of those latest results that have one (``timed`` rows; state/durations.py).

The state documents carry each backend's totals (statefile.py), so that a reader (the static
site, a user's script) gets them without reading every cell; the index page, the job summary
and the summary JSON use :func:`backend_totals` and :func:`add_totals`.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from ivy_matrix.model import Cell, DashboardState, Outcome
from ivy_matrix.state.durations import duration_totals


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
    seconds: float = 0.0
    timed: int = 0

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

    def to_json(self) -> dict[str, float]:
        """The totals as the state documents and the summary JSON write them (``seconds``
        only when some row has a duration)."""
        document: dict[str, float] = {f.name: getattr(self, f.name) for f in fields(self)}
        del document["seconds"], document["timed"]
        if self.timed:
            document["seconds"] = round(self.seconds, 3)
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


# The totals of the states asked about lately, by identity: an update asks for a state's
# totals when it saves it and again when it draws the index. Bounded, and never stale: a
# state is a frozen value, and an entry counts only for the very object it was made from.
_RECENT: dict[int, tuple[DashboardState, dict[str, BackendTotals]]] = {}
_RECENT_KEPT = 512


def backend_totals(state: DashboardState) -> dict[str, BackendTotals]:
    """Each backend's totals, in the dashboard's column order."""
    found = _RECENT.get(id(state))
    if found is not None and found[0] is state:
        return dict(found[1])
    totals = _backend_totals(state)
    if len(_RECENT) >= _RECENT_KEPT:
        _RECENT.clear()
    _RECENT[id(state)] = (state, totals)
    return dict(totals)


def _backend_totals(state: DashboardState) -> dict[str, BackendTotals]:
    # Rows share cell objects (most cells of a run are alike): each distinct cell is tallied
    # once and counted as often as rows hold it.
    # Counted in C (map, filter, Counter) column by column: one pass of Python per row
    # gathers the rows' cells, none per cell.
    row_cells = [row.cells for row in state.rows]
    names = dict.fromkeys(state.backend_names)
    for cells in row_cells:
        if len(cells) > len(names) or not names.keys() >= cells.keys():
            names.update(dict.fromkeys(cells))  # a cell of a backend the state does not list
    uses: list[tuple[str, Cell, int]] = []
    for backend in names:
        held = list(filter(None, map(operator.methodcaller("get", backend), row_cells)))
        distinct = {id(cell): cell for cell in held}
        uses.extend((backend, distinct[k], n) for k, n in Counter(map(id, held)).items())
    return totals_of(names, uses, duration_totals(state.rows))


def totals_of(
    backends: Iterable[str],
    uses: Iterable[tuple[str, Cell, int]],
    durations: Mapping[str, tuple[float, int]] | None = None,
) -> dict[str, BackendTotals]:
    """The totals of ``backends`` (and any other backend met) from (backend, cell, how many
    rows hold that cell there), with each backend's seconds and timed rows (``durations``,
    :func:`~ivy_matrix.state.durations.duration_totals`)."""
    sums: dict[str, list[int]] = {name: [0] * 8 for name in backends}
    for backend, cell, count in uses:
        total = sums.setdefault(backend, [0] * 8)
        for index, value in enumerate(_cell_tally(cell)):
            total[index] += value * count
    durations = durations or {}
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
            seconds=durations.get(name, (0.0, 0))[0],
            timed=durations.get(name, (0.0, 0))[1],
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
