"""What a cell's recorded results say over time: failing since when, last pass, flaky or not.

Pure: no I/O. Everything is computed from a cell's stored entries (newest first, at most
``--history`` of them), so there is no database beside the state. The rules:

- **Default branch only.** A result counts when it was recorded on the default branch: not a
  pull request's (``Source.is_pull_request``) and, when ``branches`` are given, with a ``ref``
  among them (``main`` and ``refs/heads/main`` are the same branch). A result with no
  provenance (older states, adopted cells, local runs) counts as the default branch's.
- **One result per run.** Entries of one run id (its attempts and jobs) make one result: a run
  whose attempts disagree (an attempt failed and a re-run attempt passed, or the other way)
  is *flaky*, as is one whose result is ``flaky`` (passed only after reruns: surefire and
  nextest ``flakyFailure``, pytest-rerunfailures); otherwise the worst outcome of the run.
- **Failing since.** The current failure streak is the newest results that are failures, from
  the newest on. A skipped result neither breaks nor extends a streak (it says nothing about
  whether the test passes); a flaky result breaks it, because the test passed in that run (as
  the index counts flaky as passing). ``failing_since`` is the streak's oldest run; ``runs``
  the number of runs in it; ``since_oldest`` says the streak reaches back to the oldest result
  kept, so it may be older than the history shows. ``last_pass`` is the newest run that passed
  (``success`` or ``flaky``), whether or not the cell fails now.
- **Flaky.** Among the newest ``FLAKY_WINDOW`` (10) runs with a result that is not skipped:
  one is flaky (reason ``rerun``), or the results flip between passing and failing at least
  ``FLIPS_FOR_FLAKY`` (2) times (reason ``flips``): fail, pass, fail is flaky; pass, fail, fail
  is a breakage.
- **Newly failing**: a streak of one run. **Still failing**: a streak of two runs or more
  (every failing cell is in one of the two).

The histories in words are history_text.py's: a cell's line, the index page's sections, the
summary JSON's ``history``. A pull request's results never reach these states: ``update`` does not
record them (config/settings.py ``Settings.feeds_dashboards``).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ivy_matrix.model import DashboardState, Entry, Outcome, Source, worst

FLAKY_WINDOW = 10
FLIPS_FOR_FLAKY = 2
# Entries listed per section before "... and N more".
DEFAULT_SECTION_LIMIT = 50
SHORT_SHA = 7
_PASSING = frozenset({Outcome.SUCCESS, Outcome.FLAKY})


class FlakyReason(StrEnum):
    """Why a cell counts as flaky."""

    RERUN = "rerun"
    FLIPS = "flips"


def _branch(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def is_default_branch(source: Source, branches: Collection[str] = ()) -> bool:
    """Whether a result feeds the dashboards (see the module docstring)."""
    if source.is_pull_request:
        return False
    if branches and source.ref:
        return _branch(source.ref) in {_branch(b) for b in branches}
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRef:
    """A run a history points at: its id, its commit (None when unknown) and the job's URL."""

    run_id: int
    sha: str | None
    url: str

    @classmethod
    def of(cls, entry: Entry) -> RunRef:
        return cls(run_id=entry.run.run_id, sha=entry.source.sha or None, url=entry.source.url)

    def to_json(self) -> dict[str, object]:
        return {"run_id": self.run_id, "sha": self.sha}


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """One run's result for a cell: its newest entry and the outcome of the whole run."""

    entry: Entry
    outcome: Outcome


def run_outcome(entries: Sequence[Entry]) -> Outcome:
    """The outcome of one run from its entries: flaky when its attempts disagree."""
    by_attempt: dict[int, Outcome] = {}
    for entry in entries:
        attempt = entry.run.run_attempt
        known = by_attempt.get(attempt)
        by_attempt[attempt] = entry.outcome if known is None else worst(known, entry.outcome)
    outcomes = set(by_attempt.values())
    if Outcome.FLAKY in outcomes or (Outcome.FAILURE in outcomes and Outcome.SUCCESS in outcomes):
        return Outcome.FLAKY
    return max(outcomes, key=lambda o: o.severity)


def run_results(entries: Iterable[Entry], branches: Collection[str] = ()) -> list[RunResult]:
    """A cell's default-branch results, one per run id, newest run first."""
    return runs_of(e for e in entries if is_default_branch(e.source, branches))


