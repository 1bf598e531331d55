"""The serialized form of a dashboard's state (JSON, one document per dashboard).

Pure: no I/O; the stores read and write the text. Version 4 looks like this::

    {
      "format": "ivy-matrix-dashboard",
      "version": 4,
      "title": "gradients",
      "category": "core",
      "runs": [4519946746, 4519909128],
      "sources": [[4519946746, 1, 7960678746, "https://github.com/o/r/actions/runs/.../job/...",
                   "2026-11-21T10:00:00Z"]],
      "messages": [["AssertionError: 3 != 4", "5d41402abc"]],
      "cells": [[[0, "failure", [2, 1, 0, 0], 0], [3, "success", [3, 0, 0, 0]]],
                [[0, "success", [1, 0, 0, 0]]]],
      "backends": [["torch", [4519946746, 1, 7960678746], 0]],
      "rows": [["test_grad", [4519946746, 1, 7960678746], 0, {"torch": 0}, {"torch": "Sx"}]],
      "totals": {"torch": {"success": 1, "failure": 1, "flaky": 0, "skipped": 0,
                           "cases_passed": 3, "cases_failed": 1, "cases_skipped": 0,
                           "cases_flaky": 0, "passing": 1, "total": 2}}
    }

- ``sources`` lists each job once: run id, run attempt, job id (``-1`` when unknown; an
  attempt of 0, which older versions wrote for adopted cells, reads as all unknown), URL,
  and the time it was recorded (``""`` when unknown); then, only when some is known, an object
  of the job's provenance holding only the known fields: ``sha`` (the commit), ``event``,
  ``ref``, and for a pull request ``pr`` (its number) and ``base_sha``, e.g.
  ``{"sha": "9f2c...", "event": "push", "ref": "refs/heads/main"}``, and the job's recorded
  environment ``env``, ``{"jax": "0.4.31", "numpy": "2.1.0"}`` (environment.py). Sources
  without it are written exactly as before, and documents without it load with empty
  provenance.
- ``messages`` lists each distinct failure line once, with its signature (signature.py).
  The first line with a signature is that signature's sample in this dashboard.
- ``cells`` lists each distinct cell history once, newest first. Each result is
  ``[source index, outcome]``, then its case counts ``[passed, failed, skipped, flaky]``
  when known (``null`` when not, if a message follows), then the index of its failure line
  in ``messages`` when it has one. (Most cells of a run are alike: one job, one outcome, one
  case. A dashboard of 50,000 rows has only a few hundred distinct histories.)
- ``backends`` and ``rows`` are in display order, each with the run where it first appeared
  and its position in that run's results; a row maps each backend to an index in ``cells``,
  then, when some of its results have one, each such backend to the durations of its cell's
  results (durations.py: two characters a result, newest first, ``~~`` for none; where not
  all of a result's cases had a time, ``|`` and the timed cases of each, ``"Sx~~F3|2,0,5"``).
- ``runs``: the newest distinct run ids that touched the dashboard, newest first.
- ``totals``: per backend, its rows by latest outcome and their cases, and the seconds of
  the latest results that have a duration (totals.py). Derived from the cells, for readers
  that want only them; ignored when loading.

Version 4 is version 2 with durations; version 2 documents load with none. Version 1 documents (no ``messages``, no counts, no ``totals``; older ones also kept an adopted
cell's text as a third item of a result, which is ignored) load with unknown counts and no
messages, and are written as version 2 when next saved. Readers refuse documents of another
format or of a newer version, with a message that says so.
Row and backend names longer than the JUnit reader's cap are read capped as it caps them
(``junit.cap_name``: their start and a hash), as results would name them; failure messages
are cut at its ``MESSAGE_CAP``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from ivy_matrix.errors import StoreError
from ivy_matrix.jsonshape import MalformedError, expect_int, expect_list
from ivy_matrix.model import NO_TIMES, Cell, DashboardState, Entry, Row, RunKey, Seen
from ivy_matrix.state.columnar import COLUMNS_VERSION, COLUMNS_VERSIONS, decode_columns
from ivy_matrix.state.durations import duration_totals, read_times
from ivy_matrix.state.merge import RUNS_KEPT
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
from ivy_matrix.state.totals import BackendTotals, totals_of

VERSION = 4  # what dump_state writes; the stores write version 5 (columnar.py)
NEWEST = COLUMNS_VERSION  # the newest version read


def dump_state(state: DashboardState) -> str:
    """Serialize one dashboard's state (deterministic: same state, same text)."""
    tables = Tables()
    rows, totals = _rows_and_totals(state, tables.history)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "title": state.id.title,
        "category": state.id.category,
        "runs": list(state.runs),
        "sources": tables.sources,
        "messages": tables.messages,
        "cells": tables.histories,
        "backends": [[name, seen.run, seen.seq] for name, seen in state.backends],
        "rows": rows,
        "totals": {name: t.to_json() for name, t in totals.items()},
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def _rows_and_totals(
    state: DashboardState, cell_index: Callable[[Cell], int]
) -> tuple[list[list[object]], dict[str, BackendTotals]]:
    """The rows as written (each backend's cell as its history's index), and the totals,
    counted on the way: how many rows hold each history, per backend."""
    rows: list[list[object]] = []
    uses: dict[tuple[str, int], int] = {}
    cell_of: list[Cell] = []  # a cell of each history, by index
    for row in state.rows:
        seen = row.first_seen
        cells = {}
        for backend, cell in row.cells.items():
            index = cells[backend] = cell_index(cell)
            key = (backend, index)
            uses[key] = uses.get(key, 0) + 1
            if index == len(cell_of):
                cell_of.append(cell)
        # RunKey is a tuple: json writes it as [run_id, run_attempt, job_id].
        if row.times:
            times = {backend: t for backend, t in row.times.items() if backend in cells}
            rows.append([row.name, seen.run, seen.seq, cells, times])
        else:
            rows.append([row.name, seen.run, seen.seq, cells])
    totals = totals_of(
        state.backend_names,
        ((b, cell_of[i], n) for (b, i), n in uses.items()),
        duration_totals(state.rows),
    )
    return rows, totals


