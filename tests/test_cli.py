"""End-to-end tests of the ivy-matrix command: update, adopt and render in a temporary folder."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped
from tabulate import tabulate

from ivy_matrix.cli import main
from ivy_matrix.github.client import GitHubClient
from ivy_matrix.github.connection import Remote
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey
from ivy_matrix.readback import MAX_ADOPT_BYTES
from ivy_matrix.stores.local import LocalStore
from tests.conftest import SHARED, shared_dir

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = ROOT / "entrypoint.py"

GRADIENTS = "ivy_tests.test_core.test_gradients"
LAYERS = "ivy_tests.test_nn.test_layers"
CORE_GRADIENTS = DashboardId(title="gradients", category="core")

_CHILDREN = {
    "passed": "",
    "failed": '<failure message="assert 1 == 2">trace</failure>',
    "error": '<error message="fixture broke">trace</error>',
    "skipped": '<skipped message="not here"/>',
}
_BADGES = {
    Outcome.SUCCESS: "success-success",
    Outcome.FAILURE: "failure-red",
    Outcome.SKIPPED: "skipped-lightgrey",
    Outcome.FLAKY: "flaky-yellow",
}


# --- helpers ------------------------------------------------------------------------------


def case_xml(name: str, status: str = "passed", classname: str = GRADIENTS) -> str:
    """One ``<testcase>`` element with the result child that ``status`` names."""
    return (
        f"<testcase classname={quoteattr(classname)} name={quoteattr(name)}>"
        f"{_CHILDREN[status]}</testcase>"
    )


def write_junit(path: Path, cases: Sequence[tuple[str, str]], classname: str = GRADIENTS) -> Path:
    """Write a one-suite JUnit file holding ``(name, status)`` cases; return its path."""
    body = "".join(case_xml(name, status, classname) for name, status in cases)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest">'
        f"{body}</testsuite></testsuites>\n",
        encoding="utf-8",
    )
    return path


def ivy_cell(url: str, outcome: Outcome) -> str:
    """A cell exactly as Ivy's dashboards draw it."""
    return (
        f'<a href="{url}" rel="noopener noreferrer" target="_blank">'
        f"<img src=https://img.shields.io/badge/-{_BADGES[outcome]}></a>"
    )


def read_json(path: Path) -> dict[str, Any]:
    """The JSON document at ``path``."""
    document = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def load(dashboard: DashboardId = CORE_GRADIENTS, store: Path = Path(".ivy-matrix")):
    """The stored state of one dashboard (it must exist)."""
    state = LocalStore(store).load(dashboard)
    assert state is not None
    return state


def latest(state: DashboardState, row: str, backend: str) -> Entry:
    """The entry a cell shows."""
    (found,) = [r for r in state.rows if r.name == row]
    return found.cells[backend].latest


def cells_of(line: str) -> list[str]:
    """The stripped cells of one pipe-table line (no escaped pipes in these tables)."""
    return [cell.strip() for cell in line.strip().removeprefix("|").removesuffix("|").split("|")]


def status_of(cell: str) -> str:
    """The badge label of a cell (``""`` when the cell is empty)."""
    if not cell:
        return ""
    return cell.split("badge/-", 1)[1].split("-", 1)[0]


def error_lines(out: str) -> list[str]:
    """The ``::error::`` workflow commands in a captured log."""
    return [line for line in out.splitlines() if line.startswith("::error")]


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


def seed_names() -> list[str]:
    """The seed tables' file names, or one placeholder that skips when the folder is absent."""
    return sorted(p.name for p in (SHARED / "ivy-seeds").glob("0*.txt")) or ["(missing)"]


def seed_text(name: str) -> str:
    """The text of one seed table (skips, or fails in CI, when ../shared is absent)."""
    return (shared_dir("ivy-seeds") / name).read_text(encoding="utf-8")


