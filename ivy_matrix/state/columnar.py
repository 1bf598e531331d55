"""The state documents, laid out by column: format version 5 (version 3 without durations).

Pure: no I/O. The same content as version 4 (statefile.py), laid out so that one column can be
written without the others: a leg that brings one backend's results rewrites that backend's
column and copies the others as they were, byte for byte. Still one JSON document per
dashboard; each column is one line of it::

    {"format":"ivy-matrix-dashboard","version":5,"title":"gradients","category":"core",
    "runs":[4519946746],"backends":[["torch",[4519946746,1,7960678746],0]],
    "rows":["test_grad","test_jac"],"firsts":[[4519946746,1,7960678746]],"seen":[0,0,0,1],
    "totals":{"torch":{...}},"columns":[
    {"backend":"torch","sources":[...],"messages":[...],"cells":[...],"at":[0,null,1],
     "times":"Sx~~Q3"}
    ]}

(the header is one line in the file). ``rows`` lists every row's name in display order;
``firsts`` each run key a row first appeared in, once, and ``seen`` two numbers per row: the
index of its run key in ``firsts`` and its position in that run's results. Each column lists
its own ``sources``, ``messages`` and distinct ``cells`` (as in version 2) and ``at``: for
each row, by position, the index of its cell in this column, or ``null`` for none (the list
may stop early: the rows after it have no cell here). ``times`` holds the durations of its
results (durations.py): for each row that has a cell here, in order, two characters for each
result of the cell's history (``~~`` for one without a duration); a column none of whose
results has one leaves it out. ``timed`` (rare) gives, by row position, how many cases each
result had timed, for the rows where it was not all of them. A column
whose cells are the same objects, in the same rows, as in the document it was read from is
written as the line it was read from (:func:`dump_columns`); rows added at the end leave the
other columns' lines valid.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from ivy_matrix.jsonshape import MalformedError, expect_list, expect_object
from ivy_matrix.model import NO_TIMES, Cell, DashboardId, DashboardState, Entry, Row, RunKey, Seen
from ivy_matrix.state.durations import CODE_WIDTH, aligned, is_codes, read_times, times_column
from ivy_matrix.state.records import (
    FORMAT,
    Tables,
    read_cell,
    read_head,
    read_message,
    read_name,
    read_run,
    read_runs,
    read_source,
)
from ivy_matrix.state.totals import backend_totals

COLUMNS_VERSION = 5
# The versions laid out by column: 3 is this layout without durations.
COLUMNS_VERSIONS = frozenset({3, COLUMNS_VERSION})
_COLUMNS = ',"columns":[\n'
_END = "\n]}\n"
_LINE_HEAD = '{"backend":'
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True, kw_only=True)
class Columns:
    """A state as read from its document, with each column's line of text (by backend), for
    :func:`dump_columns` to write again when the column has not changed."""

    state: DashboardState
    lines: Mapping[str, str] = field(default_factory=dict)


def _unchanged(backend: str, state: DashboardState, before: DashboardState) -> bool:
    """Whether ``backend``'s column of ``state`` is the one of ``before``: the same cell
    objects in the same rows, and no cell in the rows added after them."""
    rows = state.rows
    for index, old in enumerate(before.rows):
        new = rows[index]
        if new is not old and (
            new.cells.get(backend) is not old.cells.get(backend)
            or new.times.get(backend) is not old.times.get(backend)
        ):
            return False
    return all(backend not in row.cells for row in rows[len(before.rows) :])


def _prefix(state: DashboardState, before: DashboardState) -> bool:
    """Whether ``before``'s rows are the first rows of ``state``, in the same order."""
    if len(before.rows) > len(state.rows):
        return False
    return all(a.name == b.name for a, b in zip(before.rows, state.rows, strict=False))


