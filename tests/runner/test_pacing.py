"""Tests for runner/pacing.py: a log people can follow, timed on a virtual clock (no waiting)."""

from __future__ import annotations

import io
import itertools
import random
import time
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.github.client import GitHubClient, make_client
from ivy_matrix.github.connection import Remote
from ivy_matrix.runner.log import Log
from ivy_matrix.runner.pacing import TICK, Heartbeat, Meter, phase, wait
from tests.commands.results import write_junit
from tests.github.fake_server import FakeGitHub

pytestmark = pytest.mark.timeout(60)


class Ticker:
    """A clock that moves only when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)


class Stamped(io.StringIO):
    """A stream that remembers the clock's time of every line written to it."""

    def __init__(self, clock: Ticker, *, tty: bool = False) -> None:
        super().__init__()
        self.clock = clock
        self.tty = tty
        self.stamps: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                self.stamps.append((self.clock.now, line))
        return super().write(text)

    def isatty(self) -> bool:
        return self.tty


def logged(*, github_actions: bool = False, tty: bool = False) -> tuple[Log, Stamped, Ticker]:
    clock = Ticker()
    stream = Stamped(clock, tty=tty)
    return Log(github_actions=github_actions, stream=stream, clock=clock.time), stream, clock


def longest_silence(stamps: list[tuple[float, str]], end: float) -> float:
    """The longest stretch of the clock with no line, up to ``end``."""
    times = [0.0, *(t for t, _ in stamps), end]
    return max(b - a for a, b in itertools.pairwise(times))


def test_a_phase_ends_with_one_line_saying_what_it_did_and_how_long():
    """A phase prints one closing line with its detail and its time, and names the heartbeat."""
    log, stream, clock = logged()
    with phase(log, "store") as step:
        inside = log.phase
        clock.sleep(1.25)
        step.done("3 cell(s) changed")
    assert (inside, log.phase) == ("store", None)
    assert stream.getvalue() == "store: 3 cell(s) changed (1.25 s)\n"


def test_a_phase_that_fails_prints_no_closing_line():
    """A phase that raises says nothing: the error says what happened."""
    log, stream, _ = logged()
    with pytest.raises(RuntimeError), phase(log, "read"):
        raise RuntimeError
    assert stream.getvalue() == ""


def test_a_long_wait_says_what_it_waits_for_and_is_never_silent_for_a_tick():
    """A 23 s wait is announced with its reason, then a line at least every TICK seconds."""
    log, stream, clock = logged()
    wait(log, 23, clock.sleep, what="the branch lock")
    lines = [line for _, line in stream.stamps]
    assert lines[0] == "waiting 23 s for the branch lock"
    assert lines[-1] == "still waiting for the branch lock: 3 s left"
    assert clock.now == 23
    assert longest_silence(stream.stamps, clock.now) <= TICK


def test_a_short_wait_is_silent():
    """Waits of 2 s or less (jitter between tries) print nothing."""
    log, stream, clock = logged()
    wait(log, 1.9, clock.sleep)
    assert (stream.getvalue(), clock.now) == ("", 1.9)


def read_in_chunks(log: Log, clock: Ticker, *, chunks: int, size: int, seconds: float) -> None:
    """A read of ``chunks`` chunks of ``size`` bytes, each taking ``seconds``, on a meter."""
    meter = Meter(log, chunks * size, "reading result files")
    for _ in range(chunks):
        clock.sleep(seconds)
        meter.advance(size)


def test_the_meter_prints_a_line_every_tick_off_a_terminal():
    """Reading 100 MB in 1 MB chunks of 0.5 s each gives a line every 5 s with the share."""
    log, stream, clock = logged(github_actions=True)
    read_in_chunks(log, clock, chunks=100, size=1_000_000, seconds=0.5)
    lines = [line for _, line in stream.stamps]
    assert len(lines) == 10
    assert lines[0] == "reading result files: 10 MB of 100 MB (10%) so far"
    assert longest_silence(stream.stamps, clock.now) <= TICK


