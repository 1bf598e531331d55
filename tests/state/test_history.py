"""Tests for history.py: failing since, last pass and flakiness from a cell's stored results."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ivy_matrix.explain.blame import render_issue_section
from ivy_matrix.explain.history_text import render_index_sections, summary_cells
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.state.history import (
    CellHistory,
    FlakyReason,
    RunRef,
    dashboard_history,
    history_of,
    is_default_branch,
    run_results,
)
from ivy_matrix.state.merge import Batch, apply_batch

S, F, K, R = Outcome.SUCCESS, Outcome.FAILURE, Outcome.SKIPPED, Outcome.FLAKY


def url(run: int, attempt: int = 1) -> str:
    return f"https://github.com/o/r/actions/runs/{run}/job/{run * 10 + attempt}"


def entry(
    run: int,
    outcome: Outcome,
    *,
    attempt: int = 1,
    event: str = "",
    pr: int | None = None,
    sha: str | None = None,
) -> Entry:
    """An entry of run ``run`` recorded with commit ``sha<run>`` unless told otherwise."""
    source = Source(
        run=RunKey(run, attempt, run * 10 + attempt),
        url=url(run, attempt),
        sha=f"sha{run}" if sha is None else sha,
        event=event,
        pr=pr,
    )
    return Entry(source=source, outcome=outcome)


def history(*outcomes: Outcome) -> list[Entry]:
    """Entries of runs 100, 99, ... (newest first) with the given outcomes."""
    return [entry(100 - i, outcome) for i, outcome in enumerate(outcomes)]


def ref(run: int) -> RunRef:
    return RunRef(run_id=run, sha=f"sha{run}", url=url(run))


def test_failing_since_is_the_oldest_run_of_the_current_streak():
    """A cell failing in its three newest runs fails since the third; its last pass is older."""
    found = history_of(run_results(history(F, F, F, S, S)))
    assert found == CellHistory(failing_since=ref(98), runs=3, last_pass=ref(97))


def test_skipped_results_neither_break_nor_extend_a_streak():
    """Skipped runs inside a failure streak are passed over: the streak goes on behind them."""
    found = history_of(run_results(history(K, F, K, F, S)))
    assert found.failing_since == ref(97)
    assert found.runs == 2
    assert found.last_pass == ref(96)


def test_a_flaky_run_breaks_a_streak_and_counts_as_the_last_pass():
    """A run that passed after reruns ends the failure streak and is the last pass."""
    found = history_of(run_results(history(F, R, F, F)))
    assert found.failing_since == ref(100)
    assert found.runs == 1
    assert found.last_pass == ref(99)
    assert found.flaky is FlakyReason.RERUN


def test_a_streak_reaching_the_oldest_result_says_so():
    """A cell that failed in every kept run may be failing for longer: since_oldest is set."""
    found = history_of(run_results(history(F, F)))
    assert found.failing_since == ref(99)
    assert found.since_oldest
    assert found.last_pass is None


def test_a_passing_cell_has_no_streak_and_its_newest_pass():
    """A cell passing now fails since nothing; its last pass is its newest run."""
    found = history_of(run_results(history(K, S, F)))
    assert found == CellHistory(last_pass=ref(99))


def test_two_flips_in_the_window_make_a_cell_flaky_one_does_not():
    """Fail, pass, fail flips twice (flaky); pass, fail, fail is a breakage, not flaky."""
    assert history_of(run_results(history(F, S, F))).flaky is FlakyReason.FLIPS
    assert history_of(run_results(history(S, F, F))).flaky is None
    assert history_of(run_results(history(S, K, F, K, S))).flaky is FlakyReason.FLIPS


def test_flips_older_than_the_last_ten_results_do_not_count():
    """Only the newest ten results that are not skipped are looked at for flips."""
    assert history_of(run_results(history(*[F] * 9, S, F, S))).flaky is None
    assert history_of(run_results(history(*[F] * 8, S, F, S))).flaky is FlakyReason.FLIPS


def test_a_rerun_attempt_that_changed_the_outcome_makes_the_run_flaky():
    """Attempt 1 failed and attempt 2 of the same run passed: that run is flaky."""
    entries = [entry(100, S, attempt=2), entry(100, F, attempt=1), entry(99, S)]
    found = history_of(run_results(entries))
    assert found.flaky is FlakyReason.RERUN
    assert not found.failing
    assert found.last_pass == RunRef(run_id=100, sha="sha100", url=url(100, 2))


def test_pull_request_results_are_not_default_branch_history():
    """A pull request's failure in a cell's entries changes neither its streak nor flakiness."""
    entries = [entry(101, F, event="pull_request", pr=7), *history(S, S)]
    assert history_of(run_results(entries)) == CellHistory(last_pass=ref(100))
    assert not is_default_branch(entries[0].source)
    assert is_default_branch(Source(run=RunKey(1, 1, 1), url="u"))


def test_branches_select_which_refs_feed_the_dashboards():
    """With branches given, a push to another branch does not count; one with no ref does."""
    other = Source(run=RunKey(1, 1, 1), url="u", event="push", ref="refs/heads/feature")
    main = Source(run=RunKey(1, 1, 1), url="u", event="push", ref="refs/heads/main")
    assert is_default_branch(other)
    assert not is_default_branch(other, ["main"])
    assert is_default_branch(main, ["main"])
    assert is_default_branch(main, ["refs/heads/main"])
    assert is_default_branch(Source(run=RunKey(), url="u"), ["main"])


@given(st.lists(st.sampled_from([S, F, K, R]), max_size=14))
def test_failing_since_is_within_the_history_and_a_streak_is_only_failures(outcomes):
    """The streak's oldest run is a failure, and every counted run newer than it failed."""
    found = history_of(run_results(history(*outcomes)))
    if found.failing_since is None:
        assert found.runs == 0
        return
    position = 100 - found.failing_since.run_id
    newer = [o for o in outcomes[: position + 1] if o is not K]
    assert newer == [F] * found.runs