@pytest.fixture(name="workdir")
def workdir_fixture(tmp_path, monkeypatch):
    """A temporary folder that is the current directory while the test runs."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- update: counts, problems and the summary JSON ----------------------------------------

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


def test_update_counts_match_junitparser_and_bad_files_are_named(workdir, capsys):
    """Per-file counts equal junitparser's, each unreadable file has one problem, the rest is read."""
    results = workdir / "results"
    (results / "numpy").mkdir(parents=True)
    (results / "torch.xml").write_text(_MIXED, encoding="utf-8")
    (results / "numpy" / "nested.xml").write_text(_NESTED, encoding="utf-8")
    (results / "empty.xml").write_bytes(b"")
    (results / "notxml.xml").write_text("this is not XML at all\n", encoding="utf-8")
    (results / "wrongroot.xml").write_text("<html><body/></html>\n", encoding="utf-8")
    argv = [
        "update",
        "--junit",
        "results",
        "--backend-from-path",
        r"results/(?P<backend>torch|numpy)\b",
        "--run-id",
        "100",
        "--job-id",
        "7",
        "--repository",
        "o/r",
        "--summary-json",
        "summary.json",
    ]

    code = main(argv, {})

    out = capsys.readouterr().out
    assert code == 0
    summary = read_json(workdir / "summary.json")
    assert sorted(summary) == [
        "dashboards",
        "files",
        "index_url",
        "removed_dashboards",
        "totals",
        "version",
    ]
    assert summary["index_url"] is None  # nothing published on GitHub
    assert summary["version"] == 1
    files = {f["path"]: f for f in summary["files"]}
    assert [f["path"] for f in summary["files"]] == sorted(files)
    for good in ("results/torch.xml", "results/numpy/nested.xml"):
        expected = {
            "path": good,
            **junitparser_counts(workdir / good),
            "flaky": int(good.endswith("torch.xml")),
            "problem": None,
        }
        assert files[good] == expected
    assert files["results/torch.xml"]["errors"] == 2  # error beats failure in test_both
    problems = {
        "results/empty.xml": "file is empty",
        "results/notxml.xml": "not well-formed XML",
        "results/wrongroot.xml": "root element is <html>",
    }
    zeros = {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0, "flaky": 0}
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
    assert summary["dashboards"] == {
        "core/gradients": {
            "file": "core/gradients.md",
            "rows": 8,
            "backends": {"torch": {"passing": 3, "total": 7}},
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
            "backends": {"numpy": {"passing": 2, "total": 3}},
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

    dashboards = read_json(workdir / "s.json")["dashboards"]
    assert dashboards["nn/layers"] == {
        "file": "nn/layers.md",
        "rows": 1,
        "backends": {"jax": {"passing": 0, "total": 1}},
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
    }
    assert dashboards["core/gradients"]["updated"] is True


# --- update: output folder ----------------------------------------------------------------


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
    assert written == ["README.md", "core/gradients.md", "nn/layers.md"]
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
        ],
        headers=["dashboard", "torch"],
        tablefmt="pipe",
        stralign="left",
    )
    assert index.startswith("# Test dashboards\n")
    table_end = index.index(index_table) + len(index_table)
    # Below the table: the history sections, each entry linking its dashboard and job.
    assert index[table_end:] == (
        "\n\n## Newly failing\n\n"
        f"- [core/gradients](core/gradients.md) · test_jac · torch: [failure]({url}), "
        "failing since run 41, at least 1 run\n"
        f"- [nn/layers](nn/layers.md) · test_linear · torch: [failure]({url}), "
        "failing since run 41, at least 1 run\n"
    )


# --- update: options from the environment and job links -----------------------------------


def test_every_option_can_come_from_ivy_matrix_variables(workdir):
    """IVY_MATRIX_JUNIT (newline-separated globs), IVY_MATRIX_BACKEND and runner variables suffice."""
    write_junit(workdir / "results" / "a.xml", [("test_grad", "passed")])
    write_junit(workdir / "results" / "sub" / "b.xml", [("test_jac", "failed")])
    write_junit(workdir / "results" / "ignored.xml", [("test_ignored", "failed")])
    env = {
        "IVY_MATRIX_JUNIT": "results/a.xml\n\n  results/sub/*.xml  \n",
        "IVY_MATRIX_BACKEND": "jax",
        "IVY_MATRIX_JOB_ID": "9",
        "IVY_MATRIX_SUMMARY_JSON": "s.json",
        "GITHUB_RUN_ID": "55",
        "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_REPOSITORY": "octo/ivy",
        "GITHUB_SERVER_URL": "https://ghe.example.com/",
    }

    assert main(["update"], env) == 0

    assert [f["path"] for f in read_json(workdir / "s.json")["files"]] == [
        "results/a.xml",
        "results/sub/b.xml",
    ]
    state = load()
    assert state.backend_names == ("jax",)
    entry = latest(state, "test_jac", "jax")
    assert entry.outcome == Outcome.FAILURE
    assert entry.run == RunKey(55, 2, 9)
    assert entry.source.url == "https://ghe.example.com/octo/ivy/actions/runs/55/job/9"


@pytest.mark.parametrize(
    ("layers", "expected_run"),
    [
        (("cli", "env", "config", "runner"), 4),
        (("env", "config", "runner"), 3),
        (("config", "runner"), 2),
        (("runner",), 1),
    ],
)
def test_command_line_beats_env_beats_config_beats_runner(workdir, layers, expected_run):
    """The run id in the cell's link comes from the highest layer that gives one."""
    write_junit(workdir / "r.xml", [("test_grad", "passed")])
    (workdir / "ivy.yml").write_text("run-id: 2\nrepository: from/config\n", encoding="utf-8")
    argv = ["update", "--junit", "r.xml", "--backend", "torch"]
    env = {"GITHUB_REPOSITORY": "from/runner"}
    if "cli" in layers:
        argv += ["--run-id", "4"]
    if "env" in layers:
        env["IVY_MATRIX_RUN_ID"] = "3"
    if "config" in layers:
        argv += ["--config", "ivy.yml"]
    if "runner" in layers:
        env["GITHUB_RUN_ID"] = "1"

    assert main(argv, env) == 0

    repository = "from/config" if "config" in layers else "from/runner"
    entry = latest(load(), "test_grad", "torch")
    assert entry.source.url == f"https://github.com/{repository}/actions/runs/{expected_run}"
    assert entry.run.run_id == expected_run


