"""Tests for issues/requests.py: bodies and continuation comments written, read back, fixed."""

from __future__ import annotations

from ivy_matrix.issues.markers import parse_parts
from tests.issues.helpers import GRADIENTS, Lines, make_state, publish


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
