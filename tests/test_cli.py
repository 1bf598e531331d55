"""The ivy-matrix command line: its parser, its exit codes, its output streams, the entry point."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.github.client import GitHubClient
from ivy_matrix.github.connection import Remote
from ivy_matrix.model import Outcome
from tests.commands.results import error_lines, latest, load, read_json, write_junit

ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = ROOT / "entrypoint.py"


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


def broken_client(token: str, api_url: str) -> GitHubClient:
    """A client factory with a bug in it."""
    raise RuntimeError(f"no client for {api_url} with a token of {len(token)} character(s)")


def test_the_log_goes_to_the_streams_main_is_given(workdir, capsys):
    """Every log line goes to the given stdout and a crash's traceback to the given stderr."""
    write_junit(workdir / "r.xml", [("test_grad", "passed")])
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--targets", "branch"]
    argv += ["--run-id", "5", "--repository", "o/r", "--token", "t"]
    out, err = io.StringIO(), io.StringIO()

    code = main(argv, {}, remote=Remote(client=broken_client, git=None), stdout=out, stderr=err)

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
