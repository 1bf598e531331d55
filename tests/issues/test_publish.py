"""Tests for issues/publish.py: the issue target, from creating every issue to a dry run.

What goes over the wire runs through real PyGithub on FakeGitHub; the races run on the
in-memory model (tests/github/memory.py).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError
from ivy_matrix.issues.finding import RELIST_EVERY
from ivy_matrix.issues.markers import dashboard_key, is_index, parse_revision, parse_writes
from ivy_matrix.issues.plan import spent
from ivy_matrix.issues.publish import publish_from_branch
from ivy_matrix.issues.report import IssueAction
from ivy_matrix.issues.writer import IssueOptions
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.state.fold import DashboardReport, Merged
from ivy_matrix.stores import Published, Saved
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


def test_the_rewrite_after_a_slower_job_keeps_within_the_hours_budget(memory):
    """With no room left in the hour's budget for it, the newest writer leaves a dashboard a
    slower job put an older revision on, and says so once: the next run that changes it
    writes it. The index's rewrite, kept room for, is made."""
    first = publish(memory, [make_state(GRADIENTS, 4, run=104)], revision=4)
    number = first.result("core/gradients").number
    assert number is not None
    assert first.index is not None
    index = first.index.number
    with memory.lock:
        earlier = spent(parse_writes(memory.issues[index]["body"]))
    overwritten: list[bool] = []

    def overwrite_with_an_older_revision(_seconds: float) -> None:
        # What a slower job does between our writes and our check, once: it writes revision 3.
        if not overwritten:
            overwritten.append(True)
            with memory.lock:
                for issue in (number, index):
                    body = memory.issues[issue]["body"]
                    memory.issues[issue]["body"] = body.replace("revision=5", "revision=3")

    lines = Lines()
    report = publish(
        memory,
        [make_state(GRADIENTS, 5, run=105)],
        revision=5,
        log=lines,
        sleep=overwrite_with_an_older_revision,
        # This run's dashboard edit and index edit, and one more: the index's rewrite.
        writes_per_hour=earlier + 3,
    )
    assert report.result("core/gradients").action is IssueAction.UPDATED
    assert "<!-- ivy-matrix:revision=3 -->" in memory.issues[number]["body"]
    assert "<!-- ivy-matrix:revision=5 -->" in memory.issues[index]["body"]
    assert sum("has no room to write it again" in w for w in report.warnings) == 1
    assert not any("dashboard core/gradients: an older" in line for line in lines.infos)


def test_a_create_answered_502_never_puts_an_older_revision_over_a_newer_one(memory):
    """A job's create lands, is answered 502, and while it waits to look for it a newer job
    finds that issue, writes its revision and checks it: the first job then finds the issue
    showing the newer revision and leaves it (it used to write its own body over it, unchecked,
    after the newer job's last check: the dashboard issue showed an older revision than the
    branch once every run had finished)."""
    memory.inject("create_issue", status=502, after_write=True)
    newer: list[Any] = []

    def a_newer_job_writes_meanwhile(_seconds: float) -> None:
        # The older job's wait after the 502 (the first of its waits): the newer job runs whole.
        if not newer:
            newer.append(
                publish(memory, [make_state(GRADIENTS, 4, run=108)], revision=8, index=False)
            )

    lines = Lines()
    older = publish(
        memory,
        [make_state(GRADIENTS, 4, run=107)],
        revision=7,
        index=False,
        log=lines,
        sleep=a_newer_job_writes_meanwhile,
    )
    [issue] = ours(memory, "core/gradients", state=None)
    assert newer[0].result("core/gradients").action is IssueAction.UPDATED
    assert parse_revision(issue["body"]) == 8
    assert older.result("core/gradients").action is IssueAction.SKIPPED_OLDER
    assert older.result("core/gradients").number == issue["number"]
    assert any("newer than this run's 7" in line for line in lines.infos)


def many_states(count: int, run: int) -> list[DashboardState]:
    """``count`` small dashboards (``many/d00`` ...) of run ``run``."""
    return [
        make_state(DashboardId(title=f"d{i:02d}", category="many"), 2, run=run)
        for i in range(count)
    ]


