"""Tests for trend.py: one point per completed run, parity across backends, thinned with age."""

from __future__ import annotations

import json

import pytest

from ivy_matrix.errors import StoreError
from ivy_matrix.model import (
    BackendPoint,
    DashboardId,
    DashboardState,
    Entry,
    Outcome,
    Parity,
    RunKey,
    Source,
    Trend,
    TrendPoint,
)
from ivy_matrix.state.fold import merge_batches
from ivy_matrix.state.merge import Batch, apply_batch
from ivy_matrix.state.trend import (
    dump_trend,
    load_trend,
    record_runs,
    thin,
    trend_point,
    with_trend,
)

S, F, K, Y = Outcome.SUCCESS, Outcome.FAILURE, Outcome.SKIPPED, Outcome.FLAKY
CORE = DashboardId(title="core")
NN = DashboardId(title="nn")
JOBS = {"torch": 1, "jax": 2, "numpy": 3}


def entry(backend: str, outcome: Outcome, run: int, attempt: int = 1) -> Entry:
    source = Source(
        run=RunKey(run, attempt, JOBS[backend]),
        url=f"https://github.com/o/r/actions/runs/{run}/job/1",
        time=f"2026-11-{run:02d}T10:00:0{attempt}Z",
        sha=f"sha{run}",
    )
    return Entry(source=source, outcome=outcome)


def state(
    dashboard: DashboardId, run: int, rows: dict[str, dict[str, Outcome]], old=None
) -> DashboardState:
    cells = {row: {b: entry(b, o, run) for b, o in cells.items()} for row, cells in rows.items()}
    return apply_batch(old, Batch(dashboard=dashboard, cells=cells)).state


def test_a_point_counts_each_backends_rows_by_that_runs_result():
    """Passed, failed, flaky, skipped, and missing where the run brought no result."""
    core = state(CORE, 1, {"a": {"torch": S, "jax": S}, "b": {"torch": S, "jax": F}})
    core = state(CORE, 2, {"a": {"torch": F, "jax": Y}, "c": {"torch": K}}, core)

    point = trend_point([core], 2)

    assert point == TrendPoint(
        run=2,
        sha="sha2",
        time="2026-11-02T10:00:01Z",
        backends=(
            ("torch", BackendPoint(failed=1, skipped=1, missing=1)),
            ("jax", BackendPoint(flaky=1, missing=1)),
        ),
        parity=Parity(rows=1, green=0, fails_only=(("torch", 1),)),
    )


def test_parity_counts_rows_green_everywhere_and_failing_on_one_backend_only():
    """Of rows that ran on every backend: green on all, or failing on exactly one. A skip is
    left out, as the index's kinds leave it: skipped on one and passed on the others is green,
    failed on one and passed or skipped on the others fails only there (the demo's index said
    "1 torch-only" above "fails only on torch: 0")."""
    rows = {
        "green": {"torch": S, "jax": Y, "numpy": S},
        "only_jax": {"torch": S, "jax": F, "numpy": S},
        "two": {"torch": F, "jax": F, "numpy": S},
        "skipped": {"torch": S, "jax": K, "numpy": S},
        "skipped_and_only_torch": {"torch": F, "jax": S, "numpy": K},
        "all_skipped": {"torch": K, "jax": K, "numpy": K},
        "not_on_all": {"torch": F, "jax": S},
    }
    other = {"x": {"torch": S}, "y": {"torch": F}}

    point = trend_point([state(CORE, 1, rows), state(NN, 1, other)], 1)

    assert point is not None
    assert point.parity == Parity(rows=8, green=3, fails_only=(("jax", 1), ("torch", 2)))


def test_attempts_of_one_run_that_disagree_make_a_flaky_result():
    """A run failed, then passed on a re-run attempt: flaky in its point."""
    core = state(CORE, 1, {"a": {"torch": F}})
    retry = Batch(dashboard=CORE, cells={"a": {"torch": entry("torch", S, 1, attempt=2)}})
    core = apply_batch(core, retry).state

    point = trend_point([core], 1)

    assert point is not None
    assert point.backends == (("torch", BackendPoint(flaky=1)),)


