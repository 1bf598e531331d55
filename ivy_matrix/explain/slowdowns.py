"""Durations in words: each backend's slowest tests, and the cells that got slower, and why.

Pure: no I/O. From the durations the state keeps beside each cell's history
(state/durations.py):

- **Slowest**: a backend's cells by the duration of the result each shows, longest first
  (:func:`slowest`).
- **Slower** (a duration regression, :func:`cell_slowdown`): among a cell's default-branch
  results (history.py's rules: one result per run, a pull request's never) that have a
  duration and did not skip (a skipped test takes no time), the newest is at least
  :data:`SLOWER_FACTOR` (2) times and at least :data:`SLOWER_SECONDS` (5 s) longer than the
  median of the last :data:`SLOWER_WINDOW` (10) of them, the newest included, and there are at
  least :data:`SLOWER_MIN_RUNS` (3) of them. The **slow streak** is the newest results that are
  that much slower than the median; its first is the run it got slower in, and the result
  before it (of the usual duration) the one it is compared with. The two-axis blame is
  failures' (blame.py :func:`~ivy_matrix.explain.blame.blame_between`): ``code only`` (other
  commit, same packages), ``environment only`` (same commit, other packages), ``both``.

A test that got 3 times slower in one run is slower until half of its last 10 runs are that
slow: then that is its usual duration.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, repeat

from ivy_matrix.escaping import escape_name, markdown_target, safe_link
from ivy_matrix.explain.blame import Blame, blame_between, describe_blame
from ivy_matrix.explain.history_text import slow_line
from ivy_matrix.model import Cell, DashboardState, Entry, Outcome, Row, Timing
from ivy_matrix.state.durations import (
    RANK,
    SECONDS_OF,
    codes_from,
    latest_timed,
    newest_codes,
    rounded,
    seconds_of,
    seconds_text,
    timings_of,
)
from ivy_matrix.state.history import RunRef, run_results

SLOWER_FACTOR = 2.0
SLOWER_SECONDS = 5.0
SLOWER_WINDOW = 10
SLOWER_MIN_RUNS = 3
SLOWEST_KEPT = 10  # the slowest cells each backend lists
_AT_LEAST_SLOWER_SECONDS = codes_from(SLOWER_SECONDS)
_SIDES = ("the last run of its usual duration", "the first slow run")


def is_slower(seconds: float, median: float) -> bool:
    """Whether ``seconds`` is at least 2 times and 5 s longer than ``median``."""
    return seconds >= SLOWER_FACTOR * median and seconds - median >= SLOWER_SECONDS


@dataclass(frozen=True, slots=True, kw_only=True)
class Slowdown:
    """A cell that got slower: its newest duration, the median it is compared with (over
    ``runs`` results), the run it got slower in, and the blame."""

    row: str
    backend: str
    seconds: float
    median: float
    runs: int
    latest: Entry
    since: RunRef
    blame: Blame

    @property
    def factor(self) -> float:
        return self.seconds / self.median if self.median else float("inf")

    def to_json(self) -> dict[str, object]:
        """A slower cell in the summary JSON."""
        return {
            "row": self.row,
            "backend": self.backend,
            "seconds": rounded(self.seconds),
            "median": rounded(self.median),
            "runs": self.runs,
            "slower_since": self.since.to_json(),
            "url": self.latest.source.url,
            "blame": self.blame.to_json(("last_usual", "first_slow")),
        }


def cell_slowdown(
    row: str,
    backend: str,
    cell: Cell,
    times: str | None,
    *,
    branches: Collection[str] = (),
    repository: str = "",
) -> Slowdown | None:
    """The cell's duration regression (the module docstring), None when it has none."""
    if not times:
        return None
    by_entry = {id(e): t for e, t in zip(cell.entries, timings_of(cell, times), strict=True)}
    timed: list[tuple[Entry, Timing]] = []
    for result in run_results(cell.entries, branches):
        timing = by_entry.get(id(result.entry))
        if timing is not None and result.outcome is not Outcome.SKIPPED:
            timed.append((result.entry, timing))
    timed = timed[:SLOWER_WINDOW]
    if len(timed) < SLOWER_MIN_RUNS or timed[0][0] is not cell.entries[0]:
        return None  # too few results, or the result shown has no duration to compare
    median = statistics.median(t.seconds for _, t in timed)
    if not is_slower(timed[0][1].seconds, median):
        return None
    first = timed[0][0]
    usual: Entry | None = None
    for entry, timing in timed:
        if not is_slower(timing.seconds, median):
            usual = entry
            break
        first = entry
    if usual is None:  # cannot be: half the results are at most the median
        return None
    return Slowdown(
        row=row,
        backend=backend,
        seconds=timed[0][1].seconds,
        median=median,
        runs=len(timed),
        latest=cell.entries[0],
        since=RunRef.of(first),
        blame=blame_between(usual, first, repository=repository, sides=_SIDES),
    )


