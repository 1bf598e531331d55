"""Tests for statefile.py: the documented, versioned serialized form of a dashboard."""

from __future__ import annotations

import json

import pytest

from ivy_matrix.errors import StoreError
from ivy_matrix.model import UNKNOWN_RUN, CaseCounts, DashboardId, Entry, Outcome, RunKey, Source
from ivy_matrix.results.junit import MESSAGE_CAP, NAME_CAP, cap_name
from ivy_matrix.results.signature import Signer
from ivy_matrix.state.merge import Batch, apply_batch
from ivy_matrix.state.records import FORMAT
from ivy_matrix.state.statefile import (
    NEWEST,
    VERSION,
    dump_state,
    join_columns,
    load_state,
    split_columns,
)
from ivy_matrix.views.dashboards import render_dashboard
from ivy_matrix.views.readback import adopt_table
from tests.conftest import shared_dir

DASH = DashboardId(title="gradients", category="core")


def test_state_round_trips_with_history_and_adopted_text():
    """Dumping and loading gives back an equal state, adopted cell text included."""
    text = min(shared_dir("ivy-seeds").glob("0*.txt")).read_text(encoding="utf-8")
    state = adopt_table(text, DASH)
    source = Source(
        run=RunKey(9, 2, 3), url="https://x/actions/runs/9/job/3", time="2026-11-21T00:00:00Z"
    )
    state = apply_batch(
        state,
        Batch(
            dashboard=DASH,
            cells={"test_new": {"torch": Entry(source=source, outcome=Outcome.FLAKY)}},
        ),
    ).state
    dumped = dump_state(state)
    assert load_state(dumped, where="x") == state
    assert dump_state(load_state(dumped, where="x")) == dumped


def test_sources_are_stored_once():
    """Cells from one job share one source entry."""
    source = Source(run=RunKey(1, 1, 1), url="u")
    cells = {f"t{i}": {"torch": Entry(source=source, outcome=Outcome.SUCCESS)} for i in range(50)}
    document = json.loads(dump_state(apply_batch(None, Batch(dashboard=DASH, cells=cells)).state))
    assert document["format"] == FORMAT
    assert document["version"] == VERSION
    assert len(document["sources"]) == 1


def test_newer_versions_and_other_documents_are_refused_clearly():
    """A newer format says to upgrade; anything else says what it is not."""
    with pytest.raises(StoreError, match="upgrade ivy-matrix"):
        load_state(json.dumps({"format": FORMAT, "version": NEWEST + 1}), where="f.json")
    with pytest.raises(StoreError, match=r"f\.json: not JSON"):
        load_state("{", where="f.json")
    with pytest.raises(StoreError, match="not an ivy-matrix-dashboard document"):
        load_state("[]", where="f.json")
    with pytest.raises(StoreError, match="malformed"):
        load_state(json.dumps({"format": FORMAT, "version": 1, "sources": "x"}), where="f.json")


def test_equal_states_serialize_the_same_however_cells_are_shared():
    """Two equal states, one sharing a cell object between rows, give the same text."""
    source = Source(run=RunKey(1, 1, 1), url="u")
    entry = Entry(source=source, outcome=Outcome.SUCCESS)
    shared = apply_batch(
        None, Batch(dashboard=DASH, cells={"a": {"torch": entry}, "b": {"torch": entry}})
    ).state
    separate = apply_batch(
        None,
        Batch(
            dashboard=DASH,
            cells={
                "a": {"torch": Entry(source=source, outcome=Outcome.SUCCESS)},
                "b": {
                    "torch": Entry(
                        source=Source(run=RunKey(1, 1, 1), url="u"), outcome=Outcome.SUCCESS
                    )
                },
            },
        ),
    ).state
    assert shared == separate
    assert dump_state(shared) == dump_state(separate)
    assert len(json.loads(dump_state(shared))["cells"]) == 1


