"""Tests for issues/index_issue.py: the index issue links every dashboard, is pinned if it can
be, and shows the newest run's states with every run's writes in its record."""

from __future__ import annotations

from typing import Any

import pytest

from ivy_matrix.issues.markers import is_index, parse_revision, parse_writes, with_writes
from ivy_matrix.issues.plan import spent
from ivy_matrix.issues.report import IssueAction
from ivy_matrix.model import DashboardId, DashboardState
from tests.github.fake_server import FakeGitHub
from tests.github.memory import MemoryGitHub
from tests.issues.helpers import GRADIENTS, RANDOM, Lines, make_state, publish


def test_index_issue_links_every_dashboard(fake):
    """The index issue links each dashboard's issue with passing/total per backend."""
    states = [make_state(GRADIENTS, 3), make_state(RANDOM, 6)]
    report = publish(fake, states)
    assert report.index is not None
    assert report.index.number is not None
    index = fake.issues[report.index.number]["body"]
    for key in ("core/gradients", "core/random"):
        url = report.result(key).url
        assert f"[{key}]({url})" in index
    assert f"[4/6]({report.result('core/random').url})" in index
    assert report.index_url == report.index.url


def test_pinning_the_index_is_best_effort(fake):
    """With no GraphQL endpoint, pinning fails with a warning and everything is published."""
    lines = Lines()
    report = publish(fake, [make_state(GRADIENTS, 2)], pin_index=True, log=lines)
    assert report.index is not None
    assert report.index.action is IssueAction.CREATED
    assert any("could not pin the index issue" in w for w in report.warnings)
    assert lines.warnings == list(report.warnings)
    assert fake.requests_to("POST", r"/graphql$")


# ----------------------------------------------------------------------------- newest run wins


def modules(count: int, run: int) -> list[DashboardState]:
    """``count`` small dashboards (``many/m00`` ...) of run ``run``."""
    return [
        make_state(DashboardId(title=f"m{i:02d}", category="many"), 2, run=run)
        for i in range(count)
    ]


def index_of(github: FakeGitHub | MemoryGitHub) -> dict[str, Any]:
    """The one open index issue."""
    with github.lock:
        [issue] = [
            i for i in github.issues.values() if is_index(i["body"]) and i["state"] == "open"
        ]
        return dict(issue)


def content_writes(github: FakeGitHub | MemoryGitHub) -> int:
    """The content-creating requests every run so far sent, as the double counted them."""
    token = "t" if isinstance(github, FakeGitHub) else None
    return github.budget.spent(token).content_requests


@pytest.mark.timeout(60)
def test_an_older_run_writing_after_a_newer_one_leaves_its_index_and_adds_its_writes(fake):
    """Run 103 (revision 3) lists the issues and writes its eleven dashboards; while it paces
    its eleventh write, run 105 (revision 5) runs whole and writes the index. Run 103 then
    writes the index last: it leaves what run 105's index shows (revision 5, its counts and
    links) and adds its own writes to the index's record, which then holds what every run
    wrote, as GitHub counted it. (It used to put its own, older index over the newer one,
    with a record that had lost run 105's writes.)"""
    publish(fake, [*modules(11, run=101), make_state(GRADIENTS, 3, run=101)], revision=1)
    newer: list[str] = []

    def run_105_runs_whole_meanwhile(_seconds: float) -> None:
        if not newer:
            states = [*modules(11, run=105), make_state(GRADIENTS, 5, run=105, fail_every=10**6)]
            publish(fake, states, touched=["core/gradients"], revision=5)
            newer.append(index_of(fake)["body"])

    lines = Lines()
    older = publish(
        fake,
        [*modules(11, run=103), make_state(GRADIENTS, 3, run=103)],
        touched=[f"many/m{i:02d}" for i in range(11)],
        revision=3,
        log=lines,
        sleep=run_105_runs_whole_meanwhile,
    )
    assert newer, "run 105 ran inside run 103's pace"
    assert [r.action for r in older.dashboards] == [IssueAction.UNCHANGED] + [
        IssueAction.UPDATED
    ] * 11
    final = index_of(fake)["body"]
    assert parse_revision(final) == 5
    assert with_writes(final, "") == with_writes(newer[0], "")  # run 105's index, but the record
    assert "5/5" in final  # run 105's gradients
    record = parse_writes(final)
    assert len(record) == 3  # the first run, run 105, run 103
    assert spent(record) == content_writes(fake)
    assert older.index is not None
    assert older.index.action is IssueAction.SKIPPED_OLDER
    assert any("adding this run's writes to its record" in line for line in lines.infos)


