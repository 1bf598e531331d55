"""Tests for commands/folding.py: an update's results folded into the store's states, the
cells read let go as they are folded where the store folds them once."""

from __future__ import annotations

import io

import pytest

from ivy_matrix.commands.folding import change_of
from ivy_matrix.commands.job_links import Links
from ivy_matrix.config.settings import Settings
from ivy_matrix.model import CaseCounts, DashboardId, Outcome
from ivy_matrix.results.cells import CellResult, Collected
from ivy_matrix.runner.log import Log
from ivy_matrix.state import fold
from ivy_matrix.state.merge import apply_batch
from ivy_matrix.stores import Change
from ivy_matrix.stores.branch import BranchStore
from ivy_matrix.stores.local import LocalStore

SETTINGS = Settings(run_id=5, job_id=9, repository="o/r")


def collected_of(dashboards: int) -> Collected:
    collected = Collected()
    for index in range(dashboards):
        collected.dashboards[DashboardId(title=f"d{index}")] = {
            f"test_{row}": {"torch": CellResult(Outcome.SUCCESS, CaseCounts(passed=1))}
            for row in range(3)
        }
    return collected


def change_for(collected: Collected, *, once: bool) -> Change:
    links = Links(settings=SETTINGS, jobs={}, now="2026-11-29T12:00:00Z")
    return change_of(
        SETTINGS, collected, links, Log(github_actions=False, stream=io.StringIO()), once=once
    )


def test_the_local_store_folds_once_and_each_dashboards_cells_go_as_it_is_folded(
    tmp_path, monkeypatch
):
    """While a dashboard is merged, the cells read of those merged before are gone: the new
    states take their place instead of sitting beside them."""
    collected = collected_of(3)
    left: list[int] = []

    def counting(*args, **kwargs):
        left.append(len(collected.dashboards))
        return apply_batch(*args, **kwargs)

    monkeypatch.setattr(fold, "apply_batch", counting)
    store = LocalStore(tmp_path / "store")

    saved = store.update(change_for(collected, once=store.changes_once))

    assert store.changes_once
    assert left == [2, 1, 0]
    assert sorted(saved.merged.changed) == ["d0", "d1", "d2"]
    assert saved.merged.changed_cells == 9


def test_a_change_folded_once_refuses_a_second_call_rather_than_fold_nothing():
    """Its cells are gone after the first call: a second would lose them silently."""
    change = change_for(collected_of(2), once=True)

    assert change({}).changed_cells == 6
    with pytest.raises(RuntimeError, match="folded once only"):
        change({})


def test_a_change_a_store_may_call_again_keeps_the_cells_and_gives_the_same_result():
    """The branch store calls its change again on a fresher read (its compare-and-swap): each
    call builds its batches anew from the cells, which stay."""
    collected = collected_of(2)
    change = change_for(collected, once=BranchStore.changes_once)

    first, second = change({}), change({})

    assert not BranchStore.changes_once
    assert first.states == second.states
    assert first.changed_cells == second.changed_cells == 6
    assert len(collected.dashboards) == 2
