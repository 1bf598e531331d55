"""The store's trend: one point per completed default-branch run, kept in ``trend.json``.

Pure: no I/O; the stores read and write the text (the local store in its folder, the branch
store at the root of the branch, beside the index page). A point sums every dashboard of the
store for one run:

- per backend, its rows by that run's result: ``passed``, ``failed``, ``flaky``,
  ``skipped``, and ``missing`` (rows it has a cell in that the run brought no result for);
- ``parity``: of the rows that ran on every backend of their dashboard in that run
  (``rows``; a skip counts as run), how many passed on all of them (``green``: ``success``
  or ``flaky``), and per backend how many failed on that backend only (``fails_only``: green
  everywhere else). A skip is left out of both, as the index's kinds leave it
  (explain/grouping.py): a row skipped on one backend and passed on the others is green, and
  one failed on one backend, passed or skipped on the others, fails only there.

A point is computed from the cells' histories (:func:`trend_point`; a run's attempts make one
result, as history.py says) when a store renders after a change that brought that run's
results (:func:`record_runs`: the run's one writer); and for the store's newest run when the
trend has no point of it yet (``publish``).
Points of older runs stay as they were written, so the trend reaches back further than
the cells' histories. At most ``cap`` points are kept (``trend-points``, default 365): when
there are more, the newest half stays whole and every other point of the older part goes,
oldest kept, so the trend thins out with age instead of ending.

The file (one point per line, so that a commit's diff shows the new point)::

    {"format": "ivy-matrix-trend", "version": 1, "points": [
    {"run": 4519946746, "sha": "9f2c...", "time": "2026-11-21T10:00:00Z",
     "backends": {"torch": {"passed": 210, "failed": 7, "flaky": 1, "skipped": 1, "missing": 0}},
     "parity": {"rows": 200, "green": 180, "fails_only": {"torch": 4}}}
    ]}
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from ivy_matrix.errors import StoreError
from ivy_matrix.jsonshape import MalformedError, expect_int, expect_object, expect_str
from ivy_matrix.model import (
    BackendPoint,
    Cell,
    DashboardState,
    Entry,
    Outcome,
    Parity,
    Source,
    Trend,
    TrendPoint,
)
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.history import is_default_branch, run_outcome

FORMAT = "ivy-matrix-trend"
VERSION = 1
DEFAULT_POINTS = 365
TREND_NAME = "trend.json"

# Where each outcome is counted in a backend's tally: passed, failed, flaky, skipped, missing.
_SLOT = {Outcome.SUCCESS: 0, Outcome.FAILURE: 1, Outcome.FLAKY: 2, Outcome.SKIPPED: 3}
_FAILED, _SKIPPED, _MISSING = 1, 3, 4


class _RunCells:
    """The result of one run in each cell (a tally slot), worked out once per cell object."""

    def __init__(self, run: int) -> None:
        self.run = run
        self.sources: dict[int, Source] = {}
        self.known: dict[int, int] = {}

    def slot(self, cell: Cell) -> int:
        mine: list[Entry] = []
        for entry in cell.entries:  # newest first: stop at the first older run
            run_id = entry.run.run_id
            if run_id < self.run:
                break
            if run_id == self.run and is_default_branch(entry.source):
                mine.append(entry)
                self.sources[id(entry.source)] = entry.source
        found = _SLOT[run_outcome(mine)] if mine else _MISSING
        self.known[id(cell)] = found
        return found


@dataclass(frozen=True, slots=True, kw_only=True)
class PointPart:
    """One dashboard's share of a run's point: its tallies and parity (``point``; its ``sha``
    and ``time`` those of the newest of its sources with a sha, and of the newest of all),
    whether the run brought it any result (``brought``), and the time of its sha's source.

    A run's point is the sum of every dashboard's part (:func:`join_parts`), so a store that
    keeps each dashboard's parts (the branch store's index file) can draw the point without
    reading every dashboard.
    """

    point: TrendPoint
    brought: bool = False
    sha_time: str = ""


def dashboard_part(state: DashboardState, run: int) -> PointPart:
    """``state``'s share of the point of run ``run``."""
    tallies: dict[str, list[int]] = {name: [0] * 5 for name in state.backend_names}
    rows = green = 0
    fails_only: dict[str, int] = {}
    cells = _RunCells(run)
    names = state.backend_names
    slot_of = {
        key: cells.slot(cell)
        for key, cell in {id(c): c for r in state.rows for c in r.cells.values()}.items()
    }
    # Rows are counted by shape (their backends and this run's slot on each): a dashboard of
    # thousands of rows has a few dozen shapes, each worked out once.
    shapes = Counter(
        (tuple(r.cells), tuple([slot_of[id(c)] for c in r.cells.values()])) for r in state.rows
    )
    for (backends, slots), count in shapes.items():
        ran = passed = 0
        failing: list[str] = []
        for backend, slot in zip(backends, slots, strict=True):
            tallies.setdefault(backend, [0] * 5)[slot] += count
            if slot == _MISSING:
                continue
            ran += 1
            if slot == _FAILED:
                failing.append(backend)
            elif slot != _SKIPPED:
                passed += 1
        if not ran or ran < len(names):
            continue
        rows += count
        # A skip is left out, as the index's kinds leave it (grouping.py).
        if not failing and passed:
            green += count
        elif len(failing) == 1:
            fails_only[failing[0]] = fails_only.get(failing[0], 0) + count
    sources = sorted(cells.sources.values(), key=lambda s: (s.time, s.run))
    with_sha = [s for s in sources if s.sha]
    return PointPart(
        point=TrendPoint(
            run=run,
            sha=with_sha[-1].sha if with_sha else "",
            time=sources[-1].time if sources else "",
            backends=tuple(
                (
                    name,
                    BackendPoint(passed=t[0], failed=t[1], flaky=t[2], skipped=t[3], missing=t[4]),
                )
                for name, t in tallies.items()
            ),
            parity=Parity(rows=rows, green=green, fails_only=tuple(sorted(fails_only.items()))),
        ),
        brought=bool(sources),
        sha_time=with_sha[-1].time if with_sha else "",
    )


