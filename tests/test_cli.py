"""The ivy-matrix command line: its parser, its exit codes, its output streams, the entry point."""

from __future__ import annotations

import gc
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from types import FrameType

import pytest

from ivy_matrix.cli import WINDOWS, main
from ivy_matrix.commands.update import run_update
from ivy_matrix.config.settings import load_settings
from ivy_matrix.errors import ExitCode
from ivy_matrix.github.client import GitHubClient
from ivy_matrix.github.connection import Remote
from ivy_matrix.model import Outcome
from tests.commands.results import error_lines, latest, load, read_json, write_junit

ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = ROOT / "entrypoint.py"


@pytest.mark.parametrize(
    ("argv", "env", "code", "phrase"),
    [
        (["--junit", "r.xml"], {}, ExitCode.USAGE, "no backend given"),
        (["--backend", "torch"], {}, ExitCode.USAGE, "no result files given"),
        (
            ["--junit", "r.xml", "--backend-from-path", r"results/(\w+)\.xml"],
            {},
            ExitCode.USAGE,
            "needs a named group (?P<backend>...)",
        ),
        (["--junit", "r.xml", "--backend-from-test", "("], {}, ExitCode.USAGE, "not a valid regex"),
        (
            ["--junit", "r.xml", "--backend", "t", "--config", "missing.yml"],
            {},
            ExitCode.USAGE,
            "cannot read it",
        ),
        (
            ["--junit", "r.xml", "--backend", "t", "--config", "."],
            {},
            ExitCode.USAGE,
            "cannot read it",
        ),
        (
            ["--junit", "r.xml", "--backend", "t", "--config", "bad.yml"],
            {},
            ExitCode.USAGE,
            "not valid YAML",
        ),
        (
            ["--junit", "r.xml", "--backend", "t"],
            {"IVY_MATRIX_FAIL_ON": "sometimes"},
            ExitCode.USAGE,
            (
                "input 'fail-on' (IVY_MATRIX_FAIL_ON) got 'sometimes'; "
                "allowed values: failures, errors, new, nothing"
            ),
        ),
        (
            ["--junit", "r.xml", "--backend", "t"],
            {"IVY_MATRIX_STYLE": "fancy"},
            ExitCode.USAGE,
            "allowed values: ivy, compact",
        ),
        (
            ["--junit", "r.xml", "--backend", "t"],
            {"GITHUB_RUN_ID": "abc"},
            ExitCode.USAGE,
            "got 'abc': not a whole number",
        ),
        (
            ["--junit", "r.xml", "--backend", "t"],
            {"IVY_MATRIX_REPOSITORY": "no-slash"},
            ExitCode.USAGE,
            "expected OWNER/REPO",
        ),
        (["--junit", "none.xml", "--backend", "t"], {}, ExitCode.INPUT, "no result files"),
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
        "no-file",
    ],
)
@pytest.mark.usefixtures("workdir")
def test_user_errors_exit_with_their_code_and_one_error_line(capsys, argv, env, code, phrase):
    """A setting the user must fix exits 2, an unusable input 3, each with exactly one
    ::error:: line on stderr that says what, and nothing on stdout."""
    workdir = Path.cwd()
    write_junit(workdir / "r.xml", [("test_grad", "passed")])
    (workdir / "bad.yml").write_text("backend: [unclosed\nstyle: : :\n", encoding="utf-8")

    got = main(["update", *argv], {"GITHUB_ACTIONS": "true", **env})

    out, err = capsys.readouterr()
    assert (got, out) == (code, "")
    (line,) = error_lines(err)
    assert line.startswith("::error::")
    assert phrase in line
    assert err.splitlines()[-1] == line
    assert not (workdir / ".ivy-matrix" / "state").exists()


def test_exit_codes_are_distinct_and_documented():
    """Every exit code is distinct, and docs/commands.md lists each with its number."""
    doc = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    assert len({int(code) for code in ExitCode}) == len(ExitCode)
    for code in ExitCode:
        assert re.search(rf"^\| {int(code)} \| ", doc, re.MULTILINE), code.name


@pytest.mark.usefixtures("workdir")
def test_without_github_actions_errors_are_plain_lines(capsys):
    """Off the runner the same error is a plain 'error:' line, not a workflow command."""
    code = main(["update", "--junit", "r.xml"], {})

    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert error_lines(err) == []
    assert err.splitlines()[-1].startswith("error: no backend given")


@pytest.mark.usefixtures("workdir")
def test_bad_choice_message_lists_plain_values_and_the_nearest(capsys):
    """The error for a bad choice lists the allowed values as typed, and the one meant."""
    code = main(["update", "--junit", "r.xml", "--backend", "t", "--fail-on", "failure"], {})

    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert "<FailOn." not in err
    assert "allowed values: failures, errors, new, nothing; did you mean failures?" in err


