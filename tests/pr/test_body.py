"""Tests for pr/body.py and pr/state.py: the sticky comment's body, budget and merging."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ivy_matrix.history import RunRef
from ivy_matrix.issues.markers import utf16_len
from ivy_matrix.merge import Batch
from ivy_matrix.model import Outcome, RunKey
from ivy_matrix.pr.body import (
    BUDGET,
    comment_marker,
    comment_pr,
    comment_update,
    parse_comment,
    render_comment,
)
from ivy_matrix.pr.state import (
    CommentState,
    comment_state,
    has_failures,
    merge_states,
    pack_state,
    unpack_state,
)
from ivy_matrix.pr.verdicts import BaselineKind, CellVerdict, Verdict, compare, run_order_ancestry
from tests.pr.test_verdicts import BASELINE, F, K, R, S, pr_batch, pr_entry
from tests.test_history import DASH, history, state_of

HEAD = "0123456789abcdef0123456789abcdef01234567"
RUN = RunKey(500, 1, 1)


def sample_state(**cells: dict[str, Outcome]) -> CommentState:
    """The comment state of a PR with one cell of every verdict, or of the given cells."""
    chosen = cells or {
        "t_new": {"torch": F, "jax": S},
        "t_pre": {"torch": F},
        "t_fixed": {"torch": S},
        "t_flaky_default": {"torch": F},
        "t_brand_new": {"numpy": F},
        "t_skip": {"torch": K},
    }
    comparison = compare([pr_batch(chosen)], [BASELINE])
    return comment_state(comparison, pr=7, head=HEAD, run=RUN)


def leg(backend: str, outcome: Outcome, *, run: RunKey = RUN, head: str = HEAD) -> CommentState:
    """One matrix leg's state: only its backend's cells, from job ``run``."""
    entry = pr_entry(outcome, job=run.job_id, attempt=run.run_attempt, run_id=run.run_id)
    comparison = compare([Batch(dashboard=DASH, cells={"t_new": {backend: entry}})], [BASELINE])
    return comment_state(comparison, pr=7, head=head, run=run)


def test_comment_body_with_every_verdict(golden):
    """The body: markers, per-backend counts, new failures, then the rest in details."""
    body = render_comment(sample_state())
    golden("pr_comment", body)
    assert body.startswith(comment_marker(7) + "\n<!-- ivy-matrix:head=" + HEAD + " -->\n")
    assert "- **torch**: 1 new, 1 pre-existing, 1 fixed, 1 flaky\n" in body


def test_all_green_comment_is_a_short_note(golden):
    """A pull request with no failing cell gets a short all-green note (fixed cells listed)."""
    state = sample_state(t_fixed={"torch": S}, t_pass={"torch": S, "jax": S})
    assert not has_failures(state)
    body = render_comment(state)
    golden("pr_comment_all_green", body)
    assert "## ivy-matrix: no failing tests\n" in body


def many_cells(count: int) -> CommentState:
    """A state of ``count`` cells with long names, a fifth of each verdict."""
    verdicts = list(Verdict)
    cells = tuple(
        CellVerdict(
            dashboard="core/gradients",
            row=f"tests/test_layers.py::TestConv2d::test_forward_with_padding_{i:04d}",
            backend=("torch", "jax", "numpy")[i % 3],
            verdict=verdicts[i % 5],
            link=f"https://github.com/o/r/actions/runs/500/job/{i % 3}",
            run=RUN,
            baseline=BaselineKind.LATEST,
            baseline_link=f"https://github.com/o/r/actions/runs/100/job/{i % 3}",
            failing_since=RunRef(run_id=90, sha="sha90", url="u")
            if verdicts[i % 5] is Verdict.PRE_EXISTING
            else None,
            position=(i, i % 3),
        )
        for i in range(count)
    )
    return CommentState(
        pr=7,
        head=HEAD,
        run=RUN,
        cells=cells,
        backends=(("torch", 0, RUN), ("jax", 1, RUN), ("numpy", 2, RUN)),
    )


def test_a_comment_with_hundreds_of_cells_is_cut_to_the_budget(golden):
    """Over the budget, fixed cells go first, then flaky and pre-existing; the comment says so."""
    state = many_cells(600)
    body = render_comment(state)
    golden("pr_comment_cut", body)
    assert utf16_len(body) <= BUDGET
    assert "- **torch**: 40 new, 40 pre-existing, 40 fixed, 40 flaky, 40 no-baseline\n" in body
    assert len(re.findall(r"^- core/gradients · .*?_\d{4} · ", body, re.MULTILINE)) < 600
    assert "<summary>Fixed" not in body
    assert "<details><summary>Pre-existing failures (120)</summary>" in body
    assert "_Not listed here (comment size limit): " in body
    assert parse_comment(body) == state


def test_cells_the_hidden_block_cannot_hold_are_still_counted():
    """With thousands of cells the block keeps the important ones and counts the rest."""
    state = many_cells(4000)
    body = render_comment(state)
    assert utf16_len(body) <= BUDGET
    stored = parse_comment(body)
    assert stored is not None
    assert len(stored.cells) < 4000
    assert stored.omitted
    assert stored.counts() == state.counts()
    assert stored.counts("jax") == state.counts("jax")
    assert {verdict for _, verdict, _ in stored.omitted} == {Verdict.FIXED}
    assert sum(c.verdict is Verdict.NEW for c in stored.cells) == 800


def test_the_hidden_block_round_trips_and_damage_reads_as_none():
    """A state packs and unpacks unchanged; a damaged or foreign block is not read as ours."""
    state = sample_state()
    body = render_comment(state)
    assert parse_comment(body) == state
    assert comment_pr(body) == 7
    data = pack_state(state).split("\n", 1)[1].rsplit("-->", 1)[0]
    assert unpack_state(data) == state
    data_line = body.split("<!-- ivy-matrix:verdicts\n", 1)[1].split("\n", 1)[0]
    assert parse_comment(body.replace(data_line, "A" * len(data_line))) is None
    assert parse_comment("<!-- ivy-matrix:pr=8 -->\n" + body.split("\n", 1)[1]) is None
    assert parse_comment("no marker at all") is None
    assert parse_comment(None) is None


def test_two_legs_combine_in_either_order_without_losing_cells():
    """The torch leg and the jax leg write in turn; the comment ends with both legs' cells."""
    torch, jax = leg("torch", F), leg("jax", F)
    first = comment_update(None, torch)
    assert first is not None
    both = comment_update(first, jax)
    assert both is not None
    other_order = comment_update(comment_update(None, jax), torch)
    assert both == other_order
    stored = parse_comment(both)
    assert stored is not None
    assert {(c.backend, c.verdict) for c in stored.cells} == {
        ("torch", Verdict.NEW),
        ("jax", Verdict.NEW),
    }


