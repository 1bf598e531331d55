"""Tests for columnar.py: state format version 5, one line per column, unchanged columns kept."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ivy_matrix.errors import StoreError
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
from ivy_matrix.state.columnar import COLUMNS_VERSION, Columns, column_lines, dump_columns
from ivy_matrix.state.merge import Batch, apply_batch
from ivy_matrix.state.statefile import dump_state, load_state

DASHBOARD = DashboardId(title="gradients", category="core")
BACKENDS = ("torch", "jax", "numpy")
ROWS = ("test_grad", "test_jac", "test_hess", "test_vjp")


def source(run: int, backend: str) -> Source:
    return Source(
        run=RunKey(run, 1, 10 * run + BACKENDS.index(backend)),
        url=f"https://github.com/o/r/actions/runs/{run}/job/{backend}",
        time=f"2026-11-{run:02d}T10:00:00Z",
        sha=f"{run:040x}",
    )


# One update: its run, then (row, backend, outcome, failed cases) for each cell it brings.
UPDATES = st.lists(
    st.tuples(
        st.integers(min_value=1, max_value=9),
        st.lists(
            st.tuples(
                st.sampled_from(ROWS),
                st.sampled_from(BACKENDS),
                st.sampled_from(list(Outcome)),
                st.integers(min_value=0, max_value=2),
                # The cell's duration (or none); of a case with failures, only one timed.
                st.one_of(st.none(), st.floats(min_value=0, max_value=5000)),
            ),
            min_size=1,
            max_size=8,
        ),
    ),
    min_size=1,
    max_size=5,
)
Cells = list[tuple[str, str, Outcome, int, float | None]]


def batch(run: int, cells: Cells) -> Batch:
    """One update's batch: each cell's entry of run ``run``, and its duration."""
    by_row: dict[str, dict[str, Entry]] = {}
    times: dict[str, dict[str, Timing]] = {}
    for row, backend, outcome, failed, seconds in cells:
        message = "AssertionError: 1 != 2" if outcome is Outcome.FAILURE else ""
        by_row.setdefault(row, {})[backend] = Entry(
            source=source(run, backend),
            outcome=outcome,
            counts=CaseCounts(passed=1, failed=failed),
            message=message,
            signature="abc" if message else "",
        )
        if seconds is None:
            times.get(row, {}).pop(backend, None)
        else:
            times.setdefault(row, {})[backend] = Timing(seconds, 1)
    return Batch(dashboard=DASHBOARD, cells=by_row, times=times)


def fold(
    updates: list[tuple[int, Cells]],
    state: DashboardState | None = None,
) -> DashboardState:
    """The state these updates make, merged one after another into ``state``."""
    for run, cells in updates:
        state = apply_batch(state, batch(run, cells)).state
    assert state is not None
    return state


@settings(max_examples=60, deadline=None)
@given(UPDATES)
def test_a_state_round_trips_through_the_column_layout(updates):
    """Whatever the results and durations, the column layout reads back as the same state as
    the one-table layout."""
    state = fold(updates)

    text = dump_columns(state)

    assert json.loads(text)["version"] == COLUMNS_VERSION
    assert load_state(text, where="f.json") == state
    assert load_state(dump_state(state), where="f.json") == state


@settings(max_examples=60, deadline=None)
@given(UPDATES, UPDATES)
def test_writing_with_the_lines_read_gives_the_text_written_from_scratch(before, after):
    """After more updates, a document written reusing the lines it was read from (unchanged
    columns copied) is byte for byte the one written from scratch."""
    text = dump_columns(fold(before))
    read = load_state(text, where="f.json")
    changed = fold(after, read)

    again = dump_columns(changed, Columns(state=read, lines=column_lines(text)))

    assert again == dump_columns(changed)
    assert load_state(again, where="f.json") == changed


def test_a_leg_rewrites_its_own_column_only():
    """A newer run of one backend changes that backend's line; the others stay as they were."""
    state = fold([(1, [(row, b, Outcome.SUCCESS, 0, 1.5) for row in ROWS for b in BACKENDS])])
    text = dump_columns(state)
    read = load_state(text, where="f.json")
    leg = {
        row: {"torch": Entry(source=source(2, "torch"), outcome=Outcome.FAILURE)} for row in ROWS
    }
    changed = apply_batch(read, Batch(dashboard=DASHBOARD, cells=leg)).state

    again = dump_columns(changed, Columns(state=read, lines=column_lines(text)))

    old, new = column_lines(text), column_lines(again)
    assert [b for b in BACKENDS if old[b] != new[b]] == ["torch"]


def test_a_document_laid_out_otherwise_has_no_lines_to_keep():
    """A version 3 document written out of line (pretty-printed) reads, and keeps no lines."""
    state = fold([(1, [("test_grad", "torch", Outcome.SUCCESS, 0, None)])])
    pretty = json.dumps(json.loads(dump_columns(state)), indent=2)

    assert load_state(pretty, where="f.json") == state
    assert column_lines(pretty) == {}


@pytest.mark.parametrize(
    "at",
    [[5], [-1], ["0"], [True], [0, 0, 0, 0, 0, 0]],
    ids=["out of range", "negative", "text", "bool", "more rows than the document"],
)
def test_a_bad_cell_position_is_malformed(at):
    """Each row position holds null or an index into the column's cells, for rows that exist."""
    state = fold([(1, [("test_grad", "torch", Outcome.SUCCESS, 0, None)])])
    document = json.loads(dump_columns(state))
    document["columns"][0]["at"] = at

    with pytest.raises(StoreError, match="malformed"):
        load_state(json.dumps(document), where="f.json")


@pytest.mark.parametrize(
    "seen",
    [[0], [0, 0, 0, 1], [-1, 0], [1, 0], ["0", 0]],
    ids=["one number", "a row too many", "negative key", "no such key", "text"],
)
def test_a_bad_first_seen_is_malformed(seen):
    """Each row's first appearance is an index into the run keys and a position."""
    state = fold([(1, [("test_grad", "torch", Outcome.SUCCESS, 0, None)])])
    document = json.loads(dump_columns(state))
    document["seen"] = seen

    with pytest.raises(StoreError, match="malformed"):
        load_state(json.dumps(document), where="f.json")
