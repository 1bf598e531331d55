"""Tests for adopt.py: Ivy's own tables read back cell by cell, byte for byte."""

from __future__ import annotations

import pytest

from ivy_matrix.adopt import adopt_table, parse_cell
from ivy_matrix.errors import InputError
from ivy_matrix.merge import Batch, apply_batch
from ivy_matrix.model import UNKNOWN_RUN, DashboardId, Entry, Outcome, RunKey, Source
from ivy_matrix.render import render_dashboard
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


def test_adopted_cells_carry_status_run_and_job():
    """Each adopted cell knows its status, link, run id and job id."""
    text = seeds()[0].read_text(encoding="utf-8")
    state = adopt_table(text, DASH)
    first = state.rows[0]
    assert first.name == "test_gradient_descent_update"
    torch = first.cells["torch"].latest
    assert torch.outcome is Outcome.FAILURE
    assert torch.run == RunKey(4519909128, 0, 7960678746)
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
    with pytest.raises(InputError, match="row 'test_x', column 'torch'"):
        adopt_table("| | torch |\n|:--|:--|\n| test_x | maybe |", DASH)


def test_not_a_table_is_refused():
    """A file with no markdown table gives a clear error."""
    with pytest.raises(InputError, match="no markdown table"):
        adopt_table("just some text\n", DASH)


def test_compact_and_other_badge_labels_are_understood():
    """Our compact cells and common badge labels read back as outcomes."""
    assert parse_cell("✅", "x") is not None
    failure = parse_cell("[❌](https://github.com/o/r/actions/runs/5/job/6)", "x")
    assert failure is not None
    assert failure.outcome is Outcome.FAILURE
    assert failure.run == RunKey(5, 0, 6)
    passed = parse_cell("<img src=https://img.shields.io/badge/-passed-brightgreen>", "x")
    assert passed is not None
    assert passed.outcome is Outcome.SUCCESS
    assert parse_cell("", "x") is None
