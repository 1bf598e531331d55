"""End to end: update folds result files into the local store, the output folder and the summary
JSON, and exits as fail-on asks."""

from __future__ import annotations

from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped
from tabulate import tabulate

from ivy_matrix.cli import main
from ivy_matrix.model import BackendPoint, CaseCounts, Outcome, RunKey
from ivy_matrix.results.signature import Signer
from ivy_matrix.stores.local import LocalStore
from tests.commands.results import (
    GRADIENTS,
    LAYERS,
    case_xml,
    error_lines,
    ivy_cell,
    latest,
    load,
    read_json,
    update_argv,
    write_junit,
    write_suite,
)

_MIXED = f"""<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testsuite name="pytest" tests="8">
    <properties><property name="python" value="3.11"/></properties>
    <testcase classname="{GRADIENTS}" name="test_grad[torch-cpu]"/>
    <testcase classname="{GRADIENTS}" name="test_jac"><failure message="no">x</failure></testcase>
    <testcase classname="{GRADIENTS}" name="test_adam_step"><error message="e">x</error></testcase>
    <testcase classname="{GRADIENTS}" name="test_lamb_update"><skipped/></testcase>
    <testcase classname="{GRADIENTS}" name="test_both"><failure/><error/></testcase>
    <testcase classname="{GRADIENTS}" name="test_skip_fail"><skipped/><failure/></testcase>
    <testcase classname="{GRADIENTS}" name="test_rerun"><rerunFailure message="1st"/>
      <system-out>retried</system-out></testcase>
    <testcase classname="{GRADIENTS}" name="test_flaky"><flakyFailure message="once"/></testcase>
  </testsuite>
</testsuites>
"""
_NESTED = f"""<testsuite name="outer">
  <testcase classname="{LAYERS}" name="test_linear"/>
  <testsuite name="inner">
    <testcase classname="{LAYERS}" name="test_conv1d"/>
    <testcase classname="{LAYERS}" name="test_conv2d"><failure/></testcase>
    <testcase classname="{LAYERS}" name="test_dropout"><skipped/></testcase>
  </testsuite>
</testsuite>
"""


