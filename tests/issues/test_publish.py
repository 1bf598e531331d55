"""Tests for issues/publish.py: the issue target, from creating every issue to a dry run.

What goes over the wire runs through real PyGithub on FakeGitHub; the races run on the
in-memory model (tests/github/memory.py).
"""

from __future__ import annotations

import pytest

from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError
from ivy_matrix.issues.markers import is_index
from ivy_matrix.issues.report import IssueAction
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
