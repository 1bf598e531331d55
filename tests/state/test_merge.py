"""Tests for merge.py: run ordering, history, idempotence and order independence."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ivy_matrix.config.settings import Settings
from ivy_matrix.model import (
    CaseCounts,
    Cell,
    DashboardId,
    DashboardState,
    Entry,
    Outcome,
    RunKey,
    Source,
    Timing,
)
from ivy_matrix.state.fold import Merged, Stored, merge_batches
from ivy_matrix.state.merge import Batch, apply_batch, join_batches, merge_cell
from ivy_matrix.state.retirement import Removal, retire, retirement_horizon, store_runs

DASH = DashboardId(title="gradients", category="core")


def entry(run: int, outcome: Outcome = Outcome.SUCCESS, *, attempt: int = 1, job: int = 1) -> Entry:
    key = RunKey(run, attempt, job)
    url = f"https://github.com/o/r/actions/runs/{run}/job/{job}"
    return Entry(source=Source(run=key, url=url, time=f"t{run}"), outcome=outcome)


def batch(cells: dict[str, dict[str, Entry]]) -> Batch:
    return Batch(dashboard=DASH, cells=cells)


def apply_all(batches: list[Batch], history: int = 10) -> DashboardState | None:
    state = None
    for b in batches:
        state = apply_batch(state, b, history=history).state
    return state


def shown(state: DashboardState) -> dict[tuple[str, str], Outcome]:
    return {(r.name, b): c.latest.outcome for r in state.rows for b, c in r.cells.items()}


def test_newer_run_replaces_a_cell():
    """A result from a newer run becomes what the cell shows."""
    first = apply_batch(None, batch({"t": {"torch": entry(1, Outcome.FAILURE)}})).state
    result = apply_batch(first, batch({"t": {"torch": entry(2, Outcome.SUCCESS)}}))
    assert shown(result.state) == {("t", "torch"): Outcome.SUCCESS}
    assert result.changed_cells == 1
    assert [e.run.run_id for e in result.state.rows[0].cells["torch"].entries] == [2, 1]


def test_older_run_never_overwrites_a_newer_one():
    """A slower, older run only fills the history behind the newer result."""
    newer = apply_batch(None, batch({"t": {"torch": entry(5, Outcome.SUCCESS)}})).state
    result = apply_batch(newer, batch({"t": {"torch": entry(3, Outcome.FAILURE)}}))
    assert shown(result.state) == {("t", "torch"): Outcome.SUCCESS}
    assert result.changed_cells == 0
    assert [e.run.run_id for e in result.state.rows[0].cells["torch"].entries] == [5, 3]


def test_attempt_then_job_id_order_results_within_a_run():
    """Within one run, a later attempt wins, and within an attempt a larger job id wins."""
    cell = merge_cell(None, entry(7, Outcome.FAILURE, attempt=2, job=10), 10)
    cell = merge_cell(cell, entry(7, Outcome.SUCCESS, attempt=1, job=99), 10)
    assert cell.latest.outcome is Outcome.FAILURE
    cell = merge_cell(cell, entry(7, Outcome.SUCCESS, attempt=2, job=11), 10)
    assert cell.latest.outcome is Outcome.SUCCESS


def test_history_keeps_the_newest_n_results():
    """The history is capped, and what falls off is the oldest."""
    cell = None
    for run in [4, 1, 6, 2, 5, 3]:
        cell = merge_cell(cell, entry(run), 3)
    assert cell is not None
    assert [e.run.run_id for e in cell.entries] == [6, 5, 4]
    assert merge_cell(cell, entry(1), 3) is cell


def test_same_run_results_combine_worst_first():
    """Two results of one run for one cell combine: the failure wins whatever the order."""
    a, b = entry(3, Outcome.SUCCESS), entry(3, Outcome.FAILURE)
    assert merge_cell(merge_cell(None, a, 10), b, 10).latest.outcome is Outcome.FAILURE
    assert merge_cell(merge_cell(None, b, 10), a, 10).latest.outcome is Outcome.FAILURE


def test_reapplying_later_keeps_the_first_record():
    """The same results applied again at a later time change nothing."""
    first = apply_batch(None, batch({"t": {"torch": entry(3)}})).state
    later = Entry(
        source=Source(run=RunKey(3, 1, 1), url=entry(3).source.url, time="t9"),
        outcome=Outcome.SUCCESS,
    )
    result = apply_batch(first, batch({"t": {"torch": later}}))
    assert not result.state_changed
    assert result.state is first


def test_rows_and_columns_keep_first_appearance_order():
    """Rows and backends are shown in the order they first appeared, oldest run first."""
    state = apply_all(
        [
            batch({"b": {"numpy": entry(2)}, "a": {"numpy": entry(2), "torch": entry(2)}}),
            batch({"z": {"jax": entry(3)}, "a": {"jax": entry(3)}}),
        ]
    )
    assert state is not None
    assert [r.name for r in state.rows] == ["b", "a", "z"]
    assert state.backend_names == ("numpy", "torch", "jax")


def test_the_rows_of_one_merge_share_their_first_places_and_new_cells_across_dashboards():
    """Every dashboard's rows are seen at the same few places of one run, and cells alike get
    one entry (entries.build_batches): a merge makes one place object for each place and one
    new cell for each entry, not one per row or per dashboard (a fresh update of 20k rows held
    20k places and a new cell per entry in each of 40 dashboards)."""
    shared = Entry(source=entry(4).source, outcome=Outcome.SUCCESS)
    batches = [
        Batch(
            dashboard=DashboardId(title=f"d{index}"),
            cells={f"test_{row}": {"torch": shared} for row in range(5)},
        )
        for index in range(3)
    ]

    merged = merge_batches({}, batches)

    rows = [row for state in merged.states.values() for row in state.rows]
    assert len(rows) == 15
    assert len({id(row.first_seen) for row in rows}) == 5
    assert sorted({row.first_seen for row in rows}) == [(RunKey(4, 1, 1), seq) for seq in range(5)]
    assert len({id(row.cells["torch"]) for row in rows}) == 1


def test_rows_of_the_same_cells_share_one_dict_of_them_and_a_later_merge_changes_a_copy():
    """Rows whose cells are the same (the same backends in the same order, each the same cell
    object) hold one dict of them, across the dashboards of a merge: a fresh update of 20k rows
    made 20k dicts of a few thousand contents. The dict is never changed in place: a newer
    result for one of those rows gives that row a dict of its own, the others keep theirs."""
    passed, failed = (
        Entry(source=entry(4).source, outcome=o) for o in (Outcome.SUCCESS, Outcome.FAILURE)
    )
    both = {"torch": passed, "jax": passed}
    batches = [
        Batch(
            dashboard=DashboardId(title=f"d{index}"),
            cells={f"test_{row}": dict(both) for row in range(5)}
            | {"reversed": {"jax": passed, "torch": passed}, "failing": {"torch": failed}},
        )
        for index in range(3)
    ]

    merged = merge_batches({}, batches)

    rows = [row for state in merged.states.values() for row in state.rows]
    assert len(rows) == 21
    assert len({id(row.cells) for row in rows}) == 3  # both, reversed, failing
    assert [list(r.cells) for r in rows[:7]] == [["torch", "jax"]] * 5 + [
        ["jax", "torch"],
        ["torch"],
    ]
    first = merged.states[DashboardId(title="d0")]
    newer = Batch(dashboard=first.id, cells={"test_0": {"torch": entry(5, Outcome.FAILURE)}})
    after = apply_batch(first, newer).state
    assert after.rows[0].cells["torch"].latest.outcome is Outcome.FAILURE
    assert all(row.cells["torch"].latest.outcome is Outcome.SUCCESS for row in rows[:5])
    assert after.rows[1].cells is rows[0].cells


def test_retire_drops_rows_not_reported_in_the_last_runs():
    """A row none of the last N runs reported is retired and named; the rest stay."""
    state = apply_all(
        [
            batch({"old": {"torch": entry(1)}, "kept": {"torch": entry(1)}}),
            batch({"kept": {"torch": entry(2)}}),
            batch({"kept": {"torch": entry(3)}}),
        ]
    )
    assert state is not None
    assert retire(state, retirement_horizon(state.runs, 3)) == Removal(state=state)
    removal = retire(state, retirement_horizon(state.runs, 2))
    assert removal.rows == ("old",)
    assert removal.state is not None
    assert [r.name for r in removal.state.rows] == ["kept"]
    assert retirement_horizon(state.runs, 0) is None
    assert retire(state, None) == Removal(state=state)


OUTCOMES = st.sampled_from(list(Outcome))
ROWS = st.sampled_from(["test_a", "test_b", "Cls.test_c", "test_d"])
BACKENDS = st.sampled_from(["torch", "numpy", "jax", "tensorflow"])
# A cell's duration in a run, or none (some results have none).
SECONDS = st.one_of(st.none(), st.floats(0, 500, allow_nan=False))


@st.composite
def batches(draw: st.DrawFn) -> list[Batch]:
    """Batches from distinct jobs (a job reports each cell once per update)."""
    count = draw(st.integers(1, 5))
    keys = draw(
        st.lists(
            st.tuples(st.integers(1, 6), st.integers(1, 2), st.integers(1, 4)),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    result = []
    for run, attempt, job in keys:
        cells: dict[str, dict[str, Entry]] = {}
        times: dict[str, dict[str, Timing]] = {}
        for row, backend, outcome, seconds, timed in draw(
            st.lists(
                st.tuples(ROWS, BACKENDS, OUTCOMES, SECONDS, st.integers(1, 2)),
                min_size=1,
                max_size=8,
            )
        ):
            # Two cases a cell, one or both of them timed.
            one = entry(run, outcome, attempt=attempt, job=job)
            cells.setdefault(row, {})[backend] = replace(one, counts=CaseCounts(passed=2))
            if seconds is None:
                times.get(row, {}).pop(backend, None)
            else:
                times.setdefault(row, {})[backend] = Timing(seconds, timed)
        result.append(Batch(dashboard=DASH, cells=cells, times=times))
    return result


@settings(max_examples=150, deadline=None)
@given(batches(), st.integers(1, 4))
def test_applying_the_same_results_twice_changes_nothing(bs, history):
    """Idempotence: every batch applied a second time leaves the state as it was."""
    once = apply_all(bs, history)
    assert once is not None
    for b in bs:
        result = apply_batch(once, b, history=history)
        assert result.state == once
        assert not result.state_changed


@settings(max_examples=150, deadline=None)
@given(batches(), st.integers(1, 4), st.randoms(use_true_random=False))
def test_results_of_different_runs_give_one_state_in_any_order(bs, history, rnd):
    """Order independence: any order of applying the batches gives the same state."""
    expected = apply_all(bs, history)
    shuffled = list(bs)
    rnd.shuffle(shuffled)
    assert apply_all(shuffled, history) == expected


def test_every_order_of_three_runs_agrees():
    """All six orders of three overlapping runs end in one state."""
    bs = [
        batch({"a": {"torch": entry(1, Outcome.FAILURE)}, "b": {"numpy": entry(1)}}),
        batch({"b": {"torch": entry(2)}, "c": {"numpy": entry(2, Outcome.FLAKY)}}),
        batch({"a": {"torch": entry(3)}, "c": {"jax": entry(3, Outcome.SKIPPED)}}),
    ]
    states = [apply_all(list(p)) for p in itertools.permutations(bs)]
    assert all(s == states[0] for s in states)
    assert states[0] is not None
    assert isinstance(states[0].rows[0].cells["torch"], Cell)


# --- retirement across the store ----------------------------------------------------------

OTHER = DashboardId(title="layers", category="nn")
IDLE = DashboardId(title="pytest")


def update(
    states: Mapping[DashboardId, DashboardState], batches: list[Batch], after_runs: int
) -> Merged:
    """One ``update``'s merge of ``batches`` into the store, with a retirement setting."""
    return merge_batches(states, batches, history=Settings().history, retire_after_runs=after_runs)


