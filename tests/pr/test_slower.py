"""A pull request's tests that got slower: found against the default branch's durations, kept
through the verdict ref, and said in one short section of the comment."""

from __future__ import annotations

from dataclasses import replace

from ivy_matrix.model import CaseCounts, DashboardId, Entry, Outcome, RunKey, Source, Timing
from ivy_matrix.pr.body import SLOWER_SHOWN, render_comment, render_summary
from ivy_matrix.pr.comment_state import (
    RefState,
    comment_state,
    dump_ref_state,
    load_ref_state,
    merge_states,
)
from ivy_matrix.pr.verdicts import compare
from ivy_matrix.state.merge import Batch, apply_batch

DASH = DashboardId(title="gradients", category="core")
ROWS = [f"test_{i}" for i in range(8)]


def source(run: int, *, pr: bool = False, attempt: int = 1) -> Source:
    return Source(
        run=RunKey(run, attempt, run),
        url=f"https://github.com/o/r/actions/runs/{run}/job/{run}",
        sha=f"{run:040x}",
        **({"event": "pull_request", "pr": 7} if pr else {"event": "push"}),
    )


def batch(src: Source, seconds: dict[str, float], outcome: Outcome = Outcome.SUCCESS) -> Batch:
    entry = Entry(source=src, outcome=outcome, counts=CaseCounts(passed=1))
    return Batch(
        dashboard=DASH,
        cells={row: {"jax": entry} for row in seconds},
        times={row: {"jax": Timing(value, 1)} for row, value in seconds.items()},
    )


def baseline(runs: int = 3):
    """``runs`` default-branch runs: every test 0.8 s on jax."""
    state = None
    for run in range(1, runs + 1):
        state = apply_batch(state, batch(source(run), dict.fromkeys(ROWS, 0.8))).state
    assert state is not None
    return state


def test_a_test_the_pull_request_ran_twice_and_five_seconds_longer_is_slower():
    """Against a median of 0.8 s: 12 s is slower, 5.5 s (not 5 s longer) is not; a skipped
    result is never; two default-branch results are enough, one is not."""
    pr = batch(source(50, pr=True), {"test_0": 12.0, "test_1": 5.5})
    skipped = batch(source(51, pr=True), {"test_3": 30.0}, Outcome.SKIPPED)

    comparison = compare([pr, skipped], [baseline()])

    assert [(c.row, c.seconds, c.median, c.runs) for c in comparison.slower] == [
        ("test_0", 12.0, 0.8, 3)
    ]
    assert comparison.slower[0].link == "https://github.com/o/r/actions/runs/50/job/50"
    assert len(compare([pr], [baseline(2)]).slower) == 1
    assert compare([pr], [baseline(1)]).slower == ()


def test_the_slower_tests_survive_the_verdict_ref_and_a_newer_attempt_clears_them():
    """The record keeps the slower cells; a newer attempt that ran a cell and did not find it
    slower takes it out, as it does a cell that passed."""
    first = compare([batch(source(50, pr=True), {"test_0": 12.0})], [baseline()])
    state = comment_state(first, pr=7, head="h", run=RunKey(50, 1, 50))
    record = RefState(verdicts=state, version=1, shown=1, comment_id=None, lease=None)
    assert load_ref_state(dump_ref_state(record)).verdicts.slower == state.slower

    again = compare([batch(source(50, pr=True, attempt=2), {"test_0": 1.5})], [baseline()])
    newer = comment_state(again, pr=7, head="h", run=RunKey(50, 2, 50))
    assert merge_states(state, newer, again.ran).slower == ()
    assert merge_states(state, replace(newer, run=RunKey(50, 1, 50)), {}).slower == state.slower


def test_the_comment_says_which_tests_got_slower_in_one_short_section():
    """After the failures, "Slower" lists at most 5 tests (each linked to its job, how many
    times the default branch's median), and counts the rest; the job summary leaves it out,
    and a pull request with none has no such section."""
    slow = dict.fromkeys(ROWS, 20.0)
    comparison = compare([batch(source(50, pr=True), slow)], [baseline()])
    state = comment_state(comparison, pr=7, head="h", run=RunKey(50, 1, 50))

    body = render_comment(state)

    section = body.split("### Slower\n\n", 1)[1]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(lines) == SLOWER_SHOWN + 1
    assert lines[0] == (
        "- test_0 · jax: [20.0 s](https://github.com/o/r/actions/runs/50/job/50), "
        "25.0 times the default branch's median 0.8 s of 3 runs"
    )
    assert lines[-1] == f"- … and {len(ROWS) - SLOWER_SHOWN} more"
    assert "Slower" not in render_summary(state, comment_url=None)
    quiet = compare([batch(source(50, pr=True), dict.fromkeys(ROWS, 0.8))], [baseline()])
    assert "Slower" not in render_comment(
        comment_state(quiet, pr=7, head="h", run=RunKey(50, 1, 50))
    )