def runs_of(entries: Iterable[Entry]) -> list[RunResult]:
    """Entries as one result per run id, newest run first, whatever branch they are from."""
    given = list(entries)
    if all(a.run.run_id > b.run.run_id for a, b in itertools.pairwise(given)):
        # The usual cell: newest first (merge.py keeps them so), one entry per run, whose
        # outcome is the run's.
        return [RunResult(entry=entry, outcome=entry.outcome) for entry in given]
    runs: dict[int, list[Entry]] = {}
    for entry in given:
        runs.setdefault(entry.run.run_id, []).append(entry)
    ordered = sorted(runs.values(), key=lambda group: group[0].run.run_id, reverse=True)
    return [
        RunResult(entry=max(group, key=lambda e: e.run), outcome=run_outcome(group))
        for group in ordered
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class CellHistory:
    """What a cell's default-branch results say (see the module docstring for the rules)."""

    failing_since: RunRef | None = None
    runs: int = 0
    since_oldest: bool = False
    last_pass: RunRef | None = None
    flaky: FlakyReason | None = None

    @property
    def failing(self) -> bool:
        return self.failing_since is not None


def _flaky(results: Sequence[RunResult]) -> FlakyReason | None:
    window = [r.outcome for r in results if r.outcome is not Outcome.SKIPPED][:FLAKY_WINDOW]
    if Outcome.FLAKY in window:
        return FlakyReason.RERUN
    passing = [outcome in _PASSING for outcome in window]
    flips = sum(a != b for a, b in itertools.pairwise(passing))
    return FlakyReason.FLIPS if flips >= FLIPS_FOR_FLAKY else None


def history_of(results: Sequence[RunResult]) -> CellHistory:
    """The history of a cell from its run results (newest first, as :func:`run_results`)."""
    since: Entry | None = None
    runs = 0
    last_pass: Entry | None = None
    for result in results:
        if result.outcome is Outcome.SKIPPED:
            continue
        if result.outcome is Outcome.FAILURE:
            since, runs = result.entry, runs + 1
            continue
        last_pass = result.entry
        break
    return CellHistory(
        failing_since=None if since is None else RunRef.of(since),
        runs=runs,
        since_oldest=since is not None and last_pass is None,
        last_pass=None if last_pass is None else RunRef.of(last_pass),
        flaky=_flaky(results),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CellReport:
    """A cell worth a look: failing now, or flaky. ``latest`` is its newest default result."""

    row: str
    backend: str
    latest: Entry
    history: CellHistory
    # The cell's default-branch results, newest first (for its blame, blame.py).
    results: tuple[RunResult, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DashboardHistory:
    """A dashboard's failing and flaky cells, in the order the dashboard shows them."""

    key: str
    cells: tuple[CellReport, ...]

    def newly_failing(self) -> tuple[CellReport, ...]:
        return tuple(c for c in self.cells if c.history.runs == 1)

    def still_failing(self) -> tuple[CellReport, ...]:
        """The cells failing for two runs or more, the longest streak first."""
        longer = [c for c in self.cells if c.history.runs > 1]
        return tuple(sorted(longer, key=lambda c: -c.history.runs))

    def flaky(self) -> tuple[CellReport, ...]:
        return tuple(c for c in self.cells if c.history.flaky is not None)


_A_LOOK = frozenset({Outcome.FAILURE, Outcome.FLAKY})


def _worth_a_look(
    entries: Sequence[Entry], branches: Collection[str]
) -> tuple[CellHistory, int, tuple[RunResult, ...]] | None:
    """A cell's history, the position of its newest default-branch result and its results,
    if it is failing or flaky."""
    results = run_results(entries, branches)
    if not results:
        return None
    history = history_of(results)
    if history.failing or history.flaky is not None:
        newest = results[0].entry
        position = next(i for i, entry in enumerate(entries) if entry is newest)
        return history, position, tuple(results)
    return None


def dashboard_history(state: DashboardState, branches: Collection[str] = ()) -> DashboardHistory:
    """The failing and flaky cells of a dashboard (rows, then backends, in display order)."""
    # Rows share cell objects (most cells of a run are alike): each distinct cell's history is
    # worked out once, and only rows holding a cell worth a look are looked at again.
    distinct = {id(cell): cell for row in state.rows for cell in row.cells.values()}
    worth: dict[int, tuple[CellHistory, Entry, tuple[RunResult, ...]]] = {}
    # A history depends on each result's job and outcome only (not its counts or failure
    # line): cells alike in those are worked out once, with the position of the newest.
    by_jobs: dict[
        tuple[tuple[int, Outcome], ...], tuple[CellHistory, int, tuple[RunResult, ...]] | None
    ] = {}
    for key, cell in distinct.items():
        entries = cell.entries
        # Failing or flaky needs a failure or a flaky pass among the results: most cells have
        # neither, and are passed over here.
        if not any(entry.outcome in _A_LOOK for entry in entries):
            continue
        jobs = tuple([(id(entry.source), entry.outcome) for entry in entries])
        if jobs in by_jobs:
            found = by_jobs[jobs]
        else:
            found = by_jobs[jobs] = _worth_a_look(entries, branches)
        if found is not None:
            # The results' entries are this cell's alike (same jobs): the blame reads only
            # their jobs and outcomes.
            worth[key] = (found[0], entries[found[1]], found[2])
    if not worth:
        return DashboardHistory(key=state.key, cells=())
    reports = []
    backends = state.backend_names
    for row in state.rows:
        cells = row.cells
        if worth.keys().isdisjoint(map(id, cells.values())):
            continue
        for backend in backends:
            held = cells.get(backend)
            report = None if held is None else worth.get(id(held))
            if report is not None:
                history, latest, results = report
                reports.append(
                    CellReport(
                        row=row.name,
                        backend=backend,
                        latest=latest,
                        history=history,
                        results=results,
                    )
                )
    return DashboardHistory(key=state.key, cells=tuple(reports))
