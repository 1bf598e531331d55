"""The dashboard branch's index file: what the index page and retirement need of each dashboard.

Pure: text in, values out. ``.ivy-matrix/state/INDEX`` (no ``.json``, so no older version
takes it for a dashboard state) holds one :class:`Summary` per dashboard: its runs, the run
id from which retirement would take something from it (``stale_at``), its passing/total
counts by backend, the lines of the index's history sections and its failing rows by kind
(``index_page.IndexRow``; grouping.py). So a
writer reads only the dashboards its results touch and still draws the whole index page and
applies the store-wide retirement, reading a dashboard it does not touch only when that
dashboard has something to retire. The file says which ``REVISION`` it describes: a branch
written since by an older version (which does not keep it) is read whole once and the file
rebuilt (migration on write), as is a file of another version. Format, version 3 (version 1
had no ``kinds``; version 2's ``longer`` held only streaks of more than three runs, and its
``kinds`` counted rows, not the errors their backends share)::

    {"format": "ivy-matrix-index", "version": 3, "revision": 12,
     "dashboards": [{"title": "gradients", "category": "core", "runs": [102, 101],
                     "stale_at": 101, "counts": [["torch", 68, 70], ["jax", 70, 70]],
                     "notes": {"newly": ["test_x · torch: ..."], "newly_total": 1,
                               "longer": [], "longer_total": 0, "flaky": [], "flaky_total": 0},
                     "kinds": [["backend-specific", ["torch"], 1]]}]}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from ivy_matrix.explain.grouping import kinds_from_json, kinds_json
from ivy_matrix.explain.history_text import IndexNotes
from ivy_matrix.jsonshape import (
    expect_int,
    expect_list,
    expect_number,
    expect_object,
    expect_str,
)
from ivy_matrix.model import BackendPoint, DashboardId, DashboardState, Parity, TrendPoint
from ivy_matrix.state.paths import dashboard_file
from ivy_matrix.state.trend import PointPart, dashboard_part
from ivy_matrix.views.index_page import IndexRow, index_row

INDEX_FORMAT = "ivy-matrix-index"
INDEX_VERSION = 3
# Runs (a dashboard's newest) whose trend parts the index keeps: a run's point is drawn when
# its results arrive, so the newest two (a run, and one beside it) are what a point needs of
# a dashboard not read; an older run's re-run reads the dashboard.
PART_RUNS = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """What the index keeps of one dashboard (see the module docstring)."""

    id: DashboardId
    runs: tuple[int, ...]
    stale_at: int | None
    row: IndexRow
    # Its share of the trend's point of each of its newest runs that brought it results, and
    # of a run that brought it none (trend.dashboard_part).
    parts: Mapping[int, PointPart]
    absent: PointPart

    def part(self, run: int) -> PointPart | None:
        """Its share of run ``run``'s point; None when only reading it tells (an old run)."""
        found = self.parts.get(run)
        if found is not None:
            return found
        return None if run in self.runs else self.absent


def stale_at(state: DashboardState) -> int | None:
    """The run id past which retirement takes something from ``state``: it retires something
    exactly when its horizon (retirement.retirement_horizon) is above this. A row goes when
    its newest result is older than the horizon, a column likewise, so this is the smallest
    of the rows' and the columns' newest run ids (None: no cell at all)."""
    newest: list[int] = []
    columns: dict[str, int] = {}
    for row in state.rows:
        if not row.cells:
            continue
        runs = {backend: cell.latest.run.run_id for backend, cell in row.cells.items()}
        newest.append(max(runs.values()))
        for backend, run in runs.items():
            columns[backend] = max(columns.get(backend, run), run)
    newest.extend(columns.values())
    return min(newest) if newest else None


def summarize(state: DashboardState) -> Summary:
    """A dashboard's summary for the index file."""
    parts = {run: dashboard_part(state, run) for run in state.runs[:PART_RUNS]}
    return Summary(
        id=state.id,
        runs=state.runs,
        stale_at=stale_at(state),
        row=index_row(state),
        parts={run: part for run, part in parts.items() if part.brought},
        absent=absent_part(state),
    )


def absent_part(state: DashboardState) -> PointPart:
    """``state``'s share of the point of a run that brought it nothing: every cell missing
    (what trend.dashboard_part gives for such a run, without looking at the cells' results)."""
    missing = dict.fromkeys(state.backend_names, 0)
    for row in state.rows:
        for backend in row.cells:
            missing[backend] = missing.get(backend, 0) + 1
    return PointPart(
        point=TrendPoint(
            run=0,
            backends=tuple((name, BackendPoint(missing=n)) for name, n in missing.items()),
        )
    )


def retires_something(summary: Summary, horizon: int | None) -> bool:
    """Whether retirement with this horizon changes the dashboard ``summary`` describes."""
    return horizon is not None and summary.stale_at is not None and horizon > summary.stale_at


