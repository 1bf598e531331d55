"""What a pull request's comment shows: its verdicts, how writers' verdicts merge, and the record
that keeps them.

Pure: no I/O. A :class:`CommentState` holds verdicts about a pull request's head commit, written
by one run: one writer's (a matrix leg's, a fan-in job's), or all writers' merged. Every
writer merges its own into the record kept under the pull request's verdict ref
(``pr/verdict_ref.py``), one after another (compare and swap), and the comment is a projection
of that record (``pr/body.py``), so the comment can be cut to GitHub's size limit, or edited
by hand, without losing a verdict or changing a count. :func:`merge_states`:

- verdicts about different (run id, head sha) pairs do not mix: the larger run id (then head
  sha, as a tie-break) wins whole, so a comment about a newer push or run is never replaced by
  an older one, and a new run starts afresh;
- within a run, cells are merged cell by cell: every leg's cells stay, whatever their backend
  (the legs of one backend are shards of its tests); a cell both hold keeps the newer run
  attempt's verdict, and a writer of a newer attempt also clears the cells it ran and found
  passing (``ran``: the cells its results hold, listed or not). Two jobs of one attempt that
  both ran a cell give the verdict of the worse outcome, as ``compare`` does when it reads both
  jobs' results at once (a failure over a flaky pass over a pass).

So the merged verdicts of every leg of a run are the verdicts ``compare`` finds on all their
results together. GitHub starts a re-run attempt only when the whole run has ended, so an older
attempt's writer never comes after a newer one's.

:class:`RefState` is the record: the verdicts and the bookkeeping of the comment's writers
(``version`` grows with every change of the verdicts, ``shown`` is the version the comment
shows, ``lease`` names the one writer allowed to write the comment: see ``pr/comment.py``).
:func:`dump_ref_state` and :func:`load_ref_state` are its JSON form (links and runs stored once).
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ivy_matrix.jsonshape import expect_number
from ivy_matrix.model import RunKey
from ivy_matrix.pr.verdicts import (
    FAILING_VERDICTS,
    BaselineKind,
    CellKey,
    CellVerdict,
    Comparison,
    SlowerCell,
    Verdict,
    tally,
)
from ivy_matrix.state.history import RunRef

FORMAT = 1
_T = TypeVar("_T")
_H = TypeVar("_H", bound=Hashable)
# When one job's result of a cell meets another job's of the same attempt, the verdict of the
# worse outcome wins: a failure (new, new test, pre-existing, no baseline) over a flaky pass
# (flaky) over a pass (fixed); see model.worst.
_VERDICT_RANK = {
    Verdict.NEW: 3,
    Verdict.NEW_TEST: 3,
    Verdict.PRE_EXISTING: 3,
    Verdict.NO_BASELINE: 3,
    Verdict.FLAKY: 2,
    Verdict.FIXED: 1,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class CommentState:
    """Verdicts about ``head`` of pull request ``pr``, written by ``run`` (see the module
    docstring). ``backends`` lists each backend with results: its rank (display order) and the
    newest run its results came from; ``slower``, the cells it ran slower than the default
    branch (verdicts.SlowerCell), merged as cells are."""

    pr: int
    head: str
    run: RunKey
    located: bool = False
    cells: tuple[CellVerdict, ...] = ()
    backends: tuple[tuple[str, int, RunKey], ...] = ()
    slower: tuple[SlowerCell, ...] = ()

    def counts(self, backend: str | None = None) -> dict[Verdict, int]:
        return tally(c for c in self.cells if backend in {None, c.backend})

    @property
    def baseline(self) -> BaselineKind:
        return Comparison(cells=self.cells, backend_runs=(), located=self.located).baseline


def comment_state(comparison: Comparison, *, pr: int, head: str, run: RunKey) -> CommentState:
    """One writer's verdicts about ``head``, written by ``run``."""
    return CommentState(
        pr=pr,
        head=head,
        run=run,
        located=comparison.located,
        cells=tuple(sorted(comparison.cells, key=lambda c: c.order)),
        backends=tuple(
            (name, rank, run) for rank, (name, run) in enumerate(comparison.backend_runs)
        ),
        slower=comparison.slower,
    )


