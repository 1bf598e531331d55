"""Tests for pr/verdicts.py: a pull request's cells against the default branch's history."""

from __future__ import annotations

import json

from ivy_matrix.model import DashboardId, Entry, Outcome, RunKey, Source
from ivy_matrix.pr.ancestry import NO_ANCESTRY, commit_ancestry, pr_base_sha, run_order_ancestry
from ivy_matrix.pr.document import compare_document
from ivy_matrix.pr.verdicts import (
    BaselineKind,
    Verdict,
    compare,
    new_failures,
    verdict_of,
)
from ivy_matrix.state.history import RunRef
from ivy_matrix.state.merge import Batch
from tests.state.test_history import DASH, entry, history, state_of, url

S, F, K, R = Outcome.SUCCESS, Outcome.FAILURE, Outcome.SKIPPED, Outcome.FLAKY
PR_RUN = 500


def pr_url(job: int) -> str:
    return f"https://github.com/o/r/actions/runs/{PR_RUN}/job/{job}"


def pr_entry(
    outcome: Outcome, *, job: int = 1, attempt: int = 1, base_sha: str = "", run_id: int = PR_RUN
) -> Entry:
    """A pull request's result (PR 7, head sha 'head'), from job ``job`` of run 500."""
    source = Source(
        run=RunKey(run_id, attempt, job),
        url=pr_url(job),
        sha="head",
        event="pull_request",
        ref="refs/pull/7/merge",
        pr=7,
        base_sha=base_sha,
    )
    return Entry(source=source, outcome=outcome)


def pr_batch(cells: dict[str, dict[str, Outcome]], dashboard: DashboardId = DASH) -> Batch:
    """A batch of pull-request results; each backend's job id is its position (torch 1, ...)."""
    jobs = {"torch": 1, "jax": 2, "numpy": 3}
    return Batch(
        dashboard=dashboard,
        cells={
            row: {b: pr_entry(o, job=jobs[b]) for b, o in by.items()} for row, by in cells.items()
        },
    )


BASELINE = state_of(
    {
        "t_new": {"torch": history(S, S), "jax": history(S)},
        "t_pre": {"torch": history(F, F, S), "jax": history(S)},
        "t_fixed": {"torch": history(F), "jax": history(S)},
        "t_flaky_default": {"torch": history(F, S, F), "jax": history(S)},
        "t_flaky_here": {"torch": history(S), "jax": history(S)},
        "t_pass": {"torch": history(S), "jax": history(S)},
        "t_skip": {"torch": history(F), "jax": history(S)},
        "t_only_skipped": {"torch": history(K, K), "jax": history(S)},
    }
)


def test_every_verdict_on_a_hand_made_history():
    """Each cell gets the verdict its history calls for; passing and skipped cells are left out."""
    batch = pr_batch(
        {
            "t_new": {"torch": F, "jax": S},
            "t_pre": {"torch": F, "jax": S},
            "t_fixed": {"torch": S},
            "t_flaky_default": {"torch": F},
            "t_flaky_here": {"torch": R},
            "t_pass": {"torch": S},
            "t_skip": {"torch": K},
            "t_only_skipped": {"torch": F},
            "t_brand_new": {"torch": F, "numpy": F},
        }
    )
    found = compare([batch], [BASELINE])
    verdicts = {(c.row, c.backend): c.verdict for c in found.cells}
    assert verdicts == {
        ("t_new", "torch"): Verdict.NEW,
        ("t_pre", "torch"): Verdict.PRE_EXISTING,
        ("t_fixed", "torch"): Verdict.FIXED,
        ("t_flaky_default", "torch"): Verdict.FLAKY,
        ("t_flaky_here", "torch"): Verdict.FLAKY,
        ("t_only_skipped", "torch"): Verdict.NO_BASELINE,
        ("t_brand_new", "torch"): Verdict.NEW_TEST,  # a test the baseline does not have
        ("t_brand_new", "numpy"): Verdict.NO_BASELINE,  # a backend the baseline does not have
    }
    pre = next(c for c in found.cells if c.row == "t_pre")
    assert pre.failing_since == RunRef(run_id=99, sha="sha99", url=url(99))
    assert pre.baseline_link == url(100)
    assert pre.link == pr_url(1)
    assert found.backends == ("torch", "jax", "numpy")
    assert found.baseline is BaselineKind.LATEST


def test_a_flaky_cell_failing_in_the_pull_request_is_flaky_not_new():
    """Priority: a cell flaky on the default branch is flaky even though its baseline passed."""
    state = state_of({"t": {"torch": history(S, F, S)}})
    found = compare([pr_batch({"t": {"torch": F}})], [state])
    assert [c.verdict for c in found.cells] == [Verdict.FLAKY]
    assert verdict_of(F, S, flaky=True) is Verdict.FLAKY
    assert verdict_of(F, S, flaky=False) is Verdict.NEW
    assert verdict_of(F, F, flaky=False) is Verdict.PRE_EXISTING
    assert verdict_of(F, None, flaky=False) is Verdict.NO_BASELINE
    assert verdict_of(F, None, flaky=False, new_test=True) is Verdict.NEW_TEST
    assert verdict_of(S, None, flaky=False, new_test=True) is None
    assert verdict_of(S, F, flaky=True) is Verdict.FIXED
    assert verdict_of(S, S, flaky=False) is None
    assert verdict_of(K, F, flaky=False) is None


