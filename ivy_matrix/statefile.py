"""The serialized form of a dashboard's state (JSON, one document per dashboard).

Pure: no I/O; the stores read and write the text. Version 1 looks like this::

    {
      "format": "ivy-matrix-dashboard",
      "version": 1,
      "title": "gradients",
      "category": "core",
      "runs": [4519946746, 4519909128],
      "sources": [[4519946746, 1, 7960678746, "https://github.com/o/r/actions/runs/.../job/...",
                   "2026-11-21T10:00:00Z"]],
      "cells": [[[0, "failure"], [3, "success"]], [[0, "success"]]],
      "backends": [["torch", [4519946746, 1, 7960678746], 0]],
      "rows": [["test_grad", [4519946746, 1, 7960678746], 0, {"torch": 0}]]
    }

- ``sources`` lists each job once: run id, run attempt, job id (``-1`` when unknown), URL,
  and the time it was recorded (``""`` when unknown); then, only when some is known, an object
  of the job's provenance holding only the known fields: ``sha`` (the commit), ``event``,
  ``ref``, and for a pull request ``pr`` (its number) and ``base_sha``, e.g.
  ``{"sha": "9f2c...", "event": "push", "ref": "refs/heads/main"}``. Sources without it are
  written exactly as before, and documents without it load with empty provenance.
- ``cells`` lists each distinct cell history once, newest first: ``[source index, outcome]``
  (older versions added the original text of adopted cells as a third item; it is ignored).
  (Most cells of a run are alike: one job, one outcome. A dashboard of 50,000 rows has only a
  few hundred distinct histories.)
- ``backends`` and ``rows`` are in display order, each with the run where it first appeared
  and its position in that run's results; a row maps each backend to an index in ``cells``.
- ``runs``: the newest distinct run ids that touched the dashboard, newest first.

Readers refuse documents of another format or of a newer version, with a message that says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from ivy_matrix.errors import StoreError
from ivy_matrix.merge import RUNS_KEPT
from ivy_matrix.model import (
    Cell,
    DashboardId,
    DashboardState,
    Entry,
    Outcome,
    Row,
    RunKey,
    Seen,
    Source,
)

FORMAT = "ivy-matrix-dashboard"
VERSION = 1


class _MalformedError(ValueError):
    """A value in the document does not have the expected shape."""


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise _MalformedError(f"expected a list, got {value!r:.60}")
    return value


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _MalformedError(f"expected an integer, got {value!r:.60}")
    return value


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise _MalformedError(f"expected a string, got {value!r:.60}")
    return value


def _run(value: object) -> RunKey:
    run_id, attempt, job_id = _list(value)
    return RunKey(_int(run_id), _int(attempt), _int(job_id))


def _provenance(source: Source) -> dict[str, object]:
    """The known provenance fields of a source (empty when none is known)."""
    fields: dict[str, object] = {
        "sha": source.sha,
        "event": source.event,
        "ref": source.ref,
        "pr": source.pr,
        "base_sha": source.base_sha,
    }
    return {name: value for name, value in fields.items() if value not in {"", None}}


def _source(item: object) -> Source:
    values = _list(item)
    if len(values) not in {5, 6}:
        raise _MalformedError(f"expected a source of 5 or 6 items, got {len(values)}")
    run_id, attempt, job_id, url, time = values[:5]
    provenance = values[5] if len(values) == 6 else {}  # noqa: PLR2004  -- the optional item
    if not isinstance(provenance, dict):
        raise _MalformedError(f"expected an object of provenance, got {provenance!r:.60}")
    pr = provenance.get("pr")
    return Source(
        run=RunKey(_int(run_id), _int(attempt), _int(job_id)),
        url=_str(url),
        time=_str(time),
        sha=_str(provenance.get("sha", "")),
        event=_str(provenance.get("event", "")),
        ref=_str(provenance.get("ref", "")),
        pr=None if pr is None else _int(pr),
        base_sha=_str(provenance.get("base_sha", "")),
    )


def dump_state(state: DashboardState) -> str:
    """Serialize one dashboard's state (deterministic: same state, same text)."""
    source_index: dict[Source, int] = {}
    # Many cells share one Source object; looking it up by identity first saves hashing it.
    by_identity: dict[int, int] = {}
    sources: list[list[object]] = []

    def index_of(source: Source) -> int:
        found = by_identity.get(id(source))
        if found is None:
            found = source_index.get(source)
            if found is None:
                found = source_index[source] = len(sources)
                # RunKey is a tuple: run id, run attempt, job id.
                record: list[object] = [*source.run, source.url, source.time]
                provenance = _provenance(source)
                sources.append([*record, provenance] if provenance else record)
            by_identity[id(source)] = found
        return found

    # Each distinct history once, found by identity first (rows share cell objects), then by
    # value, so that equal states give the same text however their cells are shared.
    cell_by_identity: dict[int, int] = {}
    cell_by_value: dict[tuple[tuple[object, ...], ...], int] = {}
    histories: list[tuple[tuple[object, ...], ...]] = []

    def cell_index(cell: Cell) -> int:
        found = cell_by_identity.get(id(cell))
        if found is None:
            history = tuple((index_of(e.source), e.outcome.value) for e in cell.entries)
            found = cell_by_value.get(history)
            if found is None:
                found = cell_by_value[history] = len(histories)
                histories.append(history)
            cell_by_identity[id(cell)] = found
        return found

    rows: list[list[object]] = []
    for row in state.rows:
        seen = row.first_seen
        cells = {backend: cell_index(cell) for backend, cell in row.cells.items()}
        # RunKey is a tuple: json writes it as [run_id, run_attempt, job_id].
        rows.append([row.name, seen.run, seen.seq, cells])
    document = {
        "format": FORMAT,
        "version": VERSION,
        "title": state.id.title,
        "category": state.id.category,
        "runs": list(state.runs),
        "sources": sources,
        "cells": histories,
        "backends": [[name, seen.run, seen.seq] for name, seen in state.backends],
        "rows": rows,
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


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
    if version > VERSION:
        raise StoreError(
            f"cannot read dashboard state {where}: format version {version!r} is newer than "
            f"this ivy-matrix understands ({VERSION}); upgrade ivy-matrix"
        )
    try:
        return _decode(document)
    except (KeyError, ValueError, IndexError) as error:
        raise StoreError(
            f"cannot read dashboard state {where}: malformed document ({error!r})"
        ) from None


def _cell(history: list[object], sources: list[Source], outcomes: dict[str, Outcome]) -> Cell:
    entries = []
    for record in history:
        values = _list(record)
        # Older versions kept an adopted cell's text as a third item: it is not used any more,
        # so that no adopted markdown is ever drawn again as it was.
        index = _int(values[0])
        if not 0 <= index < len(sources):
            raise _MalformedError(f"source index {index} out of range")
        entries.append(Entry(source=sources[index], outcome=outcomes[_str(values[1])]))
    if not entries:
        raise _MalformedError("a cell with no results")
    return Cell(entries=tuple(entries))


def _decode(document: dict[str, object]) -> DashboardState:
    sources = [_source(item) for item in _list(document["sources"])]
    outcomes = {o.value: o for o in Outcome}
    # Decoded once each and shared by every row that has them: quick to load, small in memory.
    cells = [_cell(_list(history), sources, outcomes) for history in _list(document["cells"])]
    rows = []
    for item in _list(document["rows"]):
        name, first_run, seq, row_cells = _list(item)
        if not isinstance(row_cells, dict):
            raise _MalformedError(f"expected an object of cells, got {row_cells!r:.60}")
        decoded: dict[str, Cell] = {}
        for backend, index in row_cells.items():
            position = _int(index)
            if not 0 <= position < len(cells):
                raise _MalformedError(f"cell index {position} out of range")
            decoded[_str(backend)] = cells[position]
        rows.append(
            Row(name=_str(name), first_seen=Seen(_run(first_run), _int(seq)), cells=decoded)
        )
    backends = []
    for item in _list(document["backends"]):
        name, first_run, seq = _list(item)
        backends.append((_str(name), Seen(_run(first_run), _int(seq))))
    return DashboardState(
        id=DashboardId(title=_str(document["title"]), category=_str(document["category"])),
        backends=tuple(backends),
        rows=tuple(rows),
        runs=tuple(_int(r) for r in _list(document["runs"])),
    )


# --------------------------------------------------------------------------- columns


def split_columns(state: DashboardState) -> dict[str, DashboardState]:
    """One dashboard as one state per backend (column): that backend's cells, the rows that
    have one, and the dashboard's runs. Each is a document of this same format.

    :func:`join_columns` puts them back together: ``join_columns(split_columns(s))`` equals
    ``s`` for every state whose rows and columns are in first-seen order (merge.py keeps them
    so). The branch store keeps one object per column, so a matrix leg rewrites only its own.
    """
    columns: dict[str, list[Row]] = {name: [] for name in state.backend_names}
    for row in state.rows:
        for backend, cell in row.cells.items():
            columns.setdefault(backend, []).append(
                Row(name=row.name, first_seen=row.first_seen, cells={backend: cell})
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
                rows[row.name] = Row(row.name, row.first_seen, dict(row.cells))
                continue
            cells = dict(row.cells)
            cells.update(mine.cells)
            rows[row.name] = Row(row.name, min(mine.first_seen, row.first_seen), cells)
    return DashboardState(
        id=given[0].id,
        backends=tuple(sorted(backends.items(), key=lambda item: (item[1], item[0]))),
        rows=tuple(sorted(rows.values(), key=lambda r: (r.first_seen, r.name))),
        runs=tuple(sorted(runs, reverse=True)[:RUNS_KEPT]),
    )


# --------------------------------------------------------------------------- runs of a matrix

RUNS_FORMAT = "ivy-matrix-runs"
RUNS_KEPT_FOR_LEGS = 50  # runs whose finished legs are remembered


def dump_runs(done: Mapping[int, tuple[int, frozenset[int]]]) -> str:
    """The matrix legs that finished, per run id: ``{run: (matrix size, leg indexes)}``.

    Only the newest ``RUNS_KEPT_FOR_LEGS`` runs are kept. Deterministic, so an unchanged record
    is the same blob.
    """
    kept = sorted(done.items(), reverse=True)[:RUNS_KEPT_FOR_LEGS]
    runs = {str(run): {"size": size, "done": sorted(legs)} for run, (size, legs) in kept}
    document = {"format": RUNS_FORMAT, "version": 1, "runs": runs}
    return json.dumps(document, separators=(",", ":"), sort_keys=True) + "\n"


def load_runs(
    text: str, *, where: str, max_size: int = 256
) -> dict[int, tuple[int, frozenset[int]]]:
    """Parse :func:`dump_runs`' text; :class:`StoreError` naming ``where`` if it is not one.

    Entries that no matrix can have (a run id that is not ASCII digits, a size over
    ``max_size``, a leg index outside the size) are left out, so a bad entry is never kept.
    """
    try:
        document = json.loads(text)
        if not isinstance(document, dict) or document.get("format") != RUNS_FORMAT:
            raise _MalformedError(f"not an {RUNS_FORMAT} document")
        runs = document["runs"]
        if not isinstance(runs, dict):
            raise _MalformedError("'runs' is not an object")
        record = {}
        for run, entry in runs.items():
            size = _int(entry["size"])
            done = frozenset(_int(i) for i in _list(entry["done"]))
            if (
                _ASCII_RUN.fullmatch(run)
                and 0 < size <= max_size
                and all(0 <= index < size for index in done)
            ):
                record[int(run)] = (size, done)
    except (ValueError, KeyError, TypeError) as error:
        raise StoreError(
            f"cannot read the finished matrix legs {where}: {error}; delete the file (the "
            f"next run that finishes renders every dashboard again)"
        ) from None
    return record


_ASCII_RUN = re.compile(r"[0-9]{1,19}")