def leg(cells: dict[str, dict[str, Entry]], dashboard: DashboardId = DASH) -> Batch:
    """One leg's batch for ``dashboard``."""
    return Batch(dashboard=dashboard, cells=cells)


def test_a_column_no_recent_run_reported_retires_with_its_cells():
    """A backend dropped from the matrix loses its column; rows still reported stay."""
    state = apply_all(
        [
            batch({"t": {"torch": entry(1), "jax": entry(1)}, "u": {"jax": entry(1)}}),
            batch({"t": {"torch": entry(2)}}),
            batch({"t": {"torch": entry(3)}}),
        ]
    )
    assert state is not None
    removal = retire(state, retirement_horizon(state.runs, 2))
    assert removal.backends == ("jax",)
    assert removal.rows == ("u",)
    assert removal.state is not None
    assert removal.state.backend_names == ("torch",)
    assert [(r.name, sorted(r.cells)) for r in removal.state.rows] == [("t", ["torch"])]


def test_a_dashboard_whose_rows_all_retire_is_removed():
    """When no row is left, the removal says the dashboard itself goes."""
    state = apply_all([batch({"a": {"torch": entry(1)}, "b": {"jax": entry(1)}})])
    assert state is not None
    removal = retire(state, 2)
    assert removal == Removal(state=None, rows=("a", "b"), backends=("torch", "jax"))