def test_a_new_test_is_new_test_on_known_backends_and_no_baseline_on_new_ones():
    """A failing test no dashboard row has is new-test on a backend any dashboard knows (also
    in a dashboard the baseline lacks), no-baseline on a backend none knows; fail-on counts
    new-test among the new failures."""
    other = DashboardId(category="core", title="losses")
    found = compare(
        [
            pr_batch({"t_added": {"torch": F, "numpy": F, "jax": S}}),
            pr_batch({"t_other": {"jax": F}}, dashboard=other),
        ],
        [BASELINE],
    )
    verdicts = {(c.dashboard, c.row, c.backend): c.verdict for c in found.cells}
    assert verdicts == {
        ("core/gradients", "t_added", "torch"): Verdict.NEW_TEST,
        ("core/gradients", "t_added", "numpy"): Verdict.NO_BASELINE,
        ("core/losses", "t_other", "jax"): Verdict.NEW_TEST,
    }
    assert new_failures(found.counts()) == 2


def test_a_rerun_attempt_of_the_pull_request_that_passed_makes_its_cell_flaky():
    """Attempt 1 failed, attempt 2 passed: the pull request's own result is flaky."""
    state = state_of({"t": {"torch": history(S)}})
    batches = [
        Batch(dashboard=DASH, cells={"t": {"torch": pr_entry(F, attempt=1)}}),
        Batch(dashboard=DASH, cells={"t": {"torch": pr_entry(S, attempt=2)}}),
    ]
    assert [c.verdict for c in compare(batches, [state]).cells] == [Verdict.FLAKY]


MOVED_ON = state_of({"t": {"torch": history(F, S, S)}, "u": {"torch": history(F, F, F)}})


def test_the_baseline_comes_from_the_merge_base_when_the_history_holds_it():
    """Merge base sha99: the cell passed there, so its failure in the PR is new."""
    batch = pr_batch({"t": {"torch": F}})
    ancestry = run_order_ancestry([MOVED_ON], "sha99")
    found = compare([batch], [MOVED_ON], ancestry=ancestry)
    assert [(c.verdict, c.baseline) for c in found.cells] == [
        (Verdict.NEW, BaselineKind.MERGE_BASE)
    ]
    assert found.cells[0].baseline_link == url(99)
    assert found.baseline is BaselineKind.MERGE_BASE


def test_without_the_merge_base_the_newest_result_is_the_baseline():
    """Merge base unknown: the newest default-branch result (a failure) is the baseline."""
    batch = pr_batch({"t": {"torch": F}})
    for ancestry in (NO_ANCESTRY, run_order_ancestry([MOVED_ON], "not-recorded")):
        found = compare([batch], [MOVED_ON], ancestry=ancestry)
        assert [(c.verdict, c.baseline) for c in found.cells] == [
            (Verdict.PRE_EXISTING, BaselineKind.LATEST)
        ]
        assert found.baseline is BaselineKind.LATEST


def test_failing_since_of_a_merge_base_baseline_is_that_streak():
    """A pre-existing failure at the merge base fails since its streak's oldest run there."""
    ancestry = run_order_ancestry([MOVED_ON], "sha99")
    found = compare([pr_batch({"u": {"torch": F}})], [MOVED_ON], ancestry=ancestry)
    assert found.cells[0].verdict is Verdict.PRE_EXISTING
    assert found.cells[0].failing_since == RunRef(run_id=98, sha="sha98", url=url(98))


def test_a_commit_ancestry_is_asked_about_each_recorded_sha():
    """With a real ancestry test, the newest result whose commit is an ancestor is the baseline."""
    asked: list[str] = []

    def is_ancestor(sha: str) -> bool | None:
        asked.append(sha)
        return {"sha100": False, "sha99": True}.get(sha)

    found = compare(
        [pr_batch({"t": {"torch": F}})], [MOVED_ON], ancestry=commit_ancestry(is_ancestor)
    )
    assert asked[:2] == ["sha100", "sha99"]
    assert found.cells[0].verdict is Verdict.NEW
    assert found.baseline is BaselineKind.MERGE_BASE


def test_one_cell_from_latest_makes_the_whole_baseline_latest():
    """When a listed cell has no result at or before the merge base, the baseline says latest."""
    state = state_of({"t": {"torch": history(F, S)}, "v": {"torch": [entry(100, F)]}})
    ancestry = run_order_ancestry([state], "sha99")
    found = compare([pr_batch({"t": {"torch": F}, "v": {"torch": S}})], [state], ancestry=ancestry)
    assert [(c.row, c.baseline) for c in found.cells] == [
        ("t", BaselineKind.MERGE_BASE),
        ("v", BaselineKind.LATEST),
    ]
    assert found.baseline is BaselineKind.LATEST