def test_cell_indexes_out_of_range_are_malformed():
    """A row pointing at a cell that is not in the table is refused as malformed."""
    document = {
        "format": FORMAT,
        "version": 1,
        "title": "t",
        "category": "",
        "runs": [],
        "sources": [],
        "cells": [],
        "backends": [],
        "rows": [["x", [1, 1, 1], 0, {"torch": 0}]],
    }
    with pytest.raises(StoreError, match="cell index 0 out of range"):
        load_state(json.dumps(document), where="f.json")


def test_provenance_round_trips_and_is_written_only_when_known():
    """A source's commit, event, ref, PR number and base sha survive dump and load; a source
    without provenance is written as the five items it always had."""
    with_provenance = Source(
        run=RunKey(5, 1, 50),
        url="https://x/actions/runs/5/job/50",
        sha="9f2c0de",
        event="pull_request",
        ref="refs/pull/7/merge",
        pr=7,
        base_sha="1a2b3c4",
    )
    partial = Source(run=RunKey(4, 1, 40), url="u4", sha="abc", event="push")
    bare = Source(run=RunKey(3, 1, 30), url="u3")
    cells = {
        "a": {"torch": Entry(source=with_provenance, outcome=Outcome.FAILURE)},
        "b": {"torch": Entry(source=partial, outcome=Outcome.SUCCESS)},
        "c": {"torch": Entry(source=bare, outcome=Outcome.SKIPPED)},
    }
    state = apply_batch(None, Batch(dashboard=DASH, cells=cells)).state
    dumped = dump_state(state)
    loaded = load_state(dumped, where="x")
    assert loaded == state
    by_name = {row.name: row for row in loaded.rows}
    assert by_name["a"].cells["torch"].latest.source.pr == 7
    records = {record[3]: record for record in json.loads(dumped)["sources"]}
    assert records["https://x/actions/runs/5/job/50"][5] == {
        "sha": "9f2c0de",
        "event": "pull_request",
        "ref": "refs/pull/7/merge",
        "pr": 7,
        "base_sha": "1a2b3c4",
    }
    assert records["u4"][5] == {"sha": "abc", "event": "push"}
    assert records["u3"] == [3, 1, 30, "u3", ""]


def test_state_without_provenance_loads_with_empty_provenance():
    """A state file written before provenance existed loads, its sources with none."""
    document = {
        "format": FORMAT,
        "version": 1,
        "title": "t",
        "category": "",
        "runs": [1],
        "sources": [[1, 1, 1, "u", ""]],
        "cells": [[[0, "success"]]],
        "backends": [["torch", [1, 1, 1], 0]],
        "rows": [["x", [1, 1, 1], 0, {"torch": 0}]],
    }
    source = load_state(json.dumps(document), where="f.json").rows[0].cells["torch"].latest.source
    assert source == Source(run=RunKey(1, 1, 1), url="u")
    assert (source.sha, source.event, source.ref, source.pr, source.base_sha) == (
        "",
        "",
        "",
        None,
        "",
    )
    document["sources"] = [[1, 1, 1, "u", "", "not an object"]]
    with pytest.raises(StoreError, match="provenance"):
        load_state(json.dumps(document), where="f.json")


def _three_backends():
    """A dashboard that three runs built: rows and columns first seen in different runs."""
    dashboard = DashboardId(title="gradients", category="core")
    state = None
    for run, backends, rows in ((3, ("jax",), 2), (1, ("torch", "numpy"), 3), (2, ("jax",), 4)):
        for job, backend in enumerate(backends):
            source = Source(run=RunKey(run, 1, 10 * run + job), url=f"https://x/{run}/{job}")
            cells = {
                f"test_{r}": {backend: Entry(source=source, outcome=Outcome.FAILURE)}
                for r in range(rows)
            }
            state = apply_batch(state, Batch(dashboard=dashboard, cells=cells)).state
    assert state is not None
    return state


