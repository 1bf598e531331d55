"""How many content-creating requests the issue target may make, and which issues come first.

Pure: no I/O. GitHub allows 500 content-creating requests an hour and 80 a minute per
repository (PLATFORM.md 1.2). A refused write is retried after a minute, but past the hour's
500 every write is refused until the oldest leaves the window, so a run that needs more than
the hour holds fails part-way (narwhals, one dashboard per test module: 293 issues to create;
a first run made 101 in 457 s and was then refused). So the issue target plans before it
writes:

- **The hour's budget.** ``issue-writes-per-hour`` (default ``DEFAULT_WRITES_PER_HOUR``, ``issues/defaults.py``:
  GitHub's 500, less room for the branch's commits over REST, pull-request comments and other
  tools) is shared by the runs of the last hour. The index issue records what each run wrote
  (``<!-- ivy-matrix:writes=T+N+R,... -->``, ``issues/markers.py``), so a run knows what the
  runs before it spent. It keeps room for the index issue (its write, its pin) and writes the
  dashboards' issues (and the label, once) within what is left (:class:`HourBudget`).
- **No run's writes drop out of the record.** Two runs' jobs can write the index issue one
  after the other, and issue edits have no compare-and-swap: each run adds its own entry
  (:class:`OwnWrites`, keyed by a number the run draws) to the record it finds, and records
  merge entry by entry (:func:`merge_writes`), so adding a run's entry twice counts it once.
- **The order** (:func:`write_order`): dashboards with failing cells first, where an issue
  helps: their existing issues, then their missing ones (the newest failure first); then the
  passing dashboards' existing issues, then their missing ones (by name). Among existing
  issues the one showing the oldest revision comes first, so that an issue one run left
  behind comes first in the next.
- **The rest waits**, never lost: a dashboard that does not fit keeps its issue as it is (or
  gets none yet), the index issue links its page on the branch (which is current), and the
  log and the job summary say how many waited, why, and what to set. The next run that
  reaches it writes it; a missing issue is created by any later run with budget left.
- **The minute's 80** is the writer's pace (``issues/requests.py``: at most 70 a minute).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ivy_matrix.issues.markers import Write
from ivy_matrix.model import DashboardState
from ivy_matrix.state.history import dashboard_history

HOUR = 3600
# Runs recorded in the index issue, at most (the newest; older ones are out of the hour anyway).
RECORDED_RUNS = 100
# A record dated further ahead than this (seconds) is not a clock's drift but a hand edit: it
# is not counted, so no edit of the index issue can hold the issues back for good.
AHEAD = 300
# A run's number, which tells its entry in the record from another's, is drawn below this.
RUNS = 10**9

Entries = tuple[Write, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class HourBudget:
    """The content-creating requests this run's dashboard issues may make.

    ``per_hour``: what every run of an hour may make together (``issue-writes-per-hour``);
    ``earlier``: what runs of the last hour made (the index issue's record); ``before``: what
    this run made before the issues (the branch's commit over the REST API); ``reserve``: kept
    for the index issue (its write and its pin).
    """

    per_hour: int
    earlier: int = 0
    before: int = 0
    reserve: int = 1

    @property
    def for_issues(self) -> int:
        """What this run's issues may make in all: the dashboards', the index's."""
        return max(0, self.per_hour - self.earlier - self.before)

    @property
    def for_dashboards(self) -> int:
        return max(0, self.for_issues - self.reserve)


def last_hour(entries: Iterable[Write], now: int) -> Entries:
    """The recorded runs whose writes still count at ``now`` (one dated a little ahead, a
    clock that disagrees, counts too; one dated more than :data:`AHEAD` seconds ahead does
    not), the newest :data:`RECORDED_RUNS` of them, oldest first."""
    kept = sorted(entry for entry in entries if now - HOUR < entry.at <= now + AHEAD)
    return tuple(kept[-RECORDED_RUNS:])


def spent(entries: Iterable[Write]) -> int:
    return sum(entry.n for entry in entries)


def merge_writes(*records: Iterable[Write]) -> Entries:
    """The entries of ``records`` together, each run's once, oldest first: entries of one run
    (its time and number) keep the larger count; entries of no number (recorded before runs
    drew one) are one entry when all their values agree. Merging a record into one that holds
    it already changes nothing."""
    merged: dict[tuple[int, int, int], Write] = {}
    for record in records:
        for entry in record:
            key = (entry.at, entry.run, 0 if entry.run else entry.n)
            if key not in merged or merged[key].n < entry.n:
                merged[key] = entry
    return tuple(sorted(merged.values()))


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnWrites:
    """This run's entry in the index issue's record of writes: dated ``at`` (once for the
    run, so each time it is added it is the same entry), told apart by ``run`` (a random
    number the run draws), with the ``before`` content-creating requests the run made before
    its issues."""

    at: int
    run: int
    before: int = 0

    def added(self, record: Sequence[Write], writes: int, now: int) -> Entries | None:
        """``record`` with this run's entry for its ``writes`` issue writes so far and the
        index write that records them, in place of its earlier entry (the runs of the last
        hour at ``now``); None when ``record`` holds them already."""
        made = self.before + writes
        if any((e.at, e.run) == (self.at, self.run) and e.n >= made for e in record):
            return None
        return last_hour(merge_writes(record, (Write(self.at, made + 1, self.run),)), now)


def newest_failure(state: DashboardState) -> int | None:
    """The newest run in which a cell of ``state`` that fails now started failing (None: no
    cell fails)."""
    runs = [
        cell.history.failing_since.run_id
        for cell in dashboard_history(state).cells
        if cell.history.failing_since is not None
    ]
    return max(runs, default=None)


def write_order(
    updates: Iterable[DashboardState],
    creates: Iterable[DashboardState],
    shown: Mapping[str, int | None],
) -> list[DashboardState]:
    """The dashboards whose issue is to be written (``updates``) or created (``creates``), in
    the order the budget serves them (see the module docstring). ``shown``: each existing
    issue's revision (None for none)."""

    def update(state: DashboardState) -> tuple[int, int, int, str]:
        failing = newest_failure(state) is not None
        return (0 if failing else 2, shown.get(state.key) or 0, 0, state.key)

    def create(state: DashboardState) -> tuple[int, int, int, str]:
        newest = newest_failure(state)
        return (1 if newest is not None else 3, 0, -(newest or 0), state.key)

    ranked = [(update(s), s) for s in updates] + [(create(s), s) for s in creates]
    return [state for _, state in sorted(ranked, key=lambda pair: pair[0])]


def named(keys: Sequence[str], limit: int = 10) -> str:
    """Some of ``keys`` for a message: the first ``limit``, and how many more."""
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")
