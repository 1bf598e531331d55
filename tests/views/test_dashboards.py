"""Tests for views/dashboards.py: Ivy's exact table, escaping, the compact style and the index page."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tabulate import tabulate

from ivy_matrix.escaping import escape_name, unescape_name
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source, Totals
from ivy_matrix.state.merge import Batch, apply_batch
from ivy_matrix.state.totals import backend_totals
from ivy_matrix.views.dashboards import render_dashboard, render_job_summary
from ivy_matrix.views.index_page import render_index
from ivy_matrix.views.readback import split_row
from ivy_matrix.views.style import Style
from ivy_matrix.views.tables import table

SOURCE = Source(
    run=RunKey(4519909128, 1, 7960678746),
    url="https://github.com/unifyai/ivy/actions/runs/4519909128/job/7960678746",
    time="2026-11-21T00:00:00Z",
)


def state_of(cells: dict[str, dict[str, Outcome]], title: str = "gradients") -> DashboardState:
    batch = Batch(
        dashboard=DashboardId(title=title, category="core"),
        cells={
            row: {b: Entry(source=SOURCE, outcome=o) for b, o in by_backend.items()}
            for row, by_backend in cells.items()
        },
    )
    return apply_batch(None, batch).state


MIXED = {
    "test_adam_update": {"torch": Outcome.SUCCESS, "numpy": Outcome.FAILURE, "jax": Outcome.FLAKY},
    "test_random_normal": {"torch": Outcome.SKIPPED, "jax": Outcome.SUCCESS},
    "TestLayers.test_linear": {"numpy": Outcome.SUCCESS},
}


def test_mixed_outcomes_render_as_ivy_badges(golden):
    """Every outcome gets its badge inside a job link, empty cells stay empty."""
    golden("mixed_outcomes", render_dashboard(state_of(MIXED)) + "\n")


def test_compact_style_links_only_cells_that_need_a_look(golden):
    """The compact style is an emoji per cell, linked only for failures and flaky passes."""
    golden("compact_style", render_dashboard(state_of(MIXED), Style.COMPACT) + "\n")


def test_numeric_backend_names_are_kept_as_written(golden):
    """A backend called 3.10 is not rendered as 3.1."""
    state = state_of({"test_x": {"3.10": Outcome.SUCCESS, "3.9": Outcome.FAILURE}})
    text = render_dashboard(state)
    assert "| 3.10 " in text.splitlines()[0]
    golden("numeric_backend_names", text + "\n")


def test_index_counts_passing_over_total_per_backend(golden):
    """The index links each dashboard with passing/total per backend, skips left out."""
    states = [state_of(MIXED), state_of({"test_conv": {"torch": Outcome.FAILURE}}, "layers")]
    counts = {b: (t.passing, t.total) for b, t in backend_totals(states[0]).items()}
    assert counts == {"torch": (1, 1), "numpy": (1, 2), "jax": (2, 2)}
    golden("index", render_index(states, lambda s: f"{s.key}.md"))


HOSTILE = [
    "test_x[a|b]",
    "test_<script>alert(1)</script>",
    "test_@octocat_ping",
    "test_`code`",
    "test_line\nbreak",
    "test_[link](https://evil.example)",
    "test_back\\slash|pipe",
    "test_*bold*_~strike~",
]


def test_hostile_names_cannot_break_the_table():
    """Pipes, HTML, mentions, backticks and newlines in names stay inside their cell."""
    state = state_of({name: {"torch": Outcome.SUCCESS} for name in HOSTILE})
    lines = render_dashboard(state).splitlines()
    assert len(lines) == 2 + len(HOSTILE)
    for line in lines[2:]:
        assert len(split_row(line)) == 2
        assert "<script" not in line
        assert not re.search(r"@\w", line)
    assert [unescape_name(split_row(line)[0]) for line in lines[2:]] == [
        name.replace("\n", " ") for name in HOSTILE
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_escaping_is_safe_and_reversible(name):
    """Any escaped name has no bare pipe, tag, backtick, line break or mention, and reads back."""
    escaped = escape_name(name)
    assert not re.search(r"(?<!\\)(?:\\\\)*\|", escaped.replace("\\\\", ""))
    # The one tag escaping writes: a dollar in a span, so that it cannot start math.
    assert "<" not in escaped.replace("<span>$</span>", "")
    assert ">" not in escaped.replace("<span>$</span>", "")
    assert "\n" not in escaped
    assert "\r" not in escaped
    assert not re.search(r"(?<!\\)`", escaped)
    assert not re.search(r"@[A-Za-z0-9]", escaped)
    assert not re.search(r"(?<!&)#(?!&#8203;)", escaped)
    assert "$" not in escaped.replace("<span>$</span>", "")
    assert unescape_name(escaped) == "".join(map(shown_as, name))
    assert len(split_row(f"| {escaped} | x |")) == 2


def shown_as(char: str) -> str:
    """What a name's character reads back as: line breaks a space, hidden characters U+FFFD."""
    if char in "\n\r\t":
        return " "
    return "\ufffd" if unicodedata.category(char) in {"Cc", "Cf", "Zl", "Zp"} else char