def test_a_dashboard_split_into_columns_joins_back_to_itself_in_any_order():
    """split_columns gives one state per backend; joining them, in any order, gives it back."""
    state = _three_backends()
    columns = split_columns(state)
    assert sorted(columns) == ["jax", "numpy", "torch"]
    assert all(column.backend_names == (name,) for name, column in columns.items())
    assert [row.name for row in columns["numpy"].rows] == ["test_0", "test_1", "test_2"]
    assert join_columns(columns.values()) == state
    assert join_columns(reversed(list(columns.values()))) == state
    texts = {name: dump_state(column) for name, column in columns.items()}
    loaded = [load_state(text, where=name) for name, text in texts.items()]
    assert join_columns(loaded) == state


def legacy_document(sources: list[list[object]]) -> dict[str, object]:
    """A one-cell document whose cell has the given sources' history, newest first."""
    return {
        "format": FORMAT,
        "version": 1,
        "title": "t",
        "category": "",
        "runs": [],
        "sources": sources,
        "cells": [[[i, "failure"] for i in range(len(sources))]],
        "backends": [["torch", [-1, -1, -1], 0]],
        "rows": [["test_a", [-1, -1, -1], 0, {"torch": 0}]],
    }


def test_a_cell_adopted_by_an_older_version_no_longer_outranks_later_results():
    """Older versions stored an adopted cell at the run its link named, with attempt 0; such a
    cell loads as older than any run, so the next real result replaces it."""
    pinned = "https://github.com/o/r/actions/runs/100000000000000000000000000/job/7"
    document = legacy_document([[10**26, 0, 7, pinned, ""]])
    state = load_state(json.dumps(document), where="f.json")
    assert state.rows[0].cells["torch"].latest.source == Source(run=UNKNOWN_RUN, url=pinned)
    real = Source(run=RunKey(9_000_000_001, 1, 42), url="https://github.com/o/r/x")
    batch = Batch(
        dashboard=DashboardId(title="t"),
        cells={"test_a": {"torch": Entry(source=real, outcome=Outcome.SUCCESS)}},
    )
    latest = apply_batch(state, batch).state.rows[0].cells["torch"].latest
    assert (latest.outcome, latest.source) == (Outcome.SUCCESS, real)


def test_names_in_a_state_file_are_capped_as_the_reader_caps_them():
    """A hand-edited state file with row and column names megabytes long loads with each name
    capped as the JUnit reader caps a test name (its start and a hash, NAME_CAP characters),
    distinct names staying distinct, and its table's lines stay short."""
    row, other, backend = "r" * 1_000_000, "r" * 999_999 + "s", "b" * 50_000
    document = {
        **legacy_document([[1, 1, 1, "https://github.com/o/r/actions/runs/1/job/1", ""]]),
        "backends": [[backend, [1, 1, 1], 0]],
        "rows": [[row, [1, 1, 1], 0, {backend: 0}], [other, [1, 1, 1], 1, {backend: 0}]],
    }
    state = load_state(json.dumps(document), where="f.json")
    assert [r.name for r in state.rows] == [cap_name(row), cap_name(other)]
    assert len({r.name for r in state.rows}) == 2
    assert all(len(r.name) == NAME_CAP for r in state.rows)
    assert state.backend_names == (cap_name(backend),)
    assert state.rows[0].cells.keys() == {cap_name(backend)}
    assert max(map(len, render_dashboard(state).splitlines())) < 3 * NAME_CAP


# --------------------------------------------------------------------------- version 2


def _entry(outcome: Outcome, counts: CaseCounts | None, message: str = "") -> Entry:
    source = Source(run=RunKey(5, 1, 2), url="https://github.com/o/r/actions/runs/5/job/2")
    signature = Signer().signature(message, "torch")
    return Entry(
        source=source, outcome=outcome, counts=counts, message=message, signature=signature
    )


def test_counts_messages_and_signatures_round_trip():
    """Case counts, failure lines and signatures load back as they were saved."""
    cells = {
        "test_a": {"torch": _entry(Outcome.FAILURE, CaseCounts(passed=3, failed=1), "E: 3 != 4")},
        "test_b": {"torch": _entry(Outcome.FAILURE, None, "E: 5 != 4")},
        "test_c": {"torch": _entry(Outcome.SUCCESS, CaseCounts(passed=256))},
        "test_d": {"torch": _entry(Outcome.SKIPPED, None)},
    }
    state = apply_batch(None, Batch(dashboard=DASH, cells=cells)).state
    dumped = dump_state(state)
    assert load_state(dumped, where="x") == state
    assert dump_state(load_state(dumped, where="x")) == dumped