def test_a_dashboard_that_gets_no_results_ages_with_the_store_and_goes():
    """An idle dashboard's rows retire after N runs of the store, and the dashboard is removed."""
    states: dict[DashboardId, DashboardState] = {}
    first = update(states, [leg({"collect": {"torch": entry(1, Outcome.FAILURE)}}, IDLE)], 2)
    states = dict(first.states)
    for run in (2, 3):
        outcome = update(states, [leg({"t": {"torch": entry(run)}})], 2)
        states = dict(outcome.states)
        if run == 2:
            assert IDLE in states
            assert outcome.removed == ()
    assert IDLE not in states
    assert [s.id for s in outcome.removed] == [IDLE]
    assert list(outcome.reports[IDLE.key].retired_rows) == ["collect"]
    assert outcome.reports[IDLE.key].removed is True
    assert IDLE.key not in outcome.changed


def test_legs_and_attempts_of_one_run_age_the_store_once():
    """Any number of legs and attempts of one run count as one run of the store."""
    states = update({}, [leg({"collect": {"torch": entry(1)}}, IDLE)], 2).states
    for job, attempt in [(1, 1), (2, 1), (3, 1), (1, 2)]:
        cells = {"t": {f"b{job}": entry(2, attempt=attempt, job=job)}}
        states = update(states, [leg(cells)], 2).states
    assert IDLE in states  # runs 2 and 1 are the last two: nothing retired yet
    states = update(states, [leg({"t": {"torch": entry(3)}})], 2).states
    assert IDLE not in states


