"""Two-axis blame of a failing cell: the last pass, the first failure, the compare link, the
changed packages and the hint, and the edge cases that give no link or no blame."""

from __future__ import annotations

from ivy_matrix.explain.blame import Hint, blame_of, describe_blame
from ivy_matrix.model import Entry, Outcome, RunKey, Source
from ivy_matrix.results.environment import Change
from ivy_matrix.state.history import RunResult

REPO = "https://github.com/o/r"
ENV_A = (("jax", "0.4.30"), ("numpy", "2.1.0"))
ENV_B = (("jax", "0.4.31"), ("numpy", "2.1.0"))


def result(run: int, outcome: Outcome, sha: str = "", env=()) -> RunResult:
    """One run's result of a cell, with its commit and environment."""
    source = Source(
        run=RunKey(run, 1, run), url=f"{REPO}/actions/runs/{run}/job/{run}", sha=sha, env=env
    )
    return RunResult(entry=Entry(source=source, outcome=outcome), outcome=outcome)


def test_a_pass_then_a_failure_on_another_commit_and_environment_is_both():
    """R1 (pass, env A, sha X) and R2 (fail, env B, sha Y): link X...Y, jax only, both."""
    blame = blame_of(
        [result(2, Outcome.FAILURE, "Y", ENV_B), result(1, Outcome.SUCCESS, "X", ENV_A)]
    )
    assert blame is not None
    assert blame.compare_url == f"{REPO}/compare/X...Y"
    assert blame.changes == (Change(package="jax", before="0.4.30", after="0.4.31"),)
    assert blame.hint is Hint.BOTH
    assert blame.to_json()["environment"] == {"jax": ["0.4.30", "0.4.31"]}


def test_the_same_commit_in_another_environment_is_environment_only():
    """A failure on the commit that passed, in another environment, is an upstream break."""
    blame = blame_of(
        [result(2, Outcome.FAILURE, "X", ENV_B), result(1, Outcome.SUCCESS, "X", ENV_A)]
    )
    assert blame is not None
    assert blame.hint is Hint.ENVIRONMENT


def test_another_commit_in_the_same_environment_is_code_only_and_the_streak_start_is_blamed():
    """The first failure of the streak (not the newest) is compared with the last pass."""
    blame = blame_of(
        [
            result(4, Outcome.FAILURE, "Z", ENV_A),
            result(3, Outcome.SKIPPED, "W", ENV_A),
            result(2, Outcome.FAILURE, "Y", ENV_A),
            result(1, Outcome.SUCCESS, "X", ENV_A),
        ],
        repository=REPO,
    )
    assert blame is not None
    assert (blame.hint, blame.compare_url, blame.changes) == (
        Hint.CODE,
        f"{REPO}/compare/X...Y",
        (),
    )


def test_the_edge_cases_say_why_there_is_no_link_or_no_blame():
    """No pass kept, no commit, no environment and flaky cells each say so. A first run's
    failure has no pass at all: the note claims no older one ("(the last is older)" did)."""
    no_pass = blame_of([result(2, Outcome.FAILURE, "Y", ENV_B)])
    assert no_pass is not None
    assert (no_pass.compare_url, no_pass.notes) == (
        None,
        ("no pass in the kept history: no compare link",),
    )
    no_sha = blame_of([result(2, Outcome.FAILURE), result(1, Outcome.SUCCESS, "X")])
    assert no_sha is not None
    assert no_sha.compare_url is None
    assert no_sha.notes == (
        "no commit recorded (adopted or local results): no compare link",
        "environment not recorded on either side",
    )
    one_side = blame_of([result(2, Outcome.FAILURE, "Y", ENV_B), result(1, Outcome.SUCCESS, "X")])
    assert one_side is not None
    assert (one_side.hint, one_side.notes) == (None, ("environment not recorded on the last pass",))
    flaky = blame_of(
        [
            result(3, Outcome.FAILURE, "Z"),
            result(2, Outcome.SUCCESS, "Y"),
            result(1, Outcome.FAILURE, "X"),
        ]
    )
    assert flaky is not None
    assert (flaky.last_pass, flaky.compare_url, flaky.notes) == (
        None,
        None,
        ("flaky (flips between pass and fail): no blame",),
    )
    assert blame_of([result(1, Outcome.SUCCESS, "X")]) is None


def test_a_blame_in_words_names_the_hint_link_and_changes_and_nothing_unknown():
    """The words the issue and the comment show: each fact once (the runs are the cell's own
    line's), and nothing about what is not known (the notes stay in the JSON)."""
    blame = blame_of(
        [result(2, Outcome.FAILURE, "Y", ENV_B), result(1, Outcome.SUCCESS, "X", ENV_A)]
    )
    assert blame is not None
    assert describe_blame(blame) == (
        f"**both**, [compare]({REPO}/compare/X...Y), changed: jax 0.4.30 → 0.4.31"
    )
    unknown = blame_of([result(2, Outcome.FAILURE, "Y"), result(1, Outcome.FAILURE, "X")])
    assert unknown is not None
    assert unknown.notes
    assert describe_blame(unknown) == ""
    no_env = blame_of([result(2, Outcome.FAILURE, "Y"), result(1, Outcome.SUCCESS, "X")])
    assert no_env is not None
    assert no_env.notes == ("environment not recorded on either side",)
    assert describe_blame(no_env) == f"[compare]({REPO}/compare/X...Y)"
