"""Tests for issues/writer.py: a dashboard's issue created or brought up to date, never older."""

from __future__ import annotations

from ivy_matrix.issues.markers import (
    BODY_LIMIT,
    END,
    continuation_marker,
    continuation_part,
    parse_parts,
    parse_revision,
    utf16_len,
)
from ivy_matrix.issues.report import IssueAction
from ivy_matrix.views.style import Style
from tests.github.fake_server import FakeGitHub
from tests.issues.helpers import (
    GRADIENTS,
    RANDOM,
    Lines,
    bodies_sent,
    comment_bodies,
    make_state,
    ours,
    publish,
)


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


def test_an_older_revision_never_replaces_a_newer_one(fake):
    """A slow job with revision 3 leaves the bodies a faster job wrote at revision 5, the
    index's too: having written nothing, it has nothing to add to the index's record."""
    first = publish(fake, [make_state(GRADIENTS, 4, run=105)], revision=5)
    [issue] = ours(fake, "core/gradients")
    newer = issue["body"]
    assert first.index is not None
    index = fake.issues[first.index.number]["body"]
    patches = len(fake.requests_to("PATCH", r"/issues/\d+$"))
    lines = Lines()
    report = publish(fake, [make_state(GRADIENTS, 2, run=103)], revision=3, log=lines)
    assert report.result("core/gradients").action is IssueAction.SKIPPED_OLDER
    assert report.index is not None
    assert report.index.action is IssueAction.SKIPPED_OLDER
    assert fake.issues[issue["number"]]["body"] == newer
    assert fake.issues[first.index.number]["body"] == index
    assert len(fake.requests_to("PATCH", r"/issues/\d+$")) == patches
    assert any("revision 5, newer than this run's 3" in line for line in lines.infos)
    publish(fake, [make_state(GRADIENTS, 6, run=106)], revision=6)
    assert parse_revision(fake.issues[issue["number"]]["body"]) == 6


def test_requests_do_not_grow_with_the_number_of_tests(fake):
    """Ten rows or a thousand, a dashboard costs the same number of requests."""
    publish(fake, [make_state(GRADIENTS, 10, fail_every=10**6)])
    small = len(fake.requests)
    with FakeGitHub() as other:
        publish(other, [make_state(GRADIENTS, 1000, fail_every=10**6)])
        assert len(other.requests) == small


def test_comments_that_look_like_continuations_are_never_edited_or_deleted(fake):
    """A continuation marker in a comment by someone other than the issue's author (the token's
    login) is not one of the table's parts: it is neither edited nor deleted, and the table's
    own parts are written as usual."""
    first = publish(fake, [make_state(GRADIENTS, 400)], budget=6_000)
    number = first.result("core/gradients").number
    parts = len(first.result("core/gradients").comment_ids)
    assert number is not None
    assert parts >= 2
    forged = [
        continuation_marker("core/gradients", 1) + "\nnot yours to edit",
        continuation_marker("core/gradients", parts + 1) + "\nnot yours to delete",
    ]
    for text in forged:
        fake.add_comment(number, text, login="mallory")

    again = publish(fake, [make_state(GRADIENTS, 420)], budget=6_000)

    with fake.lock:
        comments = [(c.get("login"), c["body"]) for c in fake.comments[number]]
    assert [body for login, body in comments if login == "mallory"] == forged
    mine = [body for login, body in comments if login is None]
    assert [continuation_part(body, "core/gradients") for body in mine] == list(
        range(1, len(mine) + 1)
    )
    assert len(again.result("core/gradients").comment_ids) == len(mine)
