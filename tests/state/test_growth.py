"""Growth over history (issue 26 item 4): what a store keeps stops growing after enough runs.

Counts and sizes, never seconds: a small store is updated run after run in-process, with
results that change every run and tests that come and go, and what it holds is measured.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.state.fold import Merged, merge_batches
from ivy_matrix.state.merge import RUNS_KEPT, Batch, apply_batch
from ivy_matrix.state.retirement import (
    MIN_RUNS_KEPT,
    retirement_horizon,
    runs_kept,
    store_runs,
)
from ivy_matrix.stores import Change
from ivy_matrix.stores.local import LocalStore

DASHBOARDS = (DashboardId(title="gradients", category="core"), DashboardId(title="layers"))
BACKENDS = ("torch", "jax")
ROWS = 4  # stable rows per dashboard; one more comes every ROTATE runs and stops reporting
ROTATE = 5
OUTCOMES = (Outcome.SUCCESS, Outcome.SUCCESS, Outcome.SUCCESS, Outcome.FAILURE, Outcome.FLAKY)


FIRST = 10_000  # run ids of the local store's test: as many digits in every run


def run_batches(run: int, dashboards=DASHBOARDS) -> list[Batch]:
    """Run ``run``'s results: outcomes drawn from the run number, one rotating row."""
    rng = random.Random(run)
    source = Source(run=RunKey(run, 1, run * 10), url=f"https://github.com/o/r/actions/runs/{run}")
    rows = [f"test_{i}" for i in range(ROWS)] + [f"test_added_{run // ROTATE}"]
    return [
        Batch(
            dashboard=dashboard,
            cells={
                row: {b: Entry(source=source, outcome=rng.choice(OUTCOMES)) for b in BACKENDS}
                for row in rows
            },
        )
        for dashboard in dashboards
    ]


def test_each_dashboard_keeps_the_run_ids_its_window_needs():
    """After 150 runs with retirement after 25, each dashboard holds 25 run ids, not 150
    (before: every run's, up to 1,000); the store's window is the same as with them all."""
    states: dict[DashboardId, DashboardState] = {}
    everything: dict[DashboardId, DashboardState] = {}  # the same, every run id kept
    for run in range(1, 151):
        states = dict(merge_batches(states, run_batches(run), retire_after_runs=25).states)
        for batch in run_batches(run):
            everything[batch.dashboard] = apply_batch(everything.get(batch.dashboard), batch).state

    assert {len(state.runs) for state in states.values()} == {25}
    assert {len(state.runs) for state in everything.values()} == {150}
    assert retirement_horizon(store_runs(states.values()), 25) == retirement_horizon(
        store_runs(everything.values()), 25
    )


def test_a_dashboard_that_skips_runs_keeps_its_own_newest_runs():
    """A dashboard that gets every third run keeps its own newest N, so the union of the
    dashboards' runs still holds the store's newest N (the window) whatever each got."""
    states: dict[DashboardId, DashboardState] = {}
    for run in range(1, 121):
        reached = DASHBOARDS if run % 3 == 0 else DASHBOARDS[:1]
        states = dict(merge_batches(states, run_batches(run, reached), retire_after_runs=30).states)
    often, seldom = (states[d] for d in DASHBOARDS)
    assert often.runs == tuple(range(120, 90, -1))
    assert seldom.runs == tuple(range(120, 30, -3))
    assert store_runs(states.values())[:30] == tuple(range(120, 90, -1))


def test_how_many_run_ids_are_kept():
    """The window's size, at least MIN_RUNS_KEPT; all RUNS_KEPT when nothing retires."""
    assert runs_kept(100) == 100
    assert runs_kept(1) == MIN_RUNS_KEPT
    assert runs_kept(0) == RUNS_KEPT


def _change(batches: list[Batch]) -> Change:
    def change(states: Mapping[DashboardId, DashboardState]) -> Merged:
        return merge_batches(states, batches, retire_after_runs=20)

    return change


def _sizes(root: Path) -> dict[str, int]:
    return {
        str(path.relative_to(root)): path.stat().st_size
        for path in root.rglob("*")
        if path.is_file() and path.name != ".lock"
    }


def test_the_local_stores_files_stop_growing(tmp_path):
    """150 runs into a local store (retirement after 20 runs, a trend of at most 30 points):
    once the window and the trend are full (run 50), no file grows in runs 91 to 150 past
    the largest it was in runs 50 to 90, give or take what the outcomes move."""
    store = LocalStore(tmp_path, trend_points=30)
    early: dict[str, int] = {}
    late: dict[str, int] = {}
    for run in range(FIRST + 1, FIRST + 151):
        store.update(_change(run_batches(run)))
        if run - FIRST >= 50:
            peaks = early if run - FIRST <= 90 else late
            for path, size in _sizes(tmp_path).items():
                peaks[path] = max(peaks.get(path, 0), size)
    assert sorted(late) == sorted(early)  # the same files: no new kind of file
    assert len(store.load_trend().points) <= 30
    states = store.load_all()
    assert {len(state.runs) for state in states} == {MIN_RUNS_KEPT}
    # rows: the stable ones and the rotating ones not retired yet (20 runs: 4 or 5 of them)
    assert {len(state.rows) for state in states} <= {ROWS + 4, ROWS + 5}
    for path, size in late.items():
        assert size <= early[path] * 1.02, (path, size, early[path])