@pytest.mark.timeout(60)
def test_the_newest_runs_check_restores_its_index_over_an_older_jobs_write(fake):
    """A slower job of run 103 writes its index (revision 3) while run 105 waits to check its
    work: run 105's check writes its index again, and the record holds both runs' writes
    and run 105's second write of the index."""
    publish(fake, [make_state(GRADIENTS, 3, run=103)], revision=3)
    older = index_of(fake)

    def the_older_jobs_write_lands(_seconds: float) -> None:
        with fake.lock:
            fake.issues[older["number"]]["body"] = older["body"]

    lines = Lines()
    report = publish(
        fake,
        [make_state(GRADIENTS, 5, run=105, fail_every=10**6)],
        revision=5,
        log=lines,
        sleep=the_older_jobs_write_lands,
    )
    final = index_of(fake)["body"]
    assert parse_revision(final) == 5
    assert "5/5" in final
    assert len(parse_writes(final)) == 2
    assert spent(parse_writes(final)) == content_writes(fake)
    assert "the index: an older revision replaced ours; writing again" in lines.infos
    assert report.index is not None
    assert report.index.action is IssueAction.UPDATED


@pytest.mark.timeout(60)
def test_an_identical_rerun_writes_nothing_and_a_run_without_a_revision_writes_as_before(fake):
    """Run again on the same states, the issue target makes no write, the index's included.
    Without a revision (no branch store) the index records none, is not read before it is
    written, and is written over whatever it shows."""
    states = [make_state(GRADIENTS, 3, run=105), make_state(RANDOM, 2, run=105)]
    publish(fake, states, revision=5)
    writes = len(fake.writes())
    again = publish(fake, states, revision=5)
    assert len(fake.writes()) == writes
    assert again.index is not None
    assert again.index.action is IssueAction.UNCHANGED

    report = publish(fake, [make_state(GRADIENTS, 7, run=106, fail_every=10**6)], revision=None)
    assert report.index is not None
    index = fake.issues[report.index.number]["body"]
    assert report.index.action is IssueAction.UPDATED
    assert parse_revision(index) is None
    assert "7/7" in index
    assert fake.requests_to("GET", rf"/issues/{report.index.number}$") == []
    assert spent(parse_writes(index)) == content_writes(fake)


@pytest.mark.timeout(60)
def test_an_index_create_answered_502_leaves_a_newer_runs_index(memory):
    """Run 107's create of the index lands but is answered 502; while it waits to look for it,
    run 108 finds that index, writes revision 8 and checks it. Run 107 then finds the index
    showing revision 8 and leaves it, its writes already in the record run 108 kept."""
    publish(memory, [make_state(GRADIENTS, 3, run=106)], revision=6, index=False)
    memory.inject("create_issue", status=502, after_write=True)
    newer: list[Any] = []

    def run_108_runs_whole_meanwhile(_seconds: float) -> None:
        if not newer:
            newer.append(publish(memory, [make_state(GRADIENTS, 8, run=108)], revision=8))

    lines = Lines()
    older = publish(
        memory,
        [make_state(GRADIENTS, 7, run=107)],
        revision=7,
        log=lines,
        sleep=run_108_runs_whole_meanwhile,
    )
    index = index_of(memory)
    assert newer[0].index.action is IssueAction.UPDATED
    assert parse_revision(index["body"]) == 8
    assert older.index is not None
    assert older.index.action is IssueAction.SKIPPED_OLDER
    assert older.index.number == index["number"]
    assert len(parse_writes(index["body"])) == 2  # run 108's and run 107's
    assert any("newer than this run's 7; leaving what it shows" in line for line in lines.infos)


@pytest.mark.timeout(60)
def test_with_pin_index_a_run_writes_its_index_once_and_records_the_pin(fake):
    """The pin that follows the index's write is counted in the entry that write records, so
    the newest writer's check finds the record complete and writes nothing more (it wrote
    the index a second time, to record the pin, on every run)."""
    publish(fake, [make_state(GRADIENTS, 3, run=101)], revision=1, pin_index=True)
    edits = len(fake.requests_to("PATCH", r"/issues/\d+$"))
    report = publish(fake, [make_state(GRADIENTS, 4, run=102)], revision=2, pin_index=True)
    assert len(fake.requests_to("PATCH", r"/issues/\d+$")) == edits + 2  # the dashboard, the index
    assert report.index is not None
    assert report.index.action is IssueAction.UPDATED
    assert spent(parse_writes(index_of(fake)["body"])) == content_writes(fake)
