"""Tests for explain/slowdowns.py: the slowest cells, and the cells that got slower, blamed on
the code, the environment or both."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ivy_matrix.explain.blame import Hint
from ivy_matrix.explain.slowdowns import (
    cell_slowdown,
    dashboard_slowdowns,
    describe_slowdown,
    slowest,
)
from ivy_matrix.model import (
    CaseCounts,
    DashboardId,
    DashboardState,
    Entry,
    Outcome,
    RunKey,
    Source,
    Timing,
)
from ivy_matrix.state.durations import seconds_text
from ivy_matrix.state.merge import Batch, apply_batch

DASH = DashboardId(title="gradients", category="core")
REPO = "https://github.com/o/r"


def source(
    run: int, sha: str, env: tuple[tuple[str, str], ...], *, event: str = "", pr: int | None = None
) -> Source:
    return Source(
        run=RunKey(run, 1, 100 + run),
        url=f"{REPO}/actions/runs/{run}/job/{100 + run}",
        time=f"2026-11-{run:02d}T10:00:00Z",
        sha=sha,
        env=env,
        event=event,
        pr=pr,
    )


def run_batch(src: Source, seconds: dict[str, float], outcome: Outcome = Outcome.SUCCESS) -> Batch:
    """One run of one backend (torch): each row passing with its duration."""
    entry = Entry(source=src, outcome=outcome, counts=CaseCounts(passed=1))
    return Batch(
        dashboard=DASH,
        cells={row: {"torch": entry} for row in seconds},
        times={row: {"torch": Timing(value, 1)} for row, value in seconds.items()},
    )


def history(runs: list[tuple[Source, dict[str, float]]]) -> DashboardState:
    state = None
    for src, seconds in runs:
        state = apply_batch(state, run_batch(src, seconds)).state
    assert state is not None
    return state


NUMPY_1, NUMPY_2 = (("numpy", "1.26.4"),), (("numpy", "2.0.0"),)


def generated_history() -> DashboardState:
    """Ten runs of 30 tests of 1 to 20 s, each run within 25 % of each test's usual duration;
    ``test_code`` takes 3 times as long in run 10 only (a new commit, the same packages), and
    ``test_env`` from run 8 on, when a scheduled run of run 7's commit got numpy 2.0."""
    rnd = random.Random(28)
    usual = {f"test_{i:02d}": rnd.uniform(1, 20) for i in range(28)}
    usual |= {"test_code": 6.0, "test_env": 4.0}
    runs = []
    for run in range(1, 11):
        sha = f"{7 if run == 8 else run:040x}"  # run 8 tests run 7's commit again
        env = NUMPY_1 if run < 8 else NUMPY_2  # the run numpy 2.0 came in
        seconds = {row: value * rnd.uniform(0.75, 1.25) for row, value in usual.items()}
        if run == 10:  # the commit that made test_code slower
            seconds["test_code"] *= 3
        if run >= 8:  # numpy 2.0 made test_env slower
            seconds["test_env"] *= 3
        runs.append((source(run, sha, env), seconds))
    return history(runs)


def test_a_code_change_and_a_package_change_are_reported_blamed_right_and_nothing_else():
    """Of 30 tests whose durations vary by a quarter from run to run, the one 3 times slower
    in the newest run is blamed on the code, the one slower since numpy changed on the
    environment, and no other is reported."""
    found = {s.row: s for s in dashboard_slowdowns(generated_history(), repository=REPO)}

    assert sorted(found) == ["test_code", "test_env"]
    code, env = found["test_code"], found["test_env"]
    assert code.blame.hint is Hint.CODE
    assert (code.since.run_id, code.blame.last_pass and code.blame.last_pass.run_id) == (10, 9)
    assert code.blame.compare_url == f"{REPO}/compare/{9:040x}...{10:040x}"
    assert env.blame.hint is Hint.ENVIRONMENT
    assert (env.since.run_id, env.blame.last_pass and env.blame.last_pass.run_id) == (8, 7)
    assert [(c.package, c.before, c.after) for c in env.blame.changes] == [
        ("numpy", "1.26.4", "2.0.0")
    ]
    assert code.seconds >= 2 * code.median
    assert code.runs == 10
    said = describe_slowdown(code)
    assert said.startswith("test_code · torch: [")
    assert "times its median" in said
    assert "since run 10" in said
    assert said.endswith(f"**code only**, [compare]({REPO}/compare/{9:040x}...{10:040x})")
    assert describe_slowdown(env).endswith("changed: numpy 1.26.4 → 2.0.0")


