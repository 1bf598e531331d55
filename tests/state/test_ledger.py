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
    ledger = Ledger(store="00ff", revision=7, states={"core/gradients.json": (10, 20)}).with_inputs(
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


@pytest.mark.parametrize(
    "text",
    [None, "", "{", "[]", '{"format":"ivy-matrix-ledger","version":99}', '{"format":"x"}'],
    ids=["none", "empty", "not JSON", "a list", "a newer version", "another format"],
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