def test_retire_after_zero_runs_never_retires_an_idle_dashboard():
    """--retire-after-runs 0 keeps every row of every dashboard forever."""
    states = update({}, [leg({"collect": {"torch": entry(1)}}, IDLE)], 0).states
    for run in range(2, 30):
        states = update(states, [leg({"t": {"torch": entry(run)}})], 0).states
    assert IDLE in states
    assert [r.name for r in states[IDLE].rows] == ["collect"]


DASHBOARDS = st.sampled_from([DASH, OTHER, IDLE])


@st.composite
def store_and_updates(
    draw: st.DrawFn,
) -> tuple[dict[DashboardId, DashboardState], list[list[Batch]]]:
    """A store, and updates to it: each one run (possibly a leg of a run seen before)."""
    start: dict[DashboardId, DashboardState] = {}
    for dashboard in draw(st.lists(DASHBOARDS, unique=True)):
        cells: dict[str, dict[str, Entry]] = {}
        for row, backend, run in draw(
            st.lists(st.tuples(ROWS, BACKENDS, st.integers(1, 5)), min_size=1, max_size=6)
        ):
            cells.setdefault(row, {})[backend] = entry(run, job=9)
        start[dashboard] = apply_batch(None, leg(cells, dashboard)).state
    updates = []
    for run, job in draw(
        st.lists(st.tuples(st.integers(3, 9), st.integers(1, 3)), max_size=5, unique=True)
    ):
        legs = []
        for dashboard in draw(st.lists(st.sampled_from([DASH, OTHER]), min_size=1, unique=True)):
            cells = {}
            for row, backend in draw(st.lists(st.tuples(ROWS, BACKENDS), min_size=1, max_size=4)):
                cells.setdefault(row, {})[backend] = entry(run, job=job)
            legs.append(leg(cells, dashboard))
        updates.append(legs)
    return start, updates


def run_updates(
    start: dict[DashboardId, DashboardState], updates: list[list[Batch]], after_runs: int
) -> dict[DashboardId, DashboardState]:
    states = dict(start)
    for batches in updates:
        states = dict(update(states, batches, after_runs).states)
    return states


@settings(max_examples=150, deadline=None)
@given(store_and_updates(), st.integers(0, 4))
def test_an_update_applied_again_changes_nothing_even_with_retirement(case, after_runs):
    """Idempotence: an update applied to the store it produced changes, removes nothing."""
    start, updates = case
    states = run_updates(start, updates, after_runs)
    for batches in updates:
        again = update(states, batches, after_runs)
        assert again.states == states
        assert list(again.changed) == []


