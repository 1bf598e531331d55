"""The issue-body store: dashboard state kept in hidden blocks of the dashboard issues.

I/O, through :class:`~ivy_matrix.issues.writer.IssueWriter`; for jobs without
``contents: write``. In: the client, the repository, an
:class:`~ivy_matrix.issues.writer.IssueOptions` (what to write and how), a
:class:`~ivy_matrix.issues.store_lock.Turns` (who this job is, how long it waits for its turn)
and, without the lock, :class:`Rounds`. GitHub has no conditional write for issues (PLATFORM.md
3.3), so a body edit is last-writer-wins and two jobs writing the same issue at once would drop
each other's cells. So jobs take turns: each update holds a lock made of comments on the index
issue (``issues/store_lock.py``) while it reads, merges and writes, and creates no issue outside
it. A job that waits too long for the lock refuses with a message that says to use the branch
target; it never writes without the lock, so nothing is lost and no issue is duplicated.

The index issue hosts the lock, so it is created first: by the one job whose create of the
``<label>-index`` label succeeds (labels are create-if-absent); the others wait for it.
Without the lock (``turns=None``) the store falls back to best effort: after writing it waits,
reads the bodies back and merges again for a bounded number of :class:`Rounds`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from ivy_matrix.github.types import Issue, IssueAPI
from ivy_matrix.issues.bodies import compose_index
from ivy_matrix.issues.finding import INDEX_KEY, Found
from ivy_matrix.issues.index_issue import publish_index
from ivy_matrix.issues.markers import INDEX_TITLE
from ivy_matrix.issues.report import IssueAction, IssueResult, IssuesReport, Written
from ivy_matrix.issues.state_block import extract_state
from ivy_matrix.issues.store_lock import StoreLock, Turns
from ivy_matrix.issues.writer import IssueOptions, IssueWriter
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.runner.log import Progress, Quiet
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.merge import DEFAULT_HISTORY, union_states
from ivy_matrix.stores import AfterSave, Change, Saved


@dataclass(frozen=True, slots=True, kw_only=True)
class Rounds:
    """Best effort without the lock: write, wait a moment (``delay``, seconds, jittered), read
    back and merge again, until ``confirmations`` rounds in a row find every cell there, or
    ``most`` rounds were made."""

    most: int = 6
    confirmations: int = 2
    delay: tuple[float, float] = (0.5, 3.0)


TAKE_TURNS = Turns()
BEST_EFFORT = Rounds()


class IssueStore:
    """Dashboard state kept in hidden blocks of the dashboard issues (no ``contents: write``).

    Read the module docstring before relying on it. ``change`` is called once per round and
    must depend only on the states it is given (merging is idempotent, so calling it again on
    a state that has its cells changes nothing). ``history`` is the results kept per cell
    when the states of two issues of one dashboard (after a race) are united.
    """

    def __init__(
        self,
        client: IssueAPI,
        repo: str,
        options: IssueOptions | None = None,
        *,
        turns: Turns | None = TAKE_TURNS,
        rounds: Rounds = BEST_EFFORT,
        history: int = DEFAULT_HISTORY,
        log: Progress | None = None,
        after_save: AfterSave | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.repo = repo
        self.options = options or IssueOptions()
        self.turns = turns
        self.rounds = rounds
        self.history = history
        self.log: Progress = log or Quiet()
        self.after_save = after_save
        self._sleep = sleep
        self._rng = rng or random.Random()  # noqa: S311  -- jitter, not cryptography

    def _writer(self) -> IssueWriter:
        # The store plans its dry run itself (it writes nothing at all), so its writer writes.
        options = replace(self.options, dry_run=False)
        return IssueWriter(self.client, self.repo, options, log=self.log, sleep=self._sleep)

    def _state_of(self, issues: Sequence[Issue]) -> DashboardState | None:
        """The union of the states in one dashboard's issues (several only after a race)."""
        merged = None
        for issue in issues:
            state = extract_state(issue.body, where=f"issue #{issue.number} of {self.repo}")
            if state is not None:
                merged = (
                    state if merged is None else union_states(merged, state, history=self.history)
                )
        return merged

    def _states(self, found: Found) -> dict[DashboardId, DashboardState]:
        """Every dashboard's state in a listing (the index holds none)."""
        states = {}
        for key, issues in found.by_key.items():
            state = self._state_of(issues) if key != INDEX_KEY else None
            if state is not None:
                states[state.id] = state
        return states

    def load(self) -> dict[DashboardId, DashboardState]:
        """Every dashboard's state, read from the labelled issues (one listing)."""
        return self._states(self._writer().finder.find())

    def update(self, change: Change) -> Saved:
        """Under the lock: load, ``change``, write the bodies (see the module docstring)."""
        writer = self._writer()
        found = writer.finder.find()
        if self.options.dry_run or self.turns is None:
            return self._update(writer, found, change, locked=False)
        if not self._pending(found, change):
            # These results are in the issues already: nothing to write, so no lock needed.
            return self._update(writer, found, change, locked=True)
        lock = StoreLock(
            self.client, self.repo, self.turns, log=self.log, sleep=self._sleep, rng=self._rng
        )
        lock.acquire(self._host(writer, found, self.turns))
        try:
            return self._update(writer, writer.finder.find(), change, locked=True)
        finally:
            lock.release()

    def _pending(self, found: Found, change: Change) -> bool:
        """Whether ``change`` would write anything to the issues as listed."""
        if not found.by_key.get(INDEX_KEY):
            return True
        current = self._states(found)
        merged = change(current)
        return any(
            state != current.get(d) or d.key not in found.by_key
            for d, state in merged.states.items()
        )

    def _host(self, writer: IssueWriter, found: Found, turns: Turns) -> int:
        """The index issue's number (it holds the lock), created by one job if missing."""
        token = f"{self.options.label}-index"[:50]
        waited = 0.0
        while not found.by_key.get(INDEX_KEY):
            if self.client.ensure_label(
                self.repo, token, description="ivy-matrix: its creator created the index issue"
            ):
                return writer.finder.create(INDEX_TITLE, compose_index([], {})).number
            if waited >= turns.wait:
                self.log.info("the index issue did not appear; creating it")
                return writer.finder.create(INDEX_TITLE, compose_index([], {})).number
            delay = self._rng.uniform(*turns.poll)
            self._sleep(delay)
            waited += delay
            found = writer.finder.find()
        return found.by_key[INDEX_KEY][0].number

    def _update(self, writer: IssueWriter, found: Found, change: Change, *, locked: bool) -> Saved:
        current = self._states(found)
        # By key: an issue without a state block (made by the branch mode) is still the one.
        issues = {key: listed for key, listed in found.by_key.items() if key != INDEX_KEY}
        merged = change(current)
        if self.options.dry_run:
            for key in merged.changed:
                self.log.info(f"dry run: would update the issue of dashboard {key}")
            output = self.after_save(merged) if self.after_save else ()
            return Saved(merged=merged, written=merged.changed, output=output)
        written: dict[str, Written] = {}
        merged, rounds, converged = self._rounds(
            writer,
            issues=issues,
            current=current,
            merged=merged,
            change=change,
            written=written,
            locked=locked,
        )
        for key, listed in issues.items():
            if key not in written and listed:
                result = IssueResult(
                    key=key,
                    action=IssueAction.UNCHANGED,
                    number=listed[0].number,
                    url=listed[0].html_url,
                )
                written[key] = Written(listed[0], result)
        index_result = None
        if self.options.index:
            states = sorted(current.values(), key=lambda s: s.key)
            index_result = publish_index(writer, states, written, found, pin=False)
        report = IssuesReport(
            dashboards=tuple(w.result for _, w in sorted(written.items())),
            index=index_result,
            warnings=tuple(writer.requests.warnings),
        )
        if not converged:
            self.log.warning(
                "other jobs kept rewriting the dashboard issues while this one wrote; some cells "
                "may be missing until the next run (use the branch target to avoid this)"
            )
        wrote = {IssueAction.CREATED, IssueAction.UPDATED}
        return Saved(
            merged=merged,
            written=tuple(r.key for r in report.dashboards if r.action in wrote),
            output=self.after_save(merged) if self.after_save else (),
            attempts=rounds,
            converged=converged,
            urls={r.key: r.url for r in report.dashboards if r.url},
            index_url=report.index_url,
        )

    def _rounds(
        self,
        writer: IssueWriter,
        *,
        issues: dict[str, list[Issue]],
        current: dict[DashboardId, DashboardState],
        merged: Merged,
        change: Change,
        written: dict[str, Written],
        locked: bool,
    ) -> tuple[Merged, int, bool]:
        """Write, wait, read back and write again until confirmed; (last merge, rounds, converged).

        Under the lock one write is enough: no other job writes meanwhile.
        """
        most, needed = max(self.rounds.most, 1), max(self.rounds.confirmations, 1)
        low, high = self.rounds.delay
        wanted = dict(merged.states)
        pending = {d for d, s in wanted.items() if s != current.get(d) or d.key not in issues}
        ours = set(pending)
        confirmations = rounds = 0
        while True:
            rounds += 1
            for dashboard in sorted(pending, key=lambda d: d.key):
                done = writer.publish(
                    wanted[dashboard],
                    issues.get(dashboard.key, []),
                    revision=None,
                    with_state=True,
                    verify=False,
                )
                written[dashboard.key] = done
                if done.issue is not None:
                    issues[dashboard.key] = [done.issue]
            self._adopt_winners(writer, written, issues)
            if locked:
                current.update(wanted)  # what the issues now hold (the index counts it)
                return merged, rounds, True
            self._sleep(self._rng.uniform(low, max(high, low)))
            pending, merged = self._verify(ours, issues, current, change)
            wanted = dict(merged.states)
            confirmations = 0 if pending else confirmations + 1
            if confirmations >= needed:
                return merged, rounds, True
            if rounds >= most:
                if pending:
                    writer.requests.warn(
                        f"the dashboard issue(s) {', '.join(sorted(d.key for d in pending))} "
                        f"kept losing this job's results to other jobs writing at the same time "
                        f"({rounds} rounds); the next run will fill them in. Use the branch "
                        f"target or a fan-in job when matrix legs publish concurrently"
                    )
                return merged, rounds, not pending

    def _adopt_winners(
        self, writer: IssueWriter, written: dict[str, Written], issues: dict[str, list[Issue]]
    ) -> None:
        """After creating: where another job's issue for the same dashboard came first, close
        ours and use theirs; the verify step that follows finds our cells missing there and
        writes them in the next round."""
        for key, (keep, mine) in writer.finder.lost_races(written).items():
            closed = writer.finder.close_duplicate(mine, keep)
            issues[key] = [keep]
            written[key] = Written(
                keep,
                IssueResult(
                    key=key,
                    action=IssueAction.UPDATED,
                    number=keep.number,
                    url=keep.html_url,
                    closed_duplicates=(mine.number,) if closed else (),
                ),
            )

    def _verify(
        self,
        ours: Collection[DashboardId],
        issues: dict[str, list[Issue]],
        current: dict[DashboardId, DashboardState],
        change: Change,
    ) -> tuple[set[DashboardId], Merged]:
        """Read back every dashboard this job changed; return those still lacking its cells."""
        for dashboard in ours:
            listed = issues.get(dashboard.key)
            if not listed:
                continue
            back = self.client.get_issue(self.repo, listed[0].number)
            issues[dashboard.key] = [back]
            state = extract_state(back.body, where=f"issue #{back.number} of {self.repo}")
            if state is not None:
                current[dashboard] = state
            else:
                current.pop(dashboard, None)
        merged = change(current)
        wanted = merged.states
        pending = {d for d in ours if d not in current or wanted.get(d, current[d]) != current[d]}
        return pending, merged
