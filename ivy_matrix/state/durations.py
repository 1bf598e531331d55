"""Cells' durations as the state keeps them: two characters a result, beside the cells.

Pure: no I/O. A cell's duration in one run is a :class:`~ivy_matrix.model.Timing` (the sum of
its cases' ``time`` and how many had one, results/collector.py). The state keeps one per
result of the cell's history, so that a history has its durations, in a string on the row
(``Row.times``, by backend), not in the entries: entries and cells are shared by every row
alike (most cells of a run are one passing case of one job), and durations differ from row
to row. A string, not an object: tens of thousands of rows hold one, and a string costs the
garbage collector nothing. A merged row holds its strings in one tuple, not a dict
(:class:`~ivy_matrix.model.Times`: 96 bytes a row of four backends, not 184); a state's
columns of them are taken out of those tuples in C (:func:`times_column`,
:func:`newest_codes`).

**The code.** A duration is kept as one of 4,096 levels, two characters of
:data:`ALPHABET` (``0-9A-Za-z-_``; :data:`RANK` gives each code's level, by which codes sort
as the durations they keep): levels 0 to 999 are whole milliseconds (0 to 0.999 s,
exact for the milliseconds result files write: pytest, jest, surefire, nextest...), levels
1,000 to 4,095 are 1 s times a fixed ratio (1.00373) to a power, up to :data:`LARGEST`
(100,000 s, 28 hours; longer is kept as that). So a kept duration under a second is the
result files' sum to the millisecond, and a longer one within 0.19 % of it (:data:`PRECISION`).
``~~`` (:data:`NO_CODE`) stands for a result without a duration. Two characters a result are
what the state's size allows (at Ivy's shape about a tenth more bytes, ``bench/README.md``);
the views and the durations file need no more precision than that.

**A row's durations of one backend** are the codes of its cell's results, newest first,
aligned with ``Cell.entries`` (a result past the end has none; trailing ``~~`` are dropped).
**How many cases had a time** is kept only where it is not all of a result's cases, which is
rare (a runner writes a time for every case or for none): then the codes are followed by
``|`` and each kept result's count, ``"Sx~~F3|2,0,5"``.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping, Sequence
from functools import reduce
from itertools import chain, repeat

from ivy_matrix.jsonshape import MalformedError
from ivy_matrix.model import NO_TIMES, Cell, Entry, Row, Timed, Times, Timing

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"
NO_CODE = "~~"
CODE_WIDTH = 2
LEVELS = len(ALPHABET) * len(ALPHABET)  # two characters
_MILLISECONDS = 1000  # levels below this are whole milliseconds
LARGEST = 1e5
_LOG_RATIO = math.log(LARGEST) / (LEVELS - 1 - _MILLISECONDS)
_CODES = [a + b for a in ALPHABET for b in ALPHABET]
_LEVEL = {code: level for level, code in enumerate(_CODES)}
_SECONDS = [
    *(ms / 1000 for ms in range(_MILLISECONDS)),
    *(math.exp(_LOG_RATIO * k) for k in range(LEVELS - _MILLISECONDS)),
]
# Codes are their characters (one class: checked in C a character at a time, not a code at a
# time through an alternation, 9 times dearer), an even number of them, and each ~ paired
# with the other character of its code: a text's even and odd characters, each but ~ made
# one character, are the same string.
_CODE_CHARACTERS = re.compile(r"[0-9A-Za-z_~-]*")
_TILDES = str.maketrans(dict.fromkeys(ALPHABET, "0"))
_IS_TIMES = re.compile(
    r"((?:[0-9A-Za-z_-]{2}|~~)*)(?:\|((?:0|[1-9][0-9]{0,15})(?:,(?:0|[1-9][0-9]{0,15}))*))?"
)
# The code of each duration of whole milliseconds under a second, by its seconds as a result
# file writes them (``0.359``): what most durations are, found without a call.
MILLISECOND_CODES = {ms / 1000: _CODES[ms] for ms in range(_MILLISECONDS)}
# The precision of a kept duration of a second or more: the largest error relative to the
# sum it keeps (shorter ones are kept to the millisecond).
PRECISION = math.exp(_LOG_RATIO / 2) - 1


def encode(seconds: float) -> str:
    """The two characters that keep ``seconds`` (0 or more)."""
    milliseconds = round(seconds * 1000)
    if milliseconds < _MILLISECONDS:
        return _CODES[milliseconds]
    level = _MILLISECONDS + round(math.log(seconds) / _LOG_RATIO)
    return _CODES[min(max(level, _MILLISECONDS), LEVELS - 1)]


def decode(code: str) -> float | None:
    """The seconds two characters keep (None for :data:`NO_CODE`); KeyError when they are
    no code."""
    if code == NO_CODE:
        return None
    return _SECONDS[_LEVEL[code]]


def codes_from(seconds: float) -> frozenset[str]:
    """The codes that keep ``seconds`` or more (a look-up, no decoding)."""
    return frozenset(code for code, kept in zip(_CODES, _SECONDS, strict=True) if kept >= seconds)


def is_codes(text: str) -> bool:
    """Whether ``text`` is codes, two characters each (what a state document may hold)."""
    if len(text) % CODE_WIDTH or _CODE_CHARACTERS.fullmatch(text) is None:
        return False
    return "~" not in text or text[0::2].translate(_TILDES) == text[1::2].translate(_TILDES)


def rounded(seconds: float) -> float:
    """``seconds`` as the outputs write a kept duration: to the millisecond."""
    return round(seconds, 3)


def seconds_text(seconds: float) -> str:
    """A duration as the views write it: ``0.25 s``, ``12.3 s``, ``2 min 5 s``."""
    if seconds < 10:  # noqa: PLR2004  -- below 10 s, milliseconds say something
        return f"{rounded(seconds):g} s"
    if seconds < 60:  # noqa: PLR2004  -- a minute
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:  # noqa: PLR2004  -- an hour
        return f"{minutes} min {rest} s"
    return f"{minutes // 60} h {minutes % 60} min"


def split_times(times: str) -> tuple[str, tuple[int, ...]]:
    """A row's durations of one backend as its codes and, when kept, each result's timed
    cases (``()``: every timed result had all its cases timed)."""
    codes, bar, counts = times.partition("|")
    return codes, tuple(int(n) for n in counts.split(",")) if bar else ()


def _total(entry: Entry) -> int:
    counts = entry.counts
    return 0 if counts is None else sum(counts)


def timings_of(cell: Cell, times: str | None) -> list[Timing | None]:
    """The duration of each of ``cell``'s results, aligned with its entries (None where a
    result has none)."""
    entries = cell.entries
    found: list[Timing | None] = [None] * len(entries)
    if not times:
        return found
    codes, timed = split_times(times)
    for index in range(min(len(entries), len(codes) // CODE_WIDTH)):
        seconds = decode(codes[CODE_WIDTH * index : CODE_WIDTH * (index + 1)])
        if seconds is not None:
            found[index] = Timing(seconds, timed[index] if timed else _total(entries[index]))
    return found


def latest_timing(row: Row, backend: str) -> Timing | None:
    """The duration of the result a row's cell of ``backend`` shows (None when it has none)."""
    times = row.times.get(backend)
    if not times:
        return None
    seconds = decode(times[:CODE_WIDTH])
    if seconds is None:
        return None
    return Timing(seconds, latest_timed(row, backend))


