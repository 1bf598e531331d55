"""Tests for totals.py: each backend's rows by latest outcome and their cases, added up."""

from __future__ import annotations

from ivy_matrix.model import CaseCounts, DashboardId, Entry, Outcome, RunKey, Source
from ivy_matrix.state.merge import Batch, apply_batch
from ivy_matrix.state.totals import BackendTotals, add_totals, backend_totals

SOURCE = Source(run=RunKey(1, 1, 1), url="u")


def entry(outcome: Outcome, counts: CaseCounts | None) -> Entry:
    return Entry(source=SOURCE, outcome=outcome, counts=counts)


def test_rows_count_by_latest_outcome_and_cases_where_known():
    """Shared cells count once per row; cells with unknown counts add rows but no cases."""
    shared = entry(Outcome.SUCCESS, CaseCounts(passed=2))
    cells = {
        "a": {"torch": shared, "jax": entry(Outcome.FAILURE, CaseCounts(passed=1, failed=3))},
        "b": {"torch": shared},
        "c": {"torch": entry(Outcome.SKIPPED, None), "jax": entry(Outcome.FLAKY, None)},
    }
    state = apply_batch(None, Batch(dashboard=DashboardId(title="d"), cells=cells)).state

    totals = backend_totals(state)

    assert totals == {
        "torch": BackendTotals(success=2, skipped=1, cases_passed=4),
        "jax": BackendTotals(failure=1, flaky=1, cases_passed=1, cases_failed=3),
    }
    assert (totals["jax"].passing, totals["jax"].total, totals["jax"].cases) == (1, 2, 4)


def test_totals_of_several_dashboards_add_up_per_backend():
    """Per backend, in first-seen order."""
    one = {"torch": BackendTotals(success=1), "jax": BackendTotals(failure=2)}
    two = {"numpy": BackendTotals(flaky=1), "torch": BackendTotals(success=3, cases_passed=5)}
    assert add_totals([one, two]) == {
        "torch": BackendTotals(success=4, cases_passed=5),
        "jax": BackendTotals(failure=2),
        "numpy": BackendTotals(flaky=1),
    }