def default_durations(
    cell: Cell, times: str | None, *, branches: Collection[str] = ()
) -> list[float]:
    """The durations of a cell's newest default-branch results (at most
    :data:`SLOWER_WINDOW`, skipped ones left out), newest first."""
    if not times:
        return []
    by_entry = {id(e): t for e, t in zip(cell.entries, timings_of(cell, times), strict=True)}
    found = []
    for result in run_results(cell.entries, branches):
        timing = by_entry.get(id(result.entry))
        if timing is not None and result.outcome is not Outcome.SKIPPED:
            found.append(timing.seconds)
    return found[:SLOWER_WINDOW]


def dashboard_slowdowns(
    state: DashboardState, *, branches: Collection[str] = (), repository: str = ""
) -> list[Slowdown]:
    """The cells of a dashboard that got slower, in the order it shows them."""
    found = []
    long_enough = _AT_LEAST_SLOWER_SECONDS
    rows = state.rows
    # Most cells are passed over on the code of their newest duration alone, a column at a
    # time (most dashboards have no cell of 5 s or more).
    candidates = sorted(
        {
            index
            for codes in newest_codes(rows).values()
            if not long_enough.isdisjoint(codes)
            for index, code in enumerate(codes)
            if code in long_enough
        }
    )
    for row in map(rows.__getitem__, candidates):
        times = row.times
        for backend in state.backend_names:
            if backend in times and _may_be_slower(times[backend]):
                slowdown = cell_slowdown(
                    row.name,
                    backend,
                    row.cells[backend],
                    times[backend],
                    branches=branches,
                    repository=repository,
                )
                if slowdown is not None:
                    found.append(slowdown)
    return found


def _may_be_slower(times: str) -> bool:
    """Whether a cell's durations leave it a chance to be slower: its newest is at least
    5 s and twice the shortest kept (any median is at least the shortest), so that most
    cells are passed over without a look at their history."""
    kept = seconds_of(times)
    newest = kept[0]
    if newest is None or newest < SLOWER_SECONDS:
        return False
    known = [seconds for seconds in kept if seconds is not None]
    return len(known) >= SLOWER_MIN_RUNS and newest >= SLOWER_FACTOR * min(known)


@dataclass(frozen=True, slots=True, kw_only=True)
class SlowCell:
    """One of a backend's slowest cells: its dashboard, row, duration and job."""

    dashboard: str
    row: str
    seconds: float
    timed: int
    url: str

    def to_json(self) -> dict[str, object]:
        return {
            "dashboard": self.dashboard,
            "row": self.row,
            "seconds": rounded(self.seconds),
            "timed": self.timed,
            "url": self.url,
        }


def slowest(
    states: Iterable[DashboardState], *, limit: int = SLOWEST_KEPT
) -> dict[str, list[SlowCell]]:
    """Each backend's ``limit`` slowest cells over ``states``, by the duration of the result
    each shows, longest first (ties: the first listed), backends in first-seen order."""
    given = list(states)
    # One dashboard's rows are its own tuple (their columns made once: newest_codes).
    rows = given[0].rows if len(given) == 1 else [row for state in given for row in state.rows]
    keys = list(chain.from_iterable(repeat(state.key, len(state.rows)) for state in given))
    found: dict[str, list[SlowCell]] = {}
    for backend, codes in newest_codes(rows).items():
        # Each row's level (-1: no duration), and the rows by it, sorted in C; stable, so
        # that among cells alike the first listed comes first.
        levels = list(map(RANK.__getitem__, codes))
        ranked = sorted(range(len(levels)), key=levels.__getitem__, reverse=True)[:limit]
        cells = [_slow(keys[i], rows[i], backend, codes[i]) for i in ranked if levels[i] >= 0]
        if cells:
            found[backend] = cells
    return found


def _slow(dashboard: str, row: Row, backend: str, code: str) -> SlowCell:
    """The cell of ``row`` and ``backend``, whose newest duration is ``code``."""
    return SlowCell(
        dashboard=dashboard,
        row=row.name,
        seconds=SECONDS_OF[code],
        timed=latest_timed(row, backend),
        url=row.cells[backend].latest.source.url,
    )


def describe_slowdown(slowdown: Slowdown) -> str:
    """A slower cell in words: test, backend (its job linked), how much slower than its median
    since which run, and why (the blame's words)."""
    url = safe_link(slowdown.latest.source.url)
    seconds = seconds_text(slowdown.seconds)
    shown = f"[{seconds}]({markdown_target(url)})" if url else seconds
    since = slowdown.since
    sha = f" ({escape_name(since.sha[:7])})" if since.sha else ""
    said = (
        f"{escape_name(slowdown.row)} · {escape_name(slowdown.backend)}: {shown}, "
        f"{slowdown.factor:.1f} times its median {seconds_text(slowdown.median)} "
        f"of {slowdown.runs} runs, since run {since.run_id}{sha}"
    )
    blame = describe_blame(slowdown.blame)
    return f"{said}, {blame}" if blame else said


def describe_slow(cell: SlowCell) -> str:
    """One of the slowest cells in words: test, its duration (its job linked)."""
    return slow_line(cell.row, cell.seconds, cell.url)


def slowest_lines(found: Sequence[SlowCell]) -> list[str]:
    """The lines of a backend's slowest cells (for sections and the index)."""
    return [describe_slow(cell) for cell in found]
