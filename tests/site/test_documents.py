"""Tests for site/documents.py and site/build.py: the data files the page reads."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from ivy_matrix.model import (
    BackendPoint,
    CaseCounts,
    Cell,
    DashboardState,
    Entry,
    Parity,
    Row,
    RunKey,
    Source,
    Trend,
    TrendPoint,
)
from ivy_matrix.site.build import render_site
from ivy_matrix.site.cells import dashboard_cells
from ivy_matrix.site.documents import dashboard_document, script
from ivy_matrix.site.overview import column_counts
from ivy_matrix.views.dashboards import RenderedFile
from tests.site.scenes import HOSTILE, NEWEST, F, K, S, dashboard, sample_states, source

PAGE = (RenderedFile(path="index.html", text="<!doctype html>\n"),)


def data(text: str) -> tuple[str, dict[str, Any]]:
    """The name and document a data file hands to the page."""
    match = re.fullmatch(r"ivyMatrix\.put\((\"[^\"]*\"),(.*)\);\n", text, re.DOTALL)
    assert match is not None, text[:80]
    return json.loads(match.group(1)), json.loads(match.group(2))


def document_of(state: DashboardState) -> dict[str, Any]:
    """A dashboard's data document, as the page reads it (JSON)."""
    document: dict[str, Any] = json.loads(
        json.dumps(dashboard_document(state, list(dashboard_cells(state, {}))))
    )
    return document


def files_by_path(files: list[RenderedFile]) -> dict[str, str]:
    return {f.path: f.text or "" for f in files}


def test_the_data_files_match_their_golden_files(site_golden):
    """index.js, attention.js and each dashboard's file are exactly the golden ones."""
    files = files_by_path(render_site(sample_states(), PAGE))

    assert sorted(files) == [
        "data/attention.js",
        "data/d/core/gradients.js",
        "data/d/nn/layers.js",
        "data/index.js",
        "data/slowest.js",
        "index.html",
    ]
    for path in ("data/index.js", "data/attention.js", "data/d/core/gradients.js"):
        site_golden(path.replace("/", "_"), files[path])


def test_rendering_the_same_states_again_gives_the_same_bytes():
    """Nothing depends on the clock or on dict order: an unchanged state renders identically."""
    assert render_site(sample_states(), PAGE) == render_site(sample_states()[::-1][::-1], PAGE)


def test_only_limits_the_dashboard_files_but_the_index_covers_every_dashboard():
    """With only=, other dashboards' files are not made; the index and attention list all."""
    files = files_by_path(render_site(sample_states(), PAGE, only={"nn/layers"}))

    assert "data/d/core/gradients.js" not in files
    assert "data/d/nn/layers.js" in files
    _, index = data(files["data/index.js"])
    assert [d["key"] for d in index["dashboards"]] == ["core/gradients", "nn/layers"]


def test_hostile_names_reach_the_page_exactly_as_data():
    """Test names that look like markup or reorder text are kept exactly, as JSON strings."""
    files = files_by_path(render_site(sample_states(), PAGE))

    _, document = data(files["data/d/core/gradients.js"])
    names = [row[0] for row in document["rows"]]
    assert set(HOSTILE) <= set(names)
    assert "<script>" not in files["data/d/core/gradients.js"].split('"rows"')[0]


def test_a_data_file_is_one_line_of_plain_ascii_whatever_the_names():
    """Line separators, bidi controls and other non-ASCII characters are escaped as JSON does."""
    name = "a\u2028b\u2029c\u202e\u00e9\n"
    text = script("index", {"name": name})

    assert text.isascii()
    assert text.count("\n") == 1
    assert data(text)[1] == {"name": name}


def test_each_cell_points_at_the_jobs_of_its_results():
    """A cell's strip letters come with the index of each result's job in the jobs list."""
    state = dashboard("g", {"test_a": {"torch": [F, F, S]}})

    document = document_of(state)

    jobs = document["jobs"]
    assert jobs["base"] == "https://github.com/o/r/actions/runs/"
    (only,) = document["cells"]
    assert only["s"] == "f"
    assert only["h"] == "ffs"
    assert [jobs["list"][j][0] for j in only["j"]] == [NEWEST, NEWEST - 1, NEWEST - 2]
    assert (
        jobs["base"] + jobs["list"][only["j"][0]][4]
        == f"{jobs['base']}{NEWEST}/job/{NEWEST * 10 + 1}"
    )
    assert (only["n"], jobs["list"][only["i"]][0], jobs["list"][only["p"]][0]) == (
        2,
        NEWEST - 1,
        NEWEST - 2,
    )