def test_nothing_is_written_when_nothing_changes_or_the_comment_is_newer():
    """The same cells again, or an older run's, or an older head's, write nothing."""
    newer = leg("torch", F, run=RunKey(600, 1, 1), head="bbbb")
    body = comment_update(None, newer)
    assert comment_update(body, newer) is None
    assert comment_update(body, leg("jax", F)) is None
    assert comment_update(body, leg("jax", F, run=RunKey(600, 1, 2), head="aaaa")) is None


def test_a_newer_run_replaces_the_comment_and_a_rerun_attempt_updates_its_leg():
    """A newer push's run starts afresh; attempt 2 of the same run replaces only its own cell."""
    body = comment_update(comment_update(None, leg("torch", F)), leg("jax", F))
    rerun = comment_update(body, leg("torch", S, run=RunKey(500, 2, 9)))
    stored = parse_comment(rerun)
    assert stored is not None
    assert [(c.backend, c.verdict) for c in stored.cells] == [("jax", Verdict.NEW)]
    assert stored.run == RunKey(500, 2, 9)
    pushed = comment_update(rerun, leg("numpy", F, run=RunKey(700, 1, 1), head="cccc"))
    stored = parse_comment(pushed)
    assert stored is not None
    assert [(c.backend, c.verdict) for c in stored.cells] == [("numpy", Verdict.NO_BASELINE)]
    assert stored.head == "cccc"


