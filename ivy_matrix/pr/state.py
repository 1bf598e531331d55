"""What a pull-request comment holds: its cells, whom they are about, and merging writers'.

Pure: no I/O. A :class:`CommentState` is one writer's verdicts (a matrix leg's, a fan-in job's)
about a pull request's head commit, written by one run; the comment keeps it, packed, in a
hidden block (:func:`pack_state`: JSON, zlib, base64), so that the next writer can merge its
own cells into it (:func:`merge_states`). The merge is a join (commutative, associative and
idempotent), so retries and any order of writers give the same state:

- states about different (run id, head sha) pairs do not mix: the one with the larger run id
  (then head sha, as a tie-break) wins whole, so a comment about a newer push or run is never
  replaced by an older one, and a new run starts afresh;
- states of the same run and head (its legs, and its re-run attempts) are united backend by
  backend: a backend's cells, and the counts of its cells a block had no room for
  (``omitted``), come from the writers whose results for it are newest (a re-run attempt's
  leg replaces that backend's cells, including cells that now pass and so are not listed);
  writers of the same newest job are united cell by cell.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from ivy_matrix.history import RunRef
from ivy_matrix.model import RunKey
from ivy_matrix.pr.verdicts import (
    FAILING_VERDICTS,
    BaselineKind,
    CellVerdict,
    Comparison,
    Verdict,
    tally,
)

# What the hidden block may inflate to (a guard against a hostile edit of the comment).
INFLATE_LIMIT = 16 * 1024 * 1024
BLOCK_OPEN = "<!-- ivy-matrix:verdicts"
_WRAP = 100
_FORMAT = 1
_T = TypeVar("_T")


class WhenGreen(StrEnum):
    """What the pr-comment target writes for a pull request with no failing cell."""

    NOTE = "note"
    NOTHING = "nothing"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommentState:
    """What one comment is about and every cell it holds (see the module docstring).

    ``backends`` lists each backend with results: its rank (display order) and the run its
    results came from; ``omitted`` counts, per (backend, verdict), cells the hidden block had
    no room for.
    """

    pr: int
    head: str
    run: RunKey
    located: bool = False
    cells: tuple[CellVerdict, ...] = ()
    backends: tuple[tuple[str, int, RunKey], ...] = ()
    omitted: tuple[tuple[str, Verdict, int], ...] = ()

    def counts(self, backend: str | None = None) -> dict[Verdict, int]:
        counts = tally(c for c in self.cells if backend in {None, c.backend})
        for name, verdict, count in self.omitted:
            if backend in {None, name}:
                counts[verdict] += count
        return counts

    @property
    def baseline(self) -> BaselineKind:
        return Comparison(cells=self.cells, backend_runs=(), located=self.located).baseline


def comment_state(comparison: Comparison, *, pr: int, head: str, run: RunKey) -> CommentState:
    """One writer's contribution: its verdicts about ``head``, written by ``run``."""
    return CommentState(
        pr=pr,
        head=head,
        run=run,
        located=comparison.located,
        cells=tuple(sorted(comparison.cells, key=lambda c: c.order)),
        backends=tuple(
            (name, rank, run) for rank, (name, run) in enumerate(comparison.backend_runs)
        ),
    )


def has_failures(state: CommentState) -> bool:
    """Whether any cell fails in the pull request (else the comment is an all-green note)."""
    return any(state.counts()[v] for v in FAILING_VERDICTS)


def _cell_rank(cell: CellVerdict) -> tuple[object, ...]:
    return (cell.run, _cell_record(cell))


def backend_runs(state: CommentState) -> dict[str, RunKey]:
    """Each backend of a state and the run its cells came from (the state's run if unsaid)."""
    runs = {cell.backend: state.run for cell in state.cells}
    runs.update((name, run) for name, _, run in state.backends)
    return runs


def _united(
    name: str, states: Sequence[CommentState]
) -> tuple[list[CellVerdict], dict[Verdict, int]]:
    """One backend's cells and left-out counts, from the states with its newest run."""
    cells: dict[tuple[str, str, str], CellVerdict] = {}
    omitted: dict[Verdict, int] = {}
    for state in states:
        for cell in state.cells:
            known = cells.get(cell.key)
            if cell.backend == name and (known is None or _cell_rank(cell) > _cell_rank(known)):
                cells[cell.key] = cell
        for backend, verdict, count in state.omitted:
            if backend == name:
                omitted[verdict] = max(count, omitted.get(verdict, 0))
    return list(cells.values()), omitted