@pytest.mark.parametrize(
    ("extra", "env", "expected_url"),
    [
        (["--job-id", "12"], {}, "https://github.com/o/r/actions/runs/77/job/12"),
        ([], {}, "https://github.com/o/r/actions/runs/77"),
        (
            ["--job-id", "12"],
            {"GITHUB_SERVER_URL": "https://ghe.example.com/"},
            "https://ghe.example.com/o/r/actions/runs/77/job/12",
        ),
        (
            ["--job-id", "12", "--job-url", "https://ci.example/logs/run-77?tab=2"],
            {},
            "https://ci.example/logs/run-77?tab=2",
        ),
        ([], {"GITHUB_RUN_ID": ""}, "https://github.com/o/r/actions"),
        ([], {"GITHUB_REPOSITORY": ""}, ""),
    ],
    ids=["job", "run", "server", "job-url", "no-run", "no-repository"],
)
def test_cells_link_to_the_job_then_the_run_and_never_to_null(workdir, extra, env, expected_url):
    """Links are {server}/{owner}/{repo}/actions/runs/{run}/job/{job}, else the run, never null."""
    write_junit(workdir / "r.xml", [("test_grad", "failed")])
    env = {"GITHUB_RUN_ID": "77", "GITHUB_REPOSITORY": "o/r", **env}
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--output-dir", "out", *extra]

    assert main(argv, env) == 0

    assert latest(load(), "test_grad", "torch").source.url == expected_url
    table = (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")
    assert "null" not in table
    if expected_url:
        assert f'<a href="{expected_url.replace("&", "&amp;")}"' in table
    else:
        assert "<a " not in table
        assert "<img src=https://img.shields.io/badge/-failure-red>" in table


# --- update: exit codes and error messages -------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "env", "phrase"),
    [
        (["--junit", "r.xml"], {}, "no backend given"),
        (["--backend", "torch"], {}, "no result files given"),
        (
            ["--junit", "r.xml", "--backend-from-path", r"results/(\w+)\.xml"],
            {},
            "needs a named group (?P<backend>...)",
        ),
        (["--junit", "r.xml", "--backend-from-test", "("], {}, "not a valid regex"),
        (["--junit", "r.xml", "--backend", "t", "--config", "missing.yml"], {}, "cannot read it"),
        (["--junit", "r.xml", "--backend", "t", "--config", "."], {}, "cannot read it"),
        (["--junit", "r.xml", "--backend", "t", "--config", "bad.yml"], {}, "not valid YAML"),
        (
            ["--junit", "r.xml", "--backend", "t"],
            {"IVY_MATRIX_FAIL_ON": "sometimes"},
            (
                "input 'fail-on' (IVY_MATRIX_FAIL_ON) got 'sometimes'; "
                "allowed values: failures, errors, new, nothing"
            ),
        ),
        (
            ["--junit", "r.xml", "--backend", "t"],
            {"IVY_MATRIX_STYLE": "fancy"},
            "allowed values: ivy, compact",
        ),
        (
            ["--junit", "r.xml", "--backend", "t"],
            {"GITHUB_RUN_ID": "abc"},
            "got 'abc': not a whole number",
        ),
        (
            ["--junit", "r.xml", "--backend", "t"],
            {"IVY_MATRIX_REPOSITORY": "no-slash"},
            "expected OWNER/REPO",
        ),
    ],
    ids=[
        "no-backend",
        "no-junit",
        "regex-without-group",
        "bad-regex",
        "missing-config",
        "config-is-a-folder",
        "bad-yaml",
        "bad-fail-on-env",
        "bad-style-env",
        "bad-run-id",
        "bad-repository",
    ],
)
def test_user_errors_exit_1_with_one_error_line(workdir, capsys, argv, env, phrase):
    """A setting the user must fix gives exit 1 and exactly one ::error:: line that says what."""
    write_junit(workdir / "r.xml", [("test_grad", "passed")])
    (workdir / "bad.yml").write_text("backend: [unclosed\nstyle: : :\n", encoding="utf-8")

    code = main(["update", *argv], {"GITHUB_ACTIONS": "true", **env})

    out = capsys.readouterr().out
    assert code == 1
    (line,) = error_lines(out)
    assert line.startswith("::error::")
    assert phrase in line
    assert out.splitlines()[-1] == line
    assert not (workdir / ".ivy-matrix" / "state").exists()


@pytest.mark.usefixtures("workdir")
def test_without_github_actions_errors_are_plain_lines(capsys):
    """Off the runner the same error is a plain 'error:' line, not a workflow command."""
    code = main(["update", "--junit", "r.xml"], {})

    out = capsys.readouterr().out
    assert code == 1
    assert error_lines(out) == []
    assert out.splitlines()[-1].startswith("error: no backend given")


@pytest.mark.usefixtures("workdir")
def test_bad_choice_message_lists_plain_values(capsys):
    """The error for a bad choice lists the allowed values as the user types them."""
    code = main(["update", "--junit", "r.xml", "--backend", "t", "--fail-on", "bogus"], {})

    out = capsys.readouterr().out
    assert code == 1
    assert "<FailOn." not in out
    assert "allowed values: failures, errors, new, nothing" in out


