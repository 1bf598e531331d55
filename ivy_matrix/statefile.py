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
      "backends": [["torch", [4519946746, 1, 7960678746], 0]],
      "rows": [["test_grad", [4519946746, 1, 7960678746], 0,
                {"torch": [[0, "failure"], [3, "success"]]}]]
    }

- ``sources`` lists each job once: run id, run attempt, job id (``-1`` when unknown), URL,
  and the time it was recorded (``""`` when unknown).
- ``backends`` and ``rows`` are in display order, each with the run where it first appeared
  and its position in that run's results.
- Each cell is its history, newest first: ``[source index, outcome]`` and, for cells adopted
  from an existing table, a third item with the cell's original text.
- ``runs``: the newest distinct run ids that touched the dashboard, newest first.

Readers refuse documents of another format or of a newer version, with a message that says so.
"""

from __future__ import annotations

import json

from ivy_matrix.errors import StoreError
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

_EntryList = list[int | str]


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


def dump_state(state: DashboardState) -> str:
    """Serialize one dashboard's state (deterministic: same state, same text)."""
    source_index: dict[Source, int] = {}
    # Many cells share one Source object; looking it up by identity first saves hashing it.
    by_identity: dict[int, int] = {}
    sources: list[list[int | str]] = []

    def index_of(source: Source) -> int:
        found = by_identity.get(id(source))
        if found is None:
            found = source_index.get(source)
            if found is None:
                found = source_index[source] = len(sources)
                run = source.run
                sources.append([run.run_id, run.run_attempt, run.job_id, source.url, source.time])
            by_identity[id(source)] = found
        return found

    # Rows share cells; each distinct cell is serialized once (json.dumps repeats it).
    histories: dict[int, list[_EntryList]] = {}
    rows: list[list[object]] = []
    for row in state.rows:
        cells: dict[str, list[_EntryList]] = {}
        for backend, cell in row.cells.items():
            history = histories.get(id(cell))
            if history is None:
                history = histories[id(cell)] = []
                for entry in cell.entries:
                    item: _EntryList = [index_of(entry.source), entry.outcome.value]
                    if entry.text is not None:
                        item.append(entry.text)
                    history.append(item)
            cells[backend] = history
        seen = row.first_seen
        # RunKey is a tuple: json writes it as [run_id, run_attempt, job_id].
        rows.append([row.name, seen.run, seen.seq, cells])
    document = {
        "format": FORMAT,
        "version": VERSION,
        "title": state.id.title,
        "category": state.id.category,
        "runs": list(state.runs),
        "sources": sources,
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


def _cell(
    history: tuple[tuple[object, ...], ...], sources: list[Source], outcomes: dict[str, Outcome]
) -> Cell:
    entries = []
    for values in history:
        text = _str(values[2]) if len(values) > 2 else None  # noqa: PLR2004  -- optional third item
        index = _int(values[0])
        if not 0 <= index < len(sources):
            raise _MalformedError(f"source index {index} out of range")
        entries.append(Entry(source=sources[index], outcome=outcomes[_str(values[1])], text=text))
    if not entries:
        raise _MalformedError("a cell with no results")
    return Cell(entries=tuple(entries))


def _decode(document: dict[str, object]) -> DashboardState:
    sources = []
    for item in _list(document["sources"]):
        run_id, attempt, job_id, url, time = _list(item)
        run = RunKey(_int(run_id), _int(attempt), _int(job_id))
        sources.append(Source(run=run, url=_str(url), time=_str(time)))
    outcomes = {o.value: o for o in Outcome}
    # Cells are immutable, and most hold the same few entries: decode each distinct history
    # once and share it, which keeps a large store quick to load and small in memory.
    cells_seen: dict[tuple[object, ...], Cell] = {}
    rows = []
    for item in _list(document["rows"]):
        name, first_run, seq, cells = _list(item)
        if not isinstance(cells, dict):
            raise _MalformedError(f"expected an object of cells, got {cells!r:.60}")
        decoded: dict[str, Cell] = {}
        for backend, history in cells.items():
            key = tuple(tuple(_list(record)) for record in _list(history))
            cell = cells_seen.get(key)
            if cell is None:
                cell = cells_seen[key] = _cell(key, sources, outcomes)
            decoded[_str(backend)] = cell
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