def has_failures(state: CommentState) -> bool:
    """Whether any cell fails in the pull request (else the comment is an all-green note)."""
    return any(cell.verdict in FAILING_VERDICTS for cell in state.cells)


def _precedence(cell: CellVerdict) -> tuple[object, ...]:
    """Which of two verdicts of one cell stays: the newer attempt's, then the worse outcome's
    (the rest only makes the choice the same in every order)."""
    return (cell.run.run_attempt, _VERDICT_RANK[cell.verdict], cell.run, _cell_record(cell))


def merge_states(
    old: CommentState | None, new: CommentState, ran: Mapping[CellKey, int] | None = None
) -> CommentState:
    """``new`` merged into ``old`` (see the module docstring); ``ran``: every cell the writer
    of ``new`` ran, with its run attempt."""
    if old is not None and old.pr != new.pr:
        raise ValueError(f"cannot merge the verdicts of pull requests {old.pr} and {new.pr}")
    if old is not None and (old.run.run_id, old.head) > (new.run.run_id, new.head):
        return old
    if old is None or (old.run.run_id, old.head) != (new.run.run_id, new.head):
        old = CommentState(pr=new.pr, head=new.head, run=new.run)  # a newer run starts afresh
    cells = {cell.key: cell for cell in old.cells}
    for key, attempt in (ran or {}).items():
        known = cells.get(key)
        if known is not None and known.run.run_attempt < attempt:
            del cells[key]  # run again by a newer attempt, and not listed there: it passed
    for cell in new.cells:
        known = cells.get(cell.key)
        if known is None or _precedence(cell) > _precedence(known):
            cells[cell.key] = cell
    backends: dict[str, tuple[int, RunKey]] = {}
    for name, rank, run in (*old.backends, *new.backends):
        known_rank, known_run = backends.get(name, (rank, run))
        backends[name] = (min(rank, known_rank), max(run, known_run))
    return CommentState(
        pr=old.pr,
        head=old.head,
        run=max(old.run, new.run),
        located=old.located or new.located,
        cells=tuple(sorted(cells.values(), key=lambda c: c.order)),
        backends=tuple(
            sorted(
                ((name, rank, run) for name, (rank, run) in backends.items()),
                key=lambda item: (item[1], item[0]),
            )
        ),
        slower=_merged_slower(old, new, ran or {}),
    )


def _merged_slower(
    old: CommentState, new: CommentState, ran: Mapping[CellKey, int]
) -> tuple[SlowerCell, ...]:
    """The slower cells of ``old`` and ``new`` as cells merge: the newer result's stays, and
    a cell a newer attempt ran and did not find slower goes."""
    slower = {cell.key: cell for cell in old.slower}
    for key, attempt in ran.items():
        known = slower.get(key)
        if known is not None and known.run.run_attempt < attempt:
            del slower[key]
    for cell in new.slower:
        known = slower.get(cell.key)
        if known is None or known.run <= cell.run:
            slower[cell.key] = cell
    return tuple(slower[key] for key in sorted(slower))


# ----------------------------------------------------------------------------- the record


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """The writer allowed to write the comment, and when it last wrote the record (seconds
    since the epoch, by its clock)."""

    holder: str
    at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RefState:
    """What the verdict ref holds (see the module docstring)."""

    verdicts: CommentState
    version: int = 1
    shown: int = 0
    comment_id: int | None = None
    lease: Lease | None = None


class _Table(Generic[_H]):
    """Values stored once, named by their index."""

    def __init__(self) -> None:
        self.values: dict[_H, int] = {}

    def index(self, value: _H | None) -> int:
        if value is None:
            return -1
        return self.values.setdefault(value, len(self.values))

    def dump(self) -> list[_H]:
        return list(self.values)