def join_parts(run: int, parts: Iterable[PointPart]) -> TrendPoint | None:
    """The point of run ``run`` from every dashboard's part, in key order (None when the run
    brought no dashboard any result)."""
    tallies: dict[str, list[int]] = {}
    rows = green = 0
    fails_only: dict[str, int] = {}
    sha, sha_time, time, brought = "", "", "", False
    for part in parts:
        point = part.point
        for name, b in point.backends:
            tally = tallies.setdefault(name, [0] * 5)
            for slot, value in enumerate((b.passed, b.failed, b.flaky, b.skipped, b.missing)):
                tally[slot] += value
        rows += point.parity.rows
        green += point.parity.green
        for name, count in point.parity.fails_only:
            fails_only[name] = fails_only.get(name, 0) + count
        if part.brought:
            time = point.time if not brought or point.time >= time else time
            brought = True
        if point.sha and (not sha or part.sha_time >= sha_time):
            sha, sha_time = point.sha, part.sha_time
    if not brought:
        return None
    return TrendPoint(
        run=run,
        sha=sha,
        time=time,
        backends=tuple(
            (name, BackendPoint(passed=t[0], failed=t[1], flaky=t[2], skipped=t[3], missing=t[4]))
            for name, t in tallies.items()
        ),
        parity=Parity(rows=rows, green=green, fails_only=tuple(sorted(fails_only.items()))),
    )


def trend_point(states: Iterable[DashboardState], run: int) -> TrendPoint | None:
    """The point of run ``run`` over ``states`` (None when no cell holds a result of it)."""
    ordered = sorted(states, key=lambda s: s.key)
    return join_parts(run, (dashboard_part(state, run) for state in ordered))


def with_points(trend: Trend, points: Iterable[TrendPoint], *, cap: int) -> Trend:
    """``trend`` with ``points`` (each replacing the point of its run), thinned to ``cap``."""
    kept = {point.run: point for point in trend.points}
    kept.update((point.run, point) for point in points)
    return Trend(points=thin(sorted(kept.values(), key=lambda p: p.run), cap))


