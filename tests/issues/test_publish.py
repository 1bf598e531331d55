"""Tests for issue_target.py: dashboard issues, the index and the issue-body store.

What goes over the wire runs through real PyGithub on FakeGitHub; the races and the store's
round trips run on the in-memory model (tests/github/memory.py).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError
from ivy_matrix.fold import Merged
from ivy_matrix.github.client import GitHubClient
from ivy_matrix.issues.markers import (
    BODY_LIMIT,
    END,
    continuation_part,
    dashboard_key,
    is_index,
    parse_parts,
    parse_revision,
    utf16_len,
)
from ivy_matrix.issues.publish import publish_issues
from ivy_matrix.issues.report import IssueAction, IssuesReport
from ivy_matrix.issues.state_block import extract_state
from ivy_matrix.issues.store import IssueStore
from ivy_matrix.merge import Batch, apply_batch
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.render import Style
from tests.conftest import fake_client, quick_sleep
from tests.github.fake_server import FakeGitHub, RequestRecord
from tests.github.memory import MemoryGitHub

REPO = "acme/widgets"
LABEL = "ivy-matrix"
GRADIENTS = DashboardId(title="gradients", category="core")
RANDOM = DashboardId(title="random", category="core")


def client(github: FakeGitHub | MemoryGitHub, **options) -> GitHubClient:
    """Our client on the HTTP fake, or the in-memory model itself."""
    if isinstance(github, MemoryGitHub):
        return github.as_client()
    options.setdefault("retries", 3)
    return fake_client(github, **options)


class Lines:
    """A log that keeps its lines."""

    def __init__(self) -> None:
        self.infos: list[str] = []
        self.warnings: list[str] = []

    def info(self, message: str) -> None:
        self.infos.append(message)

    def warning(self, message: str) -> None:
        self.warnings.append(message)


def make_state(
    dashboard: DashboardId,
    rows: int,
    backends: tuple[str, ...] = ("torch", "jax", "numpy"),
    *,
    run: int = 100,
    fail_every: int = 3,
) -> DashboardState:
    state = None
    for job, backend in enumerate(backends, start=1):
        src = Source(
            run=RunKey(run, 1, job),
            url=f"https://github.com/{REPO}/actions/runs/{run}/job/{job}",
            time="2026-11-21T10:00:00Z",
        )
        cells = {
            f"test_{i:05d}": {
                backend: Entry(
                    source=src,
                    outcome=Outcome.FAILURE if (i + job) % fail_every == 0 else Outcome.SUCCESS,
                )
            }
            for i in range(rows)
        }
        state = apply_batch(state, Batch(dashboard=dashboard, cells=cells)).state
    assert state is not None
    return state


def publish(
    fake: FakeGitHub | MemoryGitHub, states, *, touched=None, revision=None, **options
) -> IssuesReport:
    with client(fake) as gh:
        keys = [s.key for s in states] if touched is None else touched
        options.setdefault("sleep", quick_sleep)
        return publish_issues(gh, REPO, states, touched=keys, revision=revision, **options)


def ours(
    fake: FakeGitHub | MemoryGitHub, key: str, *, state: str | None = "open"
) -> list[dict[str, Any]]:
    """The fake's issues whose body carries the marker of ``key``."""
    with fake.lock:
        return [
            i
            for i in fake.issues.values()
            if dashboard_key(i["body"]) == key and (state is None or i["state"] == state)
        ]


def bodies_sent(records: list[RequestRecord]) -> list[str]:
    return [r.body["body"] for r in records if isinstance(r.body, dict) and "body" in r.body]


def comment_bodies(fake: FakeGitHub | MemoryGitHub, number: int) -> list[str]:
    with fake.lock:
        return [c["body"] for c in fake.comments[number]]


# --------------------------------------------------------------------------- create and update


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


