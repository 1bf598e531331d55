"""A log people can follow: phases with their time, waits that say what they wait for,
progress on long reads, and a heartbeat so that no stretch of 10 s passes without a line.

I/O: writes through :class:`~ivy_matrix.runner.log.Log` only, and sleeps with the ``sleep``
it is handed. Time comes from the log's ``clock``, so tests run every rule on a virtual clock
and never wait:

- a **phase** (read, resolve links, store, each target) prints one line when it ends, with
  what it did and how long it took;
- a **wait** longer than :data:`LONG_WAIT` seconds says what it waits for and for how long,
  then sleeps in steps of at most :data:`TICK` seconds with a line between steps;
- a **meter** shows how far a long read is: a bar on a terminal (drawn in place and erased, so
  it never reaches a log file or a pipe), elsewhere a line every :data:`TICK` seconds;
- the **heartbeat** (a daemon thread) prints "still working: <phase>" when nothing was printed
  for :data:`TICK` seconds: a request that hangs, or minutes of merging a million cases.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from ivy_matrix.runner.log import Log
from ivy_matrix.runner.reporter import Reporter

# A wait longer than this is announced with what it waits for.
LONG_WAIT = 2.0
# The longest silence the pacing allows itself: well inside the 10 s the log promises.
TICK = 5.0
_BAR_WIDTH = 30


class Phase:
    """One step of a command; ``detail`` is what its closing line says it did."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.detail = ""

    def done(self, detail: str) -> None:
        self.detail = detail


@contextlib.contextmanager
def phase(log: Log, name: str) -> Iterator[Phase]:
    """Run a phase: the heartbeat names it while it runs, and one line closes it.

    A phase that raises prints no closing line: the error says what happened.
    """
    outer = log.phase
    step = Phase(name)
    log.phase = name
    started = log.clock()
    try:
        yield step
    finally:
        log.phase = outer
    said = f"{step.detail} " if step.detail else ""
    log.info(f"{name}: {said}({log.clock() - started:.2f} s)")


def wait(
    log: Reporter,
    seconds: float,
    sleep: Callable[[float], None],
    *,
    what: str | None = None,
    announce: bool = True,
) -> None:
    """Sleep ``seconds``, saying so when it is long; never silent for more than TICK s.

    ``announce=False`` when the caller already said what it waits for (a retry line).
    """
    long = seconds > LONG_WAIT
    waited_for = what or log.phase or "the next step"
    if long and announce:
        log.info(f"waiting {seconds:.0f} s for {waited_for}")
    left = seconds
    while left > 0:
        step = min(left, TICK)
        sleep(step)
        left -= step
        if long and left > 0:
            log.info(f"still waiting for {waited_for}: {left:.0f} s left")


def paced(
    log: Reporter, sleep: Callable[[float], None], *, announce: bool = True
) -> Callable[[float], None]:
    """``sleep``, wrapped so that each call waits as :func:`wait` does."""

    def paced_sleep(seconds: float) -> None:
        wait(log, seconds, sleep, announce=announce)

    return paced_sleep


def _size(count: float) -> str:
    for unit in ("B", "KB", "MB"):
        if count < 1000:  # noqa: PLR2004  -- decimal units
            return f"{count:.0f} {unit}"
        count /= 1000
    return f"{count:.1f} GB"


class Meter:
    """How far a read of ``total`` bytes is: a terminal bar, or a line every TICK s."""

    def __init__(self, log: Log, total: int, what: str) -> None:
        self.log = log
        self.total = max(total, 1)
        self.what = what
        self.done = 0
        self._last = log.clock()
        self._drawn = -1

    def advance(self, count: int) -> None:
        self.done += count
        log = self.log
        if log.terminal:
            share = min(self.done * _BAR_WIDTH // self.total, _BAR_WIDTH)
            if share != self._drawn:
                self._drawn = share
                bar = "#" * share + "-" * (_BAR_WIDTH - share)
                log.bar(f"{self.what} [{bar}] {_size(self.done)} of {_size(self.total)}")
            return
        now = log.clock()
        if now - max(self._last, log.last_line) >= TICK:
            self._last = now
            percent = min(100 * self.done // self.total, 100)
            log.info(f"{self.what}: {_size(self.done)} of {_size(self.total)} ({percent}%) so far")


class Heartbeat:
    """Says "still working: <phase>" when the log has been silent for ``interval`` seconds."""

    def __init__(self, log: Log, *, interval: float = TICK) -> None:
        self.log = log
        self.interval = interval
        self.started = log.clock()

    def beat(self) -> None:
        """Print a line (on a terminal: redraw the bar) if the log has been silent too long."""
        log = self.log
        now = log.clock()
        if now - log.last_line < self.interval:
            return
        doing = f": {log.phase}" if log.phase else ""
        text = f"still working{doing} ({now - self.started:.0f} s so far)"
        if log.terminal:
            log.bar(text)
        else:
            log.info(text)

    @contextlib.contextmanager
    def running(self, *, poll: float = 1.0) -> Iterator[None]:
        """Beat from a daemon thread every ``poll`` seconds while the block runs."""
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(poll):
                self.beat()

        thread = threading.Thread(target=loop, name="ivy-matrix-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
