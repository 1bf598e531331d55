"""Tests for state/entries.py: an update's cells as the batches a store merges, one dashboard's
batch at a time."""

from __future__ import annotations

from ivy_matrix.model import CaseCounts, DashboardId, Outcome, RunKey, Source
from ivy_matrix.results.cells import CellResult, Collected
from ivy_matrix.state.entries import build_batches, runs_brought
from ivy_matrix.state.retirement import batch_runs

SOURCE = Source(run=RunKey(7, 1, 1), url="https://github.com/o/r/actions/runs/7/job/1")


def collected_of(dashboards: int, backends: tuple[str, ...] = ("torch",)) -> Collected:
    """``dashboards`` dashboards of two rows each, a passing and a failing cell a backend."""
    collected = Collected()
    for index in range(dashboards):
        collected.dashboards[DashboardId(title=f"d{index}")] = {
            "test_a": {b: CellResult(Outcome.SUCCESS, CaseCounts(passed=1)) for b in backends},
            "test_b": {
                b: CellResult(Outcome.FAILURE, CaseCounts(failed=1), "boom") for b in backends
            },
        }
    return collected


def test_with_take_each_dashboards_cells_leave_what_was_read_as_its_batch_is_built():
    """Batches come one at a time: the cells of a dashboard not yet reached are still where
    reading put them, and those of one whose batch was built are the batch's alone."""
    collected = collected_of(3)

    seen = [
        (batch.dashboard.title, len(batch.cells), len(collected.dashboards))
        for batch in build_batches(collected, lambda _: SOURCE, take=True)
    ]

    assert seen == [("d0", 2, 2), ("d1", 2, 1), ("d2", 2, 0)]


def test_without_take_the_cells_stay_and_build_the_same_batches_again():
    """A change a store may call again (the branch store's retries) builds its batches anew
    from cells that are still there."""
    collected = collected_of(2)

    first = [(b.dashboard, b.cells) for b in build_batches(collected, lambda _: SOURCE)]
    second = [(b.dashboard, b.cells) for b in build_batches(collected, lambda _: SOURCE)]

    assert first == second
    assert len(first) == len(collected.dashboards) == 2


def test_a_dashboard_only_recorded_files_reached_gets_an_empty_batch_with_take_too():
    """Taking the cells read does not make a dashboard they reached look reached only by
    files recorded before."""
    collected = collected_of(1)
    collected.touched = {DashboardId(title="d0"): None, DashboardId(title="old"): None}

    batches = list(build_batches(collected, lambda _: SOURCE, take=True))

    assert [(b.dashboard.title, len(b.cells)) for b in batches] == [("d0", 2), ("old", 0)]


def test_failing_cells_alike_share_one_entry_and_passing_ones_another():
    """Cells of equal results share an entry, whether found by the counts' identity or by
    value (each failing cell's counts are its own)."""
    collected = collected_of(2, backends=("torch", "jax"))

    batches = list(build_batches(collected, lambda _: SOURCE))

    entries = {
        (row, backend): {id(batch.cells[row][backend]) for batch in batches}
        for row in ("test_a", "test_b")
        for backend in ("torch", "jax")
    }
    assert all(len(ids) == 1 for ids in entries.values())
    assert len({next(iter(ids)) for ids in entries.values()}) == 4


def test_the_runs_brought_are_those_of_the_batches_known_before_they_are_built():
    """What the retirement window counts first is what the batches bring."""
    collected = collected_of(2, backends=("torch", "jax"))

    def source_for(backend: str) -> Source:
        run = 8 if backend == "jax" else 7
        return Source(run=RunKey(run, 1, 1), url=f"https://github.com/o/r/actions/runs/{run}")

    brought = runs_brought(collected, source_for)

    assert brought == batch_runs(list(build_batches(collected, source_for))) == {7, 8}
    assert runs_brought(Collected(), source_for) == set()