def test_pull_request_results_in_the_baseline_state_are_never_a_baseline():
    """A pull request's earlier result stored by mistake is not the default branch's."""
    pr_result = entry(150, S, event="pull_request", pr=9)
    state = state_of({"t": {"torch": [pr_result, *history(F)]}})
    found = compare([pr_batch({"t": {"torch": F}})], [state])
    assert [c.verdict for c in found.cells] == [Verdict.PRE_EXISTING]
    assert found.cells[0].baseline_link == url(100)


def test_cells_are_ordered_by_dashboard_then_as_the_dashboard_shows_them():
    """Dashboards by key; rows and backends in the baseline's order, then new ones as reported."""
    other = DashboardId(title="a", category="aaa")
    batches = [
        pr_batch({"t_new_row": {"jax": F}, "t_new": {"jax": F, "torch": F}}),
        pr_batch({"z": {"torch": F}}, dashboard=other),
    ]
    found = compare(batches, [BASELINE])
    assert [(c.dashboard, c.row, c.backend) for c in found.cells] == [
        ("aaa/a", "z", "torch"),
        ("core/gradients", "t_new", "torch"),
        ("core/gradients", "t_new", "jax"),
        ("core/gradients", "t_new_row", "jax"),
    ]


def test_the_compare_document_has_the_documented_shape():
    """The JSON names the baseline, counts overall and per backend, and every listed cell.

    t_pre comes first: it first appeared in an older run than t_new (display order).
    """
    batch = pr_batch(
        {"t_new": {"torch": F, "jax": F}, "t_pre": {"torch": F}, "t_fixed": {"torch": S}}
    )
    document = compare_document(compare([batch], [BASELINE]))
    zero = {"new": 0, "new-test": 0, "pre-existing": 0, "fixed": 0, "flaky": 0, "no-baseline": 0}
    assert document == {
        "baseline": "latest",
        "counts": zero | {"new": 2, "pre-existing": 1, "fixed": 1},
        "backends": {
            "torch": zero | {"new": 1, "pre-existing": 1, "fixed": 1},
            "jax": zero | {"new": 1},
        },
        "cells": [
            {
                "dashboard": "core/gradients",
                "row": "t_pre",
                "backend": "torch",
                "verdict": "pre-existing",
                "link": pr_url(1),
                "baseline_link": url(100),
                "failing_since": {"run_id": 99, "sha": "sha99"},
                "message": "",
                "signature": "",
                "blame": {
                    "last_pass": {"run_id": 98, "sha": "sha98"},
                    "first_failure": {"run_id": 99, "sha": "sha99"},
                    "compare": "https://github.com/o/r/compare/sha98...sha99",
                    "environment": None,
                    "hint": None,
                    "notes": ["environment not recorded on either side"],
                },
                "kind": "backend-specific",
            },
            {
                "dashboard": "core/gradients",
                "row": "t_new",
                "backend": "torch",
                "verdict": "new",
                "link": pr_url(1),
                "baseline_link": url(100),
                "failing_since": None,
                "message": "",
                "signature": "",
                "blame": {
                    "last_pass": {"run_id": 100, "sha": "sha100"},
                    "first_failure": {"run_id": 500, "sha": "head"},
                    "compare": "https://github.com/o/r/compare/sha100...head",
                    "environment": None,
                    "hint": None,
                    "notes": ["environment not recorded on either side"],
                },
                "kind": "shared",
            },
            {
                "dashboard": "core/gradients",
                "row": "t_new",
                "backend": "jax",
                "verdict": "new",
                "link": pr_url(2),
                "baseline_link": url(100),
                "failing_since": None,
                "message": "",
                "signature": "",
                "blame": {
                    "last_pass": {"run_id": 100, "sha": "sha100"},
                    "first_failure": {"run_id": 500, "sha": "head"},
                    "compare": "https://github.com/o/r/compare/sha100...head",
                    "environment": None,
                    "hint": None,
                    "notes": ["environment not recorded on either side"],
                },
                "kind": "shared",
            },
            {
                "dashboard": "core/gradients",
                "row": "t_fixed",
                "backend": "torch",
                "verdict": "fixed",
                "link": pr_url(1),
                "baseline_link": url(100),
                "failing_since": None,
                "message": "",
                "signature": "",
                "blame": None,
                "kind": None,
            },
        ],
        # t_pre fails on torch alone, t_new on both backends that ran: a tie of kinds goes to
        # shared; no message here, so one group without a signature.
        "signatures": [
            {
                "signature": "",
                "message": "",
                "cells": 3,
                "backends": ["torch", "jax"],
                "tests": 2,
                "kind": "shared",
            }
        ],
    }
    assert json.loads(json.dumps(document)) == document


def test_the_base_sha_is_read_from_the_newest_pull_request_result():
    """The merge base the run recorded is taken from the pull request's newest result."""
    batch = Batch(dashboard=DASH, cells={"t": {"torch": pr_entry(F, base_sha="sha99")}})
    assert pr_base_sha([batch]) == "sha99"
    assert pr_base_sha([]) == ""
