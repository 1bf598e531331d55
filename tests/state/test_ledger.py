"""Tests for ledger.py: the local store's record of its revision, states and result files."""

from __future__ import annotations

import pytest

from ivy_matrix.model import DashboardId, Failure, FileCounts, FileRecord
from ivy_matrix.state.ledger import (
    READINGS_KEPT,
    Ledger,
    dump_ledger,
    load_ledger,
    reading_digest,
    revision_of,
)


def record(path: str, sha: str = "ab" * 32) -> FileRecord:
    return FileRecord(
        path=path,
        size=120,
        sha256=sha,
        backend="torch",
        counts=FileCounts(path=path, tests=3, passed=1, failed=1, skipped=1, nameless=1),
        failures=(Failure(test="t::test_a", backend="torch", message="boom", result_file=path),),
        tallies=(("jax", (2, 1, 0, 0)),),
        unassigned=1,
        nameless_line=7,
        ids_tried=3,
        unmatched_ids=("t::x",),
        dashboards=(DashboardId(title="gradients", category="core"),),
    )


def test_a_ledger_round_trips():
    """Every field of the ledger reads back as written."""
    states = {"state/core/gradients.json": (10, 20, 30, 40), "trend.json": (1, 2, 3, 4)}
    ledger = Ledger(store="00ff", revision=7, states=states).with_inputs(
        "r1", [record("a.xml"), record("b.xml")]
    )

    assert load_ledger(dump_ledger(ledger)) == ledger
    assert revision_of(ledger) == "00ff:7"


def test_files_are_found_by_reading_path_size_and_digest():
    """A file counts as recorded only under its reading, with its path, size and SHA-256."""
    ledger = Ledger(store="s").with_inputs("r1", [record("a.xml")])

    assert set(ledger.recorded("r1")) == {("a.xml", 120, "ab" * 32)}
    assert ledger.recorded("r2") == {}


def test_a_file_read_again_replaces_its_record_and_old_readings_go():
    """A path recorded again under one reading keeps its newest record; only the newest
    READINGS_KEPT readings are kept."""
    ledger = Ledger(store="s").with_inputs("r0", [record("a.xml", "01" * 32)])
    ledger = ledger.with_inputs("r0", [record("a.xml", "02" * 32)])
    assert list(ledger.recorded("r0")) == [("a.xml", 120, "02" * 32)]

    for n in range(1, READINGS_KEPT + 1):
        ledger = ledger.with_inputs(f"r{n}", [record("a.xml")])

    assert ledger.recorded("r0") == {}
    assert len(ledger.inputs) == READINGS_KEPT


def test_a_ledger_proves_nothing_for_data_files_it_did_not_record():
    """Recorded result files count only while every data file is as the store left it: a
    state restored from a backup, changed, deleted or added, or a trend so, forgets them
    (the store keeps its id and revision number)."""
    states = {"state/core/gradients.json": (10, 20, 30, 40), "trend.json": (1, 2, 3, 4)}
    ledger = Ledger(store="s", revision=3, states=states).with_inputs("r1", [record("a.xml")])
    assert ledger.checked(dict(states)) is ledger

    for other in (
        {**states, "state/core/gradients.json": (10, 20, 31, 40)},  # restored: new change time
        {**states, "trend.json": (1, 2, 3, 5)},  # another inode
        {"trend.json": (1, 2, 3, 4)},  # a state deleted
        {**states, "state/nn/layers.json": (1, 1, 1, 1)},  # a state added
    ):
        checked = ledger.checked(other)
        assert checked.recorded("r1") == {}
        assert (checked.store, checked.revision, checked.states) == ("s", 3, states)


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "{",
        "[]",
        '{"format":"ivy-matrix-ledger","version":99}',
        '{"format":"x"}',
        (
            '{"format":"ivy-matrix-ledger","version":1,"store":"s","revision":1,'
            '"states":{"core/gradients.json":[1,2]},"inputs":[]}'
        ),
    ],
    ids=["none", "empty", "not JSON", "a list", "a newer version", "another format", "version 1"],
)
def test_anything_but_a_ledger_reads_as_an_empty_one(text):
    """A missing or unreadable ledger only costs work: it reads as an empty one."""
    assert load_ledger(text) == Ledger()


def test_a_reading_changes_with_any_setting_that_shapes_cells():
    """Two readings are the same only when every setting given is the same."""
    base = [("run_id", 5), ("backend", "torch")]

    assert reading_digest(base) == reading_digest(list(base))
    assert reading_digest(base) != reading_digest([("run_id", 6), ("backend", "torch")])
    assert reading_digest(base) != reading_digest([("run_id", 5), ("backend", "jax")])
