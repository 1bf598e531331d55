"""A leg file's dashboards: every cell a leg found, one character each, plus what one character
cannot say (a cell of several cases, a failure's first line).

Pure: no I/O; legs.py holds the rest of the format and reads the file. One dashboard::

    {"category": "core", "title": "gradients",
     "rows": ["test_adam", "test_jac", "test_grad"],
     "cells": {"torch": "fs.", "numpy": "ssk"},
     "counts": {"torch": {"1": [3, 0, 1, 0]}},
     "messages": {"torch": {"0": "AssertionError: the results do not match"}},
     "places": {"torch": {"0": ["tests/test_core.py", 42]}},
     "seconds": {"torch": {"0": 1.25, "1": 12.5}, "numpy": {"1": 0.75}},
     "timed": {"torch": {"1": 2}}}

- ``rows``: the rows the leg's results touch, in first-seen order;
- ``cells``: per backend one character per row: ``s`` success, ``f`` failure, ``k`` skipped,
  ``y`` flaky, ``.`` no result;
- ``counts``: per backend, by row index, the cell's cases ``[passed, failed, skipped, flaky]``
  (collect.CellResult), only where they are not one case of the cell's outcome (most cells);
  they must agree with the outcome (a failure has a failed case; else flaky, passed, skipped);
- ``messages``: per backend, by row index, a failing cell's first failure line (at most
  ``junit.MESSAGE_CAP`` characters);
- ``places``: per backend, by row index, where a failing cell's first failing case is: its
  file and its line (0: not given), for the annotations of the job that publishes (only when
  the result file names the file);
- ``seconds``: per backend, by row index, the cell's duration, the sum of its cases' ``time``
  (6 significant digits; only cells some of whose cases had one), at most
  :data:`MAX_SECONDS`; ``timed``: how many of its cases had one, where not all did.
  Both are optional: a leg file of an ivy-matrix that did not read durations has none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TypeVar

from ivy_matrix.jsonshape import (
    MalformedError,
    expect_int,
    expect_list,
    expect_object,
    expect_str,
)
from ivy_matrix.model import CaseCounts, DashboardId, Outcome
from ivy_matrix.results.cells import CellResult, Collected
from ivy_matrix.results.junit import MESSAGE_CAP, NAME_CAP

_T = TypeVar("_T")

# Rows join a class prefix and a test name, each capped at NAME_CAP by junit.py.
NAME_LIMIT = 4 * NAME_CAP
# Every number in a leg file (a count, a row number, an id) is at most this: the largest integer
# every JSON reader holds exactly. A larger one is no count, and one of 4,300 digits or more
# cannot even be turned into text again.
MAX_NUMBER = 2**53 - 1
_ROW_DIGITS = len(str(MAX_NUMBER))
NO_RESULT = "."
# The longest duration of a cell a leg file may give: a year, far past any job's limit.
MAX_SECONDS = 366 * 24 * 3600
CODES = {Outcome.SUCCESS: "s", Outcome.FAILURE: "f", Outcome.SKIPPED: "k", Outcome.FLAKY: "y"}
_OUTCOMES = {code: outcome for outcome, code in CODES.items()}
# The counts of a cell of one case, by its outcome: written only when a cell differs.
_ONE_CASE = {
    Outcome.SUCCESS: CaseCounts(passed=1),
    Outcome.FAILURE: CaseCounts(failed=1),
    Outcome.SKIPPED: CaseCounts(skipped=1),
    Outcome.FLAKY: CaseCounts(flaky=1),
}
# A cell of one case and nothing else, of each outcome (one shared value: a result is frozen).
_PLAIN = {outcome: CellResult(outcome, cases) for outcome, cases in _ONE_CASE.items()}


def dashboard_json(dashboard: DashboardId, rows: Mapping[str, Mapping[str, CellResult]]) -> object:
    """One dashboard of a leg file (see the module docstring)."""
    backends: dict[str, None] = {}
    for cells in rows.values():
        backends.update(dict.fromkeys(cells))
    codes: dict[str, str] = {}
    counts: dict[str, dict[str, list[int]]] = {}
    messages: dict[str, dict[str, str]] = {}
    places: dict[str, dict[str, list[object]]] = {}
    seconds: dict[str, dict[str, float]] = {}
    timed: dict[str, dict[str, int]] = {}
    for backend in backends:
        line = []
        for index, cells in enumerate(rows.values()):
            result = cells.get(backend)
            line.append(NO_RESULT if result is None else CODES[result.outcome])
            if result is None:
                continue
            if result.counts != _ONE_CASE[result.outcome]:
                counts.setdefault(backend, {})[str(index)] = list(result.counts)
            if result.timed:
                seconds.setdefault(backend, {})[str(index)] = float(f"{result.seconds:.6g}")
                if result.timed != result.counts.total:
                    timed.setdefault(backend, {})[str(index)] = result.timed
            if result.outcome is not Outcome.FAILURE:
                continue
            if result.message:
                messages.setdefault(backend, {})[str(index)] = result.message
            if result.where is not None:
                places.setdefault(backend, {})[str(index)] = list(result.where)
        codes[backend] = "".join(line)
    document: dict[str, object] = {
        "category": dashboard.category,
        "title": dashboard.title,
        "rows": list(rows),
        "cells": codes,
    }
    return (
        document
        | ({"counts": counts} if counts else {})
        | ({"messages": messages} if messages else {})
        | ({"places": places} if places else {})
        | ({"seconds": seconds} if seconds else {})
        | ({"timed": timed} if timed else {})
    )


def keyed(check: Callable[[object], _T], value: object, what: str) -> _T:
    """``check(value)``, its complaint naming the key ``what``."""
    try:
        return check(value)
    except MalformedError as error:
        raise MalformedError(f"'{what}': {error}") from None


def bounded_int(value: object, what: str) -> int:
    """An integer of at most :data:`MAX_NUMBER` either way (the sign is the caller's check)."""
    found = keyed(expect_int, value, what)
    if not -MAX_NUMBER <= found <= MAX_NUMBER:
        raise MalformedError(f"'{what}': a number larger than {MAX_NUMBER} (2^53 - 1)")
    return found


def bounded_text(value: object, what: str, limit: int = NAME_LIMIT) -> str:
    """A string of at most ``limit`` characters."""
    found = keyed(expect_str, value, what)
    if len(found) > limit:
        raise MalformedError(f"'{what}' is longer than {limit} characters")
    return found


def add_dashboard(collected: Collected, item: object) -> None:
    """Read one dashboard of a leg file into ``collected`` (a dashboard listed twice is refused)."""
    values = keyed(expect_object, item, "dashboards")
    title = bounded_text(values.get("title"), "dashboards.title")
    if not title.strip():
        raise MalformedError("'dashboards.title' is empty")
    dashboard = DashboardId(
        title=title, category=bounded_text(values.get("category", ""), "category")
    )
    where = f"dashboard {dashboard.key!r:.100}"
    if dashboard in collected.dashboards:
        raise MalformedError(f"{where} is listed twice")
    rows = [
        bounded_text(row, "dashboards.rows")
        for row in keyed(expect_list, values.get("rows"), "rows")
    ]
    if len(set(rows)) != len(rows):
        raise MalformedError(f"{where} lists a row twice")
    counts = _by_row(values.get("counts", {}), "counts")
    messages = _by_row(values.get("messages", {}), "messages")
    places = _by_row(values.get("places", {}), "places")
    seconds = _by_row(values.get("seconds", {}), "seconds")
    timed = _by_row(values.get("timed", {}), "timed")
    found: dict[str, dict[str, CellResult]] = {row: {} for row in rows}
    for backend, codes in keyed(expect_object, values.get("cells", {}), "cells").items():
        if not backend.strip() or len(backend) > NAME_LIMIT:
            raise MalformedError(f"{where} has an empty or too long backend")
        if not isinstance(codes, str) or len(codes) != len(rows):
            raise MalformedError(
                f"{where}, backend {backend!r:.100}: expected one character per row ({len(rows)})"
            )
        its = [part.get(backend, {}) for part in (counts, messages, places, seconds, timed)]
        for index, (row, code) in enumerate(zip(rows, codes, strict=True)):
            if code == NO_RESULT:
                continue
            outcome = _OUTCOMES.get(code)
            if outcome is None:
                raise MalformedError(f"{where}: unknown cell code {code!r}")
            given = [part.pop(index, None) for part in its]
            cell = _plain_cell(outcome, given)
            if cell is None:  # anything but a single case and a duration: checked in full
                cell_where = f"{where}, row {row!r:.100}, backend {backend!r:.100}"
                cell = _timed(
                    _cell(outcome, *given[:3], where=cell_where),
                    *given[3:],
                    where=cell_where,
                )
            found[row][backend] = cell
    if any(any(part.values()) for part in (counts, messages, places, seconds, timed)):
        raise MalformedError(
            f"{where}: counts, messages, places or durations for a cell it does not have"
        )
    collected.dashboards[dashboard] = {row: cells for row, cells in found.items() if cells}


def _by_row(value: object, what: str) -> dict[str, dict[int, object]]:
    """``{backend: {"row index": value}}`` with the indexes read as numbers."""
    found: dict[str, dict[int, object]] = {}
    for backend, cells in keyed(expect_object, value, what).items():
        by_index = keyed(expect_object, cells, what)
        if any(
            not key.isascii() or not key.isdecimal() or len(key) > _ROW_DIGITS for key in by_index
        ):
            raise MalformedError(f"'{what}' of backend {backend!r:.100}: keys must be row numbers")
        found[backend] = {int(key): item for key, item in by_index.items()}
    return found


def _plain_cell(outcome: Outcome, given: list[object]) -> CellResult | None:
    """The cell of one case with no failure line, no place, and no duration or one that is
    plainly right (most cells of a leg file): made without the checks' messages, which only
    a cell that fails them needs; None for any other cell (:func:`_cell`, :func:`_timed`)."""
    counts, message, place, seconds, timed = given
    if counts is not None or message is not None or place is not None or timed is not None:
        return None
    if seconds is None:
        return _PLAIN[outcome]
    if type(seconds) is float and 0.0 <= seconds <= MAX_SECONDS:
        return CellResult(outcome, _ONE_CASE[outcome], "", None, seconds, 1)
    return None


def _cell(
    outcome: Outcome, counts: object, message: object, place: object, *, where: str
) -> CellResult:
    """One cell: its outcome, its cases (one of its outcome unless given), failure line and
    the place of its first failing case."""
    cases = _ONE_CASE[outcome]
    if counts is not None:
        numbers = [bounded_int(n, "counts") for n in keyed(expect_list, counts, "counts")]
        if len(numbers) != len(CaseCounts._fields) or min(numbers) < 0:
            raise MalformedError(f"{where}: counts must be four numbers, 0 or more")
        cases = CaseCounts(*numbers)
        if cases.total == 0 or _outcome_of(cases) is not outcome:
            raise MalformedError(f"{where}: counts {numbers} do not give a {outcome} cell")
    line = "" if message is None else bounded_text(message, "messages", MESSAGE_CAP)
    if line and outcome is not Outcome.FAILURE:
        raise MalformedError(f"{where}: only a failing cell has a failure line")
    found = None
    if place is not None:
        if outcome is not Outcome.FAILURE:
            raise MalformedError(f"{where}: only a failing cell has a place")
        parts = keyed(expect_list, place, "places")
        if len(parts) != 2:  # noqa: PLR2004  -- a file and a line
            raise MalformedError(f"{where}: a place is a file and a line")
        found = (bounded_text(parts[0], "places", NAME_CAP), bounded_int(parts[1], "places"))
        if found[1] < 0:
            raise MalformedError(f"{where}: a place's line is 0 or more")
    return CellResult(outcome, cases, line, found)


def _timed(cell: CellResult, seconds: object, timed: object, *, where: str) -> CellResult:
    """``cell`` with its duration (none unless ``seconds`` is given), checked: a finite number
    of seconds, 0 to :data:`MAX_SECONDS`, of 1 to all of its cases."""
    if seconds is None:
        if timed is not None:
            raise MalformedError(f"{where}: timed cases without a duration")
        return cell
    found = checked_seconds(seconds, where)
    cases = cell.counts.total
    count = cases if timed is None else bounded_int(timed, "timed")
    if not 1 <= count <= cases:
        raise MalformedError(f"{where}: {count} timed cases, the cell has {cases}")
    return cell._replace(seconds=found, timed=count)


def checked_seconds(seconds: object, where: str) -> float:
    """A duration a leg file gives: a number of seconds, 0 to :data:`MAX_SECONDS`."""
    if (
        not isinstance(seconds, int | float)
        or isinstance(seconds, bool)
        or not 0 <= seconds <= MAX_SECONDS
        or math.isnan(seconds)
    ):
        raise MalformedError(
            f"{where}: a duration must be a number of seconds, 0 to {MAX_SECONDS}, "
            f"not {seconds!r:.40}"
        )
    return float(seconds)


def _outcome_of(counts: CaseCounts) -> Outcome:
    """The outcome a cell of these cases shows (the worst: failed, flaky, passed, skipped)."""
    if counts.failed:
        return Outcome.FAILURE
    if counts.flaky:
        return Outcome.FLAKY
    return Outcome.SUCCESS if counts.passed else Outcome.SKIPPED
