"""End to end: which job each backend's cells link, and leg metadata checked against the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.model import Outcome, RunKey
from tests.commands.results import latest, load, write_junit

FORGED: dict[str, dict[str, object]] = {
    "jax": {"run_id": 999_999_999_999_999_999, "job_url": "https://evil.example/phish"},
    "numpy": {"job_url": "https://evil.example/o/r/actions/runs/100/job/12"},
    "paddle": {"job_url": "https://github.com/x/r/actions/runs/100/job/12"},
    "tensorflow": {"job_url": "https://github.com/o/r/actions/runs/100/job/13"},
    "mxnet": {"run_attempt": 3},
}


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

    out = capsys.readouterr().err
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
