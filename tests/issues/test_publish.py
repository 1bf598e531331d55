"""Tests for issues/publish.py: the issue target, from creating every issue to a dry run.

What goes over the wire runs through real PyGithub on FakeGitHub; the races run on the
in-memory model (tests/github/memory.py).
"""

from __future__ import annotations

import re

import pytest

from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError
from ivy_matrix.issues.finding import RELIST_EVERY
from ivy_matrix.issues.markers import is_index
from ivy_matrix.issues.report import IssueAction
from ivy_matrix.model import DashboardId, DashboardState
from tests.github.budget import ManualClock
from tests.github.fake_server import FakeGitHub
from tests.github.memory import MemoryGitHub
from tests.issues.helpers import GRADIENTS, LABEL, RANDOM, REPO, Lines, make_state, ours, publish


def test_first_publish_creates_one_issue_per_dashboard_and_an_index(fake):
    """Each dashboard gets a labelled issue with its marker; the label is created once."""
    report = publish(fake, [make_state(GRADIENTS, 3), make_state(RANDOM, 2)])
    assert [r.action for r in report.dashboards] == [IssueAction.CREATED] * 2
    [gradients] = ours(fake, "core/gradients")
    assert gradients["labels"] == [LABEL]
    assert gradients["title"] == "ivy-matrix: core/gradients"
    assert report.result("core/gradients").url == (
        f"https://github.com/{REPO}/issues/{gradients['number']}"
    )
    assert fake.labels[REPO][LABEL]["description"]
    assert len(fake.requests_to("POST", r"/labels$")) == 1
    assert report.index is not None
    assert report.index.action is IssueAction.CREATED
    assert is_index(fake.issues[report.index.number]["body"])


def test_dry_run_makes_no_write_request_and_lists_what_it_would_write(fake):
    """A dry run reads, plans the creates and updates, and writes nothing."""
    report = publish(fake, [make_state(GRADIENTS, 3)], dry_run=True)
    assert fake.writes() == []
    assert report.result("core/gradients").action is IssueAction.WOULD_CREATE
    assert [p.method for p in report.planned] == ["POST", "POST"]
    assert report.planned[0].body is not None
    assert "test_00002" in report.planned[0].body
    publish(fake, [make_state(GRADIENTS, 3)])
    writes = len(fake.writes())
    again = publish(fake, [make_state(GRADIENTS, 2500, run=101)], dry_run=True)
    assert len(fake.writes()) == writes
    assert again.result("core/gradients").action is IssueAction.WOULD_UPDATE
    assert {p.method for p in again.planned} == {"POST", "PATCH"}


def test_read_only_token_raises_read_only_token_error(fake):
    """A fork's read-only token makes the first write raise ReadOnlyTokenError."""
    fake.configure(read_only=True)
    with pytest.raises(ReadOnlyTokenError, match="read-only"):
        publish(fake, [make_state(GRADIENTS, 2)])


def test_forbidden_write_names_the_issues_permission(fake):
    """A plain 403 on create says the job needs issues: write."""
    fake.inject(method="POST", path=r"/issues$", status=403, message="Forbidden")
    with pytest.raises(GitHubAPIError, match="permissions: issues: write"):
        publish(fake, [make_state(GRADIENTS, 2)])


def test_the_newest_writer_restores_its_revision_after_a_slower_job_overwrote_it(memory):
    """A slower job that writes revision 3 after revision 5 was written is corrected at once."""
    number = (
        publish(memory, [make_state(GRADIENTS, 4, run=104)], revision=4)
        .result("core/gradients")
        .number
    )
    assert number is not None

    def overwrite_with_an_older_revision(_seconds: float) -> None:
        # What a slower job does between our write and our check: it writes revision 3.
        with memory.lock:
            body = memory.issues[number]["body"]
            memory.issues[number]["body"] = body.replace("revision=5", "revision=3")

    lines = Lines()
    publish(
        memory,
        [make_state(GRADIENTS, 5, run=105)],
        revision=5,
        log=lines,
        sleep=overwrite_with_an_older_revision,
    )
    assert "<!-- ivy-matrix:revision=5 -->" in memory.issues[number]["body"]
    assert any("an older revision replaced ours; writing again" in line for line in lines.infos)


def many_states(count: int, run: int) -> list[DashboardState]:
    """``count`` small dashboards (``many/d00`` ...) of run ``run``."""
    return [
        make_state(DashboardId(title=f"d{i:02d}", category="many"), 2, run=run)
        for i in range(count)
    ]


def test_a_run_that_changes_every_dashboard_writes_each_issue_once_and_lists_a_few_times():
    """Every changed dashboard costs one edit, and its revision is checked in a listing taken
    at most RELIST_EVERY writes before: no read of each issue before its edit. Paced, the
    writes stay within GitHub's content-creation limit (the double's clock moves with the
    waits)."""
    clock = ManualClock()
    with FakeGitHub(clock=clock) as fake:
        publish(fake, many_states(60, run=100), revision=1, sleep=clock.advance)
        with fake.lock:
            before = len(fake.requests)
        report = publish(fake, many_states(60, run=101), revision=2, sleep=clock.advance)
        with fake.lock:
            run = fake.requests[before:]
        assert fake.budget.spent("t").refused == 0
    assert [r.action for r in report.dashboards] == [IssueAction.UPDATED] * 60
    edits = [r for r in run if r.method == "PATCH" and re.search(r"/issues/\d+$", r.path)]
    reads = [r for r in run if r.method == "GET" and re.search(r"/issues/\d+$", r.path)]
    listings = [r for r in run if r.method == "GET" and r.path.endswith("/issues")]
    assert len(edits) == 61  # the dashboards and the index
    assert reads == []
    # The first listing, one every RELIST_EVERY writes, and the newest writer's check.
    assert len(listings) == 1 + (60 - 1) // RELIST_EVERY + 1
    assert len(run) == len(edits) + len(listings)


def test_a_newer_revision_written_meanwhile_is_seen_in_the_next_listing_and_kept():
    """A newer job's edit that lands while this job writes is found by its next listing:
    that issue is left as it is."""
    clock = ManualClock()
    memory = MemoryGitHub(clock=clock)
    publish(memory, many_states(40, run=100), revision=1, sleep=clock.advance)
    (newer,) = [i["number"] for i in memory.issues.values() if "many/d35" in (i["body"] or "")[:80]]

    def a_newer_job_writes(seconds: float) -> None:
        clock.advance(seconds)
        with memory.lock:
            body = memory.issues[newer]["body"]
            memory.issues[newer]["body"] = body.replace(
                "<!-- ivy-matrix:revision=1 -->", "<!-- ivy-matrix:revision=9 -->"
            )

    report = publish(memory, many_states(40, run=101), revision=2, sleep=a_newer_job_writes)
    assert report.result("many/d35").action is IssueAction.SKIPPED_OLDER
    assert "<!-- ivy-matrix:revision=9 -->" in memory.issues[newer]["body"]
    assert report.result("many/d34").action is IssueAction.UPDATED