DASH = DashboardId(title="gradients", category="core")


def state_of(cells: dict[str, dict[str, list[Entry]]]) -> DashboardState:
    """A dashboard state holding the given histories."""
    state = None
    for run in sorted({e.run.run_id for c in cells.values() for es in c.values() for e in es}):
        batch = {
            row: {b: e for b, es in by.items() for e in es if e.run.run_id == run}
            for row, by in cells.items()
        }
        state = apply_batch(state, Batch(dashboard=DASH, cells=batch)).state
    assert state is not None
    return state


def sample_state() -> DashboardState:
    return state_of(
        {
            "test_new|fail": {"torch": history(F, S, S), "jax": history(S, S, S)},
            "test_long": {"torch": history(F, F, F, F, F), "jax": history(S, S, S)},
            "test_flaky": {"torch": history(S, F, S), "jax": history(R, S, S)},
            "test_fine": {"torch": history(S, S, S), "jax": history(S, S, S)},
        }
    )


def test_dashboard_history_lists_failing_and_flaky_cells_in_display_order():
    """Only failing or flaky cells are listed, rows then backends in the dashboard's order."""
    found = dashboard_history(sample_state())
    assert [(c.row, c.backend) for c in found.cells] == [
        ("test_long", "torch"),
        ("test_new|fail", "torch"),
        ("test_flaky", "torch"),
        ("test_flaky", "jax"),
    ]
    assert [c.row for c in found.newly_failing()] == ["test_new|fail"]
    assert [c.row for c in found.still_failing()] == ["test_long"]
    assert [(c.row, c.backend) for c in found.flaky()] == [
        ("test_flaky", "torch"),
        ("test_flaky", "jax"),
    ]


def test_summary_cells_give_failing_since_last_pass_and_flaky():
    """The summary JSON data of a dashboard names each cell's streak start and last pass."""
    cells = summary_cells(dashboard_history(sample_state()))
    assert cells[1] == {
        "row": "test_new|fail",
        "backend": "torch",
        "failing_since": {"run_id": 100, "sha": "sha100"},
        "failing_runs": 1,
        "last_pass": {"run_id": 99, "sha": "sha99"},
        "flaky": False,
    }
    assert cells[0]["last_pass"] is None
    assert cells[2]["flaky"] is True


