"""Tests for stores/layout.py: what the branch store keeps where, and the finished-legs record."""

from __future__ import annotations

import pytest

from ivy_matrix.errors import StoreError
from ivy_matrix.stores.layout import dump_runs, load_runs


def test_the_finished_legs_record_round_trips_keeps_50_runs_and_refuses_garbage():
    """dump_runs/load_runs keep each run's size and legs; a bad record names its file."""
    legs = {run: (4, frozenset({0, run % 4})) for run in range(60)}
    loaded = load_runs(dump_runs(legs), where="LEGS")
    assert loaded == {run: legs[run] for run in range(10, 60)}
    for bad in ("[]", '{"format": "ivy-matrix-runs", "runs": {"1": {"size": "x"}}}', "{"):
        with pytest.raises(StoreError, match=r"finished matrix legs LEGS: .*delete the file"):
            load_runs(bad, where="LEGS")
