"""Tests for the blame in a dashboard's data file: what a failing cell's detail reads."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ivy_matrix.model import Cell, Entry, Outcome, Row, RunKey, Source
from ivy_matrix.site.cells import STRIP
from tests.site.scenes import HOSTILE, F, S, Y, dashboard
from tests.site.test_documents import document_of

X = "1" * 40
Y_SHA = "2" * 40
ENV_A = (("jax", "0.4.30"), ("numpy", "2.1.0"))
ENV_B = (("jax", "0.4.31"), ("numpy", "2.1.0"))


def job(run: int, sha: str, env: tuple[tuple[str, str], ...], url: str = "") -> Source:
    """A torch job of ``run`` on commit ``sha`` in environment ``env``."""
    return Source(
        run=RunKey(run, 1, run * 10),
        url=url or f"https://github.com/o/r/actions/runs/{run}/job/{run * 10}",
        time=f"2026-11-{run % 28 + 1:02d}T10:00:00Z",
        sha=sha,
        event="push",
        env=env,
    )


def only_cell(results: list[tuple[Source, Outcome]], name: str = "test_a") -> dict[str, Any]:
    """The data document of a dashboard whose one cell has ``results`` (newest first)."""
    state = dashboard("g", {name: {"torch": [S]}})
    entries = tuple(Entry(source=s, outcome=o) for s, o in results)
    row = state.rows[0]
    return document_of(
        replace(state, rows=(Row(row.name, row.first_seen, {"torch": Cell(entries=entries)}),))
    )


def blame_and_runs(document: dict[str, Any]) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """The one cell's blame, and the jobs of its first failure and of its last pass."""
    (cell,) = document["cells"]
    jobs = document["jobs"]["list"]
    blames = document["blames"]
    blame = blames["list"][cell["b"]]
    if "u" in blame:
        blame["u"] = blames["base"] + blame["u"]
    return blame, jobs[cell["i"]], jobs[cell["p"]]


def test_a_failing_cell_carries_its_runs_compare_link_changed_packages_and_hint():
    """R1 passes (env A, sha X), R2 and R3 fail (env B, sha Y): the first failure is R2, the
    last pass R1 (run, commit, date), the link X...Y, only jax changed, and "both"."""
    document = only_cell(
        [(job(12, Y_SHA, ENV_B), F), (job(11, Y_SHA, ENV_B), F), (job(10, X, ENV_A), S)]
    )

    blame, first, last = blame_and_runs(document)

    assert first[:4] == [11, 1, Y_SHA[:12], "2026-11-12T10:00:00Z"]
    assert last[:4] == [10, 1, X[:12], "2026-11-11T10:00:00Z"]
    assert blame == {
        "u": f"https://github.com/o/r/compare/{X}...{Y_SHA}",
        "c": [["jax", "0.4.30", "0.4.31"]],
        "h": "both",
    }


def test_the_same_commit_in_another_environment_is_environment_only():
    """A failure on the commit that passed before, with jax bumped, is "environment only"."""
    document = only_cell([(job(11, X, ENV_B), F), (job(10, X, ENV_A), S)])

    blame, _, _ = blame_and_runs(document)

    assert (blame["h"], blame["c"]) == ("environment only", [["jax", "0.4.30", "0.4.31"]])


def test_a_streak_older_than_the_strip_still_names_its_jobs():
    """A cell failing for more runs than the strip shows keeps the jobs of its first failure
    and last pass, so the detail can name their commits and dates."""
    runs = STRIP + 3
    results = [(job(100 - i, Y_SHA, ENV_A), F) for i in range(runs)]
    document = only_cell([*results, (job(100 - runs, X, ENV_A), S)])

    blame, first, last = blame_and_runs(document)

    assert (first[0], last[0]) == (100 - runs + 1, 100 - runs)
    assert (blame["h"], "c" in blame) == ("code only", False)


def test_a_cell_without_a_blame_says_why_and_passing_cells_carry_none():
    """Flaky and pass-less streaks carry only their note; passing and flaky-passing cells, and
    a dashboard with nothing failing, carry no blame at all."""
    flaky = only_cell([(job(12, Y_SHA, ENV_B), F), (job(11, X, ENV_A), S), (job(10, X, ENV_A), F)])
    no_pass = only_cell([(job(11, Y_SHA, ENV_B), F), (job(10, X, ENV_A), F)])
    green = dashboard("g", {"test_a": {"torch": [S, F]}, "test_b": {"torch": [Y, S]}})

    assert flaky["blames"] == {
        "base": "",
        "list": [{"x": ["flaky (flips between pass and fail): no blame"]}],
    }
    assert no_pass["blames"]["list"] == [{"x": ["no pass in the kept history: no compare link"]}]
    assert "p" not in no_pass["cells"][0]
    green_document = document_of(green)
    assert green_document["blames"] == {"base": "", "list": []}
    assert [c for c in green_document["cells"] if "b" in c] == []


def test_cells_of_one_streak_share_one_blame():
    """Two tests that broke in the same jobs point at the same blame, listed once."""
    state = dashboard("g", {"test_a": {"torch": [F, S]}, "test_b": {"torch": [F, S]}})

    document = document_of(state)

    assert len(document["blames"]["list"]) == 1
    assert {document["cells"][row[1]]["b"] for row in document["rows"]} == {0}


def test_package_names_reach_the_data_as_they_are_and_unsafe_links_do_not():
    """A package named like markup stays a string (packages sorted by name); a job not under an
    http(s) repository address gives no compare link."""
    hostile = ((HOSTILE[0], "1"), (HOSTILE[2], "2"))
    bad = "javascript:alert(1)//actions/runs/1"
    document = only_cell([(job(11, Y_SHA, hostile, url=bad), F), (job(10, X, ENV_A, url=bad), S)])

    blame, _, _ = blame_and_runs(document)

    assert "u" not in blame
    assert blame["c"] == [
        [HOSTILE[0], "", "1"],
        ["jax", "0.4.30", ""],
        ["numpy", "2.1.0", ""],
        [HOSTILE[2], "", "2"],
    ]
    assert blame["h"] == "both"