def test_a_job_whose_url_is_not_plain_http_gets_no_link():
    """A javascript: or otherwise unsafe job URL reaches the page as null, never as a link."""
    state = dashboard("g", {"test_a": {"torch": [F]}})
    bad = Source(run=RunKey(NEWEST, 1, 5), url="javascript:alert(1)")
    row = state.rows[0]
    cells = {"torch": Cell(entries=(Entry(source=bad, outcome=F),))}
    state = replace(state, rows=(Row(row.name, row.first_seen, cells),))

    document = document_of(state)

    assert document["jobs"] == {"base": "", "list": [[NEWEST, 1, "", "", None]]}


def test_column_counts_compare_with_the_run_before_the_newest():
    """Passing/total now and before the column's newest run; a new row counts only now."""
    state = dashboard(
        "g",
        {
            "test_broke": {"torch": [F, S]},
            "test_mended": {"torch": [S, F]},
            "test_added": {"torch": [S]},
            "test_skipped": {"torch": [K, S]},
            "test_elsewhere": {"jax": [S]},
        },
    )

    counts = column_counts(state, list(dashboard_cells(state, {})))

    assert counts == {
        "torch": [2, 3, 2, 3, 1, 0, 1, 1, 0, 0],
        "jax": [1, 1, 0, 0, 0, 0, 0, 4, 0, 0],
    }


def failing_entry(run: int, message: str, signature: str, counts: CaseCounts) -> Entry:
    """A failing result of torch in ``run`` with its line, signature and case counts."""
    return Entry(
        source=source(run, "torch"), outcome=F, counts=counts, message=message, signature=signature
    )


def test_a_cell_carries_its_case_counts_and_its_failures_signature():
    """c holds passed, failed, skipped, flaky and total; m the signature; the first line of a
    signature is the dashboard's sample and a cell with another line keeps its own (e)."""
    state = dashboard("g", {"test_a": {"torch": [S]}, "test_b": {"torch": [S]}})
    first = failing_entry(NEWEST, "assert 1 == 2", "abc123", CaseCounts(passed=5, failed=3))
    other = failing_entry(NEWEST, "assert 7 == 9", "abc123", CaseCounts(failed=1, skipped=1))
    rows = tuple(
        Row(row.name, row.first_seen, {"torch": Cell(entries=(entry,))})
        for row, entry in zip(state.rows, (first, other), strict=True)
    )

    document = document_of(replace(state, rows=rows))

    assert document["messages"] == {"abc123": "assert 1 == 2"}
    a, b = (document["cells"][row[1]] for row in document["rows"])
    assert (a["c"], a["m"], "e" in a) == ([5, 3, 0, 0, 8], "abc123", False)
    assert (b["c"], b["m"], b["e"]) == ([0, 1, 1, 0, 2], "abc123", "assert 7 == 9")


def test_the_sparklines_come_from_the_stores_trend_when_it_has_points():
    """The index's trend is the trend's newest points: passing (flaky included) of the rows
    that ran, per backend, and the parity; a backend a run did not report is null."""
    points = tuple(
        TrendPoint(
            run=run,
            sha=f"{run:040x}",
            time="2026-11-01T00:00:00Z",
            backends=(("torch", BackendPoint(passed=8, failed=1, flaky=1, skipped=3)),)
            + ((("jax", BackendPoint(passed=2)),) if run % 2 else ()),
            parity=Parity(rows=10, green=7, fails_only=(("torch", 1),)),
        )
        for run in range(1, 41)
    )
    files = files_by_path(render_site(sample_states(), PAGE, trend=Trend(points=points)))

    _, index = data(files["data/index.js"])
    trend = index["trend"]
    assert [run for run, _, _ in trend["runs"]] == list(range(11, 41))
    assert trend["backends"]["torch"][-1] == [9, 10]
    assert trend["backends"]["jax"][-2:] == [[2, 2], None]
    assert trend["parity"][-1] == [7, 10]
    assert trend["fails_only"] == {"torch": 1}


def test_the_attention_list_groups_by_signature_with_one_line_each():
    """Each item ends with its cell's signature, and the list holds one line per signature."""
    state = dashboard("g", {"test_a": {"torch": [F]}})
    entry = failing_entry(NEWEST, "boom 3", "sig1", CaseCounts(failed=1))
    row = state.rows[0]
    state = replace(state, rows=(Row(row.name, row.first_seen, {"torch": Cell(entries=(entry,))}),))

    _, attention = data(files_by_path(render_site([state], PAGE))["data/attention.js"])

    assert attention["items"] == [[0, "test_a", "torch", "new", "f", 1, "sig1"]]
    assert attention["messages"] == {"sig1": "boom 3"}
