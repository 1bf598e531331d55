"""Tests for issues/markers.py: the hidden markers, how a body is read, and how it is measured."""

from __future__ import annotations

from ivy_matrix.issues.bodies import compose_issue
from ivy_matrix.issues.markers import (
    BEGIN,
    INDEX_MARKER,
    continuation_marker,
    continuation_part,
    dashboard_key,
    dashboard_marker,
    is_index,
    is_ours,
    issue_title,
    outside_region,
    parse_parts,
    parse_revision,
    parse_writes,
    utf16_len,
    with_writes,
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


def adversarial_markers() -> dict[str, str]:
    """1 MB bodies of near-miss markers: unterminated keys, digits with no end, openers
    repeated on one line and on many."""
    size = 1 << 20
    unterminated = "<!-- ivy-matrix:dashboard=" + "k" * size
    return {
        "unterminated key": unterminated,
        "unterminated part": unterminated[:-10] + ":part=" + "9" * 4,
        "many marker lines": "<!-- ivy-matrix:dashboard=k\n" * (size // 28),
        "revision digits": f"{BEGIN}<!-- ivy-matrix:revision=" + "9" * size,
        "parts openers": BEGIN + "<!-- ivy-matrix:parts=1" * (size // 23),
        "index look-alikes": "<!-- ivy-matrix:index --" * (size // 24),
    }


def test_every_marker_reader_reads_a_one_megabyte_near_miss_as_no_marker():
    """Each reader of a body (key, index, part, revision, parts, the maintainer's text) scans
    1 MB of near-miss markers and finds none: the patterns have no nested repeats, so they
    finish in one pass (the suite's hang guard would catch one that backtracks)."""
    for shape, body in adversarial_markers().items():
        assert dashboard_key(body) is None, shape
        assert not is_index(body), shape
        assert continuation_part(body, "k") is None, shape
        assert parse_revision(body) is None, shape
        assert parse_parts(body) == 0, shape
        before, _ = outside_region(body)
        assert len(before) <= len(body) + 1, shape


def test_with_writes_replaces_only_the_record_of_an_index_body():
    """The record is replaced where it stands, or put after the revision's marker when the
    body has none; everything else stays byte for byte, line breaks GitHub wrote as CRLF too."""
    body = (
        f"{INDEX_MARKER}\nkept\n{BEGIN}\n<!-- ivy-matrix:revision=5 -->\n"
        "<!-- ivy-matrix:writes=10+2 -->\n# Test dashboards\n<!-- ivy-matrix:end -->\ntail\n"
    )
    record = "<!-- ivy-matrix:writes=10+2,20+3+77 -->\n"
    written = with_writes(body, record)
    assert written == body.replace("<!-- ivy-matrix:writes=10+2 -->\n", record)
    assert parse_revision(written) == 5
    assert with_writes(written, "") == body.replace("<!-- ivy-matrix:writes=10+2 -->\n", "")
    assert with_writes(with_writes(written, ""), record) == written
    crlf = body.replace("\n", "\r\n")
    assert with_writes(crlf, record) == crlf.replace("<!-- ivy-matrix:writes=10+2 -->\r\n", record)
    assert len(parse_writes(with_writes(crlf, record))) == 2
    outside = "<!-- ivy-matrix:writes=1+1 -->\nno region here\n"
    assert with_writes(outside, record) == outside