def latest_timed(row: Row, backend: str) -> int:
    """How many cases of the result a row's timed cell of ``backend`` shows had a time."""
    times = row.times[backend]
    return split_times(times)[1][0] if "|" in times else _total(row.cells[backend].latest)


def pack(entries: Sequence[Entry], timings: Sequence[Timing | None]) -> str | None:
    """The durations of ``entries`` (aligned) as the state keeps them; None when none has
    one."""
    codes = "".join(NO_CODE if t is None else encode(t.seconds) for t in timings).rstrip("~")
    if not codes:
        return None
    kept = list(zip(entries, timings, strict=False))[: len(codes) // CODE_WIDTH]
    if all(t is None or t.timed == _total(e) for e, t in kept):
        return codes
    return codes + "|" + ",".join(str(0 if t is None else t.timed) for _, t in kept)


def merge_times(
    old: Cell | None,
    old_times: str | None,
    merged: Cell,
    entry: Entry,
    timing: Timed | None,
) -> str | None:
    """The durations of ``merged``, the cell ``old`` became with ``entry`` folded in
    (state/merge.py), ``timing`` being ``entry``'s (none when it has no timed case): each
    result keeps its own."""
    if timing is not None and not timing.timed:
        timing = None
    entries = merged.entries
    if old is None or (entries[0] is entry and (len(entries) == 1 or entries[1] is old.entries[0])):
        # The usual case: a newer run's result on top of the old ones (merge_cell keeps them
        # in order), the oldest fallen out; or the only result, replaced.
        counts = entry.counts
        if (timing is None or (counts is not None and timing.timed == sum(counts))) and (
            not old_times or "|" not in old_times
        ):
            head = NO_CODE if timing is None else encode(timing.seconds)
            if old is not None and old_times:
                head = (head + old_times)[: CODE_WIDTH * len(entries)]
            return head.rstrip("~") or None
    before = [] if old is None else timings_of(old, old_times)
    by_entry: dict[int, Timing | None] = {
        id(e): t for e, t in zip(() if old is None else old.entries, before, strict=True)
    }
    by_entry[id(entry)] = None if timing is None else Timing(timing.seconds, timing.timed)
    return pack(entries, [by_entry.get(id(e)) for e in entries])


def joined_times(cell: Cell, parts: Sequence[tuple[Cell, str | None]]) -> str | None:
    """The durations of ``cell``, made of the results of ``parts`` (cells and their
    durations): each result keeps the duration it had in its part."""
    by_entry: dict[int, Timing | None] = {}
    for part, times in parts:
        for e, t in zip(part.entries, timings_of(part, times), strict=True):
            by_entry[id(e)] = t
    return pack(cell.entries, [by_entry.get(id(e)) for e in cell.entries])


def without_backends(row: Row, cells: Mapping[str, Cell]) -> Row:
    """``row`` with only ``cells`` (some of its own), and their durations."""
    times = row.times
    if times and not times.keys() <= cells.keys():
        times = {backend: t for backend, t in times.items() if backend in cells} or NO_TIMES
    return row._replace(cells=cells, times=times)


def aligned(codes: str, results: int) -> str:
    """``codes`` as exactly ``results`` codes: cut, or filled with :data:`NO_CODE`."""
    width = CODE_WIDTH * results
    if len(codes) >= width:
        return codes[:width]
    return codes + NO_CODE * ((width - len(codes)) // CODE_WIDTH)


def read_times(value: object, results: int) -> str | None:
    """A row's durations of one backend as a state document holds them (checked against its
    cell's ``results``; None when it has none)."""
    found = _IS_TIMES.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise MalformedError(f"expected duration codes, got {value!r:.60}")
    codes, counts = found.group(1).rstrip("~"), found.group(2)
    kept = len(codes) // CODE_WIDTH
    if kept > results:
        raise MalformedError(f"durations for {kept} results, the cell has {results}")
    if not codes:
        return None
    if counts is None:
        return codes
    numbers = counts.split(",")
    if len(numbers) < kept:
        raise MalformedError(
            f"expected a count of timed cases for each duration, got {value!r:.60}"
        )
    return codes + "|" + ",".join(numbers[:kept])


def seconds_of(times: str) -> list[float | None]:
    """The seconds of each result a row's durations of one backend keep, newest first (None
    where a result has none)."""
    codes = times.partition("|")[0]
    return [
        None
        if codes[i : i + CODE_WIDTH] == NO_CODE
        else _SECONDS[_LEVEL[codes[i : i + CODE_WIDTH]]]
        for i in range(0, len(codes), CODE_WIDTH)
    ]


def newest_codes(rows: Sequence[Row]) -> Mapping[str, Sequence[str]]:
    """Per backend (in first-seen order), the code of each row's newest duration, aligned
    with ``rows`` (:data:`NO_CODE` where the row has none): a column ranked, filtered and
    added up in C (explain/slowdowns.py, :func:`duration_totals`), with no Python per cell.
    A state's rows (a tuple) are asked about when it is saved and again when it is drawn:
    their columns are made once (kept by identity, as state/totals.py keeps totals), each code
    in them one shared string (cut from a history of several results, each would be a new
    one: 4 MB kept at 200k cells by a steady update)."""
    found = _NEWEST_RECENT.get(id(rows))
    if found is not None and found[0] is rows:
        return found[1]
    columns = _newest_codes(rows)
    if isinstance(rows, tuple):
        if len(_NEWEST_RECENT) >= _NEWEST_KEPT:
            _NEWEST_RECENT.clear()
        _NEWEST_RECENT[id(rows)] = (rows, columns)
    return columns


# The columns of the rows asked about lately, by identity: bounded, and never stale (rows
# are a frozen value, and an entry counts only for the very object it was made from).
_NEWEST_RECENT: dict[int, tuple[Sequence[Row], Mapping[str, Sequence[str]]]] = {}
_NEWEST_KEPT = 512


def _times_columns(rows: Sequence[Row]) -> dict[str, tuple[str, ...]] | None:
    """Each backend's durations, one a row, when every row's are a
    :class:`~ivy_matrix.model.Times` of the same layout (the usual dashboard as merging
    makes it: every row timed on the same backends); else None. Taken out of the rows in C
    (each row's tuple copied, the copies turned into columns), once for the rows asked
    about last: a state is saved a column at a time, then drawn."""
    found = _COLUMNS_RECENT.get(id(rows))
    if found is not None and found[0] is rows:
        return found[1]
    row_times = [row.times for row in rows]
    columns: dict[str, tuple[str, ...]] | None = None
    if row_times and set(map(type, row_times)) == {Times}:
        # A Times' own iteration is its backends': concatenation copies its items.
        items = list(zip(*map(operator.add, row_times, repeat(())), strict=False))
        if len(set(map(id, items[0]))) == 1:
            layout: dict[str, int] = items[0][0]
            columns = {backend: items[at] for backend, at in layout.items()}
    if isinstance(rows, tuple):  # a state's rows: a frozen value
        _COLUMNS_RECENT.clear()
        _COLUMNS_RECENT[id(rows)] = (rows, columns)
    return columns


_COLUMNS_RECENT: dict[int, tuple[Sequence[Row], dict[str, tuple[str, ...]] | None]] = {}


def times_column(rows: Sequence[Row], backend: str) -> Sequence[str | None]:
    """Each row's durations of ``backend`` (None: it has none), in C where the rows' are
    held in one layout (:func:`_times_columns`)."""
    columns = _times_columns(rows)
    if columns is None:
        return [row.times.get(backend) for row in rows]
    return columns.get(backend) or [None] * len(rows)


def _newest_codes(rows: Sequence[Row]) -> dict[str, Sequence[str]]:
    columns = _times_columns(rows)
    if columns is not None:
        return {
            backend: list(map(_SHARED.__getitem__, map(NEWEST, column)))
            for backend, column in columns.items()
        }
    row_times = [row.times for row in rows]
    keys = list(chain.from_iterable(row_times))
    backends = list(dict.fromkeys(keys))
    if not backends:
        return {}
    if keys == backends * len(row_times):
        # The usual dashboard: every row timed on every backend, in the same order. Its
        # codes, row after row, cut into one column a backend.
        codes = list(
            map(_SHARED.__getitem__, map(NEWEST, chain.from_iterable(map(_VALUES, row_times))))
        )
        return {backend: codes[index :: len(backends)] for index, backend in enumerate(backends)}
    return {
        backend: list(
            map(
                _SHARED.__getitem__,
                map(NEWEST, map(operator.methodcaller("get", backend, NO_CODE), row_times)),
            )
        )
        for backend in backends
    }


class _Shared(dict[str, str]):
    """Each code once: a newest code cut from a longer history is a new string each time."""

    def __missing__(self, code: str) -> str:
        self[code] = code
        return code


_SHARED = _Shared()
_VALUES = operator.methodcaller("values")
NEWEST = operator.itemgetter(slice(0, CODE_WIDTH))
"""A row's durations of one backend to the code of its newest."""


RANK: Mapping[str, int] = {**_LEVEL, NO_CODE: -1}
"""Each code's level, by which codes sort as their durations (-1: :data:`NO_CODE`)."""


def duration_totals(rows: Sequence[Row]) -> dict[str, tuple[float, int]]:
    """Per backend: the seconds of the latest results of ``rows`` that have a duration, and
    how many rows they are. Added in C from the columns of :func:`newest_codes`, in row
    order (the same float, to the bit, as a row-by-row sum)."""
    found: dict[str, tuple[float, int]] = {}
    for backend, column in newest_codes(rows).items():
        codes = [code for code in column if code != NO_CODE] if NO_CODE in column else column
        if codes:
            seconds = reduce(operator.add, map(SECONDS_OF.__getitem__, codes), 0.0)
            found[backend] = (seconds, len(codes))
    return found


SECONDS_OF: Mapping[str, float] = dict(zip(_CODES, _SECONDS, strict=True))
"""The seconds each code keeps (:func:`decode` without :data:`NO_CODE`, a look-up)."""