@pytest.mark.usefixtures("workdir")
def test_bad_choice_on_the_command_line_exits_1_like_the_env_var(capsys):
    """A bad --fail-on on the command line is a user error: exit 1 with an ::error:: line."""
    argv = ["update", "--junit", "r.xml", "--backend", "t", "--fail-on", "bogus"]

    try:
        code = main(argv, {"GITHUB_ACTIONS": "true"})
    except SystemExit as exit_info:
        code = exit_info.code if isinstance(exit_info.code, int) else -1

    captured = capsys.readouterr()
    assert code == 1
    assert len(error_lines(captured.out)) == 1


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

    out = capsys.readouterr().out
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


def test_unknown_placeholder_in_a_dashboards_rule_is_a_user_error(workdir, capsys):
    """A title placeholder that names no group of the rule's regex exits 1, not 2 (a crash)."""
    write_junit(workdir / "r.xml", [("test_grad", "passed")])
    (workdir / "ivy.yml").write_text(
        'dashboards:\n  - match: "test_(?P<area>core)"\n    title: "{module}"\n', encoding="utf-8"
    )

    code = main(["update", "--junit", "r.xml", "--backend", "t", "--config", "ivy.yml"], {})

    out = capsys.readouterr().out
    assert code == 1
    assert "module" in out.splitlines()[-1]


def test_dashboard_rules_place_tests_with_group_placeholders(workdir):
    """A config rule's {group} placeholders fill the dashboard's title and category."""
    write_junit(workdir / "l.xml", [("test_conv2d[a]", "passed")], classname=LAYERS)
    write_junit(workdir / "g.xml", [("test_grad", "failed")])
    (workdir / "ivy.yml").write_text(
        "junit: ['*.xml']\n"
        "backend: numpy\n"
        "dashboards:\n"
        r"  - match: 'test_(?P<area>nn)\.test_(?P<mod>\w+)::'" + "\n"
        '    title: "{mod}-tests"\n'
        '    category: "area-{area}"\n',
        encoding="utf-8",
    )

    assert main(["update", "--config", "ivy.yml"], {}) == 0

    keys = [state.key for state in LocalStore(Path(".ivy-matrix")).load_all()]
    assert keys == ["area-nn/layers-tests", "core/gradients"]
    placed = load(DashboardId(title="layers-tests", category="area-nn"))
    assert latest(placed, "test_conv2d", "numpy").outcome == Outcome.SUCCESS


# --- update: run order and idempotence -----------------------------------------------------


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

    out = capsys.readouterr().out
    assert state_file.read_bytes() == first_state
    assert state_file.stat().st_mtime_ns == first_mtime
    assert table_file.read_bytes() == first_table
    assert "dashboard core/gradients: 0 cell(s) changed" in out
    assert "; 0 cell(s) changed; 0 file(s) written;" in out


# --- adopt and render ----------------------------------------------------------------------