def test_index_sections_link_dashboards_and_jobs_with_escaped_names():
    """Each section entry links its dashboard and its job; names are escaped like in tables."""
    text = render_index_sections(
        [dashboard_history(sample_state())], lambda key: f"https://x/{key}.md"
    )
    assert text.startswith("## Newly failing\n\n- [core/gradients](https://x/core/gradients.md)")
    assert "test_new\\|fail · torch: [failure](" + url(100) + ")" in text
    assert "failing since run 100 (sha100), 1 run, last passed in run 99 (sha99)" in text
    assert "## Still failing\n\n" in text
    assert "failing since run 96 (sha96), at least 5 runs" in text
    assert "## Flaky\n\n" in text
    assert "flaky: passed only after reruns" in text
    assert "flaky: flips between passing and failing" in text
    assert render_index_sections([dashboard_history(state_of({"t": {"a": history(S)}}))], str) == ""


def test_issue_section_lists_failing_then_flaky_tests_up_to_a_limit():
    """The section below an issue's table lists failing tests, then flaky ones, then a count:
    one line per test, its backends on it."""
    text = render_issue_section(dashboard_history(sample_state()), limit=1)
    listed = text[text.index("### Failing") :]
    assert listed.count("\n- ") == 3
    assert f"### Failing\n\n- test_long · [torch]({url(100)}): failing since run 96" in text
    assert "- ... and 1 more\n" in text
    assert f"### Flaky\n\n- test_flaky · [torch]({url(100)}): flips between" in text
    assert f"; [jax]({url(100)}): passed only after reruns\n" in text


def test_issue_section_says_each_fact_once_a_line_per_test():
    """Two tests failing on four backends since one run are two lines, each naming its four
    backends once with what they share; nothing about what is not known (no pass kept, no
    environment recorded) is said (issue 25: nine near-identical paragraphs before)."""
    backends = ("torch", "jax", "numpy", "paddle")
    state = state_of(
        {
            "test_a": dict.fromkeys(backends, history(F, F)),
            "test_b": {**dict.fromkeys(backends[:3], history(F, S)), "paddle": history(F, F)},
        }
    )
    text = render_issue_section(dashboard_history(state))
    failing = text[text.index("### Failing") :].splitlines()[2:-1]
    linked = ", ".join(f"[{b}]({url(100)})" for b in backends)
    assert failing == [
        f"- test_a · {linked}: failing since run 99 (sha99), at least 2 runs",
        "- test_b · "
        + ", ".join(f"[{b}]({url(100)})" for b in backends[:3])
        + ": failing since run 100 (sha100), 1 run, last passed in run 99 (sha99), "
        "[compare](https://github.com/o/r/compare/sha99...sha100); "
        f"[paddle]({url(100)}): failing since run 99 (sha99), at least 2 runs",
    ]
    assert "no pass in the kept history" not in text
    assert "environment not recorded" not in text


def test_every_failing_cell_is_newly_or_still_failing_the_longest_first():
    """Streaks of 1, 2, 3 and 5 runs: the one-run cell is newly failing, the others still
    failing, longest first; a streak of two or three runs is in a section too."""
    state = state_of(
        {
            "t_two": {"torch": history(F, F, S)},
            "t_one": {"torch": history(F, S)},
            "t_five": {"torch": history(F, F, F, F, F, S)},
            "t_three": {"torch": history(F, F, F, S)},
        }
    )
    found = dashboard_history(state)
    assert [c.row for c in found.newly_failing()] == ["t_one"]
    assert [(c.row, c.history.runs) for c in found.still_failing()] == [
        ("t_five", 5),
        ("t_three", 3),
        ("t_two", 2),
    ]
    text = render_index_sections([found], str)
    still = text[text.index("## Still failing") :]
    assert still.index("t_five") < still.index("t_three") < still.index("t_two")
