"""Recording a leg's environment end to end: the default report by the python on the PATH,
direct_url.json commits, JUnit properties, a failing env command, the leg file and columns;
a command that prints what is not text or never stops, starts background processes or runs
too long, and one that would see the token (issue 24)."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.commands.env_command import record_environment
from ivy_matrix.redaction import Redactor
from ivy_matrix.results.legs import load_leg
from ivy_matrix.runner.log import Log
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


# ------------------------------------------------ a user's command, bounded and kept apart (issue 24)

TOKEN = "4f1d0c3e9b7a26c58e1f0d4b3a2c9e8f7d6b5a41"
# Each bounded run below is given this long to end; none is meant to reach it.
LIMIT = 30


def quiet_log() -> tuple[Log, io.StringIO]:
    """A log off a runner, and what it printed."""
    printed = io.StringIO()
    return Log(github_actions=False, stream=printed), printed


def bounded(command: str, **options) -> tuple[tuple[tuple[str, str], ...], str]:
    """``command`` run as the env command, with this process's environment; what it
    reported, and what the log printed."""
    log, printed = quiet_log()
    env = record_environment(
        command, (), log, environment=dict(os.environ), timeout=LIMIT, **options
    )
    return env, printed.getvalue()


def ended(pid: int) -> bool:
    """Whether process ``pid`` no longer runs (gone, or a zombie no one reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.is_file() and stat.read_text().rsplit(")", 1)[1].split()[0] in {"Z", "X"}


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended, or does within 100 looks 20 ms apart (a killed
    process closes its files a moment before the system says it ended)."""
    for _ in range(100):
        if ended(pid):
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize(
    ("output", "said"),
    [
        (r"\377\376{}", "its output is not UTF-8 text (byte 0)"),
        (r'{"jax": "\\ud800"}', "holds a lone surrogate"),
        (r'{"\\udfff": "1.0"}', "holds a lone surrogate"),
    ],
    ids=["not UTF-8", "lone surrogate in a version", "lone surrogate in a name"],
)
def test_an_env_command_printing_what_is_not_text_is_a_warning_and_the_results_publish(
    workdir, capsys, output, said
):
    """Output that is not UTF-8, or JSON with a lone surrogate escape, is one warning naming
    the command; update exits 0 and records the results without an environment (it used to
    crash, exit 70)."""
    write_junit(workdir / "results" / "junit.xml", [("test_grad", "failed")])
    command = f"printf '{output}'"
    argv = update_argv("--env-command", command, "--summary-json", "s.json")
    assert main(argv, {}) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert f"env: {command}" in warnings[0]
    assert said in warnings[0]
    assert latest(load(), "test_grad", "torch").source.env == ()


def test_endless_output_is_read_to_1_mib_and_the_command_stopped():
    """A command that never stops printing (yes) is read to 1 MiB, stopped with its group,
    and is a warning saying so, not a wait for the time limit nor gigabytes held."""
    env, printed = bounded("yes")
    assert env == ()
    assert "env: yes printed more than 1 MiB, so it is not a list of package versions" in printed


def test_a_background_process_the_command_starts_is_killed_when_it_ends(workdir):
    """The command's versions are recorded at once, though a process it started in the
    background still holds its output open; that process is gone when the report is."""
    command = """sleep 300 & echo $! > bg.pid; echo '{"jax": "0.4.31"}'"""
    env, printed = bounded(command)
    assert env == (("jax", "0.4.31"),)
    assert "warning" not in printed
    assert gone(int((workdir / "bg.pid").read_text()))


def test_a_command_past_its_time_is_killed_with_everything_it_started(workdir):
    """At the time limit the whole process group is killed, the command and what it started,
    and the warning says it did not end in time."""
    log, printed = quiet_log()
    command = "sleep 300 & echo $! > bg.pid; sleep 300"
    env = record_environment(command, (), log, environment=dict(os.environ), timeout=1)
    assert env == ()
    assert f"env: {command} did not end within 1 s; it was stopped" in printed.getvalue()
    assert gone(int((workdir / "bg.pid").read_text()))


def test_what_the_command_reports_is_redacted():
    """A package name or version that holds the token or a key is recorded as ***."""
    key = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"
    command = f"""echo '{{"jax": "{key}", "{TOKEN}": "1.0"}}'"""
    redactor = Redactor.of([TOKEN])
    env, _ = bounded(command, redact=redactor)
    assert env == (("***", "1.0"), ("jax", "***"))


SECRET_VARIABLES = (
    "IVY_MATRIX_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "INPUT_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
)


@pytest.fixture
def token_everywhere(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process's environment holds the token and the runner's credentials, as a
    runner's step does, and one more variable holds the token's value."""
    for name in SECRET_VARIABLES:
        monkeypatch.setenv(name, f"{TOKEN}-{name}" if name.startswith("ACTIONS") else TOKEN)
    monkeypatch.setenv("MY_DEPLOY_KEY", TOKEN)
    monkeypatch.setenv("KEPT_VARIABLE", "kept")
    return {"IVY_MATRIX_TOKEN": TOKEN}


def test_an_env_command_never_sees_the_token(workdir, token_everywhere):
    """The env command's environment has none of the token's variables, no runner
    credential and no variable holding the token; the others are there."""
    write_junit(workdir / "results" / "junit.xml", [("test_grad", "passed")])
    argv = update_argv("--env-command", "env > seen.txt; echo '{}'")
    assert main(argv, token_everywhere) == 0
    seen = (workdir / "seen.txt").read_text(encoding="utf-8")
    assert TOKEN not in seen
    names = {line.partition("=")[0] for line in seen.splitlines()}
    assert names & {*SECRET_VARIABLES, "MY_DEPLOY_KEY"} == set()
    assert "KEPT_VARIABLE" in names


def test_the_track_packages_python_never_sees_the_token(workdir, test_env, token_everywhere):
    """The python that reports track-packages runs without the token either (a
    sitecustomize in the test environment writes down what it sees)."""
    seen = workdir / "seen.json"
    (test_env / "sitecustomize.py").write_text(
        f"import json, os\nopen({str(seen)!r}, 'w').write(json.dumps(dict(os.environ)))\n",
        encoding="utf-8",
    )
    write_junit(workdir / "results" / "junit.xml", [("test_grad", "passed")])
    assert main(update_argv("--track-packages", "fakejax"), token_everywhere) == 0
    assert latest(load(), "test_grad", "torch").source.env == (
        ("fakejax", "0.4.31+git.0123456789ab"),
    )
    environment = json.loads(seen.read_text(encoding="utf-8"))
    assert TOKEN not in json.dumps(environment)
    assert environment["KEPT_VARIABLE"] == "kept"