def test_second_publish_updates_in_place_without_a_duplicate(fake):
    """A later run edits the same issues; no new issue is created."""
    first = publish(fake, [make_state(GRADIENTS, 3)])
    second = publish(fake, [make_state(GRADIENTS, 6, run=101)])
    assert second.result("core/gradients").action is IssueAction.UPDATED
    assert second.result("core/gradients").number == first.result("core/gradients").number
    [issue] = ours(fake, "core/gradients", state=None)
    assert "test_00005" in issue["body"]
    assert len(fake.requests_to("POST", r"/issues$")) == 2  # the dashboard and the index


def test_unchanged_publish_makes_no_write_request(fake):
    """Publishing the same states again only reads."""
    states = [make_state(GRADIENTS, 3), make_state(RANDOM, 3)]
    publish(fake, states)
    before = len(fake.writes())
    report = publish(fake, states)
    assert len(fake.writes()) == before
    assert {r.action for r in report.dashboards} == {IssueAction.UNCHANGED}
    assert report.index is not None
    assert report.index.action is IssueAction.UNCHANGED


def test_maintainer_text_outside_the_region_survives_an_update(fake):
    """Notes above and below the managed region are kept byte for byte."""
    report = publish(fake, [make_state(GRADIENTS, 2)])
    number = report.result("core/gradients").number
    with fake.lock:
        body = fake.issues[number]["body"]
        fake.issues[number]["body"] = "Owner: @ml-team\r\n" + body.replace(
            END + "\n", END + "\r\nSee also #7\r\n"
        )
    publish(fake, [make_state(GRADIENTS, 4, run=101)])
    new = fake.issues[number]["body"]
    assert "\nOwner: @ml-team\r\n<!-- ivy-matrix:begin -->" in new
    assert new.endswith(END + "\r\nSee also #7\r\n")
    assert "test_00003" in new


def test_pull_requests_with_the_label_and_marker_are_never_edited(fake):
    """A pull request carrying our marker is left alone; the dashboard gets a real issue."""
    body = "<!-- ivy-matrix:dashboard=core/gradients -->\nnot an issue"
    pr = fake.add_issue(REPO, title="PR", body=body, labels=[LABEL], pull_request=True)
    publish(fake, [make_state(GRADIENTS, 2)])
    assert fake.issues[pr["number"]]["body"] == body
    assert [i["number"] for i in ours(fake, "core/gradients") if not i["pull_request"]]


# --------------------------------------------------------------------------- size


def test_no_body_over_the_limit_ever_reaches_github(fake):
    """Big dashboards go compact, then into continuation comments; no write passes 65,536."""
    compact = make_state(GRADIENTS, 200, fail_every=50)
    split = make_state(RANDOM, 3000)
    report = publish(fake, [compact, split])
    sent = bodies_sent(fake.writes())
    assert sent
    assert max(utf16_len(b) for b in sent) <= BODY_LIMIT
    assert all(r.status < 400 for r in fake.writes())
    assert report.result("core/gradients").style is Style.COMPACT
    assert report.result("core/gradients").comment_ids == ()
    result = report.result("core/random")
    assert result.style is Style.COMPACT
    assert len(result.comment_ids) >= 2
    assert result.number is not None
    comments = comment_bodies(fake, result.number)
    assert [continuation_part(c, "core/random") for c in comments] == list(
        range(1, len(comments) + 1)
    )
    assert parse_parts(fake.issues[result.number]["body"]) == len(comments)
    everything = fake.issues[result.number]["body"] + "".join(comments)
    assert all(f"| test_{i:05d} " in everything for i in range(3000))


