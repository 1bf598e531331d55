"""``ivy-matrix collect``: one leg's results into a leg file, with no request to GitHub."""

from __future__ import annotations

from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.errors import ExitCode
from ivy_matrix.model import Outcome
from ivy_matrix.results.legs import load_leg
from tests.commands.results import CORE_GRADIENTS, error_lines, write_junit
from tests.github.fake_server import FakeGitHub

COLLECT = [
    *("collect", "--junit", "results", "--backend", "torch"),
    *("--run-id", "100", "--job-id", "7", "--repository", "o/r"),
]
CASES = [("test_grad", "passed"), ("test_jac", "failed"), ("test_adam", "skipped")]


def runner_env(work: Path, fake: FakeGitHub) -> dict[str, str]:
    """A runner's variables, a token, and GitHub's address pointing at ``fake``."""
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_SHA": "9f2c0de",
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_API_URL": fake.base_url,
        "IVY_MATRIX_TOKEN": "leg-token",
        "GITHUB_OUTPUT": str(work / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(work / "summary.md"),
    }


def only_leg_file(folder: Path) -> Path:
    (path,) = folder.iterdir()
    return path


def test_collect_writes_the_legs_cells_and_metadata_and_asks_github_nothing(workdir, fake):
    """On a runner with a token, collect writes one leg file named after the leg, its step
    outputs and a summary line, and sends GitHub no request at all."""
    write_junit(workdir / "results" / "junit.xml", CASES)
    assert main([*COLLECT, "--leg-file", "legs"], runner_env(workdir, fake)) == 0
    with fake.lock:
        assert fake.requests == []
    path = only_leg_file(workdir / "legs")
    assert path.name.startswith("ivy-matrix-leg-100-1-7-")
    leg = load_leg(path.read_text(encoding="utf-8"), where=path.name)
    assert (leg.info.run_id, leg.info.job_id, leg.info.sha) == (100, 7, "9f2c0de")
    assert (leg.info.ref, leg.info.event) == ("refs/heads/main", "push")
    rows = leg.collected.dashboards[CORE_GRADIENTS]
    assert {row: cells["torch"].outcome for row, cells in rows.items()} == {
        "test_grad": Outcome.SUCCESS,
        "test_jac": Outcome.FAILURE,
        "test_adam": Outcome.SKIPPED,
    }
    assert rows["test_jac"]["torch"].message == "assert 1 == 2"
    outputs = (workdir / "output.txt").read_text(encoding="utf-8").splitlines()
    assert f"leg-file={path.resolve()}" in outputs
    assert f"leg-name={path.stem}" in outputs
    assert {"tests=3", "failed=1", "skipped=1"} <= set(outputs)
    summary = (workdir / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## ivy-matrix: 3 test cases (1 failed, 0 errors, 1 skipped)")


def test_collect_writes_to_a_json_path_as_given(workdir):
    """A --leg-file ending in .json is the file itself; without one the file goes here."""
    write_junit(workdir / "results" / "junit.xml", CASES)
    assert main([*COLLECT, "--leg-file", "out/torch.json"], {}) == 0
    assert [p.name for p in (workdir / "out").iterdir()] == ["torch.json"]
    assert main(COLLECT, {}) == 0
    assert len(list(workdir.glob("ivy-matrix-leg-100-1-7-*.json"))) == 1


def test_collect_with_fail_on_writes_the_file_then_fails_the_step(workdir, capsys):
    """fail-on: failures exits 1 only after the leg file is written, so it can still upload."""
    write_junit(workdir / "results" / "junit.xml", CASES)
    assert main([*COLLECT, "--leg-file", "legs", "--fail-on", "failures"], {}) == 1
    assert len(list((workdir / "legs").iterdir())) == 1
    assert "1 test(s) failed" in capsys.readouterr().err


def test_a_dry_run_of_collect_writes_nothing(workdir, capsys):
    """--dry-run says where the leg file would go and writes nothing."""
    write_junit(workdir / "results" / "junit.xml", CASES)
    assert main([*COLLECT, "--leg-file", "legs", "--dry-run"], {}) == 0
    assert not (workdir / "legs").exists()
    assert (
        "dry run: would write the leg file legs/ivy-matrix-leg-100-1-7-" in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--run-id", "100"], {}, "collect needs the run and repository"),
        (["--repository", "o/r"], {}, "collect needs the run and repository"),
        (
            ["--run-id", "100", "--repository", "o/r"],
            {"IVY_MATRIX_JOB_URL": "https://example.com/x"},
            "give input 'job-id' (the action passes job.check_run_id) instead of IVY_MATRIX_JOB_URL",
        ),
        (
            ["--run-id", "100", "--repository", "o/r", "--fail-on", "new"],
            {},
            "--fail-on new needs the pull request's verdicts",
        ),
    ],
)
def test_collect_refuses_what_a_leg_file_cannot_say_before_writing(
    workdir, capsys, argv, env, message
):
    """Without the run and repository, with a job URL or fail-on new: a usage error (exit 2),
    and no file."""
    write_junit(workdir / "results" / "junit.xml", CASES)
    command = ["collect", "--junit", "results", "--backend", "torch", "--leg-file", "legs"]
    assert main([*command, *argv], {"GITHUB_ACTIONS": "true", **env}) == ExitCode.USAGE
    assert message in error_lines(capsys.readouterr().err)[0]
    assert not (workdir / "legs").exists()


def test_a_leg_file_the_fan_in_job_would_refuse_is_not_written(workdir, capsys):
    """Past a leg file's limits (here: 300 backends named by the tests, more than 256) collect
    writes nothing and exits 3 saying what to do, instead of a file the fan-in job leaves out."""
    cases = [(f"test_grad[b{index}]", "passed") for index in range(300)]
    write_junit(workdir / "results" / "junit.xml", cases)
    argv = [*COLLECT[:3], "--backend-from-test", r"\[(?P<backend>[^\]]+)\]", *COLLECT[5:]]
    assert main([*argv, "--leg-file", "legs"], {"GITHUB_ACTIONS": "true"}) == ExitCode.INPUT
    (message,) = error_lines(capsys.readouterr().err)
    assert "'backends': 300 backends, more than the 256 a leg file may hold" in message
    assert "split this leg's tests over more legs" in message
    assert not (workdir / "legs").exists()
