"""Tests for issues/markers.py, issues/state_block.py and issues/bodies.py: markers, state, bodies, size."""

from __future__ import annotations

import base64
import zlib
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ivy_matrix.errors import StoreError
from ivy_matrix.escaping import escape_name
from ivy_matrix.issues.bodies import NAME_CAP, compose_index, compose_issue
from ivy_matrix.issues.markers import (
    BEGIN,
    BODY_LIMIT,
    END,
    INDEX_MARKER,
    continuation_marker,
    continuation_part,
    dashboard_key,
    dashboard_marker,
    is_index,
    is_ours,
    issue_title,
    parse_parts,
    parse_revision,
    utf16_len,
)
from ivy_matrix.issues.state_block import IssueStateTooLargeError, embed_state, extract_state
from ivy_matrix.merge import Batch, apply_batch, union_states
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.render import Style, render_dashboard

KEY = DashboardId(title="gradients", category="core")
OUTCOMES = (Outcome.SUCCESS, Outcome.FAILURE, Outcome.SKIPPED, Outcome.FLAKY)


def source(job: int, run: int = 100) -> Source:
    return Source(
        run=RunKey(run, 1, job),
        url=f"https://github.com/acme/widgets/actions/runs/{run}/job/{job}",
        time="2026-11-21T10:00:00Z",
    )


def make_state(
    rows: int | list[str],
    backends: tuple[str, ...] = ("torch", "jax", "numpy"),
    *,
    dashboard: DashboardId = KEY,
    fail_every: int = 3,
    run: int = 100,
) -> DashboardState:
    names = [f"test_{i:05d}" for i in range(rows)] if isinstance(rows, int) else rows
    state = None
    for job, backend in enumerate(backends, start=1):
        src = source(job, run)
        cells = {
            name: {
                backend: Entry(
                    source=src,
                    outcome=Outcome.FAILURE if (i + job) % fail_every == 0 else Outcome.SUCCESS,
                )
            }
            for i, name in enumerate(names)
        }
        state = apply_batch(state, Batch(dashboard=dashboard, cells=cells)).state
    assert state is not None
    return state


def table_rows(text: str) -> list[str]:
    """The first cell of every data row of every pipe table in ``text``."""
    names = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        if lines[index].startswith("|") and index + 1 < len(lines):
            assert lines[index + 1].startswith(("|:", "|-")), "a table starts with its header"
            index += 2
            while index < len(lines) and lines[index].startswith("|"):
                names.append(lines[index][2:-2].split(" | ")[0].rstrip())
                index += 1
        index += 1
    return names


def expected_rows(state: DashboardState) -> Counter[str]:
    return Counter(
        escape_name(r.name if len(r.name) <= NAME_CAP else r.name[: NAME_CAP - 1] + "…").strip()
        for r in state.rows
    )


# --------------------------------------------------------------------------- markers


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


# --------------------------------------------------------------------------- bodies


def test_fresh_body_has_marker_region_heading_and_the_ivy_table():
    """A new body starts with the marker and holds the Ivy table inside the region."""
    state = make_state(3)
    bodies = compose_issue(state, existing_body=None, revision=7)
    lines = bodies.body.split("\n")
    assert lines[0] == dashboard_marker("core/gradients")
    assert lines[1] == BEGIN
    assert lines[2] == "<!-- ivy-matrix:revision=7 -->"
    assert lines[3] == "## core/gradients"
    assert render_dashboard(state) in bodies.body
    assert bodies.body.endswith(END + "\n")
    assert (bodies.style, bodies.continuations) == (Style.IVY, ())
    assert parse_revision(bodies.body) == 7
    assert parse_parts(bodies.body) == 0


def test_composing_again_from_its_own_body_changes_nothing():
    """Recomposing the same state over its own body gives the same bytes (no write needed)."""
    state = make_state(5)
    first = compose_issue(state, existing_body=None, revision=None)
    again = compose_issue(state, existing_body=first.body, revision=None)
    assert again == first


def test_maintainer_text_before_and_after_the_region_is_kept_verbatim():
    """Text around the region (CRLF included) survives an update; the marker stays first."""
    old = compose_issue(make_state(2), existing_body=None, revision=1).body
    edited = "Note from a maintainer:\r\nplease ping @team\r\n" + old.replace(
        END + "\n", END + "\r\n\r\nTracking: #12\r\n"
    )
    new = compose_issue(make_state(4), existing_body=edited, revision=2).body
    assert new.startswith(dashboard_marker("core/gradients") + "\n")
    assert "\nNote from a maintainer:\r\nplease ping @team\r\n" + BEGIN in new
    assert new.endswith(END + "\r\n\r\nTracking: #12\r\n")
    assert parse_revision(new) == 2
    assert "test_00003" in new


