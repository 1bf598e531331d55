"""Verdicts for a pull request: each of its cells against the default branch's history.

Pure: no I/O. The inputs are the pull request's results in the form ``update`` builds
(:func:`ivy_matrix.state.entries.build_batches`: one :class:`~ivy_matrix.state.merge.Batch` per dashboard,
row -> backend -> entry; several batches of one dashboard, e.g. from several legs or attempts,
are combined) and the default branch's states (what the store holds).

**Baseline** of a cell: its newest default-branch result (:mod:`ivy_matrix.state.history`: one result
per run, skipped results left out, since they say neither pass nor fail) that comes from the
pull request's merge base or an ancestor of it ("merge-base"), else its newest default-branch
result ("latest"), else none. Which results are ancestors is an
:class:`~ivy_matrix.pr.ancestry.Ancestry` (pr/ancestry.py).

**Verdicts**, the first that applies, in this order (a flaky cell is never blamed on the pull
request, nor shown as a steady failure):

1. ``flaky``: fails in the pull request (``failure``, or ``flaky``: failed, then passed on a
   rerun or a re-run attempt) and the cell is flaky here (its result is ``flaky``) or on the
   default branch (its whole default-branch history, see :mod:`ivy_matrix.state.history`);
2. ``new``: fails in the pull request, passed in the baseline (``success`` or ``flaky``);
3. ``pre-existing``: fails in the pull request and in the baseline; ``failing_since`` is the
   oldest run of the baseline's failure streak;
4. ``new-test``: fails in the pull request, and the test is absent from the baseline (its
   dashboard has no such row: the pull request adds it, or brings back a retired one) on a
   backend the baseline knows (any dashboard has its column). It is counted and listed with
   the new failures, and ``fail-on: new`` fails on it;
5. ``no-baseline``: fails in the pull request, and the cell has no baseline otherwise: a
   backend absent from the baseline (the pull request adds it to the matrix), or a known test
   with no result on this backend that is not skipped;
6. ``fixed``: passes in the pull request, failed in the baseline.

Cells that pass in both, or are skipped in the pull request, are not listed. Cells are listed
by dashboard key, then in the order the dashboard shows rows and backends (the default
branch's order, then new rows and backends in the order the pull request reported them).

The overall baseline (:attr:`Comparison.baseline`) is "merge-base" when the merge base was
located and every listed cell with a baseline took it from the merge base; else "latest".

**Used by** commands/compare.py: ``ivy-matrix compare`` and ``update`` on a pull request read the
pull request's results as ``update`` does, load the default branch's states read-only, and
call ``compare`` with ``pr.ancestry.run_order_ancestry`` from the base sha;
``pr.document.compare_document`` is the ``--json`` file, and ``fail-on: new`` fails when
:func:`new_failures` is not 0.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from ivy_matrix.escaping import IVY_NO_LINK
from ivy_matrix.explain.blame import Blame, blame_of, describe_blame
from ivy_matrix.explain.grouping import BackendResult, RowGroups, group_row
from ivy_matrix.explain.slowdowns import (
    SLOWER_MIN_RUNS,
    SLOWER_SECONDS,
    default_durations,
    is_slower,
)
from ivy_matrix.model import DashboardState, Entry, Outcome, RunKey
from ivy_matrix.pr.ancestry import NO_ANCESTRY, Ancestry
from ivy_matrix.state.durations import rounded
from ivy_matrix.state.history import RunRef, RunResult, history_of, run_results, runs_of
from ivy_matrix.state.merge import Batch


class Verdict(StrEnum):
    """What a pull request's result of a cell means against the default branch."""

    NEW = "new"
    NEW_TEST = "new-test"
    PRE_EXISTING = "pre-existing"
    FIXED = "fixed"
    FLAKY = "flaky"
    NO_BASELINE = "no-baseline"


# The order of the counts in the JSON and the comment.
COUNT_ORDER = (
    Verdict.NEW,
    Verdict.NEW_TEST,
    Verdict.PRE_EXISTING,
    Verdict.FIXED,
    Verdict.FLAKY,
    Verdict.NO_BASELINE,
)
FAILING_VERDICTS = frozenset(
    {Verdict.NEW, Verdict.NEW_TEST, Verdict.PRE_EXISTING, Verdict.FLAKY, Verdict.NO_BASELINE}
)
# What the pull request brings: listed together as its new failures, and what fail-on: new
# fails on.
NEW_VERDICTS = (Verdict.NEW, Verdict.NEW_TEST)