@pytest.mark.parametrize(
    ("name", "escaped"),
    [
        ("test_issue_#123", "test_issue_#&#8203;123"),
        ("test_owner/repo#7", "test_owner/repo#&#8203;7"),
        ("test_GH-12_and_gh-3", "test_GH-&#8203;12_and_gh-&#8203;3"),
        ("test_$x^2$", "test_<span>$</span>x^2<span>$</span>"),
        (
            "test_\u202eevil\u2066x\u2069\u200e\u200f\u061c",
            "test_\ufffdevil\ufffdx\ufffd\ufffd\ufffd\ufffd",
        ),
        (
            "test_zero\u200b\u200c\u200d\u2060\ufeffwidth",
            "test_zero\ufffd\ufffd\ufffd\ufffd\ufffdwidth",
        ),
        ("test_plain[torch-cpu]", "test_plain\\[torch-cpu\\]"),
    ],
)
def test_references_math_and_hidden_characters_are_neutralised(name, escaped):
    """Issue references do not link, dollars do not start math, hidden characters show as U+FFFD."""
    assert escape_name(name) == escaped
    assert unescape_name(escaped) == "".join(map(shown_as, name))


def test_every_hidden_character_this_python_knows_is_replaced():
    """Each control, separator and format character of this Python's Unicode shows as U+FFFD."""
    hidden = [
        chr(c)
        for c in range(0x110000)
        if unicodedata.category(chr(c)) in {"Cc", "Cf", "Zl", "Zp"} and chr(c) not in "\n\r\t"
    ]
    assert escape_name("".join(hidden)) == "\ufffd" * len(hidden)


CELL_TEXT = st.text(
    alphabet=st.characters(min_codepoint=32, max_codepoint=126) | st.sampled_from("✅❌⏭️🔁é漢\t"),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda n: st.tuples(
            st.lists(CELL_TEXT, min_size=n, max_size=n),
            st.lists(st.lists(CELL_TEXT, min_size=n, max_size=n), max_size=5),
        )
    )
)
def test_table_matches_tabulate_byte_for_byte(header_and_rows):
    """The fast table writer gives exactly tabulate's pipe table, whatever the cells hold."""
    header, rows = header_and_rows
    expected = tabulate(
        rows, headers=header, tablefmt="pipe", stralign="left", disable_numparse=True
    )
    assert table(header, rows) == expected


def test_a_stored_link_that_is_not_http_is_never_drawn():
    """A cell whose stored link is javascript:, data: or relative shows its badge with no link."""
    for url in ["javascript:alert(1)", "data:text/html,x", "//evil.example", "null"]:
        source = Source(run=RunKey(1, 1, 1), url=url)
        batch = Batch(
            dashboard=DashboardId(title="x"),
            cells={"test_x": {"torch": Entry(source=source, outcome=Outcome.FAILURE)}},
        )
        state = apply_batch(None, batch).state
        compact = render_dashboard(state, Style.COMPACT)
        assert "](" not in compact, url
        assert "❌" in compact
        ivy = render_dashboard(state)
        assert "href" not in ivy or url == "null", url
        assert "<img src=https://img.shields.io/badge/-failure-red>" in ivy


def test_the_job_summary_quotes_each_note_below_the_index_link_escaped():
    """A target's note (what waits for a later run) is quoted under the index link, with the
    dashboard names in it escaped like every name."""
    summary = render_job_summary(
        [],
        totals=Totals(tests=1, failed=0, errors=0, skipped=0),
        problems=[],
        index_url="https://github.com/o/r/issues/1",
        notes=["issues: 1 of 2 dashboard issue(s) wait for a later run. Waiting: a|b_*c*"],
    )
    _, note = summary.split("All dashboards: https://github.com/o/r/issues/1\n\n")
    assert note.startswith(
        "> issues: 1 of 2 dashboard issue(s) wait for a later run. Waiting: "
        + escape_name("a|b_*c*")
        + "\n\n"
    )
    assert "a|b" not in summary
