"""Tests for issues/store.py: dashboard state kept in the issue bodies, round trip and races.

The races run on the in-memory model (tests/github/memory.py) with threads; the lock itself
is tested in tests/issues/test_store_lock.py.
"""

from __future__ import annotations

from functools import partial

from ivy_matrix.issues.state_block import extract_state
from tests.concurrency import at_once
from tests.issues.helpers import GRADIENTS, RANDOM, client, issue_store, leg_change, ours


def test_issue_store_round_trips_state_and_an_unchanged_update_writes_nothing(memory):
    """The store writes state into the issues, loads it back, and a repeat only reads."""
    with client(memory) as gh:
        outcome = issue_store(gh).update(leg_change("torch", 1))
        assert outcome.converged
        loaded = issue_store(gh).load()
        assert set(loaded) == {GRADIENTS, RANDOM}
        assert loaded[GRADIENTS].backend_names == ("torch",)
        writes = len(memory.writes())
        again = issue_store(gh).update(leg_change("torch", 1))
    assert again.converged
    assert len(memory.writes()) == writes
    [issue] = ours(memory, "core/gradients")
    assert extract_state(issue["body"]) == loaded[GRADIENTS]


def test_issue_store_with_four_concurrent_writers_keeps_every_cell(memory):
    """Four legs writing at once converge: one issue per dashboard holding all four columns."""
    backends = ("torch", "jax", "numpy", "tensorflow")
    memory.latency = (0.0, 0.002)  # every call pauses, so the writers really interleave
    outcomes = []

    def leg(index: int) -> None:
        change = leg_change(backends[index], index + 1)
        outcomes.append(issue_store(memory, seed=index).update(change))

    at_once([partial(leg, index) for index in range(len(backends))])
    assert len(outcomes) == len(backends)
    assert all(o.attempts <= 6 for o in outcomes)
    for key in ("core/gradients", "core/random"):
        [issue] = ours(memory, key)
        state = extract_state(issue["body"])
        assert state is not None
        assert sorted(state.backend_names) == sorted(backends)
        assert len(state.rows) == 12
        assert all(set(row.cells) == set(backends) for row in state.rows)
