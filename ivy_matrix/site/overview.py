"""The site's index and needs-attention list: what every view but the grid reads.

Pure: no I/O. Both cover every dashboard, so the summary, the needs-attention view and the
failure groups open without loading any dashboard's own file (documents.py):

- ``index``: every dashboard with its row count and, per backend, the ``COLUMN_COUNTS``
  (passing/total now and before the column's newest run, failing, flaky, skipped and missing
  cells, then the failed and total cases where the state has counts); the backends' pass rates
  over the last runs (``trend``: from the store's trend when it has one, else from the results
  the cells keep) and the parity of the runs (rows green on every backend);
- ``attention``: every cell that needs a look (cells.py's groups), as
  ``[dashboard number, row, backend, group, status letter, failing runs, signature]``, and one
  failure line per signature.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ivy_matrix.model import DashboardState, Outcome, Source, Trend
from ivy_matrix.site.cells import LETTERS, CellView, Group, PlacedCell

TREND_RUNS = 30  # points of each backend's sparkline
SHORT_SHA = 12

# The counts of one backend of one dashboard, in this order in the index (docs/site.md).
COLUMN_COUNTS = (
    "passing",
    "total",
    "previous_passing",
    "previous_total",
    "failures",
    "flaky",
    "skipped",
    "missing",
    "cases_failed",
    "cases",
)


def _tally(outcome: Outcome | None) -> tuple[int, int]:
    """(passing, total) of one cell, as the index counts: skipped in neither, flaky passes."""
    if outcome is None or outcome is Outcome.SKIPPED:
        return 0, 0
    return (0 if outcome is Outcome.FAILURE else 1), 1


def _previous(view: CellView, newest_run: int) -> Outcome | None:
    """The cell's outcome before its column's newest run (None: it had no result then)."""
    results = view.results
    if results and results[0].entry.run.run_id == newest_run:
        return results[1].outcome if len(results) > 1 else None
    return view.status


def column_counts(state: DashboardState, placed: Sequence[PlacedCell]) -> dict[str, list[int]]:
    """Per backend, the ``COLUMN_COUNTS`` of the dashboard's cells."""
    newest: dict[str, int] = {}
    for item in placed:
        if item.view.results:
            run = item.view.results[0].entry.run.run_id
            newest[item.backend] = max(run, newest.get(item.backend, run))
    counts = {backend: [0] * len(COLUMN_COUNTS) for backend in state.backend_names}
    for item in placed:
        tally = counts[item.backend]
        status = item.view.status
        passing, total = _tally(status)
        before_passing, before_total = _tally(_previous(item.view, newest.get(item.backend, -1)))
        cases = item.view.latest.counts
        for i, value in enumerate(
            (
                passing,
                total,
                before_passing,
                before_total,
                status is Outcome.FAILURE,
                status is Outcome.FLAKY,
                status is Outcome.SKIPPED,
                0,
                0 if cases is None else cases.failed,
                0 if cases is None else cases.total,
            )
        ):
            tally[i] += value
    for backend, tally in counts.items():
        tally[7] = sum(backend not in row.cells for row in state.rows)
    return counts


def attention_items(
    index: int, placed: Iterable[PlacedCell], messages: dict[str, str]
) -> list[list[object]]:
    """The cells of dashboard number ``index`` that need a look, in display order; the first
    failure line of each signature goes into ``messages``."""
    items: list[list[object]] = []
    for item in placed:
        view = item.view
        if view.group is None:
            continue
        signature = view.latest.signature
        if signature:
            messages.setdefault(signature, view.latest.message)
        items.append(
            [
                index,
                item.row.name,
                item.backend,
                view.group.value,
                LETTERS[view.status],
                view.history.runs,
                signature,
            ]
        )
    return items


def group_counts(items: Iterable[Sequence[object]]) -> dict[str, int]:
    """How many cells each attention group holds (every group, in display order)."""
    counts = dict.fromkeys((g.value for g in Group), 0)
    for item in items:
        counts[str(item[3])] += 1
    return counts


def trend_document(trend: Trend | None, placed: Iterable[PlacedCell]) -> dict[str, object]:
    """The newest ``TREND_RUNS`` runs: ``runs`` ([run id, commit, time]), ``backends`` (per
    backend a [passing, total] per run, or null for a run without its results) and ``parity``
    ([rows green on every backend, rows that ran on all] per run; absent when unknown).

    From the store's trend when it has points (one per completed run, reaching back as far as
    the store has kept them), else from the results the cells keep.
    """
    if trend is not None and trend.points:
        points = trend.points[-TREND_RUNS:]
        backends: dict[str, list[list[int] | None]] = {}
        for number, point in enumerate(points):
            for backend, tally in point.backends:
                line = backends.setdefault(backend, [None] * len(points))
                line[number] = [tally.passed + tally.flaky, tally.ran] if tally.ran else None
        return {
            "runs": [[p.run, p.sha[:SHORT_SHA], p.time] for p in points],
            "backends": backends,
            "parity": [[p.parity.green, p.parity.rows] for p in points],
            "fails_only": dict(points[-1].parity.fails_only),
        }
    return _trend_of_cells(placed)


def _trend_of_cells(placed: Iterable[PlacedCell]) -> dict[str, object]:
    tallies: dict[str, dict[int, list[int]]] = {}
    runs: dict[int, Source] = {}
    for item in placed:
        per_run = tallies.setdefault(item.backend, {})
        for result in item.view.results:
            run = result.entry.run.run_id
            known = runs.get(run)
            if known is None or result.entry.source.time > known.time:
                runs[run] = result.entry.source
            passing, total = _tally(result.outcome)
            tally = per_run.setdefault(run, [0, 0])
            tally[0] += passing
            tally[1] += total
    shown = sorted(runs)[-TREND_RUNS:]
    return {
        "runs": [[run, runs[run].sha[:SHORT_SHA], runs[run].time] for run in shown],
        "backends": {
            backend: [per_run.get(run) for run in shown] for backend, per_run in tallies.items()
        },
    }
