"""Tests for readback.py: Ivy's own tables read back cell by cell, byte for byte."""

from __future__ import annotations

import json

import pytest

from ivy_matrix.errors import InputError, ProblemsError
from ivy_matrix.model import UNKNOWN_RUN, DashboardId, Entry, Outcome, RunKey, Source
from ivy_matrix.results.jobs import run_key_from_url
from ivy_matrix.state.merge import Batch, apply_batch
from ivy_matrix.state.statefile import dump_state, load_state
from ivy_matrix.views.dashboards import render_dashboard
from ivy_matrix.views.readback import adopt_table, parse_cell
from ivy_matrix.views.style import Style
from tests.conftest import shared_dir

DASH = DashboardId(title="gradients", category="core")


def seeds():
    return sorted(shared_dir("ivy-seeds").glob("0*.txt"))


def test_every_seed_table_renders_back_to_the_same_bytes():
    """Adopting an Ivy table and rendering it again gives back exactly the same text."""
    tables = seeds()
    assert len(tables) >= 3
    for path in tables:
        text = path.read_text(encoding="utf-8")
        assert render_dashboard(adopt_table(text, DASH)) == text, path.name


def test_adopted_cells_carry_status_and_the_link_naming_run_and_job():
    """Each adopted cell knows its status and its link, from which its run id and job id read
    back; its own place in run order is unknown (older than any run)."""
    text = seeds()[0].read_text(encoding="utf-8")
    state = adopt_table(text, DASH)
    first = state.rows[0]
    assert first.name == "test_gradient_descent_update"
    torch = first.cells["torch"].latest
    assert torch.outcome is Outcome.FAILURE
    assert run_key_from_url(torch.source.url) == RunKey(4519909128, 0, 7960678746)
    assert torch.run == UNKNOWN_RUN
    assert state.runs == ()
    tensorflow = first.cells["tensorflow"].latest
    assert tensorflow.source.url == "null"
    assert tensorflow.run == UNKNOWN_RUN
    cells = [c for row in state.rows for c in row.cells.values()]
    assert len(cells) == 66


def test_one_new_result_changes_one_cell_only():
    """Applying one result to an adopted table changes that cell's line and nothing else."""
    for path in seeds():
        text = path.read_text(encoding="utf-8")
        state = adopt_table(text, DASH)
        row = state.rows[3]
        backend = state.backend_names[1]
        old = row.cells[backend].latest.outcome if backend in row.cells else None
        new_outcome = Outcome.SUCCESS if old is Outcome.FAILURE else Outcome.FAILURE
        source = Source(
            run=RunKey(9_000_000_000, 1, 9_100_000_000),
            url="https://github.com/unifyai/ivy/actions/runs/9000000000/job/9100000000",
        )
        batch = Batch(
            dashboard=DASH, cells={row.name: {backend: Entry(source=source, outcome=new_outcome)}}
        )
        after = render_dashboard(apply_batch(state, batch).state)
        before_lines, after_lines = text.splitlines(), after.splitlines()
        assert len(before_lines) == len(after_lines)
        changed = [
            i
            for i, (a, b) in enumerate(zip(before_lines, after_lines, strict=True))
            if a.split() != b.split()
        ]
        assert changed == [5], path.name
        old_cells = [c.strip() for c in before_lines[5].split("|")]
        new_cells = [c.strip() for c in after_lines[5].split("|")]
        differing = [i for i, (a, b) in enumerate(zip(old_cells, new_cells, strict=True)) if a != b]
        assert differing == [3], path.name
        assert "9100000000" in new_cells[3]


def test_cells_without_a_known_badge_are_refused_by_name():
    """A cell the tool cannot read is an error naming its row and column, not a guess."""
    with pytest.raises(ProblemsError) as caught:
        adopt_table("| | torch |\n|:--|:--|\n| test_x | maybe |", DASH)
    assert caught.value.problems[0].startswith("row 'test_x', column 'torch': cannot read the cell")


def test_not_a_table_is_refused():
    """A file with no markdown table gives a clear error."""
    with pytest.raises(InputError, match="no markdown table"):
        adopt_table("just some text\n", DASH)


def test_compact_and_other_badge_labels_are_understood():
    """Our compact cells and common badge labels read back as outcomes."""
    assert parse_cell("✅") is not None
    failure = parse_cell("[❌](https://github.com/o/r/actions/runs/5/job/6)")
    assert failure is not None
    assert failure.outcome is Outcome.FAILURE
    assert run_key_from_url(failure.source.url) == RunKey(5, 0, 6)
    passed = parse_cell("<img src=https://img.shields.io/badge/-passed-brightgreen>")
    assert passed is not None
    assert passed.outcome is Outcome.SUCCESS
    assert parse_cell("") is None