def merge_states(a: CommentState, b: CommentState) -> CommentState:
    """Both writers' cells in one (a join: see the module docstring)."""
    if a.pr != b.pr:
        raise ValueError(f"cannot merge the comments of pull requests {a.pr} and {b.pr}")
    if (a.run.run_id, a.head) != (b.run.run_id, b.head):
        return a if (a.run.run_id, a.head) > (b.run.run_id, b.head) else b
    runs = {id(a): backend_runs(a), id(b): backend_runs(b)}
    ranks: dict[str, int] = {}
    for name, rank, _ in (*a.backends, *b.backends):
        ranks[name] = min(rank, ranks.get(name, rank))
    cells: list[CellVerdict] = []
    backends: list[tuple[str, int, RunKey]] = []
    omitted: list[tuple[str, Verdict, int]] = []
    for name in sorted(runs[id(a)].keys() | runs[id(b)].keys()):
        newest = max(r[name] for r in runs.values() if name in r)
        sources = [s for s in (a, b) if runs[id(s)].get(name) == newest]
        found, left_out = _united(name, sources)
        cells.extend(found)
        omitted.extend((name, verdict, count) for verdict, count in left_out.items())
        if name in ranks:
            backends.append((name, ranks[name], newest))
    return CommentState(
        pr=a.pr,
        head=a.head,
        run=max(a.run, b.run),
        located=a.located or b.located,
        cells=tuple(sorted(cells, key=lambda c: c.order)),
        backends=tuple(sorted(backends, key=lambda item: (item[1], item[0]))),
        omitted=tuple(sorted(omitted)),
    )


# ----------------------------------------------------------------------------- hidden block


def _cell_record(cell: CellVerdict) -> list[object]:
    since = cell.failing_since
    return [
        cell.dashboard,
        cell.row,
        cell.backend,
        cell.verdict.value,
        cell.link,
        list(cell.run),
        None if cell.baseline is None else cell.baseline.value,
        cell.baseline_link,
        None if since is None else [since.run_id, since.sha, since.url],
        list(cell.position),
    ]


def _cell_from(record: Sequence[object]) -> CellVerdict:
    dashboard, row, backend, verdict, link, run, baseline, baseline_link, since, position = record
    since_parts = since if isinstance(since, list) else None
    row_at, backend_at = _typed(position, list)
    return CellVerdict(
        dashboard=_typed(dashboard, str),
        row=_typed(row, str),
        backend=_typed(backend, str),
        verdict=Verdict(_typed(verdict, str)),
        link=None if link is None else _typed(link, str),
        run=_run(run),
        baseline=None if baseline is None else BaselineKind(_typed(baseline, str)),
        baseline_link=None if baseline_link is None else _typed(baseline_link, str),
        failing_since=None
        if since_parts is None
        else RunRef(
            run_id=_typed(since_parts[0], int),
            sha=None if since_parts[1] is None else _typed(since_parts[1], str),
            url=_typed(since_parts[2], str),
        ),
        position=(_typed(row_at, int), _typed(backend_at, int)),
    )


def _typed(value: object, kind: type[_T]) -> _T:
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise TypeError(f"expected {kind.__name__}, got {value!r:.60}")
    return value


def _run(value: object) -> RunKey:
    run_id, attempt, job_id = _typed(value, list)
    return RunKey(_typed(run_id, int), _typed(attempt, int), _typed(job_id, int))


def pack_state(state: CommentState) -> str:
    """The hidden block holding ``state``."""
    document = {
        "format": _FORMAT,
        "pr": state.pr,
        "head": state.head,
        "run": list(state.run),
        "located": state.located,
        "backends": [[name, rank, list(run)] for name, rank, run in state.backends],
        "omitted": [[name, verdict.value, count] for name, verdict, count in state.omitted],
        "cells": [_cell_record(cell) for cell in state.cells],
    }
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    packed = base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode()
    lines = [packed[i : i + _WRAP] for i in range(0, len(packed), _WRAP)]
    return BLOCK_OPEN + "\n" + "\n".join(lines) + "\n-->\n"


def unpack_state(data: str) -> CommentState:
    """The state in a hidden block's data; ValueError, TypeError, KeyError, zlib.error when damaged."""
    inflater = zlib.decompressobj()
    raw = inflater.decompress(base64.b64decode(re.sub(r"\s+", "", data)), INFLATE_LIMIT)
    if inflater.unconsumed_tail:
        raise ValueError("the hidden block is too large")
    document = json.loads(raw.decode("utf-8"))
    if _typed(document, dict).get("format") != _FORMAT:
        raise ValueError("not a hidden block this ivy-matrix writes")
    return CommentState(
        pr=_typed(document["pr"], int),
        head=_typed(document["head"], str),
        run=_run(document["run"]),
        located=_typed(document["located"], bool),
        cells=tuple(_cell_from(_typed(r, list)) for r in _typed(document["cells"], list)),
        backends=tuple(
            (_typed(n, str), _typed(r, int), _run(run))
            for n, r, run in _typed(document["backends"], list)
        ),
        omitted=tuple(
            (_typed(n, str), Verdict(_typed(v, str)), _typed(c, int))
            for n, v, c in _typed(document["omitted"], list)
        ),
    )
