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
from ivy_matrix.site.overview import column_counts, shard_of
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
    """index.js, the attention and failure groups' files and each dashboard's file are exactly
    the golden ones; the cross-dashboard files are a fixed set, whatever the store holds."""
    files = files_by_path(render_site(sample_states(), PAGE))

    assert sorted(files) == sorted(
        [
            "data/attention.js",
            *(f"data/attention/{g}.js" for g in ("new", "failing", "flaky", "fixed", "stale")),
            "data/groups.js",
            *(f"data/groups/{h}.js" for h in "0123456789abcdef"),
            "data/d/core/gradients.js",
            "data/d/nn/layers.js",
            "data/index.js",
            "data/slowest.js",
            "index.html",
        ]
    )
    for path in (
        "data/index.js",
        "data/attention.js",
        "data/attention/failing.js",
        "data/groups.js",
        "data/groups/0.js",
        "data/d/core/gradients.js",
    ):
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
    """Each group lists its signatures with their tests, and the file holds one line per
    signature listed."""
    state = dashboard("g", {"test_a": {"torch": [F]}})
    entry = failing_entry(NEWEST, "boom 3", "sig1", CaseCounts(failed=1))
    row = state.rows[0]
    state = replace(state, rows=(Row(row.name, row.first_seen, {"torch": Cell(entries=(entry,))}),))

    files = files_by_path(render_site([state], PAGE))
    _, attention = data(files["data/attention.js"])
    _, groups = data(files["data/groups.js"])

    assert attention["groups"] == {"new": [["sig1", 1, [[0, "test_a", [["torch", "f", 1]]]]]]}
    assert attention["counts"]["new"] == [1, 1]
    assert attention["messages"] == {"sig1": "boom 3"}
    assert groups["groups"] == [
        ["sig1", "boom 3", 1, ["torch"], "backend-specific", [[0, "test_a", ["torch"]]]]
    ]


def many_failures(tests: int, signatures: int, prefix: str = "") -> DashboardState:
    """A dashboard of ``tests`` tests failing on torch and jax, for several runs, their
    failures spread over ``signatures`` signatures (``prefix`` then ``00``, ``01``...)."""
    state = dashboard(
        "big", {f"test_{i:05d}": {"torch": [F, F], "jax": [F, F]} for i in range(tests)}
    )
    rows = []
    for i, row in enumerate(state.rows):
        signature = f"{prefix}{i % signatures:02d}"
        cells = {
            backend: Cell(
                entries=tuple(
                    replace(e, message=f"boom {signature}", signature=signature)
                    for e in cell.entries
                )
            )
            for backend, cell in row.cells.items()
        }
        rows.append(Row(row.name, row.first_seen, cells))
    return replace(state, rows=tuple(rows))


def test_each_cross_dashboard_file_holds_at_most_what_its_view_shows():
    """However many tests fail, the landing view's file lists 200 tests of each group, a group
    alone 2,000, the failure groups a sample of 20 while 1,000 rows last, and one failure
    group alone 2,000 tests: what the views show, no more; the counts stay whole."""
    state = many_failures(4500, 3)

    files = files_by_path(render_site([state], PAGE))
    _, landing = data(files["data/attention.js"])
    _, failing = data(files["data/attention/failing.js"])
    _, groups = data(files["data/groups.js"])
    _, shard = data(files["data/groups/0.js"])

    def listed(document: dict[str, Any], group: str) -> int:
        return sum(len(tests) for _, _, tests in document["groups"][group])

    assert landing["counts"]["failing"] == [4500, 3]
    assert listed(landing, "failing") == 200
    assert listed(failing, "failing") == 2000
    assert list(failing["groups"]) == ["failing"]
    assert [g[:2] for g in landing["groups"]["failing"]] == [["00", 1500]]
    assert [g[:2] for g in failing["groups"]["failing"]] == [["00", 1500], ["01", 1500]]
    assert [(g[0], g[2], len(g[5])) for g in groups["groups"]] == [
        ("00", 1500, 20),
        ("01", 1500, 20),
        ("02", 1500, 20),
    ]
    assert [(g[0], g[2], len(g[5])) for g in shard["groups"]] == [
        ("00", 1500, 1500),
        ("01", 1500, 1500),
        ("02", 1500, 1500),
    ]
    assert shard["groups"][0][5][0] == [0, "test_00000", ["torch", "jax"]]
    assert len(files["data/attention/failing.js"]) < 200_000


def test_a_signatures_group_is_in_the_file_of_its_first_hex_digit():
    """groups/<h>.js holds the signatures starting with h; those without one, or that start
    with anything else, are in groups/0.js."""
    assert [shard_of(s) for s in ("a1b2", "0f", "", "zz", "F0")] == ["a", "0", "0", "0", "0"]
    state = many_failures(4, 2, prefix="b")

    files = files_by_path(render_site([state], PAGE))

    _, shard = data(files["data/groups/b.js"])
    assert [g[0] for g in shard["groups"]] == ["b00", "b01"]
    assert data(files["data/groups/0.js"])[1]["groups"] == []
