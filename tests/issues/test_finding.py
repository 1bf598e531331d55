"""Tests for issues/finding.py: our issues found by marker, created once, duplicates closed.

What goes over the wire runs through real PyGithub on FakeGitHub; the race runs on the
in-memory model (tests/github/memory.py).
"""

from __future__ import annotations

import threading
from functools import partial

from ivy_matrix.issues.markers import is_index
from ivy_matrix.issues.report import IssueAction, IssuesReport
from tests.concurrency import at_once
from tests.github.fake_server import FakeGitHub
from tests.issues.helpers import (
    GRADIENTS,
    LABEL,
    RANDOM,
    REPO,
    comment_bodies,
    make_state,
    ours,
    publish,
)


def test_pull_requests_with_the_label_and_marker_are_never_edited(fake):
    """A pull request carrying our marker is left alone; the dashboard gets a real issue."""
    body = "<!-- ivy-matrix:dashboard=core/gradients -->\nnot an issue"
    pr = fake.add_issue(REPO, title="PR", body=body, labels=[LABEL], pull_request=True)
    publish(fake, [make_state(GRADIENTS, 2)])
    assert fake.issues[pr["number"]]["body"] == body
    assert [i["number"] for i in ours(fake, "core/gradients") if not i["pull_request"]]


def test_two_concurrent_creators_end_with_one_open_issue_per_dashboard(memory):
    """Two jobs that both find no issue both create one; one per dashboard stays open."""
    # Hold each job's first create until both jobs have listed, so both see no issue.
    both_listed = threading.Barrier(2)
    memory.inject("create_issue", status=None, before=both_listed.wait, times=2)
    reports: list[IssuesReport] = []

    def job(backend: str, run: int) -> None:
        states = [
            make_state(GRADIENTS, 4, (backend,), run=run),
            make_state(RANDOM, 2, (backend,), run=run),
        ]
        reports.append(publish(memory, states, index=False))

    at_once([partial(job, "torch", 1), partial(job, "jax", 2)])
    assert len(reports) == 2
    for key in ("core/gradients", "core/random"):
        assert len(ours(memory, key, state=None)) == 2  # both jobs really created one
        [kept] = ours(memory, key)
        [closed] = ours(memory, key, state="closed")
        assert kept["number"] < closed["number"]
        assert LABEL not in closed["labels"]
        assert f"Duplicate of #{kept['number']}" in comment_bodies(memory, closed["number"])[0]
        assert {r.result(key).number for r in reports} == {kept["number"]}


def test_two_runs_creating_at_the_same_moment_over_http_keep_one_issue_each(fake: FakeGitHub):
    """Two runs publish at the same moment, each finding no issue (the fake holds both first
    creates until both runs have listed): over real PyGithub, each dashboard and the index
    end with one open issue; the later copy is closed as a duplicate of the earlier one,
    loses the label, and both runs report the one kept."""
    both_listed = threading.Event()
    held = fake.inject(method="POST", path=r"/issues$", status=None, wait=both_listed, times=2)
    reports: list[IssuesReport] = []

    def run(backend: str, run: int) -> None:
        states = [
            make_state(GRADIENTS, 4, (backend,), run=run),
            make_state(RANDOM, 2, (backend,), run=run),
        ]
        reports.append(publish(fake, states))

    def release() -> None:
        for _ in range(3000):  # up to 30 s for both runs' first create
            if held.hits == 2:
                break
            threading.Event().wait(0.01)
        both_listed.set()

    at_once([partial(run, "torch", 1), partial(run, "jax", 2), release])
    assert held.hits == 2
    assert len(reports) == 2
    for key in ("core/gradients", "core/random"):
        assert len(ours(fake, key, state=None)) == 2  # both runs really created one
        [kept] = ours(fake, key)
        [closed] = ours(fake, key, state="closed")
        assert kept["number"] < closed["number"]
        assert closed["state_reason"] == "not_planned"
        assert LABEL not in closed["labels"]
        assert f"Duplicate of #{kept['number']}" in comment_bodies(fake, closed["number"])[0]
        assert {r.result(key).number for r in reports} == {kept["number"]}
    with fake.lock:
        open_index = [
            i for i in fake.issues.values() if is_index(i["body"]) and i["state"] == "open"
        ]
    assert len(open_index) == 1


def test_a_create_that_landed_before_a_502_is_found_not_repeated(fake):
    """A create POST answered 502 after it landed is found by listing: one issue, none closed."""
    fake.inject(method="POST", path=r"/issues$", status=502, after_write=True)
    report = publish(fake, [make_state(GRADIENTS, 3)], index=False)
    [kept] = ours(fake, "core/gradients", state=None)
    assert len(fake.requests_to("POST", r"/issues$")) == 1
    result = report.result("core/gradients")
    assert result.number == kept["number"]
    assert result.closed_duplicates == ()
    assert "test_00002" in kept["body"]
    again = publish(fake, [make_state(GRADIENTS, 3)], index=False)
    assert again.result("core/gradients").action is IssueAction.UNCHANGED


def test_a_create_that_failed_with_a_502_is_sent_again_after_looking(fake):
    """A create POST answered 502 that did not land is sent again once the listing lacks it."""
    fake.inject(method="POST", path=r"/issues$", status=502)
    report = publish(fake, [make_state(GRADIENTS, 3)], index=False)
    [kept] = ours(fake, "core/gradients", state=None)
    assert len(fake.requests_to("POST", r"/issues$")) == 2
    assert report.result("core/gradients").number == kept["number"]