def new_failures(counts: Mapping[Verdict, int]) -> int:
    """How many cells the pull request newly breaks (``new`` and ``new-test``)."""
    return sum(counts[verdict] for verdict in NEW_VERDICTS)


# A cell's place: (dashboard key, row, backend).
CellKey = tuple[str, str, str]


class BaselineKind(StrEnum):
    """Where a baseline came from."""

    MERGE_BASE = "merge-base"
    LATEST = "latest"


@dataclass(frozen=True, slots=True, kw_only=True)
class CellVerdict:
    """One listed cell: where it is, its verdict, and the jobs behind it.

    ``link`` is the job of the pull request's result, ``baseline_link`` the baseline's (None
    when there is no baseline, or it has no link); ``run`` orders results of one cell when
    comments of several legs are merged; ``position`` is (row, backend) in display order.
    ``message`` and ``signature`` are the first failure line of the pull request's result and
    its signature (signature.py; "" when it did not fail or gave no message); ``cases`` its
    failed and total test cases when only some of them failed (a parametrized row: ``2/8``).
    """

    dashboard: str
    row: str
    backend: str
    verdict: Verdict
    link: str | None
    run: RunKey
    baseline: BaselineKind | None = None
    baseline_link: str | None = None
    failing_since: RunRef | None = None
    position: tuple[int, int] = (0, 0)
    message: str = ""
    signature: str = ""
    cases: tuple[int, int] | None = None
    # A failing cell's blame (blame.py) from its default-branch history and this result, and
    # that blame in words (what the comment shows; the verdict ref keeps only the words).
    blame: Blame | None = field(default=None, compare=False)
    blame_line: str = ""

    @property
    def key(self) -> CellKey:
        return (self.dashboard, self.row, self.backend)

    @property
    def order(self) -> tuple[str, int, str, int, str]:
        return (self.dashboard, self.position[0], self.row, self.position[1], self.backend)


def tally(cells: Iterable[CellVerdict]) -> dict[Verdict, int]:
    """How many cells have each verdict (every verdict present, in ``COUNT_ORDER``)."""
    counts = dict.fromkeys(COUNT_ORDER, 0)
    for cell in cells:
        counts[cell.verdict] += 1
    return counts


@dataclass(frozen=True, slots=True, kw_only=True)
class SlowerCell:
    """A cell the pull request ran at least 2 times and 5 s longer than the median of its
    newest default-branch durations (slowdowns.py's rule; at least 2 of them): its duration,
    that median and how many results it is of, the job of its result and its run."""

    dashboard: str
    row: str
    backend: str
    seconds: float
    median: float
    runs: int
    link: str | None
    run: RunKey

    @property
    def key(self) -> CellKey:
        return (self.dashboard, self.row, self.backend)


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """A pull request's verdicts: the listed cells, and every backend it has results for with
    the newest run those results came from (display order); the cells it ran slower
    (``slower``).

    ``ran`` is every cell the results hold, listed or not ((dashboard, row, backend) -> the
    newest run attempt with a result for it): a writer's cells replace those of an older
    attempt in the cells it ran (``pr/state.py``). ``groups``: each row with a failing cell,
    its failing backends grouped by signature and classified (grouping.py) from the results
    these verdicts saw (one leg sees only its own backends).
    """

    cells: tuple[CellVerdict, ...]
    backend_runs: tuple[tuple[str, RunKey], ...]
    located: bool
    ran: Mapping[CellKey, int] = field(default_factory=dict)
    groups: tuple[RowGroups, ...] = ()
    slower: tuple[SlowerCell, ...] = ()

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.backend_runs)

    @property
    def baseline(self) -> BaselineKind:
        if self.located and all(c.baseline is not BaselineKind.LATEST for c in self.cells):
            return BaselineKind.MERGE_BASE
        return BaselineKind.LATEST

    def counts(self) -> dict[Verdict, int]:
        return tally(self.cells)

    def backend_counts(self) -> dict[str, dict[Verdict, int]]:
        return {b: tally(c for c in self.cells if c.backend == b) for b in self.backends}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Baseline:
    result: RunResult
    kind: BaselineKind
    failing_since: RunRef | None


def _baseline(
    entries: Sequence[Entry], ancestry: Ancestry, branches: Collection[str]
) -> tuple[_Baseline | None, bool]:
    """A cell's baseline (None when it has none), and whether it is flaky on the default branch."""
    results = run_results(entries, branches)
    flaky = history_of(results).flaky is not None
    counted = [i for i, r in enumerate(results) if r.outcome is not Outcome.SKIPPED]
    if not counted:
        return None, flaky
    chosen, kind = counted[0], BaselineKind.LATEST
    for index in counted:
        if ancestry(results[index].entry.source) is True:
            chosen, kind = index, BaselineKind.MERGE_BASE
            break
    since = history_of(results[chosen:]).failing_since
    return _Baseline(result=results[chosen], kind=kind, failing_since=since), flaky


