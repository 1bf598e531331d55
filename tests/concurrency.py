"""Races for the tests: tasks in threads that start together, and a clock that ignores speed.

No wall-clock limit is set here: a task that hangs is caught by pytest-timeout's hang guard
(``timeout`` in pyproject.toml), and the threads are daemons so that a hung one cannot keep
the test process alive after the guard failed the test.

:class:`VirtualClock` is for races whose outcome depends on how long tasks wait for each other
(a lock's waiting budget, a number of polls): the tasks sleep on it instead of the real clock,
and it moves only while every task sleeps, as trio's ``MockClock`` autojumps. A task's
requests and computing take no time on it, its sleeps exactly what they ask for, so what a
task sees of the race is the same on a fast machine and on a loaded one.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Sequence

TICK = 0.5  # seconds of virtual time within which waking tasks wake together


class VirtualClock:
    """Time for racing tasks that moves only while every task sleeps.

    When the last running task goes to sleep (or ends), the clock jumps to the earliest
    wake-up and wakes every task due within ``tick`` of it; those run at the same time, so
    their requests still race each other. Between jumps the clock stands still.
    """

    def __init__(self, *, tick: float = TICK) -> None:
        self.tick = tick
        self.now = 0.0
        self._changed = threading.Condition()
        self._running = 0
        self._due: list[tuple[float, int]] = []  # (wake-up time, ticket), earliest first
        self._woken: set[int] = set()
        self._tickets = itertools.count()

    def start(self, tasks: int) -> None:
        """Count ``tasks`` more running tasks (before they start)."""
        with self._changed:
            self._running += tasks

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of virtual time (a task's ``time.sleep``)."""
        with self._changed:
            if self._running <= 0:
                raise RuntimeError("VirtualClock.sleep from a task the clock does not count")
            ticket = next(self._tickets)
            heapq.heappush(self._due, (self.now + max(seconds, 0.0), ticket))
            self._running -= 1
            self._jump()
            self._changed.wait_for(lambda: ticket in self._woken)
            self._woken.remove(ticket)

    def finish(self) -> None:
        """A counted task ended: it no longer holds the clock still."""
        with self._changed:
            self._running -= 1
            self._jump()

    def _jump(self) -> None:
        if self._running or not self._due:
            return
        self.now = max(self.now, self._due[0][0])
        while self._due and self._due[0][0] <= self.now + self.tick:
            _, ticket = heapq.heappop(self._due)
            self._woken.add(ticket)
            self._running += 1
        self._changed.notify_all()


def at_once(tasks: Sequence[Callable[[], object]], *, clock: VirtualClock | None = None) -> None:
    """Run each task in its own thread, all released at the same moment; return when every
    one is done, raising the first exception a task raised. With ``clock``, the tasks are the
    ones it counts (they must sleep on it and nothing else may)."""
    barrier = threading.Barrier(len(tasks))
    errors: list[BaseException] = []
    if clock is not None:
        clock.start(len(tasks))

    def run(task: Callable[[], object]) -> None:
        try:
            barrier.wait()
            task()
        except BaseException as error:  # noqa: BLE001  -- raised again in the calling thread
            errors.append(error)
        finally:
            if clock is not None:
                clock.finish()

    threads = [threading.Thread(target=run, args=(task,), daemon=True) for task in tasks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
