"""Tests for issues/markers.py: the hidden markers, how a body is read, and how it is measured."""

from __future__ import annotations

from ivy_matrix.issues.bodies import compose_issue
from ivy_matrix.issues.markers import (
    INDEX_MARKER,
    continuation_marker,
    continuation_part,
    dashboard_key,
    dashboard_marker,
    is_index,
    is_ours,
    issue_title,
    parse_revision,
    utf16_len,
)
from tests.issues.helpers import GRADIENTS, make_state

KEY = GRADIENTS


def test_utf16_length_counts_astral_characters_twice():
    """An emoji outside the BMP counts two UTF-16 units, a BMP character one."""
    assert utf16_len("a✅🔁") == 1 + 1 + 2


def test_markers_round_trip_any_key_and_never_match_another():
    """A key with spaces, colons and '-->' is encoded in its marker and read back exactly."""
    key = "odd: key --> part=2/x"
    body = dashboard_marker(key) + "\ntext\n"
    assert "-->" not in dashboard_marker(key)[: -len("-->")]
    assert dashboard_key(body) == key
    assert is_ours(body, key)
    assert not is_ours(body, "odd")
    assert not is_ours(dashboard_marker("core/gradients") + "\n", "core/gradient")
    assert not is_index(body)
    assert is_index(INDEX_MARKER + "\n")
    comment = continuation_marker(key, 3) + "\n| t |"
    assert continuation_part(comment, key) == 3
    assert continuation_part(comment, "other") is None
    assert dashboard_key(comment) is None
    assert continuation_part(dashboard_marker(key), key) is None


def test_titles_are_one_line_and_capped():
    """A new issue's title names the dashboard on one line, at most 256 characters."""
    assert issue_title("core/gradients") == "ivy-matrix: core/gradients"
    long = issue_title("x\n" * 400)
    assert "\n" not in long
    assert len(long) == 256


def test_revision_outside_the_region_is_ignored():
    """Only the region's revision counts, not a marker a maintainer pasted outside it."""
    body = compose_issue(make_state(KEY, 1), existing_body=None, revision=None).body
    assert parse_revision(body + "<!-- ivy-matrix:revision=99 -->\n") is None
