"""Tests for issues/bodies.py: dashboard and index bodies composed within the size budget."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ivy_matrix.escaping import escape_name
from ivy_matrix.issues.bodies import NAME_CAP, compose_index, compose_issue
from ivy_matrix.issues.markers import (
    BEGIN,
    BODY_LIMIT,
    END,
    INDEX_MARKER,
    continuation_marker,
    continuation_part,
    dashboard_marker,
    is_index,
    parse_parts,
    parse_revision,
    utf16_len,
)
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome
from ivy_matrix.state.merge import Batch, apply_batch, union_states
from ivy_matrix.state.paths import dashboard_file
from ivy_matrix.views.dashboards import render_dashboard, render_files
from ivy_matrix.views.style import Style
from tests.explain.test_slowdowns import generated_history
from tests.issues.helpers import GRADIENTS, RANDOM, make_state, source

KEY = GRADIENTS
OUTCOMES = (Outcome.SUCCESS, Outcome.FAILURE, Outcome.SKIPPED, Outcome.FLAKY)


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


def test_fresh_body_has_marker_region_heading_and_the_ivy_table():
    """A new body starts with the marker and holds the Ivy table inside the region."""
    state = make_state(KEY, 3)
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
    state = make_state(KEY, 5)
    first = compose_issue(state, existing_body=None, revision=None)
    again = compose_issue(state, existing_body=first.body, revision=None)
    assert again == first


def test_maintainer_text_before_and_after_the_region_is_kept_verbatim():
    """Text around the region (CRLF included) survives an update; the marker stays first."""
    old = compose_issue(make_state(KEY, 2), existing_body=None, revision=1).body
    edited = "Note from a maintainer:\r\nplease ping @team\r\n" + old.replace(
        END + "\n", END + "\r\n\r\nTracking: #12\r\n"
    )
    new = compose_issue(make_state(KEY, 4), existing_body=edited, revision=2).body
    assert new.startswith(dashboard_marker("core/gradients") + "\n")
    assert "\nNote from a maintainer:\r\nplease ping @team\r\n" + BEGIN in new
    assert new.endswith(END + "\r\n\r\nTracking: #12\r\n")
    assert parse_revision(new) == 2
    assert "test_00003" in new


def test_a_body_without_a_region_keeps_its_text_above_a_new_region():
    """An issue whose region was deleted keeps all its text; the region is added below."""
    existing = dashboard_marker("core/gradients") + "\nJust notes, no table."
    body = compose_issue(make_state(KEY, 1), existing_body=existing, revision=None).body
    assert body.startswith(dashboard_marker("core/gradients") + "\nJust notes, no table.\n" + BEGIN)


def test_over_budget_ivy_table_switches_to_compact():
    """A dashboard too big in the Ivy style but small enough in compact is drawn compact."""
    state = make_state(KEY, 200, fail_every=50)
    assert utf16_len(render_dashboard(state)) > 65_536
    bodies = compose_issue(state, existing_body=None, revision=None)
    assert (bodies.style, bodies.continuations) == (Style.COMPACT, ())
    assert render_dashboard(state, Style.COMPACT) in bodies.body
    assert utf16_len(bodies.body) <= 65_536 - 1_000


def test_over_budget_compact_table_is_split_into_complete_tables():
    """A bigger dashboard is split: every part a table with the header, every row once."""
    state = make_state(KEY, 2500)
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
    state = make_state(KEY, names)
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
    state = make_state(KEY, names, ("torch", "jax", "numpy", "tensorflow"), fail_every=2)
    bodies = compose_issue(state, existing_body=None, revision=3)
    texts = [bodies.body, *bodies.continuations]
    assert len(texts) > 1
    assert max(utf16_len(t) for t in texts) <= 65_536 - 1_000
    assert sum((Counter(table_rows(t)) for t in texts), Counter()) == expected_rows(state)


def test_union_of_two_states_keeps_every_cell():
    """Two writers' states of one dashboard merge into one holding both writers' cells."""
    a = make_state(KEY, 5, ("torch",))
    b = make_state(KEY, 7, ("jax",), run=101)
    merged = union_states(a, b)
    assert merged.backend_names == ("torch", "jax")
    assert [r.name for r in merged.rows] == [f"test_{i:05d}" for i in range(7)]
    assert set(merged.rows[0].cells) == {"torch", "jax"}
    assert union_states(merged, a) == merged
    assert merged.runs == (101, 100)


def test_index_links_every_dashboard_with_counts():
    """The index lists each linked dashboard with passing/total per backend."""
    first = make_state(KEY, 3, ("torch", "jax"))
    second = make_state(RANDOM, 4, ("torch",))
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
    states = [make_state(DashboardId(title=f"d{i:04d}"), 1, ("torch",)) for i in range(800)]
    links = {s.key: f"https://github.com/acme/widgets/issues/{i}" for i, s in enumerate(states)}
    body = compose_index(states, links, budget=20_000)
    assert utf16_len(body) <= 20_000
    assert "more dashboard(s) not listed here" in body
    assert "[1/1](" not in body


def test_the_index_issue_shows_the_slower_and_slowest_tests_as_the_index_page_does():
    """Issue 28: the pinned index issue lists the cells that got slower and each backend's
    slowest tests, the same sections the branch's index page draws, each linking the issue."""
    state = generated_history()
    link = "https://github.com/o/r/issues/7"
    body = compose_index([state], {state.key: link})
    page = {f.path: f.text for f in render_files([state], style=Style.IVY)}["README.md"]
    assert page is not None
    for title in ("## Slower", "## Slowest"):
        assert title in page
        issue_part = body.split(f"{title}\n\n", 1)[1].split("\n\n", 1)[0]
        page_part = page.split(f"{title}\n\n", 1)[1].split("\n\n", 1)[0]
        assert issue_part == page_part.replace(dashboard_file(state), link)
    assert "test_code" in body.split("## Slower\n\n", 1)[1]