def _cell_record(cell: CellVerdict) -> list[object]:
    """A cell as plain values (for a deterministic tie-break)."""
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
        cell.message,
        cell.signature,
        cell.blame_line,
        None if cell.cases is None else list(cell.cases),
    ]


def dump_ref_state(state: RefState) -> str:
    """The record as JSON text."""
    verdicts = state.verdicts
    links: _Table[str] = _Table()
    runs: _Table[RunKey] = _Table()
    # A failing cell's failure line and signature, each pair once (many cells share one).
    messages: _Table[tuple[str, str]] = _Table()
    dashboards: dict[str, list[list[object]]] = {}
    for cell in verdicts.cells:
        since = cell.failing_since
        record: list[object] = [
            cell.row,
            cell.backend,
            cell.verdict.value,
            links.index(cell.link),
            runs.index(cell.run),
            None if cell.baseline is None else cell.baseline.value,
            links.index(cell.baseline_link),
            None if since is None else [since.run_id, since.sha, links.index(since.url)],
            list(cell.position),
        ]
        # Then the failure line's place in ``messages``, the blame in words (blame.py) and
        # the failed and total cases of a partly failing cell; trailing empty parts left out.
        line = (
            messages.index((cell.message, cell.signature))
            if cell.message or cell.signature
            else None
        )
        extra: list[object] = [
            line,
            cell.blame_line,
            None if cell.cases is None else list(cell.cases),
        ]
        while extra and extra[-1] in (None, ""):
            extra.pop()
        record.extend(extra)
        dashboards.setdefault(cell.dashboard, []).append(record)
    lease = state.lease
    document = {
        "format": FORMAT,
        "version": state.version,
        "shown": state.shown,
        "comment": state.comment_id,
        "lease": None if lease is None else [lease.holder, lease.at],
        "pr": verdicts.pr,
        "head": verdicts.head,
        "run": list(verdicts.run),
        "located": verdicts.located,
        "backends": [[name, rank, list(run)] for name, rank, run in verdicts.backends],
        "links": links.dump(),
        "runs": [list(run) for run in runs.dump()],
        "messages": [list(pair) for pair in messages.dump()],
        "dashboards": [[key, cells] for key, cells in dashboards.items()],
    }
    if verdicts.slower:
        document["slower"] = [
            [
                cell.dashboard,
                cell.row,
                cell.backend,
                round(cell.seconds, 3),
                round(cell.median, 3),
                cell.runs,
                links.index(cell.link),
                runs.index(cell.run),
            ]
            for cell in verdicts.slower
        ]
        document["links"] = links.dump()
        document["runs"] = [list(run) for run in runs.dump()]
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


class NewerFormatError(ValueError):
    """The record was written by a newer ivy-matrix (it must not be overwritten)."""


def load_ref_state(text: str) -> RefState:
    """The record in ``text``; ValueError, TypeError, KeyError or IndexError when damaged,
    :class:`NewerFormatError` when a newer version wrote it."""
    document = _typed(json.loads(text), dict)
    version = _typed(document.get("format"), int)
    if version > FORMAT:
        raise NewerFormatError(f"format {version}, newer than this ivy-matrix reads ({FORMAT})")
    if version != FORMAT:
        raise ValueError(f"unknown format {version}")
    links = [_typed(link, str) for link in _typed(document["links"], list)]
    runs = [_run(run) for run in _typed(document["runs"], list)]
    messages = [_message(pair) for pair in _typed(document.get("messages", []), list)]
    cells = [
        _cell_from(_typed(key, str), _typed(record, list), links, runs, messages)
        for key, records in _typed(document["dashboards"], list)
        for record in _typed(records, list)
    ]
    lease = document["lease"]
    verdicts = CommentState(
        pr=_typed(document["pr"], int),
        head=_typed(document["head"], str),
        run=_run(document["run"]),
        located=_typed(document["located"], bool),
        cells=tuple(sorted(cells, key=lambda c: c.order)),
        backends=tuple(
            (_typed(n, str), _typed(r, int), _run(run))
            for n, r, run in _typed(document["backends"], list)
        ),
        slower=tuple(
            _slower_from(_typed(item, list), links, runs)
            for item in _typed(document.get("slower", []), list)
        ),
    )
    comment = document["comment"]
    return RefState(
        verdicts=verdicts,
        version=_typed(document["version"], int),
        shown=_typed(document["shown"], int),
        comment_id=None if comment is None else _typed(comment, int),
        lease=None if lease is None else _lease(_typed(lease, list)),
    )


