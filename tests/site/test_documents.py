"""Tests for site/documents.py and site/build.py: the data files the page reads."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from ivy_matrix.model import Cell, DashboardState, Entry, Row, RunKey, Source
from ivy_matrix.render import RenderedFile
from ivy_matrix.site.build import render_site
from ivy_matrix.site.cells import dashboard_cells
from ivy_matrix.site.documents import dashboard_document, script
from ivy_matrix.site.overview import column_counts
from tests.site.scenes import HOSTILE, NEWEST, F, K, S, dashboard, sample_states

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