def verdict_of(
    pr: Outcome, baseline: Outcome | None, *, flaky: bool, new_test: bool = False
) -> Verdict | None:
    """The verdict of one cell (see the module docstring), None when it is not listed;
    ``new_test``: the test is absent from the baseline, on a backend the baseline knows."""
    if pr is Outcome.FLAKY or (pr is Outcome.FAILURE and flaky):
        return Verdict.FLAKY
    if pr is Outcome.FAILURE:
        if baseline is None:
            return Verdict.NEW_TEST if new_test else Verdict.NO_BASELINE
        return Verdict.PRE_EXISTING if baseline is Outcome.FAILURE else Verdict.NEW
    if pr is Outcome.SUCCESS and baseline is Outcome.FAILURE:
        return Verdict.FIXED
    return None


def _link(url: str) -> str | None:
    return url if url and url != IVY_NO_LINK else None


def _pr_cells(batches: Iterable[Batch]) -> dict[str, dict[str, dict[str, list[Entry]]]]:
    """The pull request's entries: dashboard key -> row -> backend -> entries, in batch order."""
    found: dict[str, dict[str, dict[str, list[Entry]]]] = {}
    for batch in batches:
        rows = found.setdefault(batch.dashboard.key, {})
        for row, cells in batch.cells.items():
            by_backend = rows.setdefault(row, {})
            for backend, entry in cells.items():
                by_backend.setdefault(backend, []).append(entry)
    return found


def _positions(names: Iterable[str], known: Sequence[str]) -> dict[str, int]:
    """Display positions: the dashboard's own order first, then new names as they came."""
    positions = {name: index for index, name in enumerate(known)}
    for name in names:
        positions.setdefault(name, len(positions))
    return positions


def _cell_verdict(
    place: tuple[str, str, str],
    pr: RunResult,
    baseline_entries: Sequence[Entry],
    position: tuple[int, int],
    *,
    ancestry: Ancestry,
    branches: Collection[str],
    new_test: bool = False,
) -> CellVerdict | None:
    """The verdict of one pull-request cell (``pr``: its newest result), None when it is not
    listed."""
    base, flaky = _baseline(baseline_entries, ancestry, branches)
    baseline = base.result.outcome if base else None
    verdict = verdict_of(pr.outcome, baseline, flaky=flaky, new_test=new_test)
    if verdict is None:
        return None
    dashboard, row, backend = place
    counts = pr.entry.counts
    return CellVerdict(
        dashboard=dashboard,
        row=row,
        backend=backend,
        verdict=verdict,
        link=_link(pr.entry.source.url),
        run=pr.entry.run,
        baseline=base.kind if base else None,
        baseline_link=_link(base.result.entry.source.url) if base else None,
        failing_since=base.failing_since if base and verdict is Verdict.PRE_EXISTING else None,
        position=position,
        message=pr.entry.message,
        signature=pr.entry.signature,
        cases=(counts.failed, counts.total)
        if counts is not None and counts.partly_failing
        else None,
    )


def _dashboard_cells(
    key: str,
    rows: Mapping[str, Mapping[str, Sequence[Entry]]],
    state: DashboardState | None,
    ancestry: Ancestry,
    branches: Collection[str],
    *,
    known_backends: Collection[str],
) -> list[tuple[tuple[int, int], str, str, RunKey, CellVerdict | None, BackendResult]]:
    """Each of a dashboard's pull-request cells: position, backend, row, newest run, verdict,
    newest result (``known_backends``: every backend the baseline has a column for, in any
    dashboard)."""
    known_rows = {row.name: row for row in state.rows} if state else {}
    row_at = _positions(rows, [row.name for row in state.rows] if state else [])
    backend_at = _positions(
        (b for cells in rows.values() for b in cells), state.backend_names if state else ()
    )
    found = []
    for row, cells in rows.items():
        old = known_rows.get(row)
        for backend, entries in cells.items():
            cell = old.cells.get(backend) if old else None
            position = (row_at[row], backend_at[backend])
            pr = runs_of(entries)[0]
            listed = _cell_verdict(
                (key, row, backend),
                pr,
                cell.entries if cell else (),
                position,
                ancestry=ancestry,
                branches=branches,
                new_test=old is None and backend in known_backends,
            )
            result = BackendResult(
                backend=backend,
                outcome=pr.outcome,
                message=pr.entry.message,
                signature=pr.entry.signature,
            )
            found.append((position, backend, row, max(e.run for e in entries), listed, result))
    return found