def test_a_run_that_changes_every_dashboard_writes_each_issue_once_and_lists_a_few_times():
    """Every changed dashboard costs one edit, and its revision is checked in a listing taken
    at most RELIST_EVERY writes before: no read of each issue before its edit (the index
    issue, which every run writes, is read once just before). Paced, the writes stay within
    GitHub's content-creation limit (the double's clock moves with the waits)."""
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
    assert report.index is not None
    assert [r.path for r in reads] == [f"/repos/{REPO}/issues/{report.index.number}"]
    # The first listing, one every RELIST_EVERY writes, and the newest writer's check.
    assert len(listings) == 1 + (60 - 1) // RELIST_EVERY + 1
    assert len(run) == len(edits) + len(listings) + 1


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


# ----------------------------------------------------------------------------- the hour's budget


def modules(count: int, run: int, *, failing: range | tuple[int, ...] = ()) -> list[DashboardState]:
    """``count`` dashboards of two tests x two backends, one per test module as narwhals has
    them (``tests/m000`` ...); those in ``failing`` have a failing cell, the others pass."""
    return [
        make_state(
            DashboardId(title=f"m{i:03d}", category="tests"),
            2,
            ("pandas", "polars"),
            run=run,
            fail_every=3 if i in failing else 10**6,
        )
        for i in range(count)
    ]


def pages_of(states: list[DashboardState]) -> dict[str, str]:
    """Each dashboard's page on the branch, as the branch store gives them."""
    return {s.key: f"https://github.com/{REPO}/blob/ivy-matrix/{s.key}.md" for s in states}


def revisions_shown(fake: FakeGitHub) -> dict[str, int | None]:
    """Each open dashboard issue's revision, by dashboard key."""
    with fake.lock:
        return {
            key: parse_revision(issue["body"])
            for issue in fake.issues.values()
            if issue["state"] == "open" and (key := dashboard_key(issue["body"])) is not None
        }


@pytest.mark.timeout(180)
def test_300_dashboards_stay_within_githubs_hour_and_minute_and_later_runs_catch_up():
    """narwhals' shape, one dashboard per test module, on the fake GitHub that enforces
    GitHub's limits (80 content-creating requests a minute, 500 an hour, 1,000 requests an
    hour). The first run creates all 300 issues within the default budget of 400 an hour; a
    run ten minutes later that changes every dashboard updates what the hour has left and
    says, in a warning with the numbers and the option, which issues wait (the index links
    their pages); an hour later every issue shows the newest revision. No request is refused,
    no dashboard is lost."""
    clock = ManualClock()
    timing: dict[str, Any] = {"sleep": clock.advance, "clock": clock}
    with FakeGitHub(clock=clock) as fake:
        first = modules(300, run=100, failing=range(0, 300, 7))
        lines = Lines()
        report = publish(fake, first, revision=1, log=lines, pages=pages_of(first), **timing)
        assert [r.action for r in report.dashboards] == [IssueAction.CREATED] * 300
        assert report.budget_note == ""
        assert "issues: 300 to create, 0 to update" in lines.infos[0]
        spend = fake.budget.spent("t")
        assert (spend.refused, spend.content_requests) == (0, 302)  # the label, 300, the index
        assert spend.peak_content_per_minute <= 80

        clock.advance(600)  # the next run, ten minutes later, changes every dashboard
        second = modules(300, run=101, failing=range(0, 300, 7))
        lines = Lines()
        report = publish(fake, second, revision=2, log=lines, pages=pages_of(second), **timing)
        actions = Counter(r.action for r in report.dashboards)
        # 400 an hour, 302 of them spent by the first run, 1 kept for the index.
        assert actions == {IssueAction.UPDATED: 97, IssueAction.DEFERRED: 203}
        assert fake.budget.spent("t").refused == 0
        [note] = lines.warnings
        assert note == report.budget_note
        assert (
            "203 of 300 dashboard issue(s) wait for a later run (203 to update, 0 to create)"
            in note
        )
        assert "issue-writes-per-hour (400) left 97 for this run's dashboards after 302" in note
        assert "raise issue-writes-per-hour" in note
        waiting = [r for r in report.dashboards if r.action is IssueAction.DEFERRED]
        # Failing dashboards were served first; a waiting issue is linked to its current page.
        assert all(int(r.key[-3:]) % 7 for r in waiting)
        assert report.index is not None
        assert report.index.number is not None
        index = fake.issues[report.index.number]["body"]
        assert pages_of(second)[waiting[0].key] in index
        assert Counter(revisions_shown(fake).values()) == {1: 203, 2: 97}

        clock.advance(3600)  # an hour later: the first run's writes are out of the window
        third = modules(300, run=102, failing=range(0, 300, 7))
        report = publish(fake, third, revision=3, pages=pages_of(third), **timing)
        assert {r.action for r in report.dashboards} == {IssueAction.UPDATED}
        assert report.budget_note == ""
        assert revisions_shown(fake) == dict.fromkeys(pages_of(third), 3)
        spend = fake.budget.spent("t")
        assert spend.refused == 0
        assert spend.peak_content_per_minute <= 80