@pytest.mark.usefixtures("workdir")
def test_bad_choice_on_the_command_line_exits_2_like_the_env_var(capsys):
    """A bad --fail-on on the command line is a usage error: exit 2 with one ::error:: line."""
    argv = ["update", "--junit", "r.xml", "--backend", "t", "--fail-on", "bogus"]

    code = main(argv, {"GITHUB_ACTIONS": "true"})

    assert code == ExitCode.USAGE
    assert len(error_lines(capsys.readouterr().err)) == 1


@pytest.mark.parametrize(
    ("argv", "phrase"),
    [
        (["--junit", "r.xml"], "the command comes first: ivy-matrix update --junit GLOB"),
        (["updte"], "did you mean update?"),
        (["update", "--junit", "a.xml", "b.xml"], "quote it (--junit 'results/*.xml')"),
        (["update", "--jnuit", "r.xml"], "unrecognized arguments: --jnuit"),
    ],
    ids=["no-command", "typo-command", "expanded-glob", "typo-option"],
)
def test_usage_errors_exit_2_with_a_hint(workdir, capsys, argv, phrase):
    """argparse's complaints exit 2 (its convention) as one error line with what was meant."""
    write_junit(workdir / "a.xml", [("test_grad", "passed")])
    write_junit(workdir / "b.xml", [("test_grad", "passed")])

    code = main(argv, {})

    out, err = capsys.readouterr()
    assert (code, out) == (ExitCode.USAGE, "")
    assert len(err.splitlines()) == 1
    assert phrase in err


def test_windows_is_refused_at_the_start_with_one_line(workdir, capsys):
    """On Windows the command stops before reading anything, with one line saying why."""
    write_junit(workdir / "r.xml", [("test_grad", "passed")])

    code = main(["update", "--junit", "r.xml", "--backend", "t"], {}, platform="win32")

    out, err = capsys.readouterr()
    assert (code, out) == (ExitCode.USAGE, "")
    assert err.splitlines() == [f"error: {WINDOWS}"]
    assert WINDOWS == (
        "ivy-matrix runs on Linux and macOS; Windows is not supported (run it under WSL, "
        "or on a Linux or macOS runner)"
    )
    assert not (workdir / ".ivy-matrix").exists()


def broken_client(token: str, api_url: str) -> GitHubClient:
    """A client factory with a bug in it."""
    raise RuntimeError(f"no client for {api_url} with a token of {len(token)} character(s)")


def test_diagnostics_go_to_stderr_and_a_crash_exits_70(workdir, capsys):
    """Every log line and a crash's traceback go to the given stderr, nothing to stdout, and a
    bug exits 70."""
    write_junit(workdir / "r.xml", [("test_grad", "passed")])
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--targets", "branch"]
    argv += ["--run-id", "5", "--repository", "o/r", "--token", "t"]
    out, err = io.StringIO(), io.StringIO()

    code = main(argv, {}, remote=Remote(client=broken_client, git=None), stdout=out, stderr=err)

    assert code == ExitCode.BUG
    assert int(ExitCode.BUG) == 70
    assert capsys.readouterr() == ("", "")
    assert out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert lines[:2] == [
        "Reading 1 result file(s)",
        "r.xml: 1 tests, 0 failed, 0 errors, 0 skipped",
    ]
    assert "Traceback (most recent call last):" in lines
    assert lines[-2] == (
        "RuntimeError: no client for https://api.github.com with a token of 1 character(s)"
    )
    assert lines[-1] == "error: ivy-matrix crashed; please report this with the log above"


def test_help_goes_to_the_stdout_main_is_given(capsys):
    """--help prints to the given stdout and exits 0 as argparse does."""
    out = io.StringIO()

    with pytest.raises(SystemExit) as exit_info:
        main(["update", "--help"], {}, stdout=out)

    assert exit_info.value.code == 0
    assert capsys.readouterr() == ("", "")
    assert out.getvalue().startswith("usage: ivy-matrix update [-h]")


