"""The serialized form of a dashboard's state (JSON, one document per dashboard).

Pure: no I/O; the stores read and write the text. Version 2 looks like this::

    {
      "format": "ivy-matrix-dashboard",
      "version": 2,
      "title": "gradients",
      "category": "core",
      "runs": [4519946746, 4519909128],
      "sources": [[4519946746, 1, 7960678746, "https://github.com/o/r/actions/runs/.../job/...",
                   "2026-11-21T10:00:00Z"]],
      "messages": [["AssertionError: 3 != 4", "5d41402abc"]],
      "cells": [[[0, "failure", [2, 1, 0, 0], 0], [3, "success", [3, 0, 0, 0]]],
                [[0, "success", [1, 0, 0, 0]]]],
      "backends": [["torch", [4519946746, 1, 7960678746], 0]],
      "rows": [["test_grad", [4519946746, 1, 7960678746], 0, {"torch": 0}]],
      "totals": {"torch": {"success": 1, "failure": 1, "flaky": 0, "skipped": 0,
                           "cases_passed": 3, "cases_failed": 1, "cases_skipped": 0,
                           "cases_flaky": 0, "passing": 1, "total": 2}}
    }

- ``sources`` lists each job once: run id, run attempt, job id (``-1`` when unknown), URL,
  and the time it was recorded (``""`` when unknown); then, only when some is known, an object
  of the job's provenance holding only the known fields: ``sha`` (the commit), ``event``,
  ``ref``, and for a pull request ``pr`` (its number) and ``base_sha``, e.g.
  ``{"sha": "9f2c...", "event": "push", "ref": "refs/heads/main"}``. Sources without it are
  written exactly as before, and documents without it load with empty provenance.
- ``messages`` lists each distinct failure line once, with its signature (signature.py).
  The first line with a signature is that signature's sample in this dashboard.
- ``cells`` lists each distinct cell history once, newest first. Each result is
  ``[source index, outcome]``, then its case counts ``[passed, failed, skipped, flaky]``
  when known (``null`` when not, if a message follows), then the index of its failure line
  in ``messages`` when it has one. (Most cells of a run are alike: one job, one outcome, one
  case. A dashboard of 50,000 rows has only a few hundred distinct histories.)
- ``backends`` and ``rows`` are in display order, each with the run where it first appeared
  and its position in that run's results; a row maps each backend to an index in ``cells``.
- ``runs``: the newest distinct run ids that touched the dashboard, newest first.
- ``totals``: per backend, its rows by latest outcome and their cases (totals.py). Derived
  from the cells, for readers that want only them; ignored when loading.

Version 1 documents (no ``messages``, no counts, no ``totals``; older ones also kept an adopted
cell's text as a third item of a result, which is ignored) load with unknown counts and no
messages, and are written as version 2 when next saved. Readers refuse documents of another
format or of a newer version, with a message that says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from ivy_matrix.errors import StoreError
from ivy_matrix.jsonshape import MalformedError, expect_int, expect_list, expect_str
from ivy_matrix.merge import RUNS_KEPT
from ivy_matrix.model import (
    CaseCounts,
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
from ivy_matrix.totals import backend_totals

FORMAT = "ivy-matrix-dashboard"
VERSION = 2


def _run(value: object) -> RunKey:
    run_id, attempt, job_id = expect_list(value)
    return RunKey(expect_int(run_id), expect_int(attempt), expect_int(job_id))


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
    values = expect_list(item)
    if len(values) not in {5, 6}:
        raise MalformedError(f"expected a source of 5 or 6 items, got {len(values)}")
    run_id, attempt, job_id, url, time = values[:5]
    provenance = values[5] if len(values) == 6 else {}  # noqa: PLR2004  -- the optional item
    if not isinstance(provenance, dict):
        raise MalformedError(f"expected an object of provenance, got {provenance!r:.60}")
    pr = provenance.get("pr")
    return Source(
        run=RunKey(expect_int(run_id), expect_int(attempt), expect_int(job_id)),
        url=expect_str(url),
        time=expect_str(time),
        sha=expect_str(provenance.get("sha", "")),
        event=expect_str(provenance.get("event", "")),
        ref=expect_str(provenance.get("ref", "")),
        pr=None if pr is None else expect_int(pr),
        base_sha=expect_str(provenance.get("base_sha", "")),
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

    # Each distinct failure line once, with its signature.
    message_index: dict[tuple[str, str], int] = {}

    def result(entry: Entry) -> tuple[object, ...]:
        head = (index_of(entry.source), entry.outcome.value)
        counts = entry.counts  # a tuple: json writes it as a list
        if entry.message or entry.signature:
            key = (entry.message, entry.signature)
            found = message_index.get(key)
            if found is None:
                found = message_index[key] = len(message_index)
            return (*head, counts, found)
        return head if counts is None else (*head, counts)

    # Each distinct history once, found by identity first (rows share cell objects), then by
    # value, so that equal states give the same text however their cells are shared.
    cell_by_identity: dict[int, int] = {}
    cell_by_value: dict[tuple[tuple[object, ...], ...], int] = {}
    histories: list[tuple[tuple[object, ...], ...]] = []

    def cell_index(cell: Cell) -> int:
        found = cell_by_identity.get(id(cell))
        if found is None:
            history = tuple(result(e) for e in cell.entries)
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
        "messages": [[text, signature] for text, signature in message_index],
        "cells": histories,
        "backends": [[name, seen.run, seen.seq] for name, seen in state.backends],
        "rows": rows,
        "totals": {name: t.to_json() for name, t in backend_totals(state).items()},
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
        return _decode(document, version)
    except (KeyError, ValueError, IndexError) as error:
        raise StoreError(
            f"cannot read dashboard state {where}: malformed document ({error!r})"
        ) from None


def _counts(value: object) -> CaseCounts | None:
    if value is None:
        return None
    numbers = expect_list(value)
    if len(numbers) != 4:  # noqa: PLR2004  -- passed, failed, skipped, flaky
        raise MalformedError(f"expected 4 case counts, got {value!r:.60}")
    return CaseCounts(*(expect_int(n) for n in numbers))


def _message(value: object) -> tuple[str, str]:
    text, signature = expect_list(value)
    return expect_str(text), expect_str(signature)


def _cell(
    history: list[object],
    sources: list[Source],
    outcomes: dict[str, Outcome],
    messages: list[tuple[str, str]],
    version: int,
) -> Cell:
    entries = []
    for record in history:
        values = expect_list(record)
        index = expect_int(values[0])
        if not 0 <= index < len(sources):
            raise MalformedError(f"source index {index} out of range")
        outcome = outcomes[expect_str(values[1])]
        if version < 2:  # noqa: PLR2004  -- the version that added counts and messages
            # Older versions kept an adopted cell's text as a third item: it is not used any
            # more, so that no adopted markdown is ever drawn again as it was.
            entries.append(Entry(source=sources[index], outcome=outcome))
            continue
        counts = _counts(values[2]) if len(values) > 2 else None  # noqa: PLR2004  -- optional
        message, signature = "", ""
        if len(values) > 3:  # noqa: PLR2004  -- the optional message index
            position = expect_int(values[3])
            if not 0 <= position < len(messages):
                raise MalformedError(f"message index {position} out of range")
            message, signature = messages[position]
        entries.append(
            Entry(
                source=sources[index],
                outcome=outcome,
                counts=counts,
                message=message,
                signature=signature,
            )
        )
    if not entries:
        raise MalformedError("a cell with no results")
    return Cell(entries=tuple(entries))


def _decode(document: dict[str, object], version: int) -> DashboardState:
    sources = [_source(item) for item in expect_list(document["sources"])]
    outcomes = {o.value: o for o in Outcome}
    messages = [_message(item) for item in expect_list(document.get("messages", []))]
    # Decoded once each and shared by every row that has them: quick to load, small in memory.
    cells = [
        _cell(expect_list(history), sources, outcomes, messages, version)
        for history in expect_list(document["cells"])
    ]
    rows = []
    for item in expect_list(document["rows"]):
        name, first_run, seq, row_cells = expect_list(item)
        if not isinstance(row_cells, dict):
            raise MalformedError(f"expected an object of cells, got {row_cells!r:.60}")
        decoded: dict[str, Cell] = {}
        for backend, index in row_cells.items():
            position = expect_int(index)
            if not 0 <= position < len(cells):
                raise MalformedError(f"cell index {position} out of range")
            decoded[expect_str(backend)] = cells[position]
        rows.append(
            Row(
                name=expect_str(name),
                first_seen=Seen(_run(first_run), expect_int(seq)),
                cells=decoded,
            )
        )
    backends = []
    for item in expect_list(document["backends"]):
        name, first_run, seq = expect_list(item)
        backends.append((expect_str(name), Seen(_run(first_run), expect_int(seq))))
    return DashboardState(
        id=DashboardId(
            title=expect_str(document["title"]), category=expect_str(document["category"])
        ),
        backends=tuple(backends),
        rows=tuple(rows),
        runs=tuple(expect_int(r) for r in expect_list(document["runs"])),
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
            raise MalformedError(f"not an {RUNS_FORMAT} document")
        runs = document["runs"]
        if not isinstance(runs, dict):
            raise MalformedError("'runs' is not an object")
        record = {}
        for run, entry in runs.items():
            size = expect_int(entry["size"])
            done = frozenset(expect_int(i) for i in expect_list(entry["done"]))
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