def test_slower_needs_twice_the_median_and_five_seconds_more():
    """2 s to 4.5 s (2.25 times, 2.5 s more) is not slower; 2 s to 7.5 s is; 10 s to 16 s
    (6 s more, 1.6 times) is not."""
    env = NUMPY_1

    def newest(before: float, after: float) -> bool:
        state = history(
            [(source(run, f"{run:040x}", env), {"t": before}) for run in (1, 2, 3)]
            + [(source(4, f"{4:040x}", env), {"t": after})]
        )
        row = state.rows[0]
        return cell_slowdown("t", "torch", row.cells["torch"], row.times["torch"]) is not None

    assert (newest(2, 4.5), newest(2, 7.5), newest(10, 16)) == (False, True, False)


def test_too_short_a_history_a_skip_or_a_pull_request_is_never_slower():
    """Two timed runs are too few; a skipped result's duration is not compared; a pull
    request's results are not the default branch's history."""
    two = history([(source(r, "a" * 40, NUMPY_1), {"t": 1.0 if r == 1 else 9.0}) for r in (1, 2)])
    assert dashboard_slowdowns(two) == []

    state = history([(source(r, "a" * 40, NUMPY_1), {"t": 1.0}) for r in (1, 2, 3)])
    skipped = run_batch(source(4, "a" * 40, NUMPY_1), {"t": 30.0}, Outcome.SKIPPED)
    assert dashboard_slowdowns(apply_batch(state, skipped).state) == []
    pull = run_batch(source(4, "b" * 40, NUMPY_1, event="pull_request", pr=7), {"t": 30.0})
    assert dashboard_slowdowns(apply_batch(state, pull).state) == []


def test_the_slowest_cells_of_each_backend_longest_first():
    """Over two dashboards, a backend's slowest cells come longest first, at most the limit;
    a cell without a duration is not listed."""
    a = history([(source(1, "a" * 40, NUMPY_1), {"t1": 3.0, "t2": 0.5, "t3": 9.0})])
    other = apply_batch(
        None,
        Batch(
            dashboard=DashboardId(title="layers"),
            cells={
                "u": {"torch": a.rows[0].cells["torch"].latest},
                "v": {"torch": a.rows[0].cells["torch"].latest},
            },
            times={"u": {"torch": Timing(4.0, 1)}},
        ),
    ).state
    found = slowest([a, other], limit=3)
    assert [(c.dashboard, c.row) for c in found["torch"]] == [
        ("core/gradients", "t3"),
        ("layers", "u"),
        ("core/gradients", "t1"),
    ]
    assert found["torch"][0].seconds == pytest.approx(9.0, rel=0.002)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.25, "0.25 s"), (9.5, "9.5 s"), (12.34, "12.3 s"), (125, "2 min 5 s"), (3725, "1 h 2 min")],
)
def test_durations_read_as_people_write_them(seconds, text):
    """Milliseconds under 10 s, a tenth under a minute, then minutes and hours."""
    assert seconds_text(seconds) == text


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(
            st.dictionaries(
                st.sampled_from(["torch", "jax", "numpy"]),
                st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 3.0, 9.0, 400.0])),
                min_size=1,
                max_size=3,
            ),
            min_size=1,
            max_size=6,
        ),
        min_size=1,
        max_size=3,
    ),
    st.integers(min_value=1, max_value=4),
)
def test_the_slowest_are_those_a_plain_sort_finds(dashboards, limit):
    """Over any dashboards, a backend's slowest cells are the first ``limit`` of its cells with
    a duration sorted longest first, cells alike in the order listed; backends in first-seen
    order, a backend with no duration left out."""
    src = source(1, "a" * 40, NUMPY_1)
    entry = Entry(source=src, outcome=Outcome.SUCCESS, counts=CaseCounts(passed=1))
    states = []
    for number, rows in enumerate(dashboards):
        batch = Batch(
            dashboard=DashboardId(title=f"d{number}"),
            cells={f"r{i}": dict.fromkeys(row, entry) for i, row in enumerate(rows)},
            times={
                f"r{i}": {b: Timing(s, 1) for b, s in row.items() if s is not None}
                for i, row in enumerate(rows)
            },
        )
        states.append(apply_batch(None, batch).state)
    listed = [
        (state.key, row.name, backend, seconds)
        for state, rows in zip(states, dashboards, strict=True)
        for row, found in zip(state.rows, rows, strict=True)
        for backend, seconds in found.items()
        if seconds is not None
    ]
    expected: dict[str, list[tuple[str, str]]] = {}
    for key, row, backend, _ in sorted(listed, key=lambda c: -c[3]):
        expected.setdefault(backend, []).append((key, row))
    found = slowest(states, limit=limit)
    assert {b: [(c.dashboard, c.row) for c in cells] for b, cells in found.items()} == {
        b: cells[:limit] for b, cells in expected.items()
    }
    seen = list(dict.fromkeys(b for state in states for row in state.rows for b in row.times))
    assert list(found) == [b for b in seen if b in expected]


