"""The site's data files: the index, the needs-attention list and one file per dashboard.

Pure: no I/O. Each document is a JSON object, written as a script that hands it to the page
(``ivyMatrix.put("index", {...});``): the page loads data with ``<script src>``, which works
from ``file://`` where ``fetch()`` does not. Everything is deterministic (no clock, sorted
where order is not the dashboard's), so re-rendering an unchanged state gives the same bytes
and writes nothing. The format is described in docs/site.md; in short:

- ``index``: every dashboard with its row count and, per backend, passing/total now and before
  the newest run, failures, flaky, skipped and missing cells; the attention groups' sizes; the
  pass-rate points of each backend over the last runs (``trend``);
- ``attention``: every cell that needs a look (cells.py's groups), as
  ``[dashboard index, row, backend, group, status letter, failing runs]``;
- ``d/<id>``: one dashboard: its backends, the jobs its cells' results came from, its distinct
  cells (status, the strip of its newest results, the job of each, group, failing since, last
  pass, flakiness) and its rows (name, then a cell index per backend, -1 where it has none).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from ivy_matrix.escaping import safe_link
from ivy_matrix.history import RunResult
from ivy_matrix.model import DashboardState, Outcome, Source
from ivy_matrix.paths import site_id
from ivy_matrix.site.cells import LETTERS, CellView, Group, PlacedCell

FORMAT = "ivy-matrix-site"
VERSION = 1
TREND_RUNS = 30  # points of each backend's sparkline
SHORT_SHA = 12


def script(name: str, document: Mapping[str, object]) -> str:
    """A data file: a script that hands ``document`` to the page under ``name``.

    Plain ASCII (every other character escaped as JSON does), so the file reads the same
    whatever encoding a browser assumes for a script opened from disk, no character can
    reorder or hide text in a diff of it, and no string can end early: JSON is valid
    JavaScript.
    """
    text = json.dumps(document, ensure_ascii=True, separators=(",", ":"))
    return f"ivyMatrix.put({json.dumps(name)},{text});\n"


# --------------------------------------------------------------------------- one dashboard


class _Jobs:
    """The jobs a dashboard's results came from, each once, in order of first use."""

    def __init__(self) -> None:
        self.index: dict[tuple[object, ...], int] = {}
        self.sources: list[Source] = []

    def add(self, source: Source) -> int:
        key = (source.run, source.url, source.time, source.sha)
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.sources)
            self.sources.append(source)
        return found

    def document(self) -> dict[str, object]:
        """``{"base": common URL start, "list": [[run, attempt, sha, time, url rest]]}``; the
        rest is null for a job with no link a page may follow (only plain http(s) URLs).

        The URLs of a dashboard's jobs share a long start (``https://github.com/o/r/actions/
        runs/``), kept once.
        """
        urls = [safe_link(source.url) for source in self.sources]
        base = _common_start([u for u in urls if u])
        return {
            "base": base,
            "list": [
                [
                    s.run.run_id,
                    s.run.run_attempt,
                    s.sha[:SHORT_SHA],
                    s.time,
                    url[len(base) :] if url else None,
                ]
                for s, url in zip(self.sources, urls, strict=True)
            ],
        }


def _common_start(urls: Sequence[str]) -> str:
    """The longest start every URL shares, cut after its last ``/`` ("" for none)."""
    if not urls:
        return ""
    first, last = min(urls), max(urls)
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    start = first[:length]
    return start[: start.rfind("/") + 1]


def _cell_document(view: CellView, jobs: _Jobs) -> dict[str, object]:
    """One distinct cell: keys with their default value are left out (docs/site.md)."""
    results: Sequence[RunResult] = view.results
    document: dict[str, object] = {
        "s": LETTERS[view.status],
        "h": "".join(LETTERS[r.outcome] for r in results),
        "j": [jobs.add(r.entry.source) for r in results],
    }
    history = view.history
    if view.group is not None:
        document["g"] = view.group.value
    if history.failing_since is not None:
        document["n"] = history.runs
        document["i"] = _job_of(results, history.failing_since.run_id, jobs)
        if history.since_oldest:
            document["o"] = 1
        if history.last_pass is not None:
            document["p"] = _job_of(results, history.last_pass.run_id, jobs)
    if history.flaky is not None:
        document["f"] = history.flaky.value
    return document


def _job_of(results: Sequence[RunResult], run_id: int, jobs: _Jobs) -> int | None:
    """The job index of the result of run ``run_id`` among ``results`` (None: older than the
    strip; the detail then names the run without a job)."""
    for result in results:
        if result.entry.run.run_id == run_id:
            return jobs.add(result.entry.source)
    return None


def dashboard_document(state: DashboardState, placed: Iterable[PlacedCell]) -> dict[str, object]:
    """The data file of one dashboard (its cells as :func:`~cells.dashboard_cells` gives)."""
    jobs = _Jobs()
    cells: list[dict[str, object]] = []
    by_view: dict[int, int] = {}
    by_value: dict[str, int] = {}
    rows: dict[str, list[object]] = {}
    column = {backend: i for i, backend in enumerate(state.backend_names)}
    width = len(column)
    for item in placed:
        found = by_view.get(id(item.view))
        if found is None:
            document = _cell_document(item.view, jobs)
            key = json.dumps(document, sort_keys=True)
            found = by_value.get(key)
            if found is None:
                found = by_value[key] = len(cells)
                cells.append(document)
            by_view[id(item.view)] = found
        row = rows.get(item.row.name)
        if row is None:
            row = rows[item.row.name] = [item.row.name, *([-1] * width)]
        row[1 + column[item.backend]] = found
    return {
        "format": FORMAT,
        "version": VERSION,
        "id": site_id(state),
        "key": state.key,
        "backends": list(state.backend_names),
        "jobs": jobs.document(),
        "cells": cells,
        "rows": [rows.get(r.name, [r.name, *([-1] * width)]) for r in state.rows],
    }


# --------------------------------------------------------------------------- index, attention


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
    """Per backend, the ``COLUMN_COUNTS``: passing/total now and before the column's newest
    run, then the failing, flaky, skipped and missing cells."""
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
        tally[0] += passing
        tally[1] += total
        tally[2] += before_passing
        tally[3] += before_total
        tally[4] += status is Outcome.FAILURE
        tally[5] += status is Outcome.FLAKY
        tally[6] += status is Outcome.SKIPPED
    for backend, tally in counts.items():
        tally[7] = sum(backend not in row.cells for row in state.rows)
    return counts


def attention_items(index: int, placed: Iterable[PlacedCell]) -> list[list[object]]:
    """The cells of dashboard number ``index`` that need a look, in display order."""
    return [
        [
            index,
            item.row.name,
            item.backend,
            item.view.group.value,
            LETTERS[item.view.status],
            item.view.history.runs,
        ]
        for item in placed
        if item.view.group is not None
    ]


def trend_document(placed: Iterable[PlacedCell]) -> dict[str, object]:
    """Each backend's passing/total per run over the newest ``TREND_RUNS`` runs, from the
    results the cells keep (``runs``: run id, commit, time; a backend's point is null for a
    run it has no result of)."""
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


def group_counts(items: Iterable[Sequence[object]]) -> dict[str, int]:
    """How many cells each attention group holds (every group, in display order)."""
    counts = dict.fromkeys((g.value for g in Group), 0)
    for item in items:
        counts[str(item[3])] += 1
    return counts