def _slower_from(parts: list[object], links: Sequence[str], runs: Sequence[RunKey]) -> SlowerCell:
    dashboard, row, backend, seconds, median, count, link, run = parts
    return SlowerCell(
        dashboard=_typed(dashboard, str),
        row=_typed(row, str),
        backend=_typed(backend, str),
        seconds=expect_number(seconds),
        median=expect_number(median),
        runs=_typed(count, int),
        link=_linked(link, links),
        run=runs[_index(run)],
    )


def _lease(parts: Sequence[object]) -> Lease:
    holder, at = parts
    if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
        raise TypeError(f"expected a time, got {at!r:.60}")
    return Lease(holder=_typed(holder, str), at=float(at))


def _message(value: object) -> tuple[str, str]:
    text, signature = _typed(value, list)
    return _typed(text, str), _typed(signature, str)


# A cell's record: nine items, then its failure line's index in ``messages`` (or None), its
# blame in words ("" for none) and its failed and total cases (or None); the last ones may be
# left out.
_LINE_AT = 9


def _cell_from(
    dashboard: str,
    record: Sequence[object],
    links: Sequence[str],
    runs: Sequence[RunKey],
    messages: Sequence[tuple[str, str]],
) -> CellVerdict:
    # Records written before failure lines were kept have no tenth item.
    row, backend, verdict, link, run, baseline, baseline_link, since, position = record[:9]
    line = record[_LINE_AT] if len(record) > _LINE_AT else None
    message, signature = ("", "") if line is None else messages[_index(line)]
    blame_line = _typed(record[_LINE_AT + 1], str) if len(record) > _LINE_AT + 1 else ""
    cases = record[_LINE_AT + 2] if len(record) > _LINE_AT + 2 else None
    row_at, backend_at = _typed(position, list)
    since_parts = None if since is None else _typed(since, list)
    return CellVerdict(
        dashboard=dashboard,
        row=_typed(row, str),
        backend=_typed(backend, str),
        verdict=Verdict(_typed(verdict, str)),
        link=_linked(link, links),
        run=runs[_index(run)],
        baseline=None if baseline is None else BaselineKind(_typed(baseline, str)),
        baseline_link=_linked(baseline_link, links),
        failing_since=None
        if since_parts is None
        else RunRef(
            run_id=_typed(since_parts[0], int),
            sha=None if since_parts[1] is None else _typed(since_parts[1], str),
            url=_linked(since_parts[2], links) or "",
        ),
        position=(_typed(row_at, int), _typed(backend_at, int)),
        message=message,
        signature=signature,
        blame_line=blame_line,
        cases=None if cases is None else _cases(cases),
    )


def _cases(value: object) -> tuple[int, int]:
    failed, total = _typed(value, list)
    return _typed(failed, int), _typed(total, int)


def _index(value: object) -> int:
    index = _typed(value, int)
    if index < 0:
        raise IndexError(f"index {index}")
    return index


def _linked(value: object, links: Sequence[str]) -> str | None:
    index = _typed(value, int)
    return None if index == -1 else links[_index(index)]


def _typed(value: object, kind: type[_T]) -> _T:
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise TypeError(f"expected {kind.__name__}, got {value!r:.60}")
    return value


def _run(value: object) -> RunKey:
    run_id, attempt, job_id = _typed(value, list)
    return RunKey(_typed(run_id, int), _typed(attempt, int), _typed(job_id, int))