def _column(backend: str, state: DashboardState) -> str:
    tables = Tables()
    at: list[int | None] = []
    codes: list[str] = []
    timed: dict[str, list[int]] = {}
    column = times_column(state.rows, backend)
    for position, row in enumerate(state.rows):
        cell = row.cells.get(backend)
        if cell is None:
            at.append(None)
            continue
        at.append(tables.history(cell))
        times = column[position]
        if times is None:
            codes.append(NO_CODE_OF[len(cell.entries)])
            continue
        found = times
        if "|" in times:  # rare: some cases of a result had no time
            found, _, counts = times.partition("|")
            timed[str(position)] = [int(n) for n in counts.split(",")]
        if len(found) != CODE_WIDTH * len(cell.entries):
            found = aligned(found, len(cell.entries))
        codes.append(found)
    while at and at[-1] is None:
        at.pop()
    document: dict[str, object] = {
        "backend": backend,
        "sources": tables.sources,
        "messages": tables.messages,
        "cells": tables.histories,
        "at": at,
    }
    text = "".join(codes)
    if text.strip("~"):
        document["times"] = text
        if timed:
            document["timed"] = timed
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


class _NoCodes(dict[int, str]):
    """The codes of a cell none of whose results has a duration, by its number of results."""

    def __missing__(self, results: int) -> str:
        self[results] = found = aligned("", results)
        return found


NO_CODE_OF = _NoCodes()


def dump_columns(state: DashboardState, previous: Columns | None = None) -> str:
    """Serialize one dashboard by column (deterministic: same state, same text); the columns
    that did not change since ``previous`` are its lines, copied."""
    reuse = previous is not None and bool(previous.lines) and _prefix(state, previous.state)
    lines = []
    for backend in state.backend_names:
        line = previous.lines.get(backend) if reuse and previous is not None else None
        if line is None or previous is None or not _unchanged(backend, state, previous.state):
            line = _column(backend, state)
        lines.append(line)
    head = {
        "format": FORMAT,
        "version": COLUMNS_VERSION,
        "title": state.id.title,
        "category": state.id.category,
        "runs": list(state.runs),
        "backends": [[name, seen.run, seen.seq] for name, seen in state.backends],
        "rows": [row.name for row in state.rows],
        **_first_seen(state),
        "totals": {name: t.to_json() for name, t in backend_totals(state).items()},
    }
    text = json.dumps(head, ensure_ascii=False, separators=(",", ":"))
    return text[:-1] + _COLUMNS + ",\n".join(lines) + _END


def _first_seen(state: DashboardState) -> dict[str, list[object]]:
    """Where each row first appeared: ``firsts``, each run key once, and ``seen``, a flat
    list of two numbers per row: its run key's index there, and its position in that run."""
    index: dict[RunKey, int] = {}
    seen: list[object] = []
    for row in state.rows:
        run, seq = row.first_seen
        found = index.get(run)
        if found is None:
            found = index[run] = len(index)
        seen += (found, seq)
    return {"firsts": [list(run) for run in index], "seen": seen}


def column_lines(text: str) -> dict[str, str]:
    """Each column's line of a document :func:`dump_columns` wrote, by backend (empty for a
    document laid out otherwise: then every column is written anew)."""
    lines = text.split("\n")
    if len(lines) < 3 or not lines[0].endswith(_COLUMNS[:-1]) or lines[-2:] != ["]}", ""]:  # noqa: PLR2004  -- the header, one column, the end
        return {}
    found = {}
    for line in lines[1:-2]:
        column = line.removesuffix(",")
        if not column.startswith(_LINE_HEAD):
            return {}
        try:
            backend, _ = _DECODER.raw_decode(column, len(_LINE_HEAD))
        except ValueError:
            return {}
        if not isinstance(backend, str) or backend in found:
            return {}
        found[backend] = column
    return found


@dataclass(frozen=True, slots=True)
class Head:
    """What a document says of its whole dashboard before its rows: which one it is, the run
    ids it holds and its backends (read without the rest)."""

    dashboard: DashboardId
    runs: tuple[int, ...]
    backends: tuple[str, ...]

    @classmethod
    def of(cls, state: DashboardState) -> Head:
        """What ``state`` says of itself (a document read whole, in a layout without a head)."""
        return cls(state.id, state.runs, state.backend_names)


HEAD_END = ',"rows":['
"""What follows the part of a document :func:`head_of` reads (:func:`dump_columns` writes
the title, category, runs and backends first; no JSON string holds a bare quote)."""