def test_the_comment_says_which_baseline_it_used():
    """With the merge base in the history the comment says so; without it, that it is missing."""
    moved_on = state_of({"t": {"torch": history(F, S)}})
    batch = pr_batch({"t": {"torch": F}})
    at_base = compare([batch], [moved_on], ancestry=run_order_ancestry([moved_on], "sha99"))
    latest = compare([batch], [moved_on])
    assert "at this PR's merge base or before" in render_comment(
        comment_state(at_base, pr=7, head=HEAD, run=RUN)
    )
    assert "the merge base is not in the history" in render_comment(
        comment_state(latest, pr=7, head=HEAD, run=RUN)
    )


def test_names_in_the_comment_are_escaped():
    """A test name cannot mention anyone, link an issue or end the list item early."""
    state = sample_state(**{"test_@someone #1\nx": {"torch": R}})
    body = render_comment(state)
    assert "@someone" not in body
    assert "test_@&#8203;someone #&#8203;1 x" in body


CELL_KEYS = st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["torch", "jax"]))


@st.composite
def states(draw: st.DrawFn) -> CommentState:
    """Small comment states of PR 7 about one of two heads and runs."""
    run_id = draw(st.sampled_from([500, 600]))
    cells = {}
    for row, backend in draw(st.lists(CELL_KEYS, max_size=4)):
        attempt = draw(st.integers(1, 2))
        cells[row, backend] = CellVerdict(
            dashboard="d",
            row=row,
            backend=backend,
            verdict=draw(st.sampled_from(list(Verdict))),
            link=None,
            run=RunKey(run_id, attempt, 1),
        )
    return CommentState(
        pr=7,
        head=draw(st.sampled_from(["h1", "h2"])),
        run=RunKey(run_id, draw(st.integers(1, 2)), 1),
        located=draw(st.booleans()),
        cells=tuple(sorted(cells.values(), key=lambda c: c.order)),
        backends=tuple(
            (backend, 0, max(c.run for c in cells.values() if c.backend == backend))
            for backend in sorted({c.backend for c in cells.values()})
        ),
    )


# No deadline: on a loaded machine one example can take longer than hypothesis's 200 ms.
@settings(deadline=None)
@given(states(), states(), states())
def test_merging_is_commutative_associative_and_idempotent(a, b, c):
    """Writers' states merge to the same state in any order, and a state merged again is kept."""
    assert merge_states(a, b) == merge_states(b, a)
    assert merge_states(merge_states(a, b), c) == merge_states(a, merge_states(b, c))
    assert merge_states(a, a) == a
    merged = merge_states(a, b)
    assert merge_states(merged, b) == merged


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 3000), st.integers(4_000, BUDGET), st.text(min_size=1, max_size=300))
def test_the_body_is_always_within_the_budget(count, budget, name):
    """However many cells and however long their names, the body fits the budget."""
    state = many_cells(count)
    state = CommentState(
        pr=7,
        head=HEAD,
        run=RUN,
        cells=tuple(
            CellVerdict(
                dashboard=name,
                row=cell.row + name,
                backend=cell.backend,
                verdict=cell.verdict,
                link=cell.link,
                run=cell.run,
                position=cell.position,
            )
            for cell in state.cells
        ),
        backends=state.backends,
    )
    body = render_comment(state, budget=budget)
    assert utf16_len(body) <= budget
    stored = parse_comment(body)
    assert stored is not None
    assert stored.counts() == state.counts()