@pytest.mark.parametrize(
    "launcher", [[str(ENTRYPOINT)], ["-m", "ivy_matrix"]], ids=["entrypoint", "python-m"]
)
def test_the_command_runs_as_a_subprocess(workdir, launcher):
    """python entrypoint.py and python -m ivy_matrix run update, log to stderr, exit 0."""
    write_junit(workdir / "r.xml", [("test_grad", "passed"), ("test_jac", "failed")])
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--summary-json", "s.json"]

    completed = subprocess.run(
        [sys.executable, *launcher, *argv],
        cwd=workdir,
        env={
            "PYTHONUTF8": "1",
            "GITHUB_RUN_ID": "6",
            "GITHUB_REPOSITORY": "o/r",
            "PYTHONPATH": str(ROOT),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stdout == ""
    assert "dashboard core/gradients: 2 cell(s) changed; 2 new row(s)" in completed.stderr
    assert read_json(workdir / "s.json")["totals"]["failed"] == 1
    assert latest(load(store=workdir / ".ivy-matrix"), "test_jac", "torch").source.url == (
        "https://github.com/o/r/actions/runs/6"
    )


def test_a_dash_writes_the_summary_json_to_stdout_and_nothing_else(workdir, capsys):
    """--summary-json - puts the JSON alone on stdout (a pipe gets data), the log on stderr."""
    write_junit(workdir / "r.xml", [("test_grad", "passed"), ("test_jac", "failed")])

    code = main(["update", "--junit", "r.xml", "--backend", "torch", "--summary-json", "-"], {})

    out, err = capsys.readouterr()
    assert code == 0
    assert json.loads(out)["totals"]["failed"] == 1
    assert "summary-json" not in err
    assert not (workdir / "-").exists()


@pytest.mark.parametrize(
    ("argv", "starts"),
    [
        (["compare", "--json", "-"], "{"),
        (["compare", "--markdown", "-"], "<!-- ivy-matrix:"),
    ],
    ids=["compare-json", "compare-markdown"],
)
def test_a_dash_writes_each_single_file_to_stdout(workdir, capsys, argv, starts):
    """Every option that writes one file takes '-' for stdout, and writes no file named '-'."""
    write_junit(workdir / "r.xml", [("test_grad", "passed"), ("test_jac", "failed")])
    assert main(["update", "--junit", "r.xml", "--backend", "torch"], {}) == 0
    capsys.readouterr()

    code = main([*argv, "--junit", "r.xml", "--backend", "torch"], {})

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(starts)
    assert not (workdir / "-").exists()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"IVY_MATRIX_TOKEN": "a", "GITHUB_TOKEN": "b", "GH_TOKEN": "c"}, "a"),
        ({"GITHUB_TOKEN": "b", "GH_TOKEN": "c"}, "b"),
        ({"GH_TOKEN": "c"}, "c"),
        ({"GITHUB_TOKEN": " ", "GH_TOKEN": "c"}, "c"),
        ({}, None),
    ],
)
def test_the_token_comes_from_the_first_variable_that_gives_one(env, expected):
    """--token, then IVY_MATRIX_TOKEN, GITHUB_TOKEN and GH_TOKEN, in that order."""
    assert load_settings({}, env).token == expected
    assert load_settings({"token": "z"}, env).token == "z"


def test_the_token_is_never_printed(workdir, capsys):
    """A refused token shows nowhere: not in the log, an error, or the settings' repr."""
    write_junit(workdir / "r.xml", [("test_grad", "passed")])
    secret = "ghp_SECRET_never_shown_0123456789"
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--targets", "branch"]
    argv += ["--run-id", "5", "--repository", "o/r"]

    code = main(argv, {"GH_TOKEN": secret}, remote=Remote(client=broken_client))

    out, err = capsys.readouterr()
    assert code == ExitCode.BUG
    assert secret not in out + err
    assert secret not in repr(load_settings({}, {"GH_TOKEN": secret}))


def test_a_closed_stderr_ends_the_log_but_the_update_still_saves(workdir):
    """With the log's reader gone (``2>&1 | head -1``), update exits 0, saves, and blames nothing."""
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
        assert proc.stderr is not None
        proc.stderr.close()  # the reader is gone before the first line is written
        stdout, _ = proc.communicate(timeout=60)

    assert (proc.returncode, stdout) == (0, "")
    assert latest(load(store=workdir / ".ivy-matrix"), "test_jac", "torch").outcome == (
        Outcome.FAILURE
    )
    assert (workdir / "out" / "core" / "gradients.md").is_file()


def test_a_command_runs_without_the_cyclic_garbage_collector_and_gives_it_back(workdir):
    """The collector's walks over every container an update builds cost it a fifth of its CPU
    and found next to nothing: no collection starts while a command runs, and the collector is
    on again after it, as it was (the young objects it left are then collected once)."""
    write_junit(workdir / "r.xml", [(f"test_{n}", "passed") for n in range(2_000)])
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--output-dir", "out"]
    during: list[int] = []

    def collecting(phase: str, info: dict[str, int]) -> None:
        frame: FrameType | None = sys._getframe()
        while phase == "start" and frame is not None:
            if frame.f_code is run_update.__code__:
                during.append(info["generation"])
                return
            frame = frame.f_back

    assert gc.isenabled()
    gc.callbacks.append(collecting)
    try:
        code = main(argv, {"GITHUB_RUN_ID": "5", "GITHUB_REPOSITORY": "o/r"}, stderr=io.StringIO())
    finally:
        gc.callbacks.remove(collecting)

    assert (code, during, gc.isenabled()) == (0, [], True)
    assert (workdir / "out" / "README.md").is_file()


@pytest.mark.usefixtures("workdir")
def test_a_collector_turned_off_before_a_command_stays_off():
    """Whoever turned the collector off (a program that runs ivy-matrix in its process) finds
    it off after a command, a failing one included."""
    gc.disable()
    try:
        code = main(["update", "--junit", "missing.xml", "--backend", "torch"], {})
        assert (code, gc.isenabled()) == (ExitCode.INPUT, False)
    finally:
        gc.enable()