def head_of(start: str) -> Head | None:
    """The :class:`Head` of a document :func:`dump_columns` wrote, from its text up to
    :data:`HEAD_END`; None when that is not such a start (another layout, or one past its
    first line: read it whole)."""
    if "\n" in start:
        return None
    try:
        document = json.loads(start + "}")
        if (
            not isinstance(document, dict)
            or document.get("format") != FORMAT
            or document.get("version") not in COLUMNS_VERSIONS
        ):
            return None
        dashboard, backends = read_head(document)
        return Head(dashboard, read_runs(document), tuple(name for name, _ in backends))
    except (KeyError, ValueError, IndexError, TypeError, RecursionError):
        return None


def _at(value: object, cells: int) -> list[int | None]:
    """A column's ``at`` list, checked: each item null or an index into its cells."""
    at: list[int | None] = []
    for item in expect_list(value):
        if item is not None and (type(item) is not int or not 0 <= item < cells):
            raise MalformedError(f"expected a cell index or null in 'at', got {item!r:.60}")
        at.append(item)
    return at


def decode_columns(document: Mapping[str, object]) -> DashboardState:
    """The state of a version 3 document (parsed JSON); :class:`MalformedError` if it is not
    one."""
    new_tuple = tuple.__new__  # Seen's and Row's own __new__ are Python functions
    names = [read_name(name) for name in expect_list(document["rows"])]
    firsts = [read_run(run) for run in expect_list(document["firsts"])]
    numbers = [n for n in expect_list(document["seen"]) if type(n) is int]
    keys = numbers[0::2]
    if len(numbers) != 2 * len(names) or (keys and not 0 <= min(keys) <= max(keys) < len(firsts)):
        raise MalformedError("expected a run key's index and a position for each row in 'seen'")
    seen = [new_tuple(Seen, (firsts[k], q)) for k, q in zip(keys, numbers[1::2], strict=True)]
    cells: list[dict[str, Cell]] = [{} for _ in names]
    times: list[dict[str, str] | None] = [None] * len(names)
    for item in expect_list(document["columns"]):
        column = item if isinstance(item, dict) else {}
        backend = read_name(column["backend"])
        sources = [read_source(s) for s in expect_list(column["sources"])]
        messages = [read_message(m) for m in expect_list(column["messages"])]
        made: dict[tuple[object, ...], Entry] = {}
        histories = [read_cell(h, sources, messages, 2, made) for h in expect_list(column["cells"])]
        at = _at(column["at"], len(histories))
        if len(at) > len(names):
            raise MalformedError("a column has more rows than the document")
        for row, index in enumerate(at):
            if index is not None:
                cells[row][backend] = histories[index]
        if "times" in column:
            _read_times(backend, column, at, histories, times)
    dashboard, backends = read_head(document)
    return DashboardState(
        id=dashboard,
        backends=backends,
        rows=tuple(
            new_tuple(Row, (name, first, row_cells, row_times or NO_TIMES))
            for name, first, row_cells, row_times in zip(names, seen, cells, times, strict=True)
        ),
        runs=read_runs(document),
    )


def _read_times(
    backend: str,
    column: Mapping[str, object],
    at: list[int | None],
    histories: list[Cell],
    into: list[dict[str, str] | None],
) -> None:
    """A column's ``times`` (and ``timed``), checked, into each row's durations."""
    text = column["times"]
    if not isinstance(text, str) or not is_codes(text):
        raise MalformedError(f"expected a string of durations, got {text!r:.60}")
    timed = expect_object(column.get("timed", {}))
    start = 0
    for row, index in enumerate(at):
        if index is None:
            continue
        results = len(histories[index].entries)
        end = start + CODE_WIDTH * results
        found = text[start:end].rstrip("~")
        start = end
        if not found:
            continue
        if timed and str(row) in timed:
            counts = timed[str(row)]
            if not isinstance(counts, list) or not all(type(n) is int for n in counts):
                raise MalformedError(f"expected counts of timed cases, got {counts!r:.60}")
            found = read_times(f"{found}|{','.join(map(str, counts))}", results) or ""
        mine = into[row]
        if mine is None:
            mine = into[row] = {}
        mine[backend] = found
    if start != len(text):
        raise MalformedError(
            f"column {backend!r:.60}: 'times' holds {len(text)} characters, its results {start}"
        )