def test_a_body_without_a_region_keeps_its_text_above_a_new_region():
    """An issue whose region was deleted keeps all its text; the region is added below."""
    existing = dashboard_marker("core/gradients") + "\nJust notes, no table."
    body = compose_issue(make_state(1), existing_body=existing, revision=None).body
    assert body.startswith(dashboard_marker("core/gradients") + "\nJust notes, no table.\n" + BEGIN)


def test_revision_outside_the_region_is_ignored():
    """Only the region's revision counts, not a marker a maintainer pasted outside it."""
    body = compose_issue(make_state(1), existing_body=None, revision=None).body
    assert parse_revision(body + "<!-- ivy-matrix:revision=99 -->\n") is None


def test_over_budget_ivy_table_switches_to_compact():
    """A dashboard too big in the Ivy style but small enough in compact is drawn compact."""
    state = make_state(200, fail_every=50)
    assert utf16_len(render_dashboard(state)) > 65_536
    bodies = compose_issue(state, existing_body=None, revision=None)
    assert (bodies.style, bodies.continuations) == (Style.COMPACT, ())
    assert render_dashboard(state, Style.COMPACT) in bodies.body
    assert utf16_len(bodies.body) <= 65_536 - 1_000


def test_over_budget_compact_table_is_split_into_complete_tables():
    """A bigger dashboard is split: every part a table with the header, every row once."""
    state = make_state(2500)
    bodies = compose_issue(state, existing_body=None, revision=None)
    assert bodies.style is Style.COMPACT
    parts = len(bodies.continuations)
    assert parts >= 3
    assert parse_parts(bodies.body) == parts
    assert f"continues in {parts} comments below" in bodies.body
    for number, comment in enumerate(bodies.continuations, start=1):
        assert comment.startswith(continuation_marker("core/gradients", number) + "\n")
        assert continuation_part(comment, "core/gradients") == number
        header = comment.split("\n")[3]
        assert [cell.strip() for cell in header.split("|")] == ["", "", "torch", "jax", "numpy", ""]
        assert utf16_len(comment) <= 65_536 - 1_000
    found = Counter(table_rows(bodies.body))
    for comment in bodies.continuations:
        found.update(table_rows(comment))
    assert found == expected_rows(state)


def test_a_huge_test_name_is_capped_so_its_row_fits_a_comment():
    """A 100,000-character test name is cut, and the split still fits the budget."""
    names = ["x" * 100_000, *(f"t{i}" for i in range(50))]
    state = make_state(names)
    bodies = compose_issue(state, existing_body=None, revision=None, budget=20_000)
    texts = [bodies.body, *bodies.continuations]
    assert all(utf16_len(t) <= 20_000 for t in texts)
    assert sum((Counter(table_rows(t)) for t in texts), Counter()) == expected_rows(state)


NAME_CHARS = st.sampled_from(list("abcxyz_019[]|*@<>&-.é✅🔥 \\`~"))
ROW_NAMES = st.lists(
    st.text(NAME_CHARS, min_size=1, max_size=40), min_size=0, max_size=60, unique=True
)
BACKENDS = st.lists(
    st.sampled_from(["torch", "jax", "numpy", "tensorflow", "3.10", "b|c", "🔥"]),
    min_size=1,
    max_size=4,
    unique=True,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=ROW_NAMES,
    backends=BACKENDS,
    budget=st.integers(min_value=3_000, max_value=30_000),
    outcomes=st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=8),
    style=st.sampled_from(Style),
    revision=st.none() | st.integers(min_value=0, max_value=10**12),
)
def test_no_part_passes_the_budget_and_every_row_appears_once(  # noqa: PLR0917  -- hypothesis passes one argument per strategy
    names, backends, budget, outcomes, style, revision
):
    """Whatever the rows, every body and comment fits the budget and holds each row once."""
    state = None
    for job, backend in enumerate(backends, start=1):
        cells = {
            name: {backend: Entry(source=source(job), outcome=outcomes[(i + job) % len(outcomes)])}
            for i, name in enumerate(names)
        }
        state = apply_batch(state, Batch(dashboard=KEY, cells=cells)).state
    assert state is not None
    bodies = compose_issue(
        state, existing_body="above\n", revision=revision, budget=budget, style=style
    )
    texts = [bodies.body, *bodies.continuations]
    assert all(utf16_len(t) <= budget for t in texts)
    assert all(len(t) <= BODY_LIMIT for t in texts)
    found = sum((Counter(table_rows(t)) for t in texts), Counter())
    assert found == expected_rows(state)
    assert parse_revision(bodies.body) == revision


def test_a_big_dashboard_with_emoji_names_stays_under_the_limit_in_utf16():
    """Thousands of rows with astral-plane names never pass 65,536 UTF-16 units per part."""
    names = [f"test_🔥{i}_{'✅' * (i % 7)}" for i in range(4000)]
    state = make_state(names, ("torch", "jax", "numpy", "tensorflow"), fail_every=2)
    bodies = compose_issue(state, existing_body=None, revision=3)
    texts = [bodies.body, *bodies.continuations]
    assert len(texts) > 1
    assert max(utf16_len(t) for t in texts) <= 65_536 - 1_000
    assert sum((Counter(table_rows(t)) for t in texts), Counter()) == expected_rows(state)