def test_the_meter_draws_a_bar_on_a_terminal_and_erases_it_before_a_line():
    """On a terminal the bar is redrawn in place with CR and never leaves a line behind."""
    log, stream, clock = logged(tty=True)
    read_in_chunks(log, clock, chunks=10, size=100, seconds=1)
    log.info("read: done")
    text = stream.getvalue()
    assert "\r" + "reading result files [" + "#" * 30 + "] 1 KB of 1 KB" in text
    assert text.endswith("\rread: done\n")
    assert text.count("\n") == 1
    assert "so far" not in text


def test_no_bar_reaches_a_pipe_or_a_runner():
    """Off a terminal, and on a runner even with a terminal, no carriage return is written."""
    for github_actions, tty in ((False, False), (True, True)):
        log, stream, clock = logged(github_actions=github_actions, tty=tty)
        read_in_chunks(log, clock, chunks=10, size=100, seconds=1)
        assert "\r" not in stream.getvalue()


def test_the_heartbeat_speaks_after_a_tick_of_silence_only():
    """The heartbeat says 'still working: <phase>' once the log was silent for TICK seconds."""
    log, stream, clock = logged()
    heart = Heartbeat(log)
    log.phase = "store"
    clock.sleep(TICK - 0.1)
    heart.beat()
    assert stream.getvalue() == ""
    clock.sleep(0.1)
    heart.beat()
    heart.beat()
    assert stream.getvalue() == "still working: store (5 s so far)\n"


def test_the_heartbeat_thread_stops_with_its_block():
    """The heartbeat thread beats while the block runs and is gone when it ends."""
    log, stream, clock = logged()
    with Heartbeat(log).running(poll=0.001):
        clock.sleep(60)
        while not stream.getvalue():
            time.sleep(0.001)  # the thread beats within a few polls; pytest's guard bounds it
    assert stream.getvalue().startswith("still working (60 s so far)")


def ticking_remote(clock: Ticker) -> Remote:
    """Our production retry policy against the fake, sleeping on ``clock``."""

    def client(token: str, api_url: str) -> GitHubClient:
        return make_client(
            token=token, api_url=api_url, timeout=10, sleep=clock.sleep, rng=random.Random(7)
        )

    return Remote(client=client, sleep=clock.sleep)


@pytest.mark.parametrize(
    "fault",
    [
        {"method": "GET", "status": 502, "times": 6},
        {"method": "GET", "status": 403, "retry_after": 60, "times": 2, "message": "secondary"},
    ],
    ids=["repeated-502", "rate-limited-2-minutes"],
)
def test_an_update_against_a_failing_github_is_never_silent_for_10_seconds(
    fake: FakeGitHub, tmp_path: Path, monkeypatch, fault
):
    """Retries and waits of a whole update say what they wait for, with a line at least every
    10 s of the (virtual) clock, and the update still lands."""
    fake.add_repo("o/r")
    if fault.pop("message", None):
        fault["message"] = "You have exceeded a secondary rate limit"
    fake.inject(**fault)
    monkeypatch.chdir(tmp_path)
    write_junit(tmp_path / "r.xml", [("test_grad", "passed")])
    clock = Ticker()
    err = Stamped(clock)
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--targets", "branch"]
    argv += ["--run-id", "5", "--repository", "o/r", "--token", "t", "--api-url", fake.base_url]

    code = main(argv, {}, remote=ticking_remote(clock), stderr=err, clock=clock.time)

    assert code == 0, err.getvalue()
    lines = [line for _, line in err.stamps]
    retries = [line for line in lines if line.startswith("GitHub: ") and " retry " in line]
    assert len(retries) == fault["times"]
    assert clock.now > 30  # longer than three 10 s stretches: silence would show
    assert longest_silence(err.stamps, clock.now) <= 10