def test_the_slower_cells_of_a_dashboard_are_each_cells_own_in_row_and_column_order():
    """Cells of several backends, some rows without a backend's cell or duration: the
    dashboard's slower cells are those cell_slowdown finds cell by cell, rows in order and each
    row's backends in the dashboard's column order (a row passed over on its newest codes
    alone is one without any)."""
    slow = {("r1", "jax"), ("r3", "torch"), ("r3", "numpy"), ("r5", "numpy")}
    state = None
    for run in range(1, 6):
        entry = Entry(source=source(run, f"{run:040x}", NUMPY_1), outcome=Outcome.SUCCESS)
        cells: dict[str, dict[str, Entry]] = {}
        times: dict[str, dict[str, Timing]] = {}
        for row in ("r0", "r1", "r2", "r3", "r4", "r5"):
            for backend in ("numpy", "torch", "jax"):
                if row == "r4" and backend == "jax":
                    continue  # no cell there
                cells.setdefault(row, {})[backend] = entry
                if row == "r2" and backend == "torch":
                    continue  # a cell without a duration
                seconds = 30.0 if run == 5 and (row, backend) in slow else 1.0 + run / 10
                times.setdefault(row, {})[backend] = Timing(seconds, 1)
        state = apply_batch(state, Batch(dashboard=DASH, cells=cells, times=times)).state
    assert state is not None
    found = [(s.row, s.backend) for s in dashboard_slowdowns(state)]
    each = [
        (row.name, backend)
        for row in state.rows
        for backend in state.backend_names
        if backend in row.cells
        and cell_slowdown(row.name, backend, row.cells[backend], row.times.get(backend))
    ]
    assert found == each == [("r1", "jax"), ("r3", "numpy"), ("r3", "torch"), ("r5", "numpy")]


def test_a_slowest_cell_says_how_many_of_its_cases_were_timed():
    """A slowest cell's duration is its newest one, of all its cases or of those that had a
    time (a result partly timed), and it links the job of its newest result."""
    src = source(1, "a" * 40, NUMPY_1)
    entry = Entry(source=src, outcome=Outcome.SUCCESS, counts=CaseCounts(passed=3))
    batch = Batch(
        dashboard=DASH,
        cells={"all": {"torch": entry}, "part": {"torch": entry}},
        times={"all": {"torch": Timing(2.0, 3)}, "part": {"torch": Timing(7.0, 2)}},
    )
    state = apply_batch(None, batch).state
    found = slowest([state])["torch"]
    assert [(c.row, c.timed, c.url) for c in found] == [("part", 2, src.url), ("all", 3, src.url)]
    assert [c.seconds for c in found] == pytest.approx([7.0, 2.0], rel=0.002)
