"""Tests for pr/body.py and pr/state.py: the sticky comment's body and budget, how writers'
verdicts merge, and the record that keeps them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ivy_matrix.explain.reasons import TIMES
from ivy_matrix.issues.markers import utf16_len
from ivy_matrix.model import Entry, Outcome, RunKey
from ivy_matrix.pr.ancestry import run_order_ancestry
from ivy_matrix.pr.body import (
    BUDGET,
    EXAMPLES,
    KEPT,
    KINDS,
    TITLES,
    comment_marker,
    render_comment,
    render_summary,
)
from ivy_matrix.pr.comment_state import (
    FORMAT,
    CommentState,
    Lease,
    NewerFormatError,
    RefState,
    comment_state,
    dump_ref_state,
    has_failures,
    load_ref_state,
    merge_states,
)
from ivy_matrix.pr.verdicts import (
    BaselineKind,
    CellKey,
    CellVerdict,
    Verdict,
    compare,
)
from ivy_matrix.results.signature import Signer
from ivy_matrix.state.history import RunRef
from ivy_matrix.state.merge import Batch
from tests.pr.test_verdicts import BASELINE, F, K, R, S, pr_batch, pr_entry
from tests.state.test_history import DASH, history, state_of

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


Leg = tuple[CommentState, Mapping[CellKey, int]]


def leg(
    backend: str,
    outcome: Outcome,
    *,
    run: RunKey = RUN,
    head: str = HEAD,
    rows: tuple[str, ...] = ("t_new",),
) -> Leg:
    """One matrix leg's verdicts (``rows`` of its backend, from job ``run``) and what it ran."""
    entry = pr_entry(outcome, job=run.job_id, attempt=run.run_attempt, run_id=run.run_id)
    batch = Batch(dashboard=DASH, cells={row: {backend: entry} for row in rows})
    comparison = compare([batch], [BASELINE])
    return comment_state(comparison, pr=7, head=head, run=run), comparison.ran


def merged(*legs: Leg) -> CommentState:
    """The verdicts after each leg merged its own into the record, in this order."""
    state = None
    for verdicts, ran in legs:
        state = merge_states(state, verdicts, ran)
    assert state is not None
    return state


def listed(state: CommentState) -> list[tuple[str, str, Verdict]]:
    return [(c.row, c.backend, c.verdict) for c in state.cells]


def test_comment_body_with_every_verdict(golden):
    """The body: markers, per-backend counts, then a section per verdict, most important
    first: new failures open, the rest in details."""
    body = render_comment(sample_state())
    golden("pr_comment", body)
    assert body.startswith(comment_marker(7) + "\n<!-- ivy-matrix:head=" + HEAD + " -->\n")
    assert "- **torch**: 1 new, 1 fixed, 1 flaky, 1 pre-existing\n" in body
    starts = [body.index(f"{TITLES[kind]} (1)") for kind in KINDS if kind is not Verdict.NEW_TEST]
    assert starts == sorted(starts)
    assert "Not listed here" not in body


def test_all_green_comment_is_a_short_note(golden):
    """A pull request with no failing cell gets a short all-green note (fixed cells listed)."""
    state = sample_state(t_fixed={"torch": S}, t_pass={"torch": S, "jax": S})
    assert not has_failures(state)
    body = render_comment(state)
    golden("pr_comment_all_green", body)
    assert "## ivy-matrix: no failing tests\n" in body


