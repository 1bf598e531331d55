"""Settings as update sees them: from the command line, IVY_MATRIX_* variables, the config file and the runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.model import DashboardId, Outcome, RunKey
from ivy_matrix.stores.local import LocalStore
from tests.commands.results import LAYERS, latest, load, read_json, write_junit


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


def test_unknown_placeholder_in_a_dashboards_rule_is_a_user_error(workdir, capsys):
    """A title placeholder that names no group of the rule's regex exits 2 (usage), not 70 (a crash)."""
    write_junit(workdir / "r.xml", [("test_grad", "passed")])
    (workdir / "ivy.yml").write_text(
        'dashboards:\n  - match: "test_(?P<area>core)"\n    title: "{module}"\n', encoding="utf-8"
    )

    code = main(["update", "--junit", "r.xml", "--backend", "t", "--config", "ivy.yml"], {})

    out = capsys.readouterr().err
    assert code == 2
    assert "module" in out.splitlines()[-1]