def thin(points: Iterable[TrendPoint], cap: int) -> tuple[TrendPoint, ...]:
    """At most ``cap`` points: the newest half whole, every other older point dropped (the
    oldest kept) until they fit."""
    kept = list(points)
    recent = max(1, cap // 2)
    while len(kept) > max(cap, 1):
        old, new = kept[:-recent], kept[-recent:]
        kept = (old[::2] if len(old) > 1 else []) + new
    return tuple(kept)


def record_runs(
    trend: Trend, states: Iterable[DashboardState], runs: Iterable[int], *, cap: int
) -> Trend:
    """``trend`` with the points of ``runs`` (re)computed from ``states``, thinned to ``cap``."""
    given = list(states)
    points = {point.run: point for point in trend.points}
    for run in runs:
        point = trend_point(given, run)
        if point is not None:
            points[run] = point
    return Trend(points=thin(sorted(points.values(), key=lambda p: p.run), cap))


def with_trend(merged: Merged, previous: Trend, *, cap: int = DEFAULT_POINTS) -> Merged:
    """``merged`` holding the store's trend with the runs it brought, and the store's newest
    run when the trend has no point of it yet (``publish``, which brings no run)."""
    runs = set(merged.runs)
    newest = max((state.runs[0] for state in merged.states.values() if state.runs), default=None)
    if newest is not None and (not previous.points or newest > previous.points[-1].run):
        runs.add(newest)
    trend = record_runs(previous, merged.states.values(), sorted(runs), cap=cap)
    return replace(merged, trend=trend)


# ----------------------------------------------------------------------------- the file


def _point_json(point: TrendPoint) -> dict[str, object]:
    return {
        "run": point.run,
        "sha": point.sha,
        "time": point.time,
        "backends": {
            name: {
                "passed": b.passed,
                "failed": b.failed,
                "flaky": b.flaky,
                "skipped": b.skipped,
                "missing": b.missing,
            }
            for name, b in point.backends
        },
        "parity": {
            "rows": point.parity.rows,
            "green": point.parity.green,
            "fails_only": dict(point.parity.fails_only),
        },
    }


def dump_trend(trend: Trend) -> str:
    """The text of ``trend.json`` (deterministic; one point per line)."""
    lines = [
        json.dumps(_point_json(p), ensure_ascii=False, separators=(",", ":")) for p in trend.points
    ]
    head = f'{{"format":"{FORMAT}","version":{VERSION},"points":['
    return head + ("\n" + ",\n".join(lines) + "\n" if lines else "") + "]}\n"


def _point(value: object) -> TrendPoint:
    item = expect_object(value)
    parity = expect_object(item["parity"])
    backends = expect_object(item["backends"])
    return TrendPoint(
        run=expect_int(item["run"]),
        sha=expect_str(item["sha"]),
        time=expect_str(item["time"]),
        backends=tuple(
            (
                name,
                BackendPoint(**{k: expect_int(v) for k, v in expect_object(counts).items()}),
            )
            for name, counts in backends.items()
        ),
        parity=Parity(
            rows=expect_int(parity["rows"]),
            green=expect_int(parity["green"]),
            fails_only=tuple(
                (name, expect_int(n)) for name, n in expect_object(parity["fails_only"]).items()
            ),
        ),
    )


def _trend(document: Mapping[str, object]) -> Trend:
    if document.get("format") != FORMAT:
        raise MalformedError(f"not an {FORMAT} document")
    version = document.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise MalformedError(f"format version {version!r}; this ivy-matrix reads {VERSION}")
    points = document["points"]
    if not isinstance(points, list):
        raise MalformedError("'points' is not a list")
    by_run = {point.run: point for point in map(_point, points)}
    return Trend(points=tuple(sorted(by_run.values(), key=lambda p: p.run)))


def load_trend(text: str | None, *, where: str) -> Trend:
    """Parse ``trend.json`` (None or "": no trend yet); :class:`StoreError` naming ``where``."""
    if not text:
        return Trend()
    try:
        return _trend(expect_object(json.loads(text)))
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise StoreError(
            f"cannot read the trend {where}: {error}; delete the file to start a new trend "
            f"(the dashboards are not affected)"
        ) from None
