"""Tests for site/cells.py: each cell's status, strip and needs-attention group."""

from __future__ import annotations

import pytest

from ivy_matrix.site.cells import (
    STALE_RUNS,
    STRIP,
    Group,
    cell_view,
    dashboard_cells,
    stale_before,
)
from tests.site.scenes import NEWEST, F, K, S, Y, cell, dashboard, sample_states


@pytest.mark.parametrize(
    ("outcomes", "group"),
    [
        ([S, S, S], None),
        ([F, S, S], Group.NEW),
        ([F, F, S], Group.FAILING),
        ([F, K, F, S], Group.FAILING),
        ([F, S, F, S], Group.FLAKY),
        ([S, F, S], Group.FLAKY),
        ([Y, S, S], Group.FLAKY),
        ([S, F, F], Group.FIXED),
        ([S, S, S, F, F], None),
        ([K, K], None),
    ],
)
def test_a_cell_is_listed_under_the_first_group_that_applies(outcomes, group):
    """New, failing, flaky and fixed follow history.py's streak and flakiness rules."""
    assert cell_view(cell("torch", outcomes), None).group == group


def test_status_is_the_newest_result_and_the_strip_holds_the_newest_runs():
    """The status is the newest result's outcome; the strip keeps at most STRIP runs, newest first."""
    view = cell_view(cell("torch", [F] + [S] * (STRIP + 5)), None)

    assert view.status is F
    assert [r.outcome for r in view.results] == [F] + [S] * (STRIP - 1)
    assert [r.entry.run.run_id for r in view.results][:2] == [NEWEST, NEWEST - 1]


def test_a_cell_behind_its_backends_newest_runs_is_stale_whatever_its_outcome():
    """A cell with STALE_RUNS newer runs of its backend elsewhere in the store is stale."""
    old = dashboard(
        "old", {"test_old": {"torch": [F, F]}}, newest={"test_old": NEWEST - STALE_RUNS}
    )
    recent = dashboard("new", {"test_now": {"torch": [S] * STALE_RUNS, "jax": [S]}})
    thresholds = stale_before([old, recent])

    groups = {
        (p.row.name, p.backend): p.view.group
        for state in (old, recent)
        for p in dashboard_cells(state, thresholds)
    }

    assert thresholds == {"torch": NEWEST - STALE_RUNS + 1}
    assert groups == {
        ("test_old", "torch"): Group.STALE,
        ("test_now", "torch"): None,
        ("test_now", "jax"): None,
    }


def test_dashboard_cells_come_row_by_row_in_display_order():
    """Cells come in row order, backends in column order, rows without a backend skipped."""
    state = sample_states()[0]

    placed = [(p.row.name, p.backend) for p in dashboard_cells(state, {})]

    assert placed[:4] == [
        ("test_green", "torch"),
        ("test_green", "numpy"),
        ("test_green", "jax"),
        ("test_new", "torch"),
    ]
    assert ("test_flips", "jax") not in placed
