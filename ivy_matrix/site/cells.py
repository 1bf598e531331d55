"""What the site shows of each cell: its status, the strip of its last results and, when it
needs a look, the group it is listed under.

Pure: no I/O. Built on history.py's rules (one result per run, failing since, last pass,
flaky), so the site and the markdown index say the same of every cell. The groups of the
needs-attention view, one per cell, the first that applies:

- **stale**: at least ``STALE_RUNS`` runs that reported this backend (in any dashboard of the
  store) are newer than the cell's newest result: the test stopped running, and its row, or
  its whole dashboard, is not retired yet;
- **failing**: failing for more than one run;
- **flaky**: flaky by history.py's rules (reruns, or flips between passing and failing);
- **new**: failing in the newest run only;
- **fixed**: passing now, but failed in one of its newest ``FIXED_RUNS`` runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from ivy_matrix.explain.blame import Blame, blame_of, streak
from ivy_matrix.model import Cell, DashboardState, Entry, Outcome, Row, Source
from ivy_matrix.state.history import CellHistory, RunResult, history_of, run_results

STRIP = 10  # results shown per cell, newest first
STALE_RUNS = 5
FIXED_RUNS = 3


class Status(StrEnum):
    """A cell as the grid marks it (``data-status``); ``missing``: the row has no result there."""

    SUCCESS = "success"
    FAILURE = "failure"
    FLAKY = "flaky"
    SKIPPED = "skipped"
    MISSING = "missing"


class Group(StrEnum):
    """Why a cell needs a look, in the order the needs-attention view lists the groups."""

    NEW = "new"
    FAILING = "failing"
    FLAKY = "flaky"
    FIXED = "fixed"
    STALE = "stale"


# One letter per outcome in the data files: a dashboard holds tens of thousands of them.
LETTERS = {
    Outcome.SUCCESS: "s",
    Outcome.FAILURE: "f",
    Outcome.FLAKY: "y",
    Outcome.SKIPPED: "k",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class CellView:
    """One cell as the site shows it: ``latest`` is its newest result (what the markdown
    shows: ``status`` is its outcome; its case counts, failure line and signature), ``results``
    its newest runs (at most ``STRIP``, newest first).

    For a cell failing now: the jobs of its streak's first failure and of the last pass before
    it (``None``: no pass kept), which may be older than the strip, and its blame (blame.py).
    """

    latest: Entry
    status: Outcome
    results: tuple[RunResult, ...]
    history: CellHistory
    group: Group | None
    failing_since: Source | None = None
    last_pass: Source | None = None
    blame: Blame | None = None


def _group(history: CellHistory, results: list[RunResult], *, stale: bool) -> Group | None:
    if stale:
        return Group.STALE
    if history.failing:
        if history.runs > 1:
            return Group.FAILING
        return Group.FLAKY if history.flaky is not None else Group.NEW
    if history.flaky is not None:
        return Group.FLAKY
    if any(r.outcome is Outcome.FAILURE for r in results[:FIXED_RUNS]):
        return Group.FIXED
    return None


def stale_before(states: Iterable[DashboardState]) -> dict[str, int]:
    """Per backend, the run id its cells must reach not to be stale: the ``STALE_RUNS``-th
    newest run among its results in every dashboard (a backend with fewer runs has none)."""
    runs: dict[str, set[int]] = {}
    for state in states:
        # Rows share cell objects: each distinct cell's entries are read once.
        seen: set[tuple[int, str]] = set()
        for row in state.rows:
            for backend, cell in row.cells.items():
                if (id(cell), backend) in seen:
                    continue
                seen.add((id(cell), backend))
                runs.setdefault(backend, set()).update(e.run.run_id for e in cell.entries)
    return {
        backend: sorted(ids, reverse=True)[STALE_RUNS - 1]
        for backend, ids in runs.items()
        if len(ids) >= STALE_RUNS
    }


def cell_view(cell: Cell, stale_before_run: int | None) -> CellView:
    """What the site shows of ``cell`` (see the module docstring)."""
    results = run_results(cell.entries)
    history = history_of(results)
    stale = stale_before_run is not None and cell.latest.run.run_id < stale_before_run
    view = CellView(
        latest=cell.latest,
        status=cell.latest.outcome,
        results=tuple(results[:STRIP]),
        history=history,
        group=_group(history, results, stale=stale),
    )
    if not history.failing:
        return view
    first, last = streak(results)
    assert first is not None  # a failing history has a streak
    return replace(
        view,
        failing_since=first.source,
        last_pass=None if last is None else last.source,
        # The compare link's repository comes from the job links: the site has no settings.
        blame=blame_of(results, history=history),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacedCell:
    """A cell of a dashboard with its place: the row and the backend."""

    row: Row
    backend: str
    cell: Cell
    view: CellView


def dashboard_cells(state: DashboardState, stale: Mapping[str, int]) -> Iterator[PlacedCell]:
    """Every cell of a dashboard, row by row, backends in display order; ``stale``: per
    backend, the run a cell must reach not to be stale (:func:`stale_before`).

    Rows share cell objects (most cells of a run are alike): each is worked out once.
    """
    known: dict[tuple[int, int | None], CellView] = {}
    for row in state.rows:
        for backend in state.backend_names:
            cell = row.cells.get(backend)
            if cell is None:
                continue
            threshold = stale.get(backend)
            key = (id(cell), threshold)
            view = known.get(key)
            if view is None:
                view = known[key] = cell_view(cell, threshold)
            yield PlacedCell(row=row, backend=backend, cell=cell, view=view)