def load_state(text: str, *, where: str) -> DashboardState:
    """Parse a serialized dashboard; :class:`StoreError` naming ``where`` if it is not one."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise StoreError(f"cannot read dashboard state {where}: not JSON ({error})") from None
    except RecursionError:
        raise StoreError(
            f"cannot read dashboard state {where}: it is nested too deeply to be ivy-matrix "
            f"state; delete it or restore it from a backup (or the dashboard branch)"
        ) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise StoreError(f"cannot read dashboard state {where}: not an {FORMAT} document")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StoreError(f"cannot read dashboard state {where}: no valid format version")
    if version > NEWEST:
        raise StoreError(
            f"cannot read dashboard state {where}: format version {version!r} is newer than "
            f"this ivy-matrix understands ({NEWEST}); upgrade ivy-matrix"
        )
    try:
        return _decode(document, version)
    except (KeyError, ValueError, IndexError, TypeError) as error:
        raise StoreError(
            f"cannot read dashboard state {where}: malformed document ({error!r})"
        ) from None


def _decode(document: dict[str, object], version: int) -> DashboardState:
    if version in COLUMNS_VERSIONS:
        return decode_columns(document)
    sources = [read_source(item) for item in expect_list(document["sources"])]
    messages = [read_message(item) for item in expect_list(document.get("messages", []))]
    # Decoded once each and shared by every row that has them: quick to load, small in memory.
    made: dict[tuple[object, ...], Entry] = {}
    cells = [read_cell(h, sources, messages, version, made) for h in expect_list(document["cells"])]
    names: dict[object, str] = {}  # each backend's name checked once
    runs: dict[tuple[object, ...], RunKey] = {}  # rows of one run share its key
    new_tuple = tuple.__new__  # Seen's and Row's own __new__ are Python functions
    rows = []
    for item in expect_list(document["rows"]):
        values = expect_list(item)
        name, first_run, seq, row_cells = values[:4]
        if len(values) > 5:  # noqa: PLR2004  -- the name, first run, position, cells, durations
            raise MalformedError(f"expected a row of 4 or 5 items, got {len(values)}")
        if not isinstance(row_cells, dict):
            raise MalformedError(f"expected an object of cells, got {row_cells!r:.60}")
        decoded: dict[str, Cell] = {}
        for backend, index in row_cells.items():
            if type(index) is not int or not 0 <= index < len(cells):
                raise MalformedError(f"cell index {expect_int(index)} out of range")
            decoded[names.get(backend) or names.setdefault(backend, read_name(backend))] = cells[
                index
            ]
        key = tuple(expect_list(first_run))
        run = runs.get(key) or runs.setdefault(key, read_run(first_run))
        seen = new_tuple(Seen, (run, expect_int(seq)))
        times = _row_times(values[4], decoded) if len(values) > 4 else NO_TIMES  # noqa: PLR2004  -- the optional durations
        rows.append(new_tuple(Row, (read_name(name), seen, decoded, times)))
    dashboard, backends = read_head(document)
    return DashboardState(
        id=dashboard, backends=backends, rows=tuple(rows), runs=read_runs(document)
    )


def _row_times(value: object, cells: dict[str, Cell]) -> dict[str, str]:
    """A row's durations by backend (version 4), checked against its cells."""
    if not isinstance(value, dict):
        raise MalformedError(f"expected an object of durations, got {value!r:.60}")
    times: dict[str, str] = {}
    for backend, item in value.items():
        cell = cells.get(read_name(backend))
        if cell is None:
            raise MalformedError(f"durations for backend {backend!r:.60}, which has no cell")
        found = read_times(item, len(cell.entries))
        if found is not None:
            times[read_name(backend)] = found
    return times


