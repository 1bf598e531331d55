"""Who folds the inbox, and when the one folding counts as gone (not merely slow).

No I/O of its own: the clock, the holder's message and GitHub's word on the holder's job are
callbacks. The lease is the ref ``refs/ivy-matrix/inbox/<branch>/lease``, created if absent
(atomic) by the leg that folds, pointing at its own inbox object, whose message names its job;
the fold's push deletes it (with the refs it folded), so one leg folds at a time and the
others wait for their results to be folded or for the lease to be free.

A waiting leg takes a held lease over only when its holder is *shown* to be gone, so a
folder that is slow (a runner starved of CPU, a long render) is never raced by others that
would read and write the same things again:

- GitHub says the holder's job has completed (``job_finished``: ``GET /repos/{owner}/{repo}/
  actions/jobs/{job_id}``, ``actions: read``). It is asked once the lease has stood unchanged
  for ``patience`` seconds, or at once when the holder is of another run (a run that ended,
  or one beside this one), and again every ``patience`` seconds while the job runs;
- where GitHub cannot say (no job id, no ``actions: read``, not GitHub), once the lease has
  stood unchanged for ``ttl`` seconds: far longer than a fold takes.

A leg that dies while folding releases the lease on the way out when it can
(``stores/branch.py``); only a leg killed outright leaves one to be taken over.
"""

from __future__ import annotations

from collections.abc import Callable

from ivy_matrix.stores.inbox import holder_of

PATIENCE = 30.0
TTL = 600.0

# Whether a job has finished: True, False (still running), None (GitHub cannot say).
JobFinished = Callable[[int], bool | None]


class LeaseWatch:
    """One waiting leg's view of the lease: since when it saw each holder, and whether that
    holder is gone (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        run_id: int,
        job_finished: JobFinished | None = None,
        patience: float = PATIENCE,
        ttl: float = TTL,
    ) -> None:
        self._clock = clock
        self._run_id = run_id
        self._job_finished = job_finished
        self.patience = patience
        self.ttl = ttl
        self._since: dict[str, float] = {}
        self._asked: dict[str, float] = {}

    def gone(self, lease: str, holder_run: int | None, message: Callable[[], str]) -> bool:
        """Whether the holder of ``lease`` (a commit sha) is gone. ``holder_run`` is its run
        when its inbox ref says so; ``message`` reads its object's message (the job id)."""
        now = self._clock()
        since = self._since.setdefault(lease, now)
        age = now - since
        other_run = holder_run is not None and holder_run != self._run_id
        if age >= self.ttl:
            return True
        asked = self._asked.get(lease)
        if asked is not None:
            due = asked + self.patience
        else:
            due = since + (0.0 if other_run else self.patience)
        if self._job_finished is None or now < due:
            return False
        self._asked[lease] = now
        job, run = holder_of(message())
        if run is not None and run != self._run_id:
            other_run = True
        if job is None:
            return False
        return self._job_finished(job) is True