@pytest.mark.parametrize("name", seed_names())
def test_adopted_seed_renders_back_to_the_same_bytes(workdir, name):
    """adopt then render --output-dir writes the seed table byte for byte."""
    seed = seed_text(name)
    (workdir / "seed.md").write_text(seed, encoding="utf-8")

    assert main(["adopt", "--dashboard", "core/gradients", "seed.md"], {}) == 0
    assert main(["render", "--output-dir", "out"], {}) == 0

    assert (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8") == seed


@pytest.mark.parametrize("name", seed_names())
def test_one_new_result_changes_exactly_one_cell_of_an_adopted_seed(workdir, name):
    """After adopting, one result for one existing row and backend changes only that cell."""
    seed = seed_text(name)
    (workdir / "seed.md").write_text(seed, encoding="utf-8")
    assert main(["adopt", "--dashboard", "core/gradients", "seed.md"], {}) == 0
    seed_rows = [cells_of(line) for line in seed.splitlines()]
    header = seed_rows[0]
    row_index, column = 2, 1  # the second test row, the first backend
    row_name, backend = seed_rows[row_index][0], header[column]
    old_status = status_of(seed_rows[row_index][column])
    new_status = "passed" if old_status == "failure" else "failed"
    write_junit(workdir / "r.xml", [(row_name, new_status)])
    argv = ["update", "--junit", "r.xml", "--backend", backend, "--dashboard", "core/gradients"]
    env = {
        "GITHUB_RUN_ID": "9000000001",
        "GITHUB_REPOSITORY": "unifyai/ivy",
        "IVY_MATRIX_JOB_ID": "42",
        "IVY_MATRIX_OUTPUT_DIR": "out",
    }

    assert main(argv, env) == 0

    new = (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")
    new_rows = [cells_of(line) for line in new.splitlines()]
    new_cell = ivy_cell(
        "https://github.com/unifyai/ivy/actions/runs/9000000001/job/42",
        Outcome.SUCCESS if new_status == "passed" else Outcome.FAILURE,
    )
    assert len(new_rows) == len(seed_rows)
    differing = [
        (i, j)
        for i, (old_row, new_row) in enumerate(zip(seed_rows, new_rows, strict=True))
        for j, (old_cell, new_cell_text) in enumerate(zip(old_row, new_row, strict=True))
        if old_cell != new_cell_text and i != 1  # line 1 is the separator: padding only
    ]
    assert differing == [(row_index, column)]
    assert new_rows[row_index][column] == new_cell
    expected_body = [list(row) for row in seed_rows[2:]]
    expected_body[row_index - 2][column] = new_cell
    assert new == tabulate(expected_body, headers=header, tablefmt="pipe", stralign="left")


@pytest.mark.parametrize("name", seed_names())
def test_table_rebuilt_cell_by_cell_matches_the_seed(workdir, name):
    """One update per seed cell, in the seed's order, gives the seed's rows, columns and statuses."""
    seed_rows = [cells_of(line) for line in seed_text(name).splitlines()]
    header, body = seed_rows[0], seed_rows[2:]
    run = job = 4_000_000_000
    for row in body:
        for backend, cell in zip(header[1:], row[1:], strict=True):
            if not cell:
                continue
            run, job = run + 1, job + 7
            status = {"success": "passed", "failure": "failed"}[status_of(cell)]
            write_junit(workdir / "r.xml", [(row[0], status)])
            argv = ["update", "--junit", "r.xml", "--backend", backend]
            argv += ["--dashboard", "core/gradients", "--run-id", str(run), "--job-id", str(job)]
            assert main([*argv, "--repository", "unifyai/ivy"], {}) == 0

    assert main(["render", "--output-dir", "out"], {}) == 0

    rebuilt = (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")
    rebuilt_rows = [cells_of(line) for line in rebuilt.splitlines()]
    assert rebuilt_rows[0] == header
    assert [row[0] for row in rebuilt_rows[2:]] == [row[0] for row in body]
    assert [[status_of(c) for c in row[1:]] for row in rebuilt_rows[2:]] == [
        [status_of(c) for c in row[1:]] for row in body
    ]


def test_adopt_refuses_to_replace_a_stored_dashboard_without_force(workdir, capsys):
    """Adopting over existing state exits 1 and says to pass --force; --force replaces it."""
    table = tabulate(
        [["test_a", ivy_cell("https://github.com/o/r/actions/runs/3/job/4", Outcome.SUCCESS)]],
        headers=["", "torch"],
        tablefmt="pipe",
        stralign="left",
    )
    (workdir / "t.md").write_text(table, encoding="utf-8")
    assert main(["adopt", "--dashboard", "core/x", "t.md"], {}) == 0
    capsys.readouterr()

    assert main(["adopt", "--dashboard", "core/x", "t.md"], {}) == 1
    assert "pass --force" in capsys.readouterr().out
    assert main(["adopt", "--dashboard", "core/x", "t.md", "--force"], {}) == 0


@pytest.mark.usefixtures("workdir")
def test_render_without_an_output_dir_exits_1(capsys):
    """render needs --output-dir and says so."""
    assert main(["render"], {"GITHUB_ACTIONS": "true"}) == 1

    (line,) = error_lines(capsys.readouterr().out)
    assert "render needs --output-dir" in line


def test_adopting_a_table_that_is_not_utf8_exits_1(workdir, capsys):
    """A table file in another encoding is a user error that names the file."""
    (workdir / "t.md").write_bytes("| | caf\u00e9 |\n|:--|:--|\n".encode("latin-1"))

    code = main(["adopt", "--dashboard", "core/x", "t.md"], {})

    assert code == 1
    assert "t.md" in capsys.readouterr().out.splitlines()[-1]


def test_adopt_reports_every_unreadable_cell_and_stores_nothing(workdir, capsys):
    """Each hostile cell is one error line naming its row and column; nothing is adopted."""
    good = ivy_cell("https://github.com/o/r/actions/runs/3/job/4", Outcome.SUCCESS)
    rows = [
        ["test_a", ivy_cell("javascript:alert(1)", Outcome.SUCCESS), good],
        ["test_b", good, good + "<script>alert(1)</script>"],
        ["test_c", good, good],
    ]
    table = tabulate(rows, headers=["", "torch", "jax"], tablefmt="pipe", stralign="left")
    (workdir / "t.md").write_text(table, encoding="utf-8")

    code = main(["adopt", "--dashboard", "core/x", "t.md"], {"GITHUB_ACTIONS": "true"})

    errors = error_lines(capsys.readouterr().out)
    assert code == 1
    assert "cannot adopt core/x: 2 problem(s)" in errors[0]
    assert [line.split(": cannot read the cell")[0] for line in errors[1:]] == [
        "::error::row 'test_a', column 'torch'",
        "::error::row 'test_b', column 'jax'",
    ]
    assert not (workdir / ".ivy-matrix").exists()


def test_adopting_a_file_over_the_size_limit_exits_1(workdir, capsys):
    """A table file larger than adopt reads is refused by name before it is read whole."""
    with (workdir / "big.md").open("wb") as handle:
        handle.truncate(MAX_ADOPT_BYTES + 1)

    assert main(["adopt", "--dashboard", "core/x", "big.md"], {}) == 1
    assert "big.md: it is larger than" in capsys.readouterr().out


# --- the entry point as a process -----------------------------------------------------------


def test_entrypoint_runs_update_as_a_subprocess(workdir):
    """python entrypoint.py update imports the package from beside it and exits 0."""
    write_junit(workdir / "r.xml", [("test_grad", "passed"), ("test_jac", "failed")])
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--summary-json", "s.json"]

    completed = subprocess.run(
        [sys.executable, str(ENTRYPOINT), *argv],
        cwd=workdir,
        env={"PYTHONUTF8": "1", "GITHUB_RUN_ID": "6", "GITHUB_REPOSITORY": "o/r"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "dashboard core/gradients: 2 cell(s) changed; 2 new row(s)" in completed.stdout
    assert read_json(workdir / "s.json")["totals"]["failed"] == 1
    assert latest(load(store=workdir / ".ivy-matrix"), "test_jac", "torch").source.url == (
        "https://github.com/o/r/actions/runs/6"
    )


def broken_client(token: str, api_url: str) -> GitHubClient:
    """A client factory with a bug in it."""
    raise RuntimeError(f"no client for {api_url} with a token of {len(token)} character(s)")


def test_the_log_goes_to_the_streams_main_is_given(workdir, capsys):
    """Every log line goes to the given stdout and a crash's traceback to the given stderr."""
    write_junit(workdir / "r.xml", [("test_grad", "passed")])
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--targets", "branch"]
    argv += ["--run-id", "5", "--repository", "o/r", "--token", "t"]
    out, err = io.StringIO(), io.StringIO()

    code = main(argv, {}, remote=Remote(client=broken_client), stdout=out, stderr=err)

    assert code == 2
    assert capsys.readouterr() == ("", "")
    assert out.getvalue().splitlines() == [
        "Reading 1 result file(s)",
        "r.xml: 1 tests, 0 failed, 0 errors, 0 skipped",
        "error: ivy-matrix crashed; please report this with the log above",
    ]
    assert err.getvalue().splitlines()[0] == "Traceback (most recent call last):"
    assert err.getvalue().splitlines()[-1] == (
        "RuntimeError: no client for https://api.github.com with a token of 1 character(s)"
    )


def test_help_goes_to_the_stdout_main_is_given(capsys):
    """--help prints to the given stdout and exits 0 as argparse does."""
    out = io.StringIO()

    with pytest.raises(SystemExit) as exit_info:
        main(["update", "--help"], {}, stdout=out)

    assert exit_info.value.code == 0
    assert capsys.readouterr() == ("", "")
    assert out.getvalue().startswith("usage: ivy-matrix update [-h]")


def test_a_closed_stdout_ends_the_log_but_the_update_still_saves(workdir):
    """With stdout closed by its reader (``| head -1``), update exits 0, saves, and blames nothing."""
    write_junit(workdir / "r.xml", [("test_grad", "passed"), ("test_jac", "failed")])
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--output-dir", "out"]
    with subprocess.Popen(
        [sys.executable, str(ENTRYPOINT), *argv],
        cwd=workdir,
        env={"PYTHONUTF8": "1", "GITHUB_RUN_ID": "6", "GITHUB_REPOSITORY": "o/r"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        proc.stdout.close()  # the reader is gone before the first line is written
        _, stderr = proc.communicate(timeout=60)

    assert (proc.returncode, stderr) == (0, "")
    assert latest(load(store=workdir / ".ivy-matrix"), "test_jac", "torch").outcome == (
        Outcome.FAILURE
    )
    assert (workdir / "out" / "core" / "gradients.md").is_file()


def test_failed_tests_are_annotated_up_to_a_cap(workdir, capsys):
    """Each failed test gets a warning annotation titled with its id and backend, up to ten."""
    cases = [(f"test_{i:02d}[torch-cpu]", "failed") for i in range(12)] + [("test_ok", "passed")]
    write_junit(workdir / "r.xml", cases)
    code = main(["update", "--junit", "r.xml", "--backend", "torch"], {"GITHUB_ACTIONS": "true"})
    out = capsys.readouterr().out
    assert code == 0
    annotations = [line for line in out.splitlines() if "failed on torch" in line]
    assert len(annotations) == 10
    assert annotations[0].startswith("::warning file=r.xml,title=")
    # Workflow-command properties escape ":" as %3A.
    title = f"{GRADIENTS}%3A%3Atest_00[torch-cpu] failed on torch"
    assert annotations[0] == f"::warning file=r.xml,title={title}::assert 1 == 2"
    assert "::notice::2 more failed test case(s) are not annotated" in out
    assert error_lines(out) == []


def test_leg_metadata_without_a_run_is_refused_before_anything_is_written(workdir, capsys):
    """leg-metadata needs the run and a link; without them nothing is stored at all."""
    write_junit(workdir / "r.xml", [("test_x", "passed")])
    code = main(
        ["update", "--junit", "r.xml", "--backend", "torch", "--leg-metadata", "leg.json"],
        {"GITHUB_ACTIONS": "true"},
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "leg-metadata needs the leg's backend and run" in error_lines(out)[0]
    assert not (workdir / ".ivy-matrix").exists()
    assert not (workdir / "leg.json").exists()


# --- hostile names never become workflow commands -----------------------------------------

_HOSTILE = [
    "\n::error title=X::pwned",
    "%0A::add-mask::secret",
    "\r::stop-commands::tok",
    "\n  ::warning::indented",
    "x ##[error]old-style",
    "\u2028::error::separator",
]
_OWN_COMMANDS = {"warning", "error", "notice", "group", "endgroup"}


def command_lines(out: str) -> list[str]:
    """Every line of a captured log that the runner would run as a workflow command.

    The runner splits at CR and LF, runs ``::name ...::`` after leading blanks, and the old
    ``##[name]`` anywhere in a line.
    """
    lines = [line for chunk in out.split("\n") for line in chunk.split("\r")]
    return [line for line in lines if line.lstrip().startswith("::") or "##[" in line]


def test_hostile_names_and_file_names_write_no_workflow_command(workdir, capsys):
    """Test names, classnames and file names holding workflow commands are printed neutralised."""
    results = workdir / "results"
    for index, payload in enumerate(_HOSTILE):
        cases = [(f"test_{index}{payload}", "failed"), (f"test_ok{payload}", "passed")]
        write_junit(results / f"r{index}{payload}.xml", cases, classname=f"mod{payload}")
    (results / f"broken{_HOSTILE[0]}.xml").write_text("<testsuite><testcase", encoding="utf-8")
    code = main(
        ["update", "--junit", "results/**/*.xml", "--backend", "torch"],
        {"GITHUB_ACTIONS": "true"},
    )
    out, err = capsys.readouterr()
    assert code == 0, out + err
    commands = command_lines(out + "\n" + err)
    for line in commands:
        name = line.lstrip()[2:].split("::", 1)[0].split(" ", 1)[0]
        assert name in _OWN_COMMANDS, line
        assert "##[" not in line, line
        assert not line.lstrip().startswith("::error"), line
    # The names are still there, escaped: one annotation per failed test, the bad file named.
    annotations = [line for line in commands if line.startswith("::warning file=")]
    assert len([a for a in annotations if "failed on torch" in a]) == len(_HOSTILE)
    assert any("broken%0A%3A%3Aerror title=X%3A%3Apwned.xml" in a for a in annotations)
    assert "mod%0A::error title=X::pwned" not in out
    assert "\\n::error title=X::pwned" in out


@pytest.mark.parametrize("github_actions", ["true", "false"])
def test_no_plain_log_line_can_start_a_command(workdir, capsys, github_actions):
    """A plain line that would start with ``::`` (a file name here) gets a backslash in front."""
    write_junit(workdir / "::error::x.xml", [("test_x", "passed")])
    write_junit(workdir / " \ufeff::add-mask::y.xml", [("test_y", "passed")])
    code = main(
        ["update", "--junit", "*.xml", "--backend", "torch"], {"GITHUB_ACTIONS": github_actions}
    )
    out = capsys.readouterr().out
    assert code == 0, out
    commands = command_lines(out)
    assert [line for line in commands if "::error::x" in line or "add-mask" in line] == []
    assert "\\::error::x.xml: 1 tests" in out
    assert "\\ \ufeff::add-mask::y.xml: 1 tests" in out


# --- fan-in: leg metadata is checked against this run ---------------------------------------


def leg_env(run_id: int, attempt: int = 2) -> dict[str, str]:
    """The variables a runner gives a fan-in job of run ``run_id`` of repository o/r."""
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_RUN_ID": str(run_id),
        "GITHUB_RUN_ATTEMPT": str(attempt),
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_SERVER_URL": "https://github.com",
    }


def write_leg(folder: Path, backend: str, status: str, **metadata: object) -> None:
    """A downloaded leg artifact: one result file and the leg's metadata beside it."""
    write_junit(folder / backend / "junit.xml", [("test_x", status)])
    document = {"format": "ivy-matrix-leg", "version": 1, "backend": backend} | metadata
    (folder / backend / "ivy-matrix-leg.json").write_text(json.dumps(document), encoding="utf-8")


FORGED: dict[str, dict[str, object]] = {
    "jax": {"run_id": 999_999_999_999_999_999, "job_url": "https://evil.example/phish"},
    "numpy": {"job_url": "https://evil.example/o/r/actions/runs/100/job/12"},
    "paddle": {"job_url": "https://github.com/x/r/actions/runs/100/job/12"},
    "tensorflow": {"job_url": "https://github.com/o/r/actions/runs/100/job/13"},
    "mxnet": {"run_attempt": 3},
}


def test_forged_leg_metadata_is_named_and_its_cells_link_this_run(workdir, capsys):
    """Metadata of another run, host, repo, job or a later attempt is a warning, never a cell."""
    legs = workdir / "legs"
    genuine: dict[str, object] = {"run_id": 100, "run_attempt": 1, "job_id": 11}
    write_leg(
        legs, "torch", "passed", **genuine, job_url="https://github.com/o/r/actions/runs/100/job/11"
    )
    for backend, change in FORGED.items():
        fields = genuine | {
            "job_id": 12,
            "job_url": "https://github.com/o/r/actions/runs/100/job/12",
        }
        write_leg(legs, backend, "failed", **(fields | change))
    argv = ["update", "--junit", "legs/**/*.xml", "--backend-from-path", "legs/(?P<backend>[^/]+)/"]

    assert main(argv, leg_env(100)) == 0

    out = capsys.readouterr().out
    state = load()
    assert (
        latest(state, "test_x", "torch").source.url
        == "https://github.com/o/r/actions/runs/100/job/11"
    )
    for backend in FORGED:
        entry = latest(state, "test_x", backend)
        assert entry.source.url == "https://github.com/o/r/actions/runs/100", backend
        assert entry.run == RunKey(100, 2, -1), backend
        (warning,) = [
            line
            for line in out.splitlines()
            if f"legs/{backend}/ivy-matrix-leg.json is not used" in line
        ]
        assert warning.startswith(f"::warning file=legs/{backend}/ivy-matrix-leg.json::"), warning

    # A genuine later run changes the cells as usual.
    for backend in FORGED:
        write_leg(
            legs,
            backend,
            "passed",
            run_id=101,
            run_attempt=1,
            job_id=21,
            job_url="https://github.com/o/r/actions/runs/101/job/21",
        )
    assert main(argv, leg_env(101, attempt=1)) == 0
    state = load()
    for backend in FORGED:
        entry = latest(state, "test_x", backend)
        assert entry.outcome is Outcome.SUCCESS, backend
        assert entry.source.url == "https://github.com/o/r/actions/runs/101/job/21", backend


# --- input limits: encodings, links and huge names -------------------------------------------


def _update_results(*extra: str) -> list[str]:
    return [
        "update",
        "--junit",
        "results",
        "--backend",
        "torch",
        "--run-id",
        "100",
        "--job-id",
        "7",
        "--repository",
        "o/r",
        "--summary-json",
        "summary.json",
        *extra,
    ]


@pytest.mark.parametrize(
    ("data", "phrase"),
    [
        (
            b'<?xml version="1.0" encoding="rot13"?>\n<testsuite/>',
            "declares encoding 'rot13', which is not a text encoding",
        ),
        (
            b'<?xml version="1.0" encoding="no-such-codec"?>\n<testsuite/>',
            "declares encoding 'no-such-codec', which is not an encoding Python knows",
        ),
        (
            b'<?xml version="1.0" encoding="shift_jis"?>\n<testsuite name="\x81\x20"/>',
            "does not decode as shift_jis at byte 60",
        ),
    ],
)
def test_a_file_in_an_unreadable_encoding_is_a_warning_and_the_rest_is_saved(
    workdir, capsys, data, phrase
):
    """One file with a bad encoding is named in a warning; the other files' cells are saved."""
    results = workdir / "results"
    results.mkdir()
    (results / "bad.xml").write_bytes(data)
    write_junit(results / "good.xml", [("test_a", "passed")])
    japanese = case_xml("test_日本", "failed")
    (results / "sjis.xml").write_bytes(
        f'<?xml version="1.0" encoding="shift_jis"?>\n<testsuite>{japanese}</testsuite>'.encode(
            "shift_jis"
        )
    )

    code = main(_update_results(), {})

    out = capsys.readouterr().out
    assert code == 0
    (line,) = [line for line in out.splitlines() if "results/bad.xml" in line]
    assert line.startswith("warning: results/bad.xml")
    assert phrase in line
    state = load()
    assert latest(state, "test_a", "torch").outcome is Outcome.SUCCESS
    assert latest(state, "test_日本", "torch").outcome is Outcome.FAILURE
    assert read_json(workdir / "summary.json")["totals"]["problems"] == 1


@pytest.mark.timeout(20)
def test_a_symlink_loop_in_the_results_counts_each_file_once(workdir, capsys):
    """A link back to the results folder neither hangs the update nor counts a file twice."""
    results = workdir / "results"
    write_junit(results / "torch" / "r.xml", [("test_a", "failed")])
    (results / "torch" / "again").symlink_to("..", target_is_directory=True)

    code = main(_update_results(), {})

    assert code == 0, capsys.readouterr().out
    assert read_json(workdir / "summary.json")["totals"]["tests"] == 1
    assert latest(load(), "test_a", "torch").outcome is Outcome.FAILURE


def test_huge_names_are_capped_in_the_store_and_the_dashboards(workdir, capsys):
    """A 200,000-character name and classname are stored shortened, with a hash, and rendered."""
    long_name = "test_" + "n" * 200_000
    long_class = "ivy_tests.test_core.test_" + "m" * 200_000
    results = workdir / "results"
    write_junit(results / "long.xml", [(long_name, "failed"), ("test_b", "passed")], long_class)
    write_junit(results / "good.xml", [("test_a", "passed")])

    code = main(_update_results("--output-dir", "out"), {})

    assert code == 0, capsys.readouterr().out
    stored = list((workdir / ".ivy-matrix").rglob("*.json"))
    assert stored
    assert all(path.stat().st_size < 20_000 for path in stored)
    rendered = list((workdir / "out").rglob("*.md"))
    assert all(path.stat().st_size < 20_000 for path in rendered)
    assert all(len(path.name) < 255 for path in [*stored, *rendered])
    assert latest(load(), "test_a", "torch").outcome is Outcome.SUCCESS
    assert "test_b" in "".join(path.read_text(encoding="utf-8") for path in rendered)


def test_backends_taken_from_huge_names_are_capped(workdir, capsys):
    """A backend that a regex takes from a long test id (classname::name) is shortened too."""
    results = workdir / "results"
    write_junit(results / "r.xml", [("test_a[" + "b" * 5000 + "]", "passed")])
    argv = _update_results()
    argv[argv.index("--backend") : argv.index("--backend") + 2] = [
        "--backend-from-test",
        r"(?P<backend>.+)",
    ]

    code = main(argv, {})

    assert code == 0, capsys.readouterr().out
    (row,) = load().rows
    (backend,) = row.cells
    assert row.name == "test_a"
    assert len(backend) == 1000
    assert backend.startswith(f"{GRADIENTS}::test_a[bbbb")