def test_a_run_no_cell_holds_has_no_point():
    """Nothing to count: no point (a run whose results all retired, or a prune)."""
    assert trend_point([state(CORE, 1, {"a": {"torch": S}})], 9) is None


def test_recording_a_run_again_replaces_its_point_and_keeps_older_ones():
    """A later attempt recomputes its run's point; points the histories no longer hold stay."""
    kept = TrendPoint(run=1, backends=(("torch", BackendPoint(passed=99)),))
    core = state(CORE, 2, {"a": {"torch": F}})
    first = record_runs(Trend(points=(kept,)), [core], [2], cap=10)
    retry = Batch(dashboard=CORE, cells={"a": {"torch": entry("torch", S, 2, attempt=2)}})
    core = apply_batch(core, retry).state

    second = record_runs(first, [core], [2], cap=10)

    assert [p.run for p in second.points] == [1, 2]
    assert second.points[0] == kept
    assert first.points[1].backends == (("torch", BackendPoint(failed=1)),)
    assert second.points[1].backends == (("torch", BackendPoint(flaky=1)),)
    assert record_runs(second, [core], [2], cap=10) == second


def test_thinning_keeps_the_newest_half_whole_and_every_other_older_point():
    """Over the cap, older points thin out (the oldest stays) and the newest are all kept."""
    points = [TrendPoint(run=run) for run in range(1, 11)]

    kept = [p.run for p in thin(points, 4)]

    assert kept == [1, 5, 9, 10]
    assert [p.run for p in thin(points, 10)] == list(range(1, 11))
    assert [p.run for p in thin(points, 1)] == [10]
    assert [p.run for p in thin(points, 7)] == [1, 3, 5, 7, 8, 9, 10]


def test_the_store_default_keeps_a_year_of_daily_runs():
    """365 points by default: a 366th run thins the older half."""
    points = [TrendPoint(run=run) for run in range(1, 367)]
    kept = thin(points, 365)
    assert len(kept) <= 365
    assert [p.run for p in kept[-182:]] == list(range(185, 367))


def test_a_merge_records_the_runs_its_results_brought():
    """The store's change says which runs it brought; with_trend adds their points."""
    batch = Batch(dashboard=CORE, cells={"a": {"torch": entry("torch", F, 7)}})
    merged = merge_batches({}, [batch])

    assert merged.runs == (7,)
    trend = with_trend(merged, Trend(), cap=5).trend
    assert trend is not None
    assert [(p.run, p.backends) for p in trend.points] == [
        (7, (("torch", BackendPoint(failed=1)),))
    ]


def test_the_file_round_trips_with_one_point_per_line():
    """dump_trend and load_trend agree; each point is one line of the file."""
    core = state(CORE, 1, {"a": {"torch": S, "jax": F}})
    trend = record_runs(Trend(), [core], [1], cap=5)
    trend = record_runs(trend, [state(CORE, 2, {"a": {"torch": S}}, core)], [2], cap=5)

    text = dump_trend(trend)

    assert load_trend(text, where="t") == trend
    lines = text.splitlines()
    assert len(lines) == 4
    assert json.loads(lines[1].rstrip(","))["run"] == 1
    assert dump_trend(Trend()) == '{"format":"ivy-matrix-trend","version":1,"points":[]}\n'
    assert load_trend(None, where="t") == Trend()


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "[]",
        '{"format":"other"}',
        '{"format":"ivy-matrix-trend","version":9,"points":[]}',
        '{"format":"ivy-matrix-trend","version":1,"points":[{"run":"x"}]}',
    ],
)
def test_an_unreadable_trend_is_refused_with_the_way_out(text):
    """A broken trend.json names itself and says that deleting it starts a new trend."""
    with pytest.raises(StoreError, match=r"cannot read the trend here: .*delete the file"):
        load_trend(text, where="here")
