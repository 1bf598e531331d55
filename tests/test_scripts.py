"""scripts/bootstrap: the Python version check and remaking a .venv that cannot run ivy-matrix.

Each test copies the real script into a temporary checkout, with stand-in interpreters (small
bash scripts that answer the version query, make a venv and record pip calls), so nothing is
installed and no network is needed.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[1]

# A stand-in for python: answers the version query, copies itself as a venv's python, and
# appends pip's arguments to $CALLS.
FAKE_PYTHON = """#!/usr/bin/env bash
case "$1" in
  -c) echo "{version}" ;;
  -m)
    if [ "$2" = venv ]; then
      mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
    elif [ "$2" = pip ]; then
      echo "$*" >> "$CALLS"
    fi ;;
esac
"""


def fake_python(path: Path, version: str) -> Path:
    """Write a stand-in interpreter that reports ``version``; return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE_PYTHON.format(version=version), encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture(name="checkout")
def checkout_fixture(tmp_path: Path) -> Path:
    """A temporary checkout holding the real scripts/bootstrap and the files it hashes."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "bootstrap", tmp_path / "scripts" / "bootstrap")
    for name in ("requirements.lock", "pyproject.toml", "requirements-dev.txt"):
        (tmp_path / name).write_text(f"# {name}\n", encoding="utf-8")
    return tmp_path


def bootstrap(checkout: Path, python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the checkout's scripts/bootstrap with PYTHON set; pip calls go to ``calls.log``."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHON": str(python),
        "CALLS": str(checkout / "calls.log"),
        # The browser tests' tools (chromium, axe-core) are not what these tests are about.
        "BROWSER_TOOLS": "0",
    }
    return subprocess.run(
        ["bash", str(checkout / "scripts" / "bootstrap"), *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def pip_calls(checkout: Path) -> list[str]:
    """The pip commands the stand-in interpreters recorded."""
    log = checkout / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


@pytest.mark.parametrize("version", ["3.10", "2.7", "garbage"])
def test_an_old_python_is_refused_up_front_and_no_venv_is_made(checkout, tmp_path, version):
    """PYTHON older than 3.11 exits 1 saying 3.11 or newer is needed, before creating .venv."""
    python = fake_python(tmp_path / "bin" / "python", version)

    result = bootstrap(checkout, python)

    assert result.returncode == 1
    assert "needs Python 3.11 or newer" in result.stderr
    assert str(python) in result.stderr
    assert not (checkout / ".venv").exists()
    assert pip_calls(checkout) == []


def test_a_python_that_is_not_there_is_refused_with_the_same_message(checkout, tmp_path):
    """A PYTHON that does not exist exits 1 with the version message, not a shell error."""
    result = bootstrap(checkout, tmp_path / "no" / "python3")

    assert result.returncode == 1
    assert "needs Python 3.11 or newer" in result.stderr
    assert "not a working Python" in result.stderr
    assert not (checkout / ".venv").exists()


@pytest.mark.parametrize("venv_python", ["3.10", "broken", "missing"])
def test_a_venv_that_cannot_run_ivy_matrix_is_made_again(checkout, tmp_path, venv_python):
    """A .venv whose python is 3.10, fails to run, or is gone is replaced using PYTHON."""
    inside = checkout / ".venv" / "bin" / "python"
    if venv_python == "3.10":
        fake_python(inside, "3.10")
    elif venv_python == "broken":
        inside.parent.mkdir(parents=True)
        inside.write_text("#!/nonexistent/interpreter\n", encoding="utf-8")
        inside.chmod(0o755)
    else:
        (checkout / ".venv" / "lib").mkdir(parents=True)
    (checkout / ".venv" / "old-file").write_text("left by the old venv", encoding="utf-8")
    python = fake_python(tmp_path / "bin" / "python3.12", "3.12")

    result = bootstrap(checkout, python)

    assert result.returncode == 0, result.stderr
    assert "Making .venv again" in result.stdout
    assert not (checkout / ".venv" / "old-file").exists()
    assert 'echo "3.12"' in inside.read_text(encoding="utf-8")
    assert len(pip_calls(checkout)) == 2


def test_a_working_venv_is_kept_and_a_second_run_does_nothing(checkout, tmp_path):
    """With a 3.11+ .venv, PYTHON is not consulted; once installed, re-running installs nothing."""
    fake_python(checkout / ".venv" / "bin" / "python", "3.11")
    old = fake_python(tmp_path / "bin" / "python", "3.10")

    first = bootstrap(checkout, old, "--dev")
    second = bootstrap(checkout, old, "--dev")

    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert "Making .venv again" not in first.stdout
    assert len(pip_calls(checkout)) == 3  # lock, the package, the dev tools: once
    assert second.stdout == ""