# --------------------------------------------------------------------------- hidden state


def test_state_block_round_trips_inside_the_region():
    """The embedded state reads back equal, hidden in the region, and is replaced in place."""
    state = make_state(20)
    body = compose_issue(state, existing_body=None, revision=None, with_state=True).body
    assert extract_state(body) == state
    block_at = body.index("<!-- ivy-matrix:state")
    assert body.index(BEGIN) < block_at < body.index(END)
    newer = make_state(25)
    again = embed_state(body, newer)
    assert again.count("<!-- ivy-matrix:state") == 1
    assert extract_state(again) == newer


def test_a_body_without_a_state_block_has_no_state():
    """Bodies written without state (the branch mode) read as None."""
    body = compose_issue(make_state(2), existing_body=None, revision=None).body
    assert extract_state(body) is None
    assert extract_state(None) is None


def test_a_damaged_state_block_is_a_store_error_that_says_what_to_do():
    """A block that is not base64/zlib names the issue and tells how to start afresh."""
    body = compose_issue(make_state(2), existing_body=None, revision=None, with_state=True).body
    start = body.index("<!-- ivy-matrix:state") + len("<!-- ivy-matrix:state\n")
    broken = body[:start] + "AAAA" + body[start + 4 :]
    with pytest.raises(StoreError, match=r"issue #3.*delete the ivy-matrix:state block"):
        extract_state(broken, where="issue #3")


def test_a_state_block_that_inflates_too_far_is_refused():
    """A block that would inflate past the cap is refused instead of eating memory."""
    bomb = base64.b64encode(zlib.compress(b" " * (65 * 1024 * 1024))).decode()
    body = f"{BEGIN}\n<!-- ivy-matrix:state\n{bomb}\n-->\n{END}\n"
    with pytest.raises(StoreError, match="too large"):
        extract_state(body)


def test_state_that_does_not_fit_says_to_use_the_branch_target():
    """When the state alone passes the budget, the error names contents: write and the branch."""
    names = [f"test_{i}_{i * 7919 % 104729}" for i in range(400)]
    state = make_state(names, ("torch", "jax", "numpy", "tensorflow", "paddle"))
    with pytest.raises(IssueStateTooLargeError) as caught:
        compose_issue(state, existing_body=None, revision=None, budget=3_000, with_state=True)
    message = str(caught.value)
    assert "contents: write" in message
    assert "'branch'" in message
    body = compose_issue(make_state(1), existing_body=None, revision=None).body
    with pytest.raises(IssueStateTooLargeError):
        embed_state(body, state, budget=3_000)


def test_union_of_two_states_keeps_every_cell():
    """Two writers' states of one dashboard merge into one holding both writers' cells."""
    a = make_state(5, ("torch",))
    b = make_state(7, ("jax",), run=101)
    merged = union_states(a, b)
    assert merged.backend_names == ("torch", "jax")
    assert [r.name for r in merged.rows] == [f"test_{i:05d}" for i in range(7)]
    assert set(merged.rows[0].cells) == {"torch", "jax"}
    assert union_states(merged, a) == merged
    assert merged.runs == (101, 100)


# --------------------------------------------------------------------------- index


def test_index_links_every_dashboard_with_counts():
    """The index lists each linked dashboard with passing/total per backend."""
    first = make_state(3, ("torch", "jax"))
    second = make_state(4, ("torch",), dashboard=DashboardId(title="random", category="core"))
    links = {
        "core/gradients": "https://github.com/acme/widgets/issues/1",
        "core/random": "https://github.com/acme/widgets/issues/2",
    }
    body = compose_index([second, first], links)
    assert body.startswith(INDEX_MARKER + "\n" + BEGIN + "\n")
    assert "[core/gradients](https://github.com/acme/widgets/issues/1)" in body
    assert "[core/random](https://github.com/acme/widgets/issues/2)" in body
    assert "[2/3](https://github.com/acme/widgets/issues/1)" in body
    assert is_index(body)
    assert compose_index([first, second], links, existing_body="intro\n" + body) == (
        body.replace(BEGIN, "intro\n" + BEGIN, 1)
    )


def test_an_index_over_budget_drops_links_then_rows():
    """A huge index keeps only name links, then leaves dashboards out with a closing line."""
    states = [
        make_state(1, ("torch",), dashboard=DashboardId(title=f"d{i:04d}")) for i in range(800)
    ]
    links = {s.key: f"https://github.com/acme/widgets/issues/{i}" for i, s in enumerate(states)}
    body = compose_index(states, links, budget=20_000)
    assert utf16_len(body) <= 20_000
    assert "more dashboard(s) not listed here" in body
    assert "[1/1](" not in body
