"""Recording a leg's environment end to end: the default report by the python on the PATH,
direct_url.json commits, JUnit properties, a failing env command, the leg file and columns."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.results.legs import load_leg
from tests.commands.results import CORE_GRADIENTS, latest, load, update_argv, write_junit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def fake_distribution(site: Path, name: str, version: str, *, commit: str = "") -> None:
    """An installed distribution's metadata in ``site`` (installed from git with ``commit``)."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    if commit:
        url = {
            "url": "https://example.invalid/x.git",
            "vcs_info": {"vcs": "git", "commit_id": commit},
        }
        (info / "direct_url.json").write_text(json.dumps(url), encoding="utf-8")


@pytest.fixture
def test_env(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A test environment: the running python first on the PATH, two fake packages (one from
    git) on its PYTHONPATH."""
    site = workdir / "site"
    fake_distribution(site, "fakejax", "0.4.31", commit=COMMIT)
    fake_distribution(site, "fakenumpy", "2.1.0")
    bin_dir = workdir / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site


@pytest.mark.usefixtures("test_env")
def test_the_default_report_records_versions_and_git_commits_with_each_result(workdir, capsys):
    """With track-packages, each installed package's version (and a git install's commit) is
    recorded with the job's results; a package not installed is left out."""
    write_junit(workdir / "results" / "junit.xml", [("test_grad", "passed")])
    argv = update_argv("--track-packages", "fakejax, fakenumpy, notinstalled")
    assert main(argv, {}) == 0
    source = latest(load(), "test_grad", "torch").source
    assert source.env == (("fakejax", "0.4.31+git.0123456789ab"), ("fakenumpy", "2.1.0"))
    assert "env: 2 package(s) in " in capsys.readouterr().err


def test_a_failing_env_command_is_a_warning_naming_it_and_the_results_still_publish(
    workdir, capsys
):
    """An env command that exits 3 is one warning naming the command and its exit code; the
    results are recorded, without an environment."""
    write_junit(workdir / "results" / "junit.xml", [("test_grad", "passed")])
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(workdir / "summary.md")}
    assert main(update_argv("--env-command", "echo broken >&2; exit 3"), env) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("::warning")]
    assert warnings == [
        (
            "::warning::env: echo broken >&2; exit 3 exited with code 3; no environment "
            "recorded, the results are recorded without it: broken"
        )
    ]
    assert latest(load(), "test_grad", "torch").source.env == ()


def test_an_env_command_and_suite_properties_are_recorded_and_shown_in_the_job_summary(workdir):
    """A suite's <properties> and the env command's versions make one environment (the
    command wins on a shared name), shown in the job summary."""
    path = workdir / "results" / "junit.xml"
    path.parent.mkdir()
    path.write_text(
        '<testsuite name="s"><properties><property name="jax" value="0.4.0"/>'
        '<property name="python" value="3.11"/></properties>'
        '<testcase classname="core.test_gradients" name="test_grad">'
        '<properties><property name="case_only" value="x"/></properties></testcase>'
        "</testsuite>",
        encoding="utf-8",
    )
    summary = workdir / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    argv = update_argv("--env-command", """echo '{"jax": "0.4.31"}'""")
    assert main(argv, env) == 0
    recorded = latest(load(), "test_grad", "torch").source.env
    assert recorded == (("jax", "0.4.31"), ("python", "3.11"))
    assert "Environment of this job: jax 0.4.31, python 3.11.\n" in summary.read_text("utf-8")


def test_the_leg_file_carries_the_environment_into_the_fan_in_jobs_cells(workdir):
    """collect writes the leg's environment into its leg file, and update --legs records it
    with that leg's cells."""
    write_junit(workdir / "results" / "junit.xml", [("test_grad", "failed")])
    collect = [
        *("collect", "--junit", "results", "--backend", "jax", "--leg-file", "legs"),
        *("--run-id", "100", "--job-id", "7", "--repository", "o/r"),
        *("--env-command", """echo '{"jax": "0.4.31"}'"""),
    ]
    assert main(collect, {}) == 0
    (path,) = (workdir / "legs").iterdir()
    assert load_leg(path.read_text("utf-8"), where="leg").info.env == (("jax", "0.4.31"),)
    fan_in = ["update", "--legs", "legs/*.json", "--run-id", "100", "--repository", "o/r"]
    assert main(fan_in, {}) == 0
    assert latest(load(), "test_grad", "jax").source.env == (("jax", "0.4.31"),)


def test_backend_version_makes_a_version_bump_a_new_column(workdir):
    """With jax@{jax}, two runs on jax 0.4.30 and 0.4.31 fill two columns side by side."""
    write_junit(workdir / "results" / "junit.xml", [("test_grad", "passed")])
    for run, version in (("100", "0.4.30"), ("101", "0.4.31")):
        argv = [
            *("update", "--junit", "results", "--backend", "jax", "--run-id", run),
            *("--repository", "o/r", "--backend-version", "jax@{jax}"),
            *("--env-command", f"""echo '{{"jax": "{version}"}}'"""),
        ]
        assert main(argv, {}) == 0
    assert load(CORE_GRADIENTS).backend_names == ("jax@0.4.30", "jax@0.4.31")
