"""Tests for merge.py: run ordering, history, idempotence and order independence."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from ivy_matrix.merge import (
    Batch,
    Removal,
    apply_batch,
    merge_cell,
    retire,
    retirement_horizon,
)
from ivy_matrix.model import Cell, DashboardId, DashboardState, Entry, Outcome, RunKey, Source

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
        for row, backend, outcome in draw(
            st.lists(st.tuples(ROWS, BACKENDS, OUTCOMES), min_size=1, max_size=8)
        ):
            cells.setdefault(row, {})[backend] = entry(run, outcome, attempt=attempt, job=job)
        result.append(batch(cells))
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