def test_each_distinct_failure_line_is_stored_once_with_its_signature():
    """Rows failing with the same line share one entry of the messages table."""
    cells = {
        f"t{i}": {"torch": _entry(Outcome.FAILURE, CaseCounts(failed=1), f"E: {i % 2}")}
        for i in range(10)
    }
    document = json.loads(dump_state(apply_batch(None, Batch(dashboard=DASH, cells=cells)).state))
    assert document["messages"] == [
        ["E: 0", Signer().signature("E: 0", "torch")],
        ["E: 1", Signer().signature("E: 1", "torch")],
    ]


def test_the_document_carries_each_backends_totals():
    """Rows by latest outcome and their cases, per backend, are written for readers."""
    cells = {
        "a": {"torch": _entry(Outcome.FAILURE, CaseCounts(passed=3, failed=1), "E")},
        "b": {"torch": _entry(Outcome.FLAKY, CaseCounts(passed=1, flaky=1))},
        "c": {"torch": _entry(Outcome.SKIPPED, CaseCounts(skipped=2))},
    }
    document = json.loads(dump_state(apply_batch(None, Batch(dashboard=DASH, cells=cells)).state))
    assert document["totals"] == {
        "torch": {
            "success": 0,
            "failure": 1,
            "flaky": 1,
            "skipped": 1,
            "cases_passed": 4,
            "cases_failed": 1,
            "cases_skipped": 2,
            "cases_flaky": 1,
            "passing": 1,
            "total": 2,
        }
    }


def test_a_version_1_document_loads_with_unknown_counts_and_is_written_as_the_newest():
    """An older state keeps its cells (no counts, no messages) and migrates when saved."""
    old = {
        "format": FORMAT,
        "version": 1,
        "title": "gradients",
        "category": "core",
        "runs": [7],
        "sources": [[7, 1, 3, "https://x/actions/runs/7/job/3", ""]],
        "cells": [[[0, "failure"]], [[0, "success", "<a>old text</a>"]]],
        "backends": [["torch", [7, 1, 3], 0]],
        "rows": [["t1", [7, 1, 3], 0, {"torch": 0}], ["t2", [7, 1, 3], 1, {"torch": 1}]],
    }
    state = load_state(json.dumps(old), where="old.json")
    entries = [row.cells["torch"].latest for row in state.rows]
    assert [(e.outcome, e.counts, e.message) for e in entries] == [
        (Outcome.FAILURE, None, ""),
        (Outcome.SUCCESS, None, ""),
    ]
    migrated = json.loads(dump_state(state))
    assert migrated["version"] == VERSION
    assert migrated["cells"] == [[[0, "failure"]], [[0, "success"]]]


def test_a_message_index_out_of_range_is_malformed():
    """A result pointing past the messages table is refused, not guessed."""
    state = apply_batch(
        None,
        Batch(dashboard=DASH, cells={"a": {"torch": _entry(Outcome.FAILURE, None, "E")}}),
    ).state
    document = json.loads(dump_state(state))
    document["messages"] = []
    with pytest.raises(StoreError, match="message index 0 out of range"):
        load_state(json.dumps(document), where="f.json")


def test_a_hand_edited_failure_message_is_cut_as_the_reader_cuts_messages():
    """A failure line made a megabyte long in the state file loads cut at MESSAGE_CAP."""
    cells = {"test_a": {"torch": _entry(Outcome.FAILURE, CaseCounts(failed=1), "E: 1 != 2")}}
    document = json.loads(dump_state(apply_batch(None, Batch(dashboard=DASH, cells=cells)).state))
    document["messages"][0][0] = "E: " + "x" * 1_000_000
    entry = load_state(json.dumps(document), where="x").rows[0].cells["torch"].latest
    assert entry.message == ("E: " + "x" * 1_000_000)[:MESSAGE_CAP]