IVY_LINK = '<a href="{url}" rel="noopener noreferrer" target="_blank">{badge}</a>'
SUCCESS = "<img src=https://img.shields.io/badge/-success-success>"
HOSTILE_CELLS = {
    "javascript": IVY_LINK.format(url="javascript:alert(1)", badge=SUCCESS),
    "data": IVY_LINK.format(url="data:text/html,<script>alert(1)</script>", badge=SUCCESS),
    "quote": IVY_LINK.format(url='https://x.example/" onmouseover="alert(1)', badge=SUCCESS),
    "entity": IVY_LINK.format(url="https://x.example/&quot; onerror=&quot;x", badge=SUCCESS),
    "script": SUCCESS + "<script>alert(1)</script>",
    "iframe": '<iframe src="https://evil.example"></iframe>' + SUCCESS,
    "onerror": '<img src=https://img.shields.io/badge/-success-success onerror="alert(1)">',
    "mention": SUCCESS + " @octocat",
    "compact": "[❌](javascript:alert(1))",
    "huge": IVY_LINK.format(url="https://x.example/" + "a" * 5_000_000, badge=SUCCESS),
}


def test_every_hostile_cell_is_a_problem_named_by_row_and_column():
    """Unsafe links, extra markup and huge cells are each reported; none of them is adopted."""
    header = "| | torch | jax |\n|:--|:--|:--|\n"
    rows = "".join(
        f"| test_{name} | {cell} | {SUCCESS} |\n" for name, cell in HOSTILE_CELLS.items()
    )
    with pytest.raises(ProblemsError) as caught:
        adopt_table(header + rows, DASH)
    problems = caught.value.problems
    assert [p.split(":", 1)[0] for p in problems] == [
        f"row 'test_{name}', column 'torch'" for name in HOSTILE_CELLS
    ]
    assert all(len(p) < 400 for p in problems)
    assert "cannot adopt core/gradients: 10 problem(s)" in str(caught.value)


def test_adopted_cells_are_drawn_again_from_status_and_link_only():
    """A readable cell is rendered from its parsed form: quoted src and markdown become Ivy's."""
    url = "https://github.com/o/r/actions/runs/5/job/6?a=1&amp;b=2"
    text = (
        "| | torch | jax | numpy |\n|:--|:--|:--|:--|\n"
        f'| test_\\<b\\>@me #1 | <a href="{url}" target="_blank">'
        '<img src="https://img.shields.io/badge/-failed-critical"></a> '
        "| [🔁](https://github.com/o/r/actions/runs/5/job/7) | ⏭ |"
    )
    state = adopt_table(text, DASH)
    (row,) = state.rows
    torch = row.cells["torch"].latest
    assert torch.outcome is Outcome.FAILURE
    assert torch.source.url == "https://github.com/o/r/actions/runs/5/job/6?a=1&b=2"
    assert row.cells["jax"].latest.outcome is Outcome.FLAKY
    assert row.cells["numpy"].latest.outcome is Outcome.SKIPPED
    rendered = render_dashboard(state)
    assert "&amp;b=2" in rendered
    assert "critical" not in rendered
    assert "@&#8203;me #&#8203;1" in rendered
    assert "<b" not in rendered.replace("<br", "")
    again = adopt_table(rendered, DASH)
    assert render_dashboard(again) == rendered
    compact = render_dashboard(again, Style.COMPACT)
    assert "[🔁](https://github.com/o/r/actions/runs/5/job/7)" in compact


def test_a_null_link_keeps_no_link_in_the_compact_style():
    """Ivy's href="null" is kept in its own style but never becomes a link elsewhere."""
    state = adopt_table(
        "| | torch |\n|:--|:--|\n| test_x | "
        + IVY_LINK.format(url="null", badge="<img src=https://img.shields.io/badge/-failure-red>")
        + " |",
        DASH,
    )
    assert "](null)" not in render_dashboard(state, Style.COMPACT)
    assert "❌" in render_dashboard(state, Style.COMPACT)


def test_a_state_with_an_old_adopted_text_draws_the_cell_from_its_link():
    """A cell text stored by an older version is ignored: the cell is drawn from its outcome."""
    document = json.loads(
        dump_state(adopt_table("| | torch |\n|:--|:--|\n| test_x | " + SUCCESS + " |", DASH))
    )
    # Version 1 (which older versions wrote) kept the text as a third item of a result.
    document["version"] = 1
    document["cells"] = [
        [[*record, "<script>alert(1)</script>"] for record in history]
        for history in document["cells"]
    ]
    state = load_state(json.dumps(document), where="old.json")
    assert "<script" not in render_dashboard(state)
    assert "-success-success" in render_dashboard(state)
