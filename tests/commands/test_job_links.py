"""End to end: which job each backend's cells link."""

from __future__ import annotations

import pytest

from ivy_matrix.cli import main
from tests.commands.results import latest, load, write_junit


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
