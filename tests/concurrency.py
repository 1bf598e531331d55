"""Races for the tests: run tasks in threads that start together, bounded by counts, not time.

No wall-clock limit is set here: a task that hangs is caught by pytest-timeout's hang guard
(``timeout`` in pyproject.toml), and the threads are daemons so that a hung one cannot keep
the test process alive after the guard failed the test.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence


def at_once(tasks: Sequence[Callable[[], object]]) -> None:
    """Run each task in its own thread, all released at the same moment; return when every
    one is done, raising the first exception a task raised."""
    barrier = threading.Barrier(len(tasks))
    errors: list[BaseException] = []

    def run(task: Callable[[], object]) -> None:
        barrier.wait()
        try:
            task()
        except BaseException as error:  # noqa: BLE001  -- raised again in the calling thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(task,), daemon=True) for task in tasks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