def junitparser_counts(path: Path) -> dict[str, int]:
    """Counts by an independent parser: error > failure > skipped > passed per test case."""
    counts = {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for suite in JUnitXml.fromfile(str(path)):
        for case in suite:
            kinds = {type(result) for result in case.result}
            counts["tests"] += 1
            if Error in kinds:
                counts["errors"] += 1
            elif Failure in kinds:
                counts["failed"] += 1
            elif Skipped in kinds:
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
    return counts


def test_update_counts_match_junitparser_and_bad_files_are_named(workdir, capsys):
    """Per-file counts equal junitparser's, each unreadable file has one problem, the rest is read."""
    results = workdir / "results"
    (results / "numpy").mkdir(parents=True)
    (results / "torch.xml").write_text(_MIXED, encoding="utf-8")
    (results / "numpy" / "nested.xml").write_text(_NESTED, encoding="utf-8")
    (results / "empty.xml").write_bytes(b"")
    (results / "notxml.xml").write_text("this is not XML at all\n", encoding="utf-8")
    (results / "wrongroot.xml").write_text("<html><body/></html>\n", encoding="utf-8")
    argv = update_argv(backend=("--backend-from-path", r"results/(?P<backend>torch|numpy)\b"))

    code = main(argv, {})

    out = capsys.readouterr().err
    assert code == 0
    summary = read_json(workdir / "summary.json")
    assert sorted(summary) == [
        "all_dashboards",
        "backends",
        "conclusion",
        "content_requests",
        "dashboards",
        "files",
        "index_url",
        "rate_limit_remaining",
        "recorded",
        "removed_dashboards",
        "requests",
        "signatures",
        "slowest",
        "totals",
        "version",
    ]
    assert summary["conclusion"] == "failure"
    assert summary["backends"]["torch"] == {"tests": 8, "failed": 2, "errors": 2, "skipped": 1}
    assert summary["index_url"] is None  # nothing published on GitHub
    # No GitHub, no spend: the keys are there all the same.
    assert [summary[k] for k in ("requests", "content_requests", "rate_limit_remaining")] == [
        0,
        0,
        None,
    ]
    assert summary["version"] == 1
    files = {f["path"]: f for f in summary["files"]}
    assert [f["path"] for f in summary["files"]] == sorted(files)
    for good in ("results/torch.xml", "results/numpy/nested.xml"):
        expected = {
            "path": good,
            **junitparser_counts(workdir / good),
            "flaky": int(good.endswith("torch.xml")),
            "problem": None,
            "nameless": 0,
        }
        assert files[good] == expected
    assert files["results/torch.xml"]["errors"] == 2  # error beats failure in test_both
    problems = {
        "results/empty.xml": "file is empty",
        "results/notxml.xml": "not well-formed XML",
        "results/wrongroot.xml": "root element is <html>",
    }
    zeros = {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0, "flaky": 0}
    zeros["nameless"] = 0
    for path, phrase in problems.items():
        entry = dict(files[path])
        problem = entry.pop("problem")
        assert entry == {"path": path, **zeros}
        assert phrase in problem
        (line,) = [line for line in out.splitlines() if path in line]
        assert line.startswith(f"warning: {path}")
        assert phrase in line
    assert summary["totals"] == {
        "files": 5,
        "tests": 12,
        "passed": 5,
        "failed": 3,
        "errors": 2,
        "skipped": 2,
        "flaky": 1,
        "problems": 3,
        "unassigned": 0,
    }
    history = {key: d.pop("history") for key, d in summary["dashboards"].items()}
    # No case has a time: no cell got slower.
    assert [d.pop("slower") for d in summary["dashboards"].values()] == [[], []]
    assert {(c["row"], c["failing_runs"], c["flaky"]) for c in history["core/gradients"]} == {
        ("test_jac", 1, False),
        ("test_adam_step", 1, False),
        ("test_both", 1, False),
        ("test_skip_fail", 1, False),
        ("test_flaky", 0, True),
    }
    for cell in history["core/gradients"]:
        failing = cell["failing_runs"] == 1
        assert cell["failing_since"] == ({"run_id": 100, "sha": None} if failing else None)
    shown = {
        key: {b: (t["passing"], t["total"]) for b, t in dashboard.pop("backends").items()}
        for key, dashboard in summary["dashboards"].items()
    }
    assert shown == {"core/gradients": {"torch": (3, 7)}, "nn/layers": {"numpy": (2, 3)}}
    # Every case of the files is in exactly one cell: the dashboards' case counts add up to
    # each backend's test cases.
    for backend, totals in summary["all_dashboards"].items():
        cases = sum(totals[f"cases_{kind}"] for kind in ("passed", "failed", "skipped", "flaky"))
        assert cases == summary["backends"][backend]["tests"]
    assert summary["dashboards"] == {
        "core/gradients": {
            "file": "core/gradients.md",
            "rows": 8,
            "updated": True,
            "changed_cells": 8,
            "new_rows": 8,
            "new_backends": 1,
            "retired_rows": [],
            "retired_backends": [],
        },
        "nn/layers": {
            "file": "nn/layers.md",
            "rows": 4,
            "updated": True,
            "changed_cells": 4,
            "new_rows": 4,
            "new_backends": 1,
            "retired_rows": [],
            "retired_backends": [],
        },
    }


def test_summary_lists_stored_dashboards_this_update_did_not_touch(workdir):
    """A dashboard with no results in this update is listed with updated false and no change keys."""
    write_junit(workdir / "g.xml", [("test_grad", "passed")])
    write_junit(workdir / "l.xml", [("test_linear", "failed")], classname=LAYERS)
    base = ["update", "--backend", "jax", "--run-id", "5", "--summary-json", "s.json"]
    assert main([*base, "--junit", "l.xml"], {}) == 0

    assert main([*base, "--junit", "g.xml"], {}) == 0

    document = read_json(workdir / "s.json")
    # Every dashboard added up per backend: gradients' pass and layers' failure.
    assert document["all_dashboards"]["jax"]["passing"] == 1
    assert document["all_dashboards"]["jax"]["total"] == 2
    dashboards = document["dashboards"]
    assert dashboards["nn/layers"] == {
        "file": "nn/layers.md",
        "rows": 1,
        "backends": {
            "jax": {
                "success": 0,
                "failure": 1,
                "flaky": 0,
                "skipped": 0,
                "cases_passed": 0,
                "cases_failed": 1,
                "cases_skipped": 0,
                "cases_flaky": 0,
                "passing": 0,
                "total": 1,
            }
        },
        "updated": False,
        "history": [
            {
                "row": "test_linear",
                "backend": "jax",
                "failing_since": {"run_id": 5, "sha": None},
                "failing_runs": 1,
                "last_pass": None,
                "flaky": False,
            }
        ],
        "slower": [],
    }
    assert dashboards["core/gradients"]["updated"] is True


def test_output_dir_holds_one_exact_table_per_dashboard_and_an_index(workdir):
    """Each dashboard file is exactly the tabulate pipe table, in its category folder."""
    write_junit(
        workdir / "g.xml",
        [("test_grad[a]", "passed"), ("test_jac", "failed"), ("test_s", "skipped")],
    )
    write_junit(workdir / "l.xml", [("test_linear", "error")], classname=LAYERS)
    argv = ["update", "--junit", "*.xml", "--backend", "torch", "--output-dir", "out"]
    env = {"GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "41", "IVY_MATRIX_JOB_ID": "3"}

    assert main(argv, env) == 0

    out = workdir / "out"
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == [
        "README.md",
        "charts/parity.svg",
        "charts/pass-rate.svg",
        "core/gradients.md",
        "nn/layers.md",
        "trend.json",
    ]
    url = "https://github.com/o/r/actions/runs/41/job/3"
    expected = tabulate(
        [
            ["test_grad", ivy_cell(url, Outcome.SUCCESS)],
            ["test_jac", ivy_cell(url, Outcome.FAILURE)],
            ["test_s", ivy_cell(url, Outcome.SKIPPED)],
        ],
        headers=["", "torch"],
        tablefmt="pipe",
        stralign="left",
    )
    assert (out / "core" / "gradients.md").read_text(encoding="utf-8") == expected
    assert (out / "nn" / "layers.md").read_text(encoding="utf-8") == tabulate(
        [["test_linear", ivy_cell(url, Outcome.FAILURE)]],
        headers=["", "torch"],
        tablefmt="pipe",
        stralign="left",
    )
    index = (out / "README.md").read_text(encoding="utf-8")
    index_table = tabulate(
        [
            ["[core/gradients](core/gradients.md)", "[1/2](core/gradients.md)"],
            ["[nn/layers](nn/layers.md)", "[0/1](nn/layers.md)"],
            ["**all dashboards**", "**1/3**"],
        ],
        headers=["dashboard", "torch"],
        tablefmt="pipe",
        stralign="left",
    )
    assert index.startswith("# Test dashboards\n")
    table_end = index.index(index_table) + len(index_table)
    # Below the table: the failing tests by kind, the trend's pictures, then the history
    # sections, each entry linking its dashboard and job.
    below = index[table_end:]
    assert below.startswith("\n\nFailing tests across backends: 2 torch-only.\n\n## Trend\n\n")
    assert below[below.index("\n\n## Newly failing") :] == (
        "\n\n## Newly failing\n\n"
        f"- [core/gradients](core/gradients.md) · test_jac · torch: [failure]({url}), "
        "failing since run 41, at least 1 run\n"
        f"- [nn/layers](nn/layers.md) · test_linear · torch: [failure]({url}), "
        "failing since run 41, at least 1 run\n"
    )


@pytest.mark.parametrize(
    ("fail_on", "status", "expected_code"),
    [
        ("failures", "failed", 1),
        ("failures", "error", 1),
        ("failures", "skipped", 0),
        ("failures", "passed", 0),
        ("errors", "failed", 0),
        ("errors", "error", 1),
        ("nothing", "failed", 0),
        ("nothing", "error", 0),
    ],
)
def test_fail_on_decides_the_exit_code(workdir, capsys, fail_on, status, expected_code):
    """--fail-on failures exits 1 on failures or errors, errors only on errors, nothing never."""
    write_junit(workdir / "r.xml", [("test_ok", "passed"), ("test_x", status)])
    argv = ["update", "--junit", "r.xml", "--backend", "t", "--fail-on", fail_on]

    code = main(argv, {"GITHUB_ACTIONS": "true"})

    out = capsys.readouterr().err
    assert code == expected_code
    assert len(error_lines(out)) == expected_code
    assert (workdir / ".ivy-matrix" / "state" / "core" / "gradients.json").is_file()


def test_fail_on_from_the_env_var_works_too(workdir):
    """IVY_MATRIX_FAIL_ON=failures makes a failing result exit 1."""
    write_junit(workdir / "r.xml", [("test_x", "failed")])

    code = main(
        ["update", "--junit", "r.xml", "--backend", "t"], {"IVY_MATRIX_FAIL_ON": "failures"}
    )

    assert code == 1


def test_newer_runs_overwrite_a_cell_and_older_ones_never_do(workdir):
    """Run id, then attempt, then job id order results; only a newer one changes what a cell shows."""
    failing = write_junit(workdir / "fail.xml", [("test_grad", "failed")])
    passing = write_junit(workdir / "pass.xml", [("test_grad", "passed")])

    def apply(path: Path, run: int, attempt: int, job: int) -> int:
        argv = [
            "update",
            "--junit",
            path.name,
            "--backend",
            "torch",
            "--run-id",
            str(run),
            "--run-attempt",
            str(attempt),
            "--job-id",
            str(job),
            "--repository",
            "o/r",
            "--summary-json",
            "s.json",
        ]
        assert main(argv, {}) == 0
        return int(read_json(workdir / "s.json")["dashboards"]["core/gradients"]["changed_cells"])

    def shown() -> tuple[Outcome, RunKey]:
        entry = latest(load(), "test_grad", "torch")
        return entry.outcome, entry.run

    assert apply(failing, 10, 2, 5) == 1
    for run, attempt, job in [(9, 9, 99), (10, 1, 99), (10, 2, 4)]:
        assert apply(passing, run, attempt, job) == 0
        assert shown() == (Outcome.FAILURE, RunKey(10, 2, 5))
    assert apply(passing, 10, 2, 6) == 1
    assert shown() == (Outcome.SUCCESS, RunKey(10, 2, 6))
    assert apply(failing, 10, 3, 1) == 1
    assert shown() == (Outcome.FAILURE, RunKey(10, 3, 1))
    assert apply(passing, 11, 1, 1) == 1
    assert shown() == (Outcome.SUCCESS, RunKey(11, 1, 1))
    assert latest(load(), "test_grad", "torch").source.url == (
        "https://github.com/o/r/actions/runs/11/job/1"
    )


def test_applying_the_same_results_twice_changes_nothing(workdir, capsys):
    """A second identical update leaves the state bytes and the output files as they were."""
    write_junit(workdir / "r.xml", [("test_grad", "passed"), ("test_jac", "failed")])
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--output-dir", "out"]
    env = {"GITHUB_RUN_ID": "8", "GITHUB_REPOSITORY": "o/r", "IVY_MATRIX_JOB_ID": "2"}
    state_file = workdir / ".ivy-matrix" / "state" / "core" / "gradients.json"
    table_file = workdir / "out" / "core" / "gradients.md"
    assert main(argv, env) == 0
    first_state, first_table = state_file.read_bytes(), table_file.read_bytes()
    first_mtime = state_file.stat().st_mtime_ns
    capsys.readouterr()

    assert main(argv, env) == 0

    out = capsys.readouterr().err
    assert state_file.read_bytes() == first_state
    assert state_file.stat().st_mtime_ns == first_mtime
    assert table_file.read_bytes() == first_table
    assert "dashboard core/gradients: 0 cell(s) changed" in out
    assert "; 0 cell(s) changed; 0 file(s) written;" in out


def test_failed_tests_are_annotated_up_to_a_cap(workdir, capsys):
    """Each failed test gets an error annotation titled with its id and backend, up to ten;
    they are the tests' failures, not ivy-matrix's own errors or warnings."""
    cases = [(f"test_{i:02d}[torch-cpu]", "failed") for i in range(12)] + [("test_ok", "passed")]
    write_junit(workdir / "r.xml", cases)
    code = main(["update", "--junit", "r.xml", "--backend", "torch"], {"GITHUB_ACTIONS": "true"})
    out = capsys.readouterr().err
    assert code == 0
    annotations = [line for line in out.splitlines() if "failed on torch" in line]
    assert len(annotations) == 10
    # Workflow-command properties escape ":" as %3A.
    title = f"{GRADIENTS}%3A%3Atest_00[torch-cpu] failed on torch"
    assert annotations[0] == f"::error file=r.xml,title={title}::assert 1 == 2"
    assert "... and 2 more failed test case(s): the dashboards and the job summary" in out
    assert "torch: 13 test case(s), 12 failed, 0 error(s), 0 skipped" in out
    assert error_lines(out) == []
    assert "::warning" not in out


def test_the_retired_leg_metadata_flag_stops_the_run_naming_the_fan_in(workdir, capsys):
    """--leg-metadata (retired in 0.3.0) exits 2 before anything is read or written, naming
    the flag, the collect and fan-in commands, and the recipe."""
    write_junit(workdir / "r.xml", [("test_x", "passed")])
    code = main(
        ["update", "--junit", "r.xml", "--backend", "torch", "--leg-metadata", "leg.json"],
        {"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "7"},
    )
    (line,) = error_lines(capsys.readouterr().err)
    assert code == 2
    assert line.startswith("::error::--leg-metadata: retired in ivy-matrix 0.3.0")
    assert "command: collect" in line
    assert "command: fan-in" in line
    assert "docs/workflows.md#a-fan-in-job-after-the-matrix-any-width" in line
    assert not (workdir / ".ivy-matrix").exists()
    assert not (workdir / "leg.json").exists()


def test_update_keeps_case_counts_the_failure_line_and_its_signature(workdir):
    """A parametrized test is one row whose counts, first failure line and signature are stored."""
    write_junit(
        workdir / "r.xml",
        [("test_add[a]", "passed"), ("test_add[b]", "failed"), ("test_add[c]", "skipped")],
    )

    assert main(["update", "--junit", "r.xml", "--backend", "torch", "--run-id", "5"], {}) == 0

    (row,) = load().rows
    entry = row.cells["torch"].latest
    assert (entry.outcome, entry.counts, entry.message) == (
        Outcome.FAILURE,
        CaseCounts(passed=1, failed=1, skipped=1),
        "assert 1 == 2",
    )
    assert entry.signature == Signer().signature("assert 7 == 9", "jax")
    trend = LocalStore(workdir / ".ivy-matrix").load_trend()
    assert [(p.run, p.backends) for p in trend.points] == [
        (5, (("torch", BackendPoint(failed=1)),))
    ]


@pytest.mark.timeout(60)
def test_a_local_run_of_some_backends_says_the_trend_counts_it_alone(workdir, capsys):
    """One local update per backend makes each a run of its own in the trend (issue 24): the
    second says so and how to make one run; one update of every backend says nothing."""
    for backend in ("torch", "jax"):
        write_junit(workdir / "results" / backend / "a.xml", [("test_grad", "passed")])
    assert main(["update", "--junit", "results/torch/*.xml", "--backend", "torch"], {}) == 0
    capsys.readouterr()

    assert main(["update", "--junit", "results/jax/*.xml", "--backend", "jax"], {}) == 0

    log = capsys.readouterr().err
    assert "local run 2 brings 1 of the store's 2 backends (not torch)" in log
    assert "--backend-from-path 'results/(?P<backend>[^/]+)/'" in log
    assert "the same --run-id" in log
    both = ["--junit", "results/*/*.xml", "--backend-from-path", r"results/(?P<backend>[^/]+)/"]
    assert main(["update", *both], {}) == 0
    assert "brings" not in capsys.readouterr().err


@pytest.mark.timeout(60)
def test_a_module_level_skip_lands_on_its_modules_dashboard(workdir):
    """pytest's report of a module skipped at collection (as pytest 8 writes it) is row
    "(module)" of the module's dashboard, never a dashboard named "pytest"."""
    write_suite(
        workdir / "r.xml",
        '<testcase classname="" name="ivy_tests.test_core.test_gradients" time="0.000">'
        "<skipped message=\"collection skipped\">('ivy_tests/test_core/test_gradients.py', 2, "
        "'Skipped: needs a GPU')</skipped></testcase>" + case_xml("test_jac"),
    )

    assert main(["update", "--junit", "r.xml", "--backend", "torch"], {}) == 0

    assert [s.key for s in LocalStore(Path(".ivy-matrix")).load_all()] == ["core/gradients"]
    assert latest(load(), "(module)", "torch").outcome is Outcome.SKIPPED
