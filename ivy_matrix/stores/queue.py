"""Updates that queue in the inbox: publish, wait, and fold one at a time under the lease.

I/O through a :class:`~ivy_matrix.stores.remote.BranchRemote`. :meth:`Queue.join` is what an
update does when it does not commit its results itself (a matrix leg, or a writer that lost
the branch to another):

1. one push: its results as an object under its own inbox ref (``stores/inbox.py``; never
   refused) and, in the same push, the lease (``stores/lease.py``), created if absent;
2. with the lease it folds: every pending object (its own and the others' that arrived),
   merged into the dashboards they touch, retired, rendered, committed, and in the same
   atomic push the folded refs deleted and the lease released;
3. without it, it waits: one listing of the inbox at a time (``git ls-remote``, or one REST
   request), until its ref is gone (its results are on the branch: done)
   or the lease is free (then the first pending ref's leg takes it and folds; the k-th
   after k listings more, in case the first is gone) or the holder is shown to be gone.
   It lists after about 2, 4, 8, then every 16 s.

So the branch moves once per fold, not once per leg, a leg's cost is about its own
requests plus a few listings, and no leg repeats work another is doing: one fold at a time,
and a slow folder is waited for, never raced.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

from ivy_matrix.errors import GitHubAPIError, StoreError
from ivy_matrix.github.types import RefUpdate
from ivy_matrix.runner.log import Progress
from ivy_matrix.state.fold import Merged, retire_merged
from ivy_matrix.stores import Saved
from ivy_matrix.stores.committer import Committer
from ivy_matrix.stores.inbox import Inbox, Pending, fold_results, own_reports
from ivy_matrix.stores.layout import Scope, completed_runs, record_legs, rejected_ref
from ivy_matrix.stores.lease import JobFinished, LeaseWatch
from ivy_matrix.stores.tree import Snapshot

# A waiting leg lists the inbox after about 2, 4, 8, then every 16 s: a fold takes seconds
# (a minute on a runner short of CPU), and every listing is a request (two over git), so the
# listings grow with the log of the wait and then slowly.
POLL_START = 2.0
POLL_CAP = 16.0
# A waiting leg stops waiting after this long (its results stay in the inbox, and the next
# fold takes them): longer than the lease's time to live, so a dead holder is replaced first.
MAX_WAIT = 900.0


class Queue:
    """The inbox path of one branch store (see the module docstring)."""

    def __init__(
        self,
        committer: Committer,
        inbox: Inbox,
        *,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
        rng: random.Random,
        delay: Callable[[int], float],
        max_attempts: int,
        log: Progress,
        job_finished: JobFinished | None = None,
        read_all_when_complete: bool = False,
    ) -> None:
        self.committer = committer
        self.remote = committer.remote
        self.inbox = inbox
        self._sleep = sleep
        self._clock = clock
        self._rng = rng
        self._delay = delay
        self.max_attempts = max_attempts
        self.log = log
        self.job_finished = job_finished
        self.read_all_when_complete = read_all_when_complete

    def join(
        self, scope: Scope, own: Merged, listed: dict[str, str], tip: str | None, *, fresh: bool
    ) -> Saved:
        """Publish ``scope``'s results and see them folded (steps 1 to 3 of the module
        docstring). ``listed`` and ``tip``: the inbox and the branch as read just before
        (``fresh``: still worth folding on; else the fold reads them again)."""
        commit, ref = self.inbox.write(scope)
        lease = self.inbox.lease
        updates = [RefUpdate(ref=ref, new=commit, old=None)]
        if self.inbox.pending(listed).lease is None:
            updates.append(RefUpdate(ref=lease, new=commit, old=None))
        landed = self.remote.update_refs(updates, atomic=False)
        if not landed[ref] and self._published(ref) is None:
            raise StoreError(
                f"cannot publish this update's results to {ref}: the push was refused; re-run "
                f"the job"
            )
        if landed.get(lease):
            first = (tip, {**listed, ref: commit, lease: commit}) if fresh else None
            return self._fold(scope, own, commit, ref, first)
        return self._wait(scope, own, commit, ref)

    def _published(self, ref: str) -> str | None:
        """What ``ref`` holds now (a refused create of a name that exists: the same results)."""
        return self.remote.list_refs(ref).get(ref)

    def _wait(self, scope: Scope, own: Merged, commit: str, ref: str) -> Saved:
        watch = LeaseWatch(clock=self._clock, run_id=scope.run_id, job_finished=self.job_finished)
        started = self._clock()
        polls = free = 0
        while True:
            window = min(POLL_CAP, POLL_START * 2.0**polls)
            self._sleep(self._rng.uniform(window * 0.75, window))
            polls += 1
            pending = self.inbox.pending(self.remote.list_refs(self.inbox.prefix))
            if ref not in pending.refs:
                self.log.info(
                    f"results of this update are on branch {self.committer.branch}, folded in "
                    f"by another job ({polls} listing(s) of the inbox)"
                )
                return Saved(merged=own, attempts=1, rendered=False)
            taken = self._try_lease(pending, ref, commit, free=free, watch=watch)
            if taken:
                return self._fold(scope, own, commit, ref, None)
            free = free + 1 if pending.lease is None else 0
            if self._clock() - started > MAX_WAIT:
                self.log.warning(
                    f"results of this update wait in {ref}: no job folded them into branch "
                    f"{self.committer.branch} within {MAX_WAIT:.0f} s; the next update folds "
                    f"them"
                )
                return Saved(merged=own, attempts=1, rendered=False)

    def _try_lease(
        self, pending: Pending, ref: str, commit: str, *, free: int, watch: LeaseWatch
    ) -> bool:
        """Take the lease when it is this leg's turn, or its holder is gone."""
        lease = pending.lease
        if lease is None:
            if list(pending.refs).index(ref) > free:
                return False  # the legs before this one take it first
            return self._take(commit, None)
        holders = [
            leg
            for r, leg in zip(pending.refs, pending.legs, strict=True)
            if pending.refs[r] == lease
        ]
        holder_run = holders[0][0] if holders else None
        if not watch.gone(lease, holder_run, lambda: self._message(lease)):
            return False
        self.log.warning(
            f"the job folding the inbox of branch {self.committer.branch} is gone (its job "
            f"finished, or no sign of it for {watch.ttl:.0f} s); this job folds instead"
        )
        return self._take(commit, lease)

    def _take(self, commit: str, old: str | None) -> bool:
        lease = self.inbox.lease
        update = RefUpdate(ref=lease, new=commit, old=old, force=old is not None)
        return self.remote.update_refs([update], atomic=True)[lease]

    def _message(self, commit: str) -> str:
        """The message of an inbox object (read from the remote when not fetched yet)."""
        message = self.remote.commit_message(commit)
        if not message:
            self.remote.read_refs(self.committer.branch, self.inbox.prefix)
            message = self.remote.commit_message(commit)
        return message

    def _fold(
        self,
        scope: Scope,
        own: Merged,
        lease: str,
        ref: str,
        first: tuple[str | None, dict[str, str]] | None,
    ) -> Saved:
        """Fold every pending object into the branch, holding the lease; release it however
        this ends (an error included, as far as the remote lets us)."""
        try:
            saved = self._fold_tries(scope, own, lease, first)
        except BaseException:
            self._release(lease)
            raise
        if saved is None:
            return self._wait(scope, own, lease, ref)
        return saved

    def _release(self, lease: str) -> None:
        try:
            self.remote.update_refs(
                [RefUpdate(ref=self.inbox.lease, new=None, old=lease)], atomic=True
            )
        except (GitHubAPIError, OSError) as error:
            self.log.warning(f"cannot release the fold lease {self.inbox.lease}: {error}")

    def _fold_tries(
        self,
        scope: Scope,
        own: Merged,
        lease: str,
        first: tuple[str | None, dict[str, str]] | None,
    ) -> Saved | None:
        """The compare-and-swap tries of one fold; None when the lease was taken over."""
        committer = self.committer
        for attempt in range(1, self.max_attempts + 1):
            tip, listed = first or self.remote.read_refs(committer.branch, self.inbox.prefix)
            first = None
            pending = self.inbox.pending(listed)
            if pending.lease != lease:
                return None  # another job took the lease over: wait for it as the others do
            saved = self._fold_once(scope, tip, pending, attempt)
            if saved is not None:
                committer.report(saved)
                self.log.info(
                    f"folded {len(pending.refs)} update(s)' results from {self.inbox.prefix}"
                )
                return replace(saved, merged=own_reports(saved.merged, own))
            self._sleep(self._delay(attempt))
        raise StoreError(
            f"cannot update branch {committer.branch!r}: other writers moved it "
            f"{self.max_attempts} times while this job folded the results waiting in "
            f"{self.inbox.prefix}; they stay there and the next update folds them, or re-run "
            f"this job"
        )

    def _fold_once(
        self, scope: Scope, tip: str | None, pending: Pending, attempt: int
    ) -> Saved | None:
        """One try: read, merge every pending object, commit, delete what was folded."""
        committer = self.committer
        results = self.inbox.read(pending.refs)
        for bad, why in results.bad.items():
            self.log.warning(
                f"inbox ref {bad}: {why}; its readable results are folded and the ref is moved "
                f"to {rejected_ref(committer.branch, bad)}"
            )
        for stray in pending.strays:
            self.log.warning(
                f"inbox ref {stray} is not named as ivy-matrix names its results "
                f"(<run>-<size>-<index>-<tree>, ASCII digits, a matrix of at most 256 legs); "
                f"it is moved to {rejected_ref(committer.branch, stray)}"
            )
        snapshot = committer.read(tip, {state.id for state in results.states})
        legs, complete = record_legs(snapshot.legs, pending.legs)
        if complete and self.read_all_when_complete:
            snapshot = committer.reader.more(snapshot, snapshot.summaries)

        brought = tuple(sorted({run for state in results.states for run in state.runs}))

        def fold(read: Snapshot) -> Merged:
            folded = fold_results(read.states, results.states, scope.history)
            changed = tuple(s.key for d, s in folded.items() if read.states.get(d) != s)
            return retire_merged(
                read.states,
                Merged(states=folded, changed=changed, runs=brought),
                retire_after_runs=scope.retire_after_runs,
                other_runs=read.other_runs(),
            )

        snapshot, merged = committer.merge(snapshot, fold, scope.retire_after_runs)
        # The trend's points: of the runs of results from outside a matrix, and of the matrix
        # runs this fold completes.
        outside = {run for run, size, _ in pending.legs if size == 0}
        trend_runs = sorted(outside | completed_runs(snapshot.legs, legs))
        also = [RefUpdate(ref=r, new=None, old=sha) for r, sha in pending.refs.items()]
        for moved in {**{r: pending.refs[r] for r in results.bad}, **pending.strays}.items():
            aside = f"{rejected_ref(committer.branch, moved[0])}-{moved[1][:12]}"
            also.append(RefUpdate(ref=aside, new=moved[1], old=None))
        also.extend(RefUpdate(ref=r, new=None, old=sha) for r, sha in pending.strays.items())
        also.append(RefUpdate(ref=self.inbox.lease, new=None, old=pending.lease))
        saved = committer.land(
            snapshot, merged, attempt=attempt, legs=legs, also=also, trend_runs=trend_runs
        )
        if saved is None:
            return None
        return replace(saved, rendered=complete if scope.matrix else True)