def dump_index(summaries: Iterable[Summary], revision: int) -> str:
    """The index file's text (deterministic: dashboards by key)."""
    dashboards = []
    for summary in sorted(summaries, key=lambda s: s.id.key):
        notes = summary.row.notes
        dashboards.append(
            {
                "title": summary.id.title,
                "category": summary.id.category,
                "runs": list(summary.runs),
                "stale_at": summary.stale_at,
                "counts": [[b, p, t] for b, (p, t) in summary.row.counts.items()],
                "parts": {str(run): _part_json(part) for run, part in summary.parts.items()},
                "absent": _part_json(summary.absent),
                "notes": {
                    "newly": list(notes.newly),
                    "newly_total": notes.newly_total,
                    "longer": list(notes.longer),
                    "longer_total": notes.longer_total,
                    "flaky": list(notes.flaky),
                    "flaky_total": notes.flaky_total,
                    **_duration_notes_json(notes),
                },
                "kinds": kinds_json(summary.row.kinds),
            }
        )
    document = {
        "format": INDEX_FORMAT,
        "version": INDEX_VERSION,
        "revision": revision,
        "dashboards": dashboards,
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def _part_json(part: PointPart) -> dict[str, object]:
    point = part.point
    return {
        "brought": part.brought,
        "sha": point.sha,
        "time": point.time,
        "sha_time": part.sha_time,
        "backends": [
            [name, b.passed, b.failed, b.flaky, b.skipped, b.missing] for name, b in point.backends
        ],
        "parity": [
            point.parity.rows,
            point.parity.green,
            [list(f) for f in point.parity.fails_only],
        ],
    }


def _part(value: object, run: int) -> PointPart:
    value = expect_object(value)
    backends = []
    for entry in expect_list(value["backends"]):
        name, *counts = expect_list(entry)
        passed, failed, flaky, skipped, missing = (expect_int(n) for n in counts)
        backends.append(
            (
                expect_str(name),
                BackendPoint(
                    passed=passed, failed=failed, flaky=flaky, skipped=skipped, missing=missing
                ),
            )
        )
    rows, green, only = expect_list(value["parity"])
    fails_only = []
    for entry in expect_list(only):
        name, count = expect_list(entry)
        fails_only.append((expect_str(name), expect_int(count)))
    brought = value["brought"]
    if not isinstance(brought, bool):
        raise TypeError("'brought' is not a boolean")
    return PointPart(
        point=TrendPoint(
            run=run,
            sha=expect_str(value["sha"]),
            time=expect_str(value["time"]),
            backends=tuple(backends),
            parity=Parity(
                rows=expect_int(rows), green=expect_int(green), fails_only=tuple(fails_only)
            ),
        ),
        brought=brought,
        sha_time=expect_str(value["sha_time"]),
    )


def load_index(text: str) -> tuple[int, dict[DashboardId, Summary]] | None:
    """(the revision it describes, the summaries by dashboard); None when the text is not an
    index file this version reads (the caller reads the whole branch and writes a new one)."""
    try:
        document = json.loads(text)
        if not isinstance(document, dict) or document.get("format") != INDEX_FORMAT:
            return None
        if document.get("version") != INDEX_VERSION:
            return None
        revision = expect_int(document["revision"])
        summaries = {}
        for item in expect_list(document["dashboards"]):
            summary = _summary(item)
            summaries[summary.id] = summary
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    return revision, summaries


def _summary(item: object) -> Summary:
    item = expect_object(item)
    dashboard = DashboardId(title=expect_str(item["title"]), category=expect_str(item["category"]))
    stale = item["stale_at"]
    notes = expect_object(item["notes"])
    parts = expect_object(item["parts"])
    counts = {}
    for entry in expect_list(item["counts"]):
        backend, passing, total = expect_list(entry)
        counts[expect_str(backend)] = (expect_int(passing), expect_int(total))
    return Summary(
        id=dashboard,
        runs=tuple(expect_int(run) for run in expect_list(item["runs"])),
        stale_at=None if stale is None else expect_int(stale),
        row=IndexRow(
            key=dashboard.key,
            path=dashboard_file(DashboardState(id=dashboard)),
            counts=counts,
            notes=_with_durations(
                IndexNotes(
                    newly=tuple(expect_str(line) for line in expect_list(notes["newly"])),
                    newly_total=expect_int(notes["newly_total"]),
                    longer=tuple(expect_str(line) for line in expect_list(notes["longer"])),
                    longer_total=expect_int(notes["longer_total"]),
                    flaky=tuple(expect_str(line) for line in expect_list(notes["flaky"])),
                    flaky_total=expect_int(notes["flaky_total"]),
                ),
                notes,
            ),
            kinds=kinds_from_json(item["kinds"]),
        ),
        parts={int(run): _part(part, int(run)) for run, part in parts.items()},
        absent=_part(item["absent"], 0),
    )


def _duration_notes_json(notes: IndexNotes) -> dict[str, object]:
    """The durations' notes as the file keeps them, only when the dashboard has durations."""
    if not notes.seconds and not notes.slower_total:
        return {}
    return {
        "slower": list(notes.slower),
        "slower_total": notes.slower_total,
        "seconds": [[backend, round(value, 3)] for backend, value in notes.seconds],
        "slowest": [
            [backend, round(value, 3), row, url] for backend, value, row, url in notes.slowest
        ],
    }


def _with_durations(read: IndexNotes, notes: Mapping[str, object]) -> IndexNotes:
    """``read`` with the durations' notes read back (none in a file written before them)."""
    if "seconds" not in notes:
        return read
    seconds = []
    for item in expect_list(notes["seconds"]):
        backend, value = expect_list(item)
        seconds.append((expect_str(backend), expect_number(value)))
    slowest = []
    for item in expect_list(notes["slowest"]):
        backend, value, row, url = expect_list(item)
        slowest.append(
            (expect_str(backend), expect_number(value), expect_str(row), expect_str(url))
        )
    return replace(
        read,
        slower=tuple(expect_str(line) for line in expect_list(notes["slower"])),
        slower_total=expect_int(notes["slower_total"]),
        seconds=tuple(seconds),
        slowest=tuple(slowest),
    )
