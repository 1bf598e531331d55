"""The site's data files as scripts, and the data file of one dashboard.

Pure: no I/O. Each document is a JSON object, written as a script that hands it to the page
(``ivyMatrix.put("d/core/gradients", {...});``): the page loads data with ``<script src>``,
which works from ``file://`` where ``fetch()`` does not. Everything is deterministic (no
clock, sorted where order is not the dashboard's), so re-rendering an unchanged state gives
the same bytes and writes nothing. The format is described in docs/site.md.

``d/<id>`` holds one dashboard: its backends, the jobs its cells' results came from, its
distinct cells (status, the strip of its newest results and the job of each, attention group,
failing since, last pass, flakiness, case counts, failure signature, and for a failing cell
its blame) and its rows (name, then a cell index per backend, -1 where it has none, then,
when the dashboard has durations, each backend's newest duration), one failure line per
signature and each distinct blame once. ``slowest`` holds each backend's slowest cells and the
cells that got slower (slowdowns.py). The index and the needs-attention list are overview.py's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from ivy_matrix.escaping import safe_link
from ivy_matrix.explain.blame import Blame
from ivy_matrix.explain.slowdowns import dashboard_slowdowns, slowest
from ivy_matrix.model import DashboardState, Row, Source
from ivy_matrix.site.cells import LETTERS, CellView, PlacedCell
from ivy_matrix.state.durations import latest_timing, rounded
from ivy_matrix.state.history import RunResult
from ivy_matrix.state.paths import site_id

FORMAT = "ivy-matrix-site"
VERSION = 2
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


class _Blames:
    """The blames of a dashboard's failing cells (blame.py), each distinct one once: cells of
    one streak's jobs share it, so a dashboard has few."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.list: list[dict[str, object]] = []

    def add(self, blame: Blame) -> int:
        """The number of ``blame`` in the list; keys with their default are left out
        (docs/site.md): ``u`` the compare link (only a plain http(s) URL), ``c`` the changed
        packages ``[package, before, after]`` ("" where absent), ``h`` the hint, ``x`` the
        notes."""
        document: dict[str, object] = {}
        url = safe_link(blame.compare_url or "")
        if url:
            document["u"] = url
        if blame.changes:
            document["c"] = [[c.package, c.before, c.after] for c in blame.changes]
        if blame.hint is not None:
            document["h"] = blame.hint.value
        if blame.notes:
            document["x"] = list(blame.notes)
        key = json.dumps(document, sort_keys=True)
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.list)
            self.list.append(document)
        return found

    def document(self) -> dict[str, object]:
        """``{"base": common start of the compare links, "list": [blame]}``, each ``u`` without
        the base (a dashboard's links share ``https://github.com/o/r/compare/``)."""
        base = _common_start([str(b["u"]) for b in self.list if "u" in b])
        return {
            "base": base,
            "list": [{**b, "u": str(b["u"])[len(base) :]} if "u" in b else b for b in self.list],
        }


def _cell_document(
    view: CellView, jobs: _Jobs, blames: _Blames, messages: dict[str, str]
) -> dict[str, object]:
    """One distinct cell: keys with their default value are left out (docs/site.md).

    A failure's line is the dashboard's sample of its signature (``messages``, the first
    seen) unless it differs, when the cell keeps its own (``e``). Only a failing cell has a
    blame (``b``): the data stays small where most cells pass.
    """
    results: Sequence[RunResult] = view.results
    document: dict[str, object] = {
        "s": LETTERS[view.status],
        "h": "".join(LETTERS[r.outcome] for r in results),
        "j": [jobs.add(r.entry.source) for r in results],
    }
    history = view.history
    if view.group is not None:
        document["g"] = view.group.value
    if view.failing_since is not None:
        document["n"] = history.runs
        # Its job even when older than the strip: the detail names its commit and date.
        document["i"] = jobs.add(view.failing_since)
        if history.since_oldest:
            document["o"] = 1
        if view.last_pass is not None:
            document["p"] = jobs.add(view.last_pass)
        if view.blame is not None:
            document["b"] = blames.add(view.blame)
    if history.flaky is not None:
        document["f"] = history.flaky.value
    latest = view.latest
    if latest.counts is not None:
        counts = latest.counts
        document["c"] = [counts.passed, counts.failed, counts.skipped, counts.flaky, counts.total]
    if latest.signature:
        document["m"] = latest.signature
        sample = messages.setdefault(latest.signature, latest.message)
        if latest.message != sample:
            document["e"] = latest.message
    elif latest.message:
        document["e"] = latest.message
    return document


def dashboard_document(state: DashboardState, placed: Iterable[PlacedCell]) -> dict[str, object]:
    """The data file of one dashboard (its cells as :func:`~cells.dashboard_cells` gives)."""
    jobs = _Jobs()
    blames = _Blames()
    messages: dict[str, str] = {}
    cells: list[dict[str, object]] = []
    by_view: dict[int, int] = {}
    by_value: dict[str, int] = {}
    rows: dict[str, list[object]] = {}
    column = {backend: i for i, backend in enumerate(state.backend_names)}
    width = len(column)
    for item in placed:
        found = by_view.get(id(item.view))
        if found is None:
            document = _cell_document(item.view, jobs, blames, messages)
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
    listed = [rows.get(r.name, [r.name, *([-1] * width)]) for r in state.rows]
    if any(r.times for r in state.rows):
        # Each row's newest durations, by backend after its cells (null: none).
        listed = [
            [*row, *(_seconds(r, backend) for backend in state.backend_names)]
            for row, r in zip(listed, state.rows, strict=True)
        ]
    return {
        "format": FORMAT,
        "version": VERSION,
        "id": site_id(state),
        "key": state.key,
        "backends": list(state.backend_names),
        "jobs": jobs.document(),
        "cells": cells,
        "rows": listed,
        "messages": messages,
        "blames": blames.document(),
    }


def _seconds(row: Row, backend: str) -> float | None:
    timing = latest_timing(row, backend)
    return None if timing is None else rounded(timing.seconds)


# The slowest cells each backend lists in the site's slowest view.
SITE_SLOWEST = 100


def slowest_document(states: Sequence[DashboardState]) -> dict[str, object]:
    """``data/slowest.js``: each backend's slowest cells and every cell that got slower
    (docs/site.md), dashboards by their number in the index."""
    number = {state.key: i for i, state in enumerate(states)}
    slower = []
    for state in states:
        for found in dashboard_slowdowns(state):
            blame = found.blame
            slower.append(
                [
                    number[state.key],
                    found.row,
                    found.backend,
                    rounded(found.seconds),
                    rounded(found.median),
                    found.runs,
                    found.since.run_id,
                    "" if blame.hint is None else blame.hint.value,
                    safe_link(blame.compare_url or ""),
                    [[c.package, c.before or "", c.after or ""] for c in blame.changes],
                ]
            )
    return {
        "format": FORMAT,
        "version": VERSION,
        "backends": {
            backend: [[number[c.dashboard], c.row, rounded(c.seconds)] for c in cells]
            for backend, cells in slowest(states, limit=SITE_SLOWEST).items()
        },
        "slower": slower,
    }