@settings(max_examples=150, deadline=None)
@given(store_and_updates(), st.integers(1, 4), st.randoms(use_true_random=False))
def test_dashboards_no_update_reaches_age_the_same_in_any_order(case, after_runs, rnd):
    """Order independence: an idle dashboard ends as the store's final runs retire it."""
    start, updates = case
    shuffled = list(updates)
    rnd.shuffle(shuffled)
    ends = [run_updates(start, order, after_runs) for order in (updates, shuffled)]
    # The window (the newest runs) is the same; older runs may or may not be remembered.
    windows = [store_runs(end.values())[:after_runs] for end in ends]
    assert windows[0] == windows[1]
    if IDLE in start and updates:  # the store ages when an update runs
        horizon = retirement_horizon(store_runs(ends[0].values()), after_runs)
        expected = retire(start[IDLE], horizon).state
        assert [end.get(IDLE) for end in ends] == [expected, expected]


@settings(max_examples=150, deadline=None)
@given(store_and_updates(), st.randoms(use_true_random=False))
def test_without_retirement_the_store_is_the_same_in_any_order(case, rnd):
    """With retire-after-runs 0, every order of updates gives one store."""
    start, updates = case
    shuffled = list(updates)
    rnd.shuffle(shuffled)
    assert run_updates(start, updates, 0) == run_updates(start, shuffled, 0)


def test_joined_batches_show_what_applying_them_one_by_one_shows_and_count_each_cell_once():
    """A fan-in's legs join into one batch per dashboard: the newer job (or, for the same job,
    the worse outcome) shows, rows keep their first-seen order, and each cell counts once."""
    legs = [
        batch({"a": {"torch": entry(7, job=2)}, "b": {"torch": entry(7, job=2)}}),
        batch({"c": {"numpy": entry(7, Outcome.FAILURE, job=3)}, "a": {"numpy": entry(7, job=3)}}),
        batch({"a": {"torch": entry(7, Outcome.FAILURE, job=1)}}),  # an older job: not shown
        batch({"b": {"torch": entry(7, Outcome.FAILURE, job=2)}}),  # the same job: worse wins
    ]
    (joined,) = join_batches(legs)
    result = apply_batch(None, joined)
    assert [row.name for row in result.state.rows] == ["a", "b", "c"]
    assert shown(result.state) == {
        ("a", "torch"): Outcome.SUCCESS,
        ("a", "numpy"): Outcome.SUCCESS,
        ("b", "torch"): Outcome.FAILURE,
        ("c", "numpy"): Outcome.FAILURE,
    }
    assert result.changed_cells == 4
    one_by_one = apply_all(legs)
    assert one_by_one is not None
    assert shown(one_by_one) == shown(result.state)


def test_a_fold_of_stored_states_holds_one_old_state_at_a_time():
    """Over a ``Stored``, each dashboard's old state is read as the fold reaches it and let
    go (``folded``) before the next is read; the result is the one of all states held."""
    seeded = update({}, [leg({"a": {"torch": entry(1)}}, d) for d in (DASH, OTHER, IDLE)], 2)
    states = dict(seeded.states)
    batches = [
        leg({"a": {"torch": entry(2)}, "b": {"jax": entry(2)}}),
        leg({"a": {"torch": entry(3)}}, OTHER),  # IDLE's row ages out of the last 2 runs
    ]
    reading: set[DashboardId] = set()
    most: list[int] = []
    heard: list[tuple[str, bool, bool]] = []

    def read(dashboard: DashboardId) -> DashboardState:
        reading.add(dashboard)
        most.append(len(reading))
        return states[dashboard]

    def folded(dashboard: DashboardId, state: DashboardState | None, save: bool) -> None:
        reading.remove(dashboard)
        heard.append((dashboard.key, state is None, save))

    stored = Stored(
        sorted(states, key=lambda d: d.key),
        runs=store_runs(states.values()),
        backends={"torch"},
        read=read,
        folded=folded,
    )
    merged = update(stored, batches, 2)

    assert most == [1, 1, 1]  # three reads, never two old states at once
    assert heard == [(DASH.key, False, True), (OTHER.key, False, True), (IDLE.key, True, False)]
    assert merged == update(states, batches, 2)
    assert [s.id for s in merged.removed] == [IDLE]


def test_two_batches_of_one_dashboard_are_refused():
    """A fold takes one batch per dashboard (join_batches joins legs'): a second would merge
    into a dashboard already retired and let go."""
    with pytest.raises(ValueError, match="two batches for dashboard core/gradients"):
        update({}, [leg({"a": {"torch": entry(1)}}), leg({"b": {"torch": entry(2)}})], 0)
