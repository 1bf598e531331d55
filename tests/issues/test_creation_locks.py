"""Tests for issues/creation_locks.py: one creator per dashboard issue, through git-ref locks.

The races run on the in-memory model (tests/github/memory.py) with threads; the client's
calls for refs and commits are tested over HTTP in tests/github/test_client.py.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

from ivy_matrix.issues.creation_locks import CREATION_LOCK_REFS, CreationLocks
from ivy_matrix.issues.markers import dashboard_key, is_index
from ivy_matrix.issues.report import IssueAction, IssuesReport
from tests.concurrency import at_once
from tests.github.budget import RACING
from tests.github.memory import MemoryGitHub
from tests.issues.helpers import GRADIENTS, LABEL, RANDOM, REPO, Lines, make_state, publish

NOW = 1_800_000_000.0


def no_wait(_seconds: float) -> None:
    """Waits of the target, skipped."""


def locks(memory: MemoryGitHub, holder: str, *, now: float = NOW) -> CreationLocks:
    return CreationLocks(memory, REPO, label=LABEL, holder=holder, clock=lambda: now)


def publish_leg(memory: MemoryGitHub, leg: int, **options: Any) -> IssuesReport:
    backend = f"b{leg:02d}"
    states = [
        make_state(GRADIENTS, 4, (backend,), run=200 + leg),
        make_state(RANDOM, 2, (backend,), run=200 + leg),
    ]
    options.setdefault("locks", locks(memory, f"job {leg}"))
    options.setdefault("sleep", no_wait)
    return publish(memory, states, **options)


def issues_of(memory: MemoryGitHub, key: str | None) -> list[dict[str, Any]]:
    """Every issue (open or closed) of dashboard ``key``, or of the index when None."""
    with memory.lock:
        return [
            i
            for i in memory.issues.values()
            if (is_index(i["body"]) if key is None else dashboard_key(i["body"]) == key)
        ]


def test_sixteen_racing_publishers_create_each_issue_exactly_once(memory):
    """16 jobs that all find no issue, with creates answered 502 after landing, create each
    issue once: no duplicate is ever created, so none is closed."""
    # 16 jobs racing to create and edit the same issues make about 100 writes within a
    # second, over GitHub's 80 a minute; this tests that none is duplicated.
    memory.budget.configure(RACING)
    memory.latency = (0.0, 0.002)
    # Every job lists before any creates: hold the first creates until all 16 have listed.
    all_listed = threading.Barrier(16)
    memory.inject("list_issues", status=None, before=all_listed.wait, times=16)
    landed_then_502 = memory.inject("create_issue", status=502, after_write=True, times=2)
    reports: list[IssuesReport] = []

    def leg(index: int) -> None:
        reports.append(publish_leg(memory, index, sleep=lambda s: threading.Event().wait(s / 500)))

    at_once([partial(leg, index) for index in range(16)])
    assert len(reports) == 16
    for key in ("core/gradients", "core/random", None):
        [issue] = issues_of(memory, key)  # one, ever: created once, never closed
        assert issue["state"] == "open"
        assert LABEL in issue["labels"]
    # Three creates, two of them answered 502 after landing: found by listing, not resent.
    assert landed_then_502.hits == 2
    assert memory.calls.count("create_issue") == 3
    for report in reports:
        assert report.warnings == ()
        assert all(r.closed_duplicates == () for r in report.dashboards)
    # Each job made at most one lock commit (one tree), whatever the number of issues.
    assert memory.calls.count("create_commit") <= 16
    assert memory.calls.count("create_tree") <= 16
    assert lock_refs(memory) == {}  # each lock went once its issue existed


def test_issues_that_exist_are_written_without_reading_any_lock(memory):
    """A job whose listing shows every issue makes no request about locks."""
    publish_leg(memory, 1)
    calls = len(memory.calls)
    publish_leg(memory, 2)
    later = set(memory.calls[calls:])
    assert later.isdisjoint({"get_ref", "create_ref", "create_commit", "get_commit_message"})
    assert len(issues_of(memory, "core/gradients")) == 1


def test_a_stale_lock_of_a_job_that_died_is_taken_over(memory):
    """A lock older than the expiry, with no issue, is taken over and the issue is created."""
    dead = locks(memory, "job that died", now=NOW - 3_600)
    claim = dead.claim("core/gradients")
    assert claim.mine
    report = publish_leg(memory, 3, index=False)
    [issue] = issues_of(memory, "core/gradients")
    assert report.result("core/gradients").number == issue["number"]
    assert report.warnings == ()


def test_a_fresh_lock_held_by_another_job_is_waited_for_then_left_to_it(memory):
    """While another job holds a fresh lock and its issue never appears, this job creates
    nothing and says which job it left the issue to."""
    assert locks(memory, "run 5 job 77").claim("core/gradients").mine
    lines = Lines()
    report = publish_leg(memory, 4, index=False, log=lines)
    assert issues_of(memory, "core/gradients") == []
    assert len(issues_of(memory, "core/random")) == 1
    assert any("run 5 job 77" in w and "core/gradients" in w for w in report.warnings)


def test_a_dry_run_takes_no_lock(memory):
    """A dry run plans the creates and writes no ref."""
    publish_leg(memory, 5, dry_run=True)
    assert memory.writes() == []


def test_issues_another_job_is_creating_are_waited_for_together_after_the_rest(memory):
    """A job finding two issues locked by another job writes everything else first, then
    waits for both at once and writes them when they appear: no issue is created twice."""
    holder = locks(memory, "job A")
    assert holder.claim("core/gradients").mine
    assert holder.claim("core/random").mine
    waits: list[float] = []

    def other_job_creates_them(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 1:  # while this job waits, job A creates both (it holds the locks)
            publish_leg(memory, 1, locks=holder, index=False)

    report = publish_leg(memory, 2, sleep=other_job_creates_them)
    assert len(waits) == 1  # one wait, one listing: both had appeared
    for key in ("core/gradients", "core/random"):
        [issue] = issues_of(memory, key)
        assert report.result(key).number == issue["number"]
        assert report.result(key).action is IssueAction.UPDATED  # job A created it
        assert "b02" in issue["body"]  # then this job wrote its own state
    assert report.warnings == ()


def lock_refs(memory: MemoryGitHub) -> dict[str, str]:
    """The issue-creation lock refs left in the repository."""
    with memory.lock:
        return {r: s for r, s in memory.refs[REPO].items() if r.startswith(CREATION_LOCK_REFS)}


def test_each_lock_ref_is_deleted_once_its_issue_exists(memory):
    """The job that creates the issues (dashboards and index) deletes their lock refs; the
    next job finds the issues and takes no lock."""
    report = publish_leg(memory, 1)
    assert {r.action for r in report.dashboards} == {IssueAction.CREATED}
    assert lock_refs(memory) == {}
    publish_leg(memory, 2)
    assert lock_refs(memory) == {}
    assert [len(issues_of(memory, key)) for key in ("core/gradients", "core/random", None)] == [
        1,
        1,
        1,
    ]


def test_a_job_that_listed_before_the_issue_existed_does_not_create_it_again(memory):
    """A job whose listing predates the issue, and which takes the lock after its creator
    deleted it, lists again before creating and finds the issue: no second issue."""

    def another_job_creates_everything() -> None:
        publish_leg(memory, 1)

    # This job lists (no issue yet); then, as it reads the first lock, job 1 creates every
    # issue and deletes their locks.
    memory.inject("get_ref", status=None, before=another_job_creates_everything, times=1)

    report = publish_leg(memory, 2)

    for key in ("core/gradients", "core/random", None):
        [issue] = issues_of(memory, key)
        assert issue["state"] == "open"
    assert IssueAction.CREATED not in {r.action for r in report.dashboards}
    assert lock_refs(memory) == {}
    assert report.warnings == ()
