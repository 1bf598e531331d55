"""Tests for tests/concurrency.py: threads released together, and a clock that ignores speed."""

from __future__ import annotations

import threading
import time
from functools import partial

import pytest

from tests.concurrency import VirtualClock, at_once


def test_every_task_runs_and_the_first_error_is_raised():
    """at_once runs every task to its end and raises what a task raised, in the caller."""
    done: list[int] = []

    def task(n: int) -> None:
        done.append(n)
        if n == 3:
            raise ValueError("task 3")

    with pytest.raises(ValueError, match="task 3"):
        at_once([partial(task, n) for n in range(5)])

    assert sorted(done) == [0, 1, 2, 3, 4]


def test_tasks_wake_in_the_order_of_their_wake_ups_at_those_times():
    """Sleepers wake earliest first, each seeing the clock at the time it asked for."""
    clock = VirtualClock()
    woke: list[tuple[str, float]] = []
    lock = threading.Lock()

    def task(name: str, seconds: float) -> None:
        clock.sleep(seconds)
        with lock:
            woke.append((name, clock.now))

    at_once(
        [partial(task, "a", 30.0), partial(task, "b", 10.0), partial(task, "c", 20.0)], clock=clock
    )

    assert woke == [("b", 10.0), ("c", 20.0), ("a", 30.0)]


def test_real_work_between_sleeps_takes_no_virtual_time():
    """A task that computes or waits for a request between two sleeps sees only the sleeps."""
    clock = VirtualClock()
    seen: list[float] = []

    def task() -> None:
        clock.sleep(1.0)
        time.sleep(0.05)  # a request in flight: the clock stands still meanwhile
        clock.sleep(2.0)
        seen.append(clock.now)

    at_once([task], clock=clock)

    assert seen == [3.0]


def test_tasks_due_within_a_tick_wake_together():
    """Wake-ups less than a tick apart wake at once (their requests race); later ones wait."""
    clock = VirtualClock(tick=0.5)
    seen: dict[str, float] = {}

    def early(name: str, seconds: float) -> None:
        clock.sleep(seconds)
        seen[name] = clock.now  # "b" sees 1.0, not 1.3: it woke with "a"

    def late() -> None:
        clock.sleep(5.0)
        seen["late"] = clock.now

    at_once([partial(early, "a", 1.0), partial(early, "b", 1.3), late], clock=clock)

    assert seen == {"a": 1.0, "b": 1.0, "late": 5.0}


def test_a_sleep_the_clock_does_not_count_is_refused():
    """Sleeping on the clock outside its tasks is an error, not a silent miscount."""
    with pytest.raises(RuntimeError, match="does not count"):
        VirtualClock().sleep(1.0)