# --------------------------------------------------------------------------- columns


def split_columns(state: DashboardState) -> dict[str, DashboardState]:
    """One dashboard as one state per backend (column): that backend's cells, the rows that
    have one, and the dashboard's runs. Each is a document of this same format.

    :func:`join_columns` puts them back together: ``join_columns(split_columns(s))`` equals
    ``s`` for every state whose rows and columns are in first-seen order (merge.py keeps them
    so). The branch store of layout 1 kept one object per column (still read); a pull request
    leg compares with the columns of its own backends.
    """
    columns: dict[str, list[Row]] = {name: [] for name in state.backend_names}
    for row in state.rows:
        for backend, cell in row.cells.items():
            times = row.times.get(backend)
            columns.setdefault(backend, []).append(
                Row(
                    row.name,
                    row.first_seen,
                    {backend: cell},
                    NO_TIMES if times is None else {backend: times},
                )
            )
    seen = dict(state.backends)
    return {
        backend: DashboardState(
            id=state.id,
            backends=((backend, seen[backend]),) if backend in seen else (),
            rows=tuple(rows),
            runs=state.runs,
        )
        for backend, rows in columns.items()
        if rows
    }


def join_columns(columns: Iterable[DashboardState]) -> DashboardState:
    """The dashboard whose columns are ``columns`` (states of one dashboard, any backends).

    Cells of a backend found in two of them: the first one's wins (each column is kept once).
    A row appears where its earliest column first saw it, a column likewise; the runs are the
    union (newest first), so joining is order-independent.
    """
    given = list(columns)
    if not given:
        raise ValueError("join_columns needs at least one column")
    rows: dict[str, Row] = {}
    backends: dict[str, Seen] = {}
    runs: set[int] = set()
    for column in given:
        runs.update(column.runs)
        for name, seen in column.backends:
            if name not in backends or seen < backends[name]:
                backends[name] = seen
        for row in column.rows:
            mine = rows.get(row.name)
            if mine is None:
                rows[row.name] = Row(row.name, row.first_seen, dict(row.cells), dict(row.times))
                continue
            cells = dict(row.cells)
            cells.update(mine.cells)
            # A cell's durations come with it (the first column's cell wins).
            times = {b: t for b, t in row.times.items() if b not in mine.cells}
            times.update(mine.times)
            rows[row.name] = Row(row.name, min(mine.first_seen, row.first_seen), cells, times)
    return DashboardState(
        id=given[0].id,
        backends=tuple(sorted(backends.items(), key=lambda item: (item[1], item[0]))),
        rows=tuple(sorted(rows.values(), key=lambda r: (r.first_seen, r.name))),
        runs=tuple(sorted(runs, reverse=True)[:RUNS_KEPT]),
    )