def test_a_first_run_over_budget_creates_failing_dashboards_first_and_the_rest_later(fake):
    """With room for 28 issues, a first run of 60 dashboards creates the 20 failing ones
    first, the newest failure first, then 8 passing ones; the index links the pages of the 32
    that wait, and the log and the report say so. Later runs that change nothing create the
    rest, within the budget each time."""
    clock = ManualClock()
    fake.budget.clock = clock
    timing: dict[str, Any] = {"sleep": clock.advance, "clock": clock, "writes_per_hour": 30}
    states = (
        modules(20, run=100, failing=range(10))  # m000-m009 failing since run 100
        + [
            make_state(DashboardId(title=f"m{i:03d}", category="tests"), 2, run=105)
            for i in range(20, 30)  # failing since run 105: the newest failure
        ]
        + modules(60, run=100)[30:]
    )
    pages = pages_of(states)
    lines = Lines()
    report = publish(fake, states, revision=1, log=lines, pages=pages, **timing)
    created = [r.key for r in report.dashboards if r.action is IssueAction.CREATED]
    numbers = {r.key: r.number or 0 for r in report.dashboards}
    assert len(created) == 28  # 30 an hour, less the label and the index
    newest = [f"tests/m{i:03d}" for i in range(20, 30)]
    older = [f"tests/m{i:03d}" for i in range(10)]
    passing = [f"tests/m{i:03d}" for i in [*range(10, 20), *range(30, 60)]]
    assert sorted(created, key=numbers.__getitem__) == newest + older + passing[:8]
    waiting = [r for r in report.dashboards if r.action is IssueAction.DEFERRED]
    assert [r.key for r in waiting] == passing[8:]
    assert all(r.number is None and r.url is None for r in waiting)
    assert "32 of 60 dashboard issue(s) wait for a later run (0 to update, 32 to create)" in (
        report.budget_note
    )
    assert lines.warnings == [report.budget_note]
    assert report.index is not None
    assert report.index.number is not None
    index = fake.issues[report.index.number]["body"]
    assert all(f"({pages[key]})" in index for key in passing[8:])
    for left in (29, 3):  # the label exists now: 30 an hour, less the index
        clock.advance(3600)
        again = publish(fake, states, revision=1, touched=[], pages=pages, **timing)
        assert Counter(r.action for r in again.dashboards)[IssueAction.CREATED] == left
    assert len(revisions_shown(fake)) == 60
    assert fake.budget.spent("t").refused == 0


def test_the_target_beside_the_branch_links_waiting_dashboards_to_their_pages(memory):
    """publish_from_branch: a dashboard whose issue waits keeps its page's URL in the outputs,
    and the note reaches the job summary (Published.notes) besides the log."""
    states = modules(4, run=100)
    pages = pages_of(states)
    saved = Saved(
        merged=Merged(
            states={s.id: s for s in states}, reports=dict.fromkeys(pages, DashboardReport())
        ),
        revision=1,
    )
    lines = Lines()
    published = publish_from_branch(
        memory,
        REPO,
        saved,
        Published(
            urls=pages, index_url="https://github.com/acme/widgets/blob/ivy-matrix/README.md"
        ),
        IssueOptions(writes_per_hour=4),  # the index, the label and two issues
        log=lines,
        sleep=lambda _s: None,
        spent_before=0,
    )
    assert published.notes == (lines.warnings[0],)
    assert "2 of 4 dashboard issue(s) wait for a later run" in published.notes[0]
    issues = {key: url for key, url in published.urls.items() if "/issues/" in url}
    assert sorted(issues) == ["tests/m000", "tests/m001"]
    assert {key: published.urls[key] for key in ("tests/m002", "tests/m003")} == {
        key: pages[key] for key in ("tests/m002", "tests/m003")
    }
    assert published.index_url is not None
    assert "/issues/" in published.index_url
    assert any("issue of tests/m003: deferred" in line for line in lines.infos)