def test_continuation_comments_are_updated_in_place_and_extras_removed(fake):
    """A shrinking table edits its remaining comments in place and deletes the others."""
    big = publish(fake, [make_state(GRADIENTS, 2500)])
    first = big.result("core/gradients")
    assert len(first.comment_ids) >= 3
    smaller = publish(fake, [make_state(GRADIENTS, 1200, run=101, fail_every=2)])
    second = smaller.result("core/gradients")
    assert second.number == first.number
    assert 1 <= len(second.comment_ids) < len(first.comment_ids)
    assert second.comment_ids == first.comment_ids[: len(second.comment_ids)]
    assert first.number is not None
    assert [c["id"] for c in fake.comments[first.number]] == list(second.comment_ids)
    assert fake.requests_to("DELETE", r"/issues/comments/\d+$")
    tiny = publish(fake, [make_state(GRADIENTS, 3, run=102)])
    assert tiny.result("core/gradients").comment_ids == ()
    assert fake.comments[first.number] == []
    assert parse_parts(fake.issues[first.number]["body"]) == 0


# --------------------------------------------------------------------------- races and retries


def test_two_concurrent_creators_end_with_one_open_issue_per_dashboard(memory):
    """Two jobs that both find no issue both create one; one per dashboard stays open."""
    # Hold each job's first create until both jobs have listed, so both see no issue.
    both_listed = threading.Barrier(2)
    memory.inject("create_issue", status=None, before=lambda: both_listed.wait(10), times=2)
    barrier = threading.Barrier(2)
    reports: list[IssuesReport] = []

    def job(backend: str, run: int) -> None:
        states = [
            make_state(GRADIENTS, 4, (backend,), run=run),
            make_state(RANDOM, 2, (backend,), run=run),
        ]
        barrier.wait()
        reports.append(publish(memory, states, index=False))

    threads = [threading.Thread(target=job, args=args) for args in (("torch", 1), ("jax", 2))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(reports) == 2
    for key in ("core/gradients", "core/random"):
        assert len(ours(memory, key, state=None)) == 2  # both jobs really created one
        [kept] = ours(memory, key)
        [closed] = ours(memory, key, state="closed")
        assert kept["number"] < closed["number"]
        assert LABEL not in closed["labels"]
        assert f"Duplicate of #{kept['number']}" in comment_bodies(memory, closed["number"])[0]
        assert {r.result(key).number for r in reports} == {kept["number"]}


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


def test_an_older_revision_never_replaces_a_newer_one(fake):
    """A slow job with revision 3 leaves the body a faster job wrote at revision 5."""
    publish(fake, [make_state(GRADIENTS, 4, run=105)], revision=5)
    [issue] = ours(fake, "core/gradients")
    newer = issue["body"]
    patches = len(fake.requests_to("PATCH", r"/issues/\d+$"))
    lines = Lines()
    report = publish(fake, [make_state(GRADIENTS, 2, run=103)], revision=3, log=lines)
    assert report.result("core/gradients").action is IssueAction.SKIPPED_OLDER
    assert fake.issues[issue["number"]]["body"] == newer
    assert len(fake.requests_to("PATCH", r"/issues/\d+$")) == patches + 1  # the index only
    assert any("revision 5, newer than this run's 3" in line for line in lines.infos)
    publish(fake, [make_state(GRADIENTS, 6, run=106)], revision=6)
    assert parse_revision(fake.issues[issue["number"]]["body"]) == 6


# --------------------------------------------------------------------------- modes and errors


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


def test_requests_do_not_grow_with_the_number_of_tests(fake):
    """Ten rows or a thousand, a dashboard costs the same number of requests."""
    publish(fake, [make_state(GRADIENTS, 10, fail_every=10**6)])
    small = len(fake.requests)
    with FakeGitHub() as other:
        publish(other, [make_state(GRADIENTS, 1000, fail_every=10**6)])
        assert len(other.requests) == small


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


# --------------------------------------------------------------------------- issue-body store


def leg_change(backend: str, job: int, dashboards=(GRADIENTS, RANDOM), rows: int = 12):
    """One matrix leg's change: its own column in each dashboard."""
    src = Source(
        run=RunKey(500, 1, job),
        url=f"https://github.com/{REPO}/actions/runs/500/job/{job}",
        time="2026-11-21T10:00:00Z",
    )

    def change(states: Mapping[DashboardId, DashboardState]):
        new = dict(states)
        for dashboard in dashboards:
            cells = {
                f"test_{row:02d}": {
                    backend: Entry(
                        source=src, outcome=Outcome.FAILURE if row % 3 else Outcome.SUCCESS
                    )
                }
                for row in range(rows)
            }
            new[dashboard] = apply_batch(
                new.get(dashboard), Batch(dashboard=dashboard, cells=cells)
            ).state
        return Merged(states=new)

    return change


def store(gh: GitHubClient, seed: int = 0, **options) -> IssueStore:
    options.setdefault("min_delay", 0.002)
    options.setdefault("max_delay", 0.01)
    options.setdefault("lock_poll", (0.001, 0.005))
    return IssueStore(gh, REPO, sleep=time.sleep, rng=random.Random(seed), **options)


def test_issue_store_round_trips_state_and_an_unchanged_update_writes_nothing(memory):
    """The store writes state into the issues, loads it back, and a repeat only reads."""
    with client(memory) as gh:
        outcome = store(gh).update(leg_change("torch", 1))
        assert outcome.converged
        loaded = store(gh).load()
        assert set(loaded) == {GRADIENTS, RANDOM}
        assert loaded[GRADIENTS].backend_names == ("torch",)
        writes = len(memory.writes())
        again = store(gh).update(leg_change("torch", 1))
    assert again.converged
    assert len(memory.writes()) == writes
    [issue] = ours(memory, "core/gradients")
    assert extract_state(issue["body"]) == loaded[GRADIENTS]


def test_issue_store_with_four_concurrent_writers_keeps_every_cell(memory):
    """Four legs writing at once converge: one issue per dashboard holding all four columns."""
    backends = ("torch", "jax", "numpy", "tensorflow")
    memory.latency = (0.0, 0.002)  # every call pauses, so the writers really interleave
    barrier = threading.Barrier(len(backends))
    outcomes = []

    def leg(index: int) -> None:
        with client(memory, retries=5) as gh:
            barrier.wait()
            change = leg_change(backends[index], index + 1)
            outcomes.append(store(gh, seed=index).update(change))

    threads = [threading.Thread(target=leg, args=(i,)) for i in range(len(backends))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outcomes) == len(backends)
    assert all(o.attempts <= 6 for o in outcomes)
    for key in ("core/gradients", "core/random"):
        [issue] = ours(memory, key)
        state = extract_state(issue["body"])
        assert state is not None
        assert sorted(state.backend_names) == sorted(backends)
        assert len(state.rows) == 12
        assert all(set(row.cells) == set(backends) for row in state.rows)


def test_a_body_that_reads_back_different_is_written_once_more(fake):
    """An edit GitHub accepts but does not apply (a silent non-update) is written again."""
    report = publish(fake, [make_state(GRADIENTS, 2)], index=False)
    number = report.result("core/gradients").number
    assert number is not None
    fake.inject(method="PATCH", path=rf"/issues/{number}$", silent=True)
    lines = Lines()
    again = publish(fake, [make_state(GRADIENTS, 5, run=101)], index=False, log=lines)
    assert again.result("core/gradients").verified
    assert len(fake.requests_to("PATCH", rf"/issues/{number}$")) == 2
    assert "test_00004" in fake.issues[number]["body"]
    assert any("read back differs; writing again" in line for line in lines.infos)


def test_an_applied_edit_needs_no_read_back(fake):
    """When the edit's answer shows the new body, the issue is not read again."""
    report = publish(fake, [make_state(GRADIENTS, 2)], index=False)
    number = report.result("core/gradients").number
    before = len(fake.requests_to("GET", rf"/issues/{number}$"))
    publish(fake, [make_state(GRADIENTS, 5, run=101)], index=False)
    # One read just before the write (the revision check), none after it.
    assert len(fake.requests_to("GET", rf"/issues/{number}$")) <= before + 1


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