def compare(
    batches: Iterable[Batch],
    states: Iterable[DashboardState],
    *,
    ancestry: Ancestry = NO_ANCESTRY,
    branches: Collection[str] = (),
    repository: str = "",
) -> Comparison:
    """The verdicts of a pull request's results against the default branch's states.
    ``repository`` (``{server}/{owner}/{repo}``) is where the blames' compare links point."""
    batches = list(batches)  # read twice: the verdicts, then the durations
    by_key = {state.key: state for state in states}
    known_backends = {name for state in by_key.values() for name in state.backend_names}
    cells: list[CellVerdict] = []
    runs: dict[str, RunKey] = {}
    ran: dict[CellKey, int] = {}
    groups: list[RowGroups] = []
    for key, rows in sorted(_pr_cells(batches).items()):
        found = _dashboard_cells(
            key, rows, by_key.get(key), ancestry, branches, known_backends=known_backends
        )
        found.sort(key=lambda item: (item[0], item[1]))
        state = by_key.get(key)
        held = {r.name: r.cells for r in state.rows} if state else {}
        results: dict[str, list[BackendResult]] = {}
        for _, backend, row, run, listed, result in found:
            runs[backend] = max(run, runs.get(backend, run))
            ran[key, row, backend] = run.run_attempt
            results.setdefault(row, []).append(result)
            if listed is not None:
                baseline = held.get(row, {}).get(backend)
                cells.append(
                    _with_blame(
                        listed,
                        rows[row][backend],
                        baseline.entries if baseline else (),
                        branches=branches,
                        repository=repository,
                    )
                )
        groups.extend(g for row, r in results.items() if (g := group_row(key, row, r)))
    return Comparison(
        cells=tuple(cells),
        backend_runs=tuple(runs.items()),
        located=ancestry.located,
        ran=ran,
        groups=tuple(groups),
        slower=_slower(batches, by_key, branches),
    )


def _slower(
    batches: Iterable[Batch], states: Mapping[str, DashboardState], branches: Collection[str]
) -> tuple[SlowerCell, ...]:
    """The cells the pull request ran slower than the default branch (:class:`SlowerCell`),
    each by its newest result, in key order."""
    newest: dict[CellKey, tuple[Entry, float]] = {}
    for batch in batches:
        key = batch.dashboard.key
        for row, timings in batch.times.items():
            for backend, timing in timings.items():
                entry = batch.cells.get(row, {}).get(backend)
                if (
                    entry is None
                    or not timing.timed
                    or timing.seconds < SLOWER_SECONDS
                    or entry.outcome is Outcome.SKIPPED
                ):
                    continue
                known = newest.get((key, row, backend))
                if known is None or known[0].run < entry.run:
                    newest[key, row, backend] = (entry, timing.seconds)
    found = []
    for (key, row, backend), (entry, seconds) in sorted(newest.items()):
        state = states.get(key)
        held = next((r for r in state.rows if r.name == row), None) if state else None
        if held is None or backend not in held.cells:
            continue
        base = default_durations(held.cells[backend], held.times.get(backend), branches=branches)
        if len(base) < SLOWER_MIN_RUNS - 1:
            continue
        median = statistics.median(base)
        if is_slower(seconds, median):
            found.append(
                SlowerCell(
                    dashboard=key,
                    row=row,
                    backend=backend,
                    seconds=rounded(seconds),
                    median=rounded(median),
                    runs=len(base),
                    link=_link(entry.source.url),
                    run=entry.run,
                )
            )
    return tuple(found)


def _with_blame(
    cell: CellVerdict,
    entries: Sequence[Entry],
    baseline: Sequence[Entry],
    *,
    branches: Collection[str],
    repository: str,
) -> CellVerdict:
    """A failing cell with its blame (blame.py): the pull request's result is the newest of
    the cell's history, after the default branch's, so a new failure starts in the pull
    request and a pre-existing one on the default branch."""
    if cell.verdict not in FAILING_VERDICTS:
        return cell
    history = run_results(baseline, branches)
    blame = blame_of([runs_of(entries)[0], *history], repository=repository)
    if blame is None:
        return cell
    return replace(cell, blame=blame, blame_line=describe_blame(blame))
