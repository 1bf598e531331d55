"""Tests for the trend the stores keep: trend.json in the local folder and on the branch."""

from __future__ import annotations

import pytest

from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardId, Entry, Outcome, RunKey, Source
from ivy_matrix.state.fold import Merged, merge_batches
from ivy_matrix.state.merge import Batch, join_batches
from ivy_matrix.state.trend import TREND_NAME, load_trend
from ivy_matrix.stores.local import LocalStore
from tests.stores.helpers import BRANCH, RUN, client, leg_batches, store

CORE = DashboardId(title="core")


def change(run: int, outcome: Outcome):
    source = Source(run=RunKey(run, 1, 1), url=f"https://github.com/o/r/actions/runs/{run}/job/1")
    batch = Batch(dashboard=CORE, cells={"a": {"torch": Entry(source=source, outcome=outcome)}})
    return lambda states: merge_batches(states, [batch])


def test_the_local_store_keeps_a_point_per_run_and_hands_it_to_the_output_folder(tmp_path):
    """Each update adds its run's point to trend.json; after_save sees the same trend."""
    seen: list[Merged] = []

    def after_save(merged: Merged) -> tuple[str, ...]:
        seen.append(merged)
        return ()

    store = LocalStore(tmp_path, after_save=after_save)

    store.update(change(1, Outcome.SUCCESS))
    saved = store.update(change(2, Outcome.FAILURE))

    trend = store.load_trend()
    assert [(p.run, p.backends[0][1].passed, p.backends[0][1].failed) for p in trend.points] == [
        (1, 1, 0),
        (2, 0, 1),
    ]
    assert seen[-1].trend == trend
    assert str(tmp_path / TREND_NAME) in saved.written


def test_the_same_results_again_leave_the_local_trend_untouched(tmp_path):
    """An update that changes nothing writes neither a state nor trend.json."""
    store = LocalStore(tmp_path)
    store.update(change(1, Outcome.SUCCESS))
    before = (tmp_path / TREND_NAME).read_bytes()

    again = store.update(change(1, Outcome.SUCCESS))

    assert again.written == ()
    assert (tmp_path / TREND_NAME).read_bytes() == before


def test_the_local_trend_is_capped(tmp_path):
    """trend-points bounds the points kept: the newest whole, the older thinned (first kept)."""
    store = LocalStore(tmp_path, trend_points=2)
    for run in range(1, 5):
        store.update(change(run, Outcome.SUCCESS))
    assert [p.run for p in store.load_trend().points] == [1, 4]


def fan_in(run: int = RUN, flip: int = 0):
    """The change of one run's fan-in job: every leg's results (legs 0 to 2) in one update."""
    batches = join_batches(
        batch for leg in range(3) for batch in leg_batches(leg, run=run, flip=flip)
    )
    return lambda states: merge_batches(states, batches)


def test_each_run_gets_one_point_on_the_branch_from_its_one_writer(memory):
    """The writer of a run (its fan-in job) writes the run's point with every leg's results;
    the same results again write nothing; the next run adds its own point."""
    with client(memory) as gh:
        store(gh).update(fan_in())
        trend = load_trend(memory.files(BRANCH)[TREND_NAME].decode(), where="branch")
        (point,) = trend.points
        assert point.run == RUN
        assert [name for name, _ in point.backends] == ["b00", "b01", "b02"]
        # 3 dashboards of 40 rows, every row on all three backends.
        assert point.parity.rows == 120
        assert all(
            b.missing == 0 and b.passed + b.failed + b.skipped == 120 for _, b in point.backends
        )

        writes = len(memory.writes())
        again = store(gh).update(fan_in())
        assert again.commit_sha is None
        assert len(memory.writes()) == writes

        store(gh).update(fan_in(RUN + 1, flip=1))
    trend = load_trend(memory.files(BRANCH)[TREND_NAME].decode(), where="branch")
    assert [p.run for p in trend.points] == [RUN, RUN + 1]


def test_a_state_that_cannot_be_saved_leaves_no_trend_point(tmp_path):
    """The trend is written after the states: an update that fails while saving them (here
    the state folder is a file) adds no point counting cells that are not stored."""
    (tmp_path / "state").write_text("not a folder", encoding="utf-8")
    store = LocalStore(tmp_path)
    with pytest.raises(StoreError, match="cannot write"):
        store.update(change(1, Outcome.SUCCESS))
    assert not (tmp_path / TREND_NAME).exists()