def many_cells(count: int) -> CommentState:
    """A state of ``count`` cells with long names, a sixth of each verdict, on each backend."""
    verdicts = list(Verdict)
    cells = tuple(
        CellVerdict(
            dashboard="core/gradients",
            row=f"tests/test_layers.py::TestConv2d::test_forward_with_padding_{i:04d}",
            backend=("torch", "jax", "numpy")[i % 3],
            verdict=verdicts[i // 3 % len(verdicts)],
            link=f"https://github.com/o/r/actions/runs/500/job/{i % 3}",
            run=RUN,
            baseline=BaselineKind.LATEST,
            baseline_link=f"https://github.com/o/r/actions/runs/100/job/{i % 3}",
            failing_since=RunRef(run_id=90, sha="sha90", url="u")
            if verdicts[i // 3 % len(verdicts)] is Verdict.PRE_EXISTING
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


# ----------------------------------------------------------------------------- reading a body

_SECTION_START = re.compile(
    r"^(?:### |<details><summary>)(?P<title>[^\n]+?) \((?P<count>\d+)\)(?:</summary>)?$",
    re.MULTILINE,
)
# A group's headline: its failure line and how far it reaches (then what all its cells share).
_HEADLINE = re.compile(rf"- .*\*\*\d+ tests? {TIMES} \d+ backends? \(.*\)\*\*")
_JOB_LINK = re.compile(r"\]\(https?://[^)\s]+/actions/runs/")


def section_lines(body: str) -> dict[Verdict, list[str]]:
    """The test lines of each section of a body (headlines and "... and N more" left out)."""
    by_title = {title: kind for kind, title in TITLES.items()}
    starts = list(_SECTION_START.finditer(body))
    found: dict[Verdict, list[str]] = {}
    for index, start in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(body)
        text = body[start.end() : end].split("\n_Not listed here", maxsplit=1)[0]
        found[by_title[start.group("title")]] = [
            line
            for line in text.splitlines()
            if re.match(r" *- ", line)
            and not _HEADLINE.match(line)
            and not re.match(r" *- … and \d+ more tests?$", line)
        ]
    return found


def listed_cells(body: str) -> dict[Verdict, int]:
    """How many cells each section lists: one link to a pull request's job each."""
    return {
        kind: sum(len(_JOB_LINK.findall(line)) for line in lines)
        for kind, lines in section_lines(body).items()
    }


def not_listed(body: str) -> dict[str, int]:
    """What the body says it does not list, per verdict."""
    found = re.search(r"_Not listed here: (.*?) \(a few tests", body)
    if found is None:
        return {}
    return {v: int(n) for n, v in (p.split(" ", 1) for p in found.group(1).split(", "))}


def test_a_comment_with_hundreds_of_cells_is_cut_to_the_budget(golden):
    """Over the budget, pre-existing lines go first, then no-baseline, flaky, fixed; every
    section keeps its first lines; new failures and new tests stay; the comment says what
    was cut."""
    state = many_cells(720)
    body = render_comment(state)
    golden("pr_comment_cut", body)
    assert utf16_len(body) <= BUDGET
    said = "40 new, 40 new-test, 40 fixed, 40 flaky, 40 no-baseline, 40 pre-existing"
    assert f"- **torch**: {said}\n" in body
    lines = section_lines(body)
    assert {kind: len(found) for kind, found in lines.items()} == {
        Verdict.NEW: 120,
        Verdict.NEW_TEST: 120,
        Verdict.FIXED: 120,
        Verdict.FLAKY: 120,
        Verdict.NO_BASELINE: 34,
        Verdict.PRE_EXISTING: KEPT,
    }
    assert not_listed(body) == {"no-baseline": 120 - 34, "pre-existing": 120 - KEPT}


COUNT_LINE = re.compile(r"^- \*\*(?P<backend>[^*]+)\*\*: (?P<said>.*)$", re.MULTILINE)


def shown_counts(body: str) -> dict[str, dict[str, int]]:
    """The per-backend counts a comment body states."""
    counts = {}
    for found in COUNT_LINE.finditer(body):
        said = found.group("said")
        parts = [] if said == "all passing" else said.split(", ")
        counts[found.group("backend")] = {
            verdict: int(number) for number, verdict in (p.split(" ", 1) for p in parts)
        }
    return counts


def test_a_cut_comment_counts_every_cell():
    """With thousands of cells the comment lists what fits, and its counts still say every
    cell: per backend, and what it lists with what it says was not listed."""
    state = many_cells(5040)
    body = render_comment(state)
    assert utf16_len(body) <= BUDGET
    expected = {
        name: {v.value: n for v, n in state.counts(name).items() if n}
        for name, _, _ in state.backends
    }
    assert shown_counts(body) == expected
    listed, cut = listed_cells(body), not_listed(body)
    for kind, count in state.counts().items():
        assert listed.get(kind, 0) + cut.get(kind.value, 0) == count
    assert listed[Verdict.PRE_EXISTING] == KEPT


def failing_cell(row: int, backend: str, verdict: Verdict, line: str = "") -> CellVerdict:
    """A listed cell of row ``row`` (named after nothing in particular: names do not order)."""
    return CellVerdict(
        dashboard="core/gradients",
        row=f"test_{(row * 7919) % 10007:05d}",
        backend=backend,
        verdict=verdict,
        link=f"https://github.com/o/r/actions/runs/500/job/{len(backend)}",
        run=RUN,
        position=(row, ("torch", "jax", "numpy").index(backend)),
        message=line,
        signature=f"sig {line}" if line else "",
    )


def test_regressions_are_listed_before_thousands_of_failing_new_tests():
    """Issue 25's leg: 10 regressions and 4,000 failing tests the base never had, all with one
    error: the regressions are all listed, whatever they are called; the new tests show a few
    examples and their count; the comment says what it does not list."""
    line = "ModuleNotFoundError: No module named 'jax.experimental'"
    new_tests = [failing_cell(i, "jax", Verdict.NEW_TEST, line) for i in range(4000)]
    regressions = [
        failing_cell(4000 + i, "jax", Verdict.NEW, f"AssertionError: case {i}") for i in range(10)
    ]
    state = CommentState(
        pr=7, head=HEAD, run=RUN, cells=(*new_tests, *regressions), backends=(("jax", 0, RUN),)
    )
    body = render_comment(state)
    lines = section_lines(body)
    assert len(lines[Verdict.NEW]) == 10
    assert len(lines[Verdict.NEW_TEST]) == EXAMPLES
    assert f"- {line}: **4000 tests {TIMES} 1 backend (jax)**\n" in body
    assert f"  - … and {4000 - EXAMPLES} more tests\n" in body
    assert not_listed(body) == {"new-test": 4000 - EXAMPLES}
    assert body.index(TITLES[Verdict.NEW]) < body.index(TITLES[Verdict.NEW_TEST])


def test_a_failing_parametrized_row_shows_its_failed_cases_and_a_shared_failure_one_line():
    """A row whose cases only partly fail says how many (``2/8``); a test failing on three
    backends with one error is one line naming the three."""
    cells = tuple(
        replace(failing_cell(1, b, Verdict.NEW, "E: boom"), cases=(2, 8) if b == "jax" else None)
        for b in ("torch", "jax", "numpy")
    )
    state = CommentState(
        pr=7,
        head=HEAD,
        run=RUN,
        cells=cells,
        backends=tuple((b, i, RUN) for i, b in enumerate(("torch", "jax", "numpy"))),
    )
    body = render_comment(state)
    (line,) = section_lines(body)[Verdict.NEW]
    assert line == (
        f"  - {cells[0].row}: [torch](https://github.com/o/r/actions/runs/500/job/5), "
        "[jax](https://github.com/o/r/actions/runs/500/job/3) 2/8, "
        "[numpy](https://github.com/o/r/actions/runs/500/job/5)"
    )


@st.composite
def verdict_mixes(draw: st.DrawFn) -> CommentState:
    """A random mix of verdicts over random test names, one to four backends a test, a few
    failure lines (one of them shared by many cells, sometimes), in one or two dashboards."""
    backends = ("torch", "jax", "numpy", "paddle")
    names = draw(
        st.lists(
            st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=40),
            min_size=1,
            max_size=150,
            unique=True,
        )
    )
    lines = ["", "AssertionError: 1 != 2", "KeyError: 'w'", "TypeError: bad operand"]
    cells = []
    for index, name in enumerate(names):
        dashboard = draw(st.sampled_from(("core/gradients", "nn/layers")))
        for backend in draw(st.sets(st.sampled_from(backends), min_size=1)):
            verdict = draw(st.sampled_from(list(Verdict)))
            line = "" if verdict is Verdict.FIXED else draw(st.sampled_from(lines))
            cells.append(
                CellVerdict(
                    dashboard=dashboard,
                    row=name,
                    backend=backend,
                    verdict=verdict,
                    link=f"https://github.com/o/r/actions/runs/500/job/{backends.index(backend)}",
                    run=RUN,
                    position=(index, backends.index(backend)),
                    message=line,
                    signature=f"sig {line}" if line else "",
                    cases=draw(st.sampled_from((None, (2, 8)))),
                    failing_since=RunRef(run_id=draw(st.sampled_from((90, 91))), sha="s", url="u")
                    if verdict is Verdict.PRE_EXISTING
                    else None,
                )
            )
    return CommentState(
        pr=7,
        head=HEAD,
        run=RUN,
        cells=tuple(sorted(cells, key=lambda c: c.order)),
        backends=tuple((b, i, RUN) for i, b in enumerate(backends)),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(verdict_mixes(), st.integers(6_000, 40_000))
def test_a_cut_keeps_the_most_important_lines_and_counts_what_compare_counts(state, budget):
    """Whatever the mix and the names: the body fits; with what it says it does not list, the
    cells it lists are the counts (compare's); each section shows a prefix of its lines; a less
    important section shows more than its first KEPT lines only when every more important one
    is whole; every verdict with cells keeps a line; sections come most important first."""
    body = render_comment(state, budget=budget)
    whole = render_comment(state, budget=10**9)
    assert utf16_len(body) <= budget
    listed, cut, counts = listed_cells(body), not_listed(body), state.counts()
    for kind in Verdict:
        assert listed.get(kind, 0) + cut.get(kind.value, 0) == counts[kind]
    shown, full = section_lines(body), section_lines(whole)
    present = [kind for kind in KINDS if counts[kind]]
    assert list(shown) == present
    for kind in present:
        assert shown[kind], f"{kind} has cells and no line"
        assert shown[kind] == full[kind][: len(shown[kind])]
    for later, kind in enumerate(present):
        if len(shown[kind]) > KEPT:
            for before in present[:later]:
                assert shown[before] == full[before]


def test_the_record_round_trips_and_damage_is_an_error():
    """A record dumps and loads unchanged; damage is a ValueError-like error, a newer format
    its own error (so that it is not overwritten)."""
    state = RefState(
        verdicts=sample_state(),
        version=4,
        shown=3,
        comment_id=99,
        lease=Lease(holder="run 5.1 job 2-abc", at=1_700_000_000.5),
    )
    text = dump_ref_state(state)
    assert load_ref_state(text) == state
    assert load_ref_state(dump_ref_state(RefState(verdicts=many_cells(50)))).verdicts == many_cells(
        50
    )
    for damaged in ("", "[]", text[: len(text) // 2], text.replace('"version":4', '"version":"4"')):
        with pytest.raises((ValueError, TypeError, KeyError, IndexError)):
            load_ref_state(damaged)
    with pytest.raises(NewerFormatError):
        load_ref_state(text.replace(f'"format":{FORMAT}', f'"format":{FORMAT + 1}'))


def test_two_legs_of_one_backend_keep_both_cells():
    """Two torch shards of one run, each with one new failure: both failures stay, in either
    order (one leg no longer replaces another leg of its backend)."""
    first = leg("torch", F, rows=("t_new",), run=RunKey(500, 1, 1))
    second = leg("torch", F, rows=("t_pre",), run=RunKey(500, 1, 2))
    both = merged(first, second)
    assert sorted(listed(both)) == [
        ("t_new", "torch", Verdict.NEW),
        ("t_pre", "torch", Verdict.PRE_EXISTING),
    ]
    assert merged(second, first) == both
    assert both.counts("torch")[Verdict.NEW] == 1


def test_legs_combine_in_either_order_and_again_without_change():
    """The torch leg and the jax leg merge to the same verdicts in any order, and a leg that
    merges again changes nothing."""
    torch, jax = leg("torch", F), leg("jax", F)
    both = merged(torch, jax)
    assert merged(jax, torch) == both
    assert merged(torch, jax, torch, jax) == both
    assert {(c.backend, c.verdict) for c in both.cells} == {
        ("torch", Verdict.NEW),
        ("jax", Verdict.NEW),
    }


def test_an_older_run_or_head_changes_nothing_and_a_newer_one_starts_afresh():
    """Verdicts of an older run, or an older head, leave the newer ones; a newer push's run
    replaces them whole."""
    newer = merged(leg("torch", F, run=RunKey(600, 1, 1), head="bbbb"))
    assert merged(leg("torch", F, run=RunKey(600, 1, 1), head="bbbb"), leg("jax", F)) == newer
    assert merge_states(newer, *leg("jax", F, run=RunKey(600, 1, 2), head="aaaa")) == newer
    pushed = merge_states(newer, *leg("numpy", F, run=RunKey(700, 1, 1), head="cccc"))
    assert listed(pushed) == [("t_new", "numpy", Verdict.NO_BASELINE)]
    assert pushed.head == "cccc"


def test_a_rerun_attempt_replaces_the_cells_it_ran_and_keeps_the_others():
    """Attempt 2 of the torch leg replaces what that leg ran (a cell now passing goes), and the
    jax leg's cells and the cells of torch's other shard stay."""
    first = merged(
        leg("torch", F, rows=("t_new", "t_pass")),
        leg("torch", F, rows=("t_skip",), run=RunKey(500, 1, 5)),
        leg("jax", F, run=RunKey(500, 1, 2)),
    )
    assert len(first.cells) == 4
    rerun = merge_states(first, *leg("torch", S, rows=("t_new", "t_pass"), run=RunKey(500, 2, 9)))
    assert sorted(listed(rerun)) == [
        ("t_new", "jax", Verdict.NEW),
        ("t_skip", "torch", Verdict.PRE_EXISTING),
    ]
    assert rerun.run == RunKey(500, 2, 9)
    # A late write of attempt 1 does not bring a cleared cell's old verdict back over attempt 2's.
    fixed = merge_states(rerun, *leg("torch", F, rows=("t_fixed",), run=RunKey(500, 2, 9)))
    assert merge_states(fixed, *leg("torch", S, rows=("t_fixed",))) == fixed


def test_two_jobs_of_one_attempt_that_ran_one_cell_give_the_worse_outcomes_verdict():
    """When two jobs of one attempt both ran a cell, its verdict is the one ``compare`` gives on
    both jobs' results together: the failure wins over a pass."""
    failed = leg("torch", F, rows=("t_fixed",), run=RunKey(500, 1, 1))
    passed = leg("torch", S, rows=("t_fixed",), run=RunKey(500, 1, 2))
    expected = compare(
        [
            Batch(dashboard=DASH, cells={"t_fixed": {"torch": pr_entry(F, job=1)}}),
            Batch(dashboard=DASH, cells={"t_fixed": {"torch": pr_entry(S, job=2)}}),
        ],
        [BASELINE],
    )
    assert [c.verdict for c in expected.cells] == [Verdict.PRE_EXISTING]
    assert listed(merged(failed, passed)) == [("t_fixed", "torch", Verdict.PRE_EXISTING)]
    assert listed(merged(passed, failed)) == [("t_fixed", "torch", Verdict.PRE_EXISTING)]


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
def same_attempt_legs(draw: st.DrawFn) -> list[Leg]:
    """Legs of one run attempt (PR 7, one head), each with cells it ran and some it lists."""
    legs: list[Leg] = []
    for job in range(draw(st.integers(1, 4))):
        run = RunKey(500, 1, job + 1)
        ran = dict.fromkeys((("d", row, b) for row, b in draw(st.lists(CELL_KEYS, max_size=4))), 1)
        cells = tuple(
            CellVerdict(
                dashboard="d",
                row=row,
                backend=backend,
                verdict=draw(st.sampled_from(list(Verdict))),
                link=None,
                run=run,
            )
            for _, row, backend in ran
            if draw(st.booleans())
        )
        backends = tuple((b, 0, run) for b in sorted({b for _, _, b in ran}))
        legs.append((CommentState(pr=7, head="h", run=run, cells=cells, backends=backends), ran))
    return legs


@given(same_attempt_legs(), st.randoms())
def test_legs_of_one_attempt_merge_to_the_same_verdicts_in_any_order(legs, rng):
    """However the legs of one attempt come, one after another, the verdicts are the same, and
    merging a leg again changes nothing."""
    shuffled = list(legs)
    rng.shuffle(shuffled)
    assert merged(*shuffled) == merged(*legs)
    assert merged(*legs, *legs) == merged(*legs)


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


def failing_entry(backend: str, line: str, job: int) -> Entry:
    """A pull request's failing result with its first failure line and signature."""
    entry = pr_entry(F, job=job)
    return replace(entry, message=line, signature=Signer().signature(line, backend))


def test_new_failures_are_grouped_by_their_failure_line(golden):
    """One error on torch and jax is one headline with its line and how far it reaches, then
    its cells; another error has its own; a cell without a line is listed on its own, last."""
    jobs = {"torch": 1, "jax": 2, "numpy": 3}
    cells = {
        "t_new": {
            b: failing_entry(b, f"AssertionError: {b}.float32 0 != 1", jobs[b])
            for b in ("torch", "jax")
        },
        "t_fixed": {"torch": failing_entry("torch", "AssertionError: torch.float32 5 != 6", 1)},
        "t_pre": {"jax": failing_entry("jax", "KeyError: 'weight'", 2)},
    }
    baseline = state_of(
        {
            "t_new": {"torch": history(S), "jax": history(S)},
            "t_fixed": {"torch": history(S)},
            "t_pre": {"jax": history(S), "numpy": history(S)},
        }
    )
    batches = [Batch(dashboard=DASH, cells=cells)]
    batches.append(Batch(dashboard=DASH, cells={"t_pre": {"numpy": pr_entry(F, job=3)}}))
    comparison = compare(batches, [baseline])
    body = render_comment(comment_state(comparison, pr=7, head=HEAD, run=RUN))
    new = body[body.index("### New failures") :]
    first = f"- AssertionError: torch.float32 0 != 1: **2 tests {TIMES} 2 backends (torch, jax)**\n"
    assert new.index(first) < new.index(
        f"- KeyError: 'weight': **1 test {TIMES} 1 backend (jax)**\n"
    )
    assert "  - t_new: [torch](https://github.com/o/r/actions/runs/500/job/1), [jax](" in new
    assert "\n- t_pre: [numpy](https://github.com/o/r/actions/runs/500/job/3)\n" in new
    golden("pr_comment_reasons", body)


def test_a_hostile_failure_line_shows_as_text_in_the_comment():
    """Markup, mentions and bidi characters in a failure line cannot act in the comment."""
    line = '"><img src=x onerror=alert(1)> <script>x</script> @owner \u202egnp.exe'
    cells = {"t_new": {"torch": failing_entry("torch", line, 1)}}
    comparison = compare([Batch(dashboard=DASH, cells=cells)], [BASELINE])
    body = render_comment(comment_state(comparison, pr=7, head=HEAD, run=RUN))
    assert f"**1 test {TIMES} 1 backend (torch)**" in body
    for forbidden in ("<img", "<script", "@owner", "\u202e"):
        assert forbidden not in body


def test_the_record_keeps_failure_lines_and_reads_older_records_without_them():
    """Failure lines survive the record; a record written before them reads with none."""
    cells = {"t_new": {"torch": failing_entry("torch", "E: 1 != 2", 1)}}
    state = comment_state(
        compare([Batch(dashboard=DASH, cells=cells)], [BASELINE]), pr=7, head=HEAD, run=RUN
    )
    record = RefState(verdicts=state)
    loaded = load_ref_state(dump_ref_state(record))
    assert loaded.verdicts.cells[0].message == "E: 1 != 2"
    assert loaded == record
    older = json.loads(dump_ref_state(record))
    del older["messages"]
    for _key, records in older["dashboards"]:
        for cell in records:
            del cell[9:]
    assert load_ref_state(json.dumps(older)).verdicts.cells[0].message == ""


def test_the_job_summary_shows_the_headline_counts_new_failures_and_the_comments_link(golden):
    """A pull request's job summary: the comment's headline and counts, the new failures and
    failing new tests, the link to the comment; not the other sections. Without the comment's
    address it says where the comment is, or nothing when this job keeps none."""
    state = sample_state(t_new={"torch": F}, t_brand={"torch": F}, t_fixed={"torch": S})
    url = "https://github.com/o/r/pull/7#issuecomment-12"
    body = render_summary(state, comment_url=url)
    golden("pr_job_summary", body)
    assert body.startswith("## ivy-matrix: 2 new failures\n")
    assert f"Every verdict is in [the pull request's comment]({url}).\n" in body
    assert "<!--" not in body
    assert "Fixed" not in body
    assert set(section_lines(body)) == {Verdict.NEW, Verdict.NEW_TEST}
    unknown = render_summary(state, comment_url=None)
    assert "Every verdict is in the comment on pull request #7.\n" in unknown
    assert "Every verdict" not in render_summary(state, comment_url=None, commenting=False)


def test_what_a_groups_pre_existing_failures_share_is_said_once_in_its_headline():
    """Pre-existing failures of one failure line failing since one run say so once, in the
    headline; a test failing since another run says its own."""
    since = RunRef(run_id=90, sha="abcdef0123", url="u")
    cells = tuple(
        replace(
            failing_cell(row, "torch", Verdict.PRE_EXISTING, "E: boom"),
            failing_since=replace(since, run_id=88) if row == 2 else since,
        )
        for row in range(3)
    )
    state = CommentState(pr=7, head=HEAD, run=RUN, cells=cells, backends=(("torch", 0, RUN),))
    body = render_comment(state)
    assert body.count("failing since run 90 (abcdef0)") == 2  # each test's line says its own
    assert body.count("failing since run 88 (abcdef0)") == 1
    same = replace(state, cells=tuple(replace(c, failing_since=since) for c in cells))
    body = render_comment(same)
    assert (
        f"- E: boom: **3 tests {TIMES} 1 backend (torch)** · failing since run 90 (abcdef0)\n"
        in body
    )
    assert body.count("failing since") == 1
    assert len(section_lines(body)[Verdict.PRE_EXISTING]) == 3
