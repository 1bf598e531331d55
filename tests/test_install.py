"""The action's install step: a venv without pip of its own, dependencies not compiled ahead,
and ivy-matrix's own modules compiled once there, so that a leg compiles none of them at import.

The figures (a leg's CPU time on a fresh install, before and after) are in
docs/development.md, measured with bench/fresh_leg.sh; a test never times anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.commands.results import write_junit

ROOT = Path(__file__).resolve().parents[1]


def install_script() -> str:
    doc = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    (step,) = [s for s in doc["runs"]["steps"] if s.get("id") == "install"]
    return str(step["run"])


def test_the_install_step_compiles_the_package_and_nothing_it_does_not_run():
    """venv --without-pip, pip --no-compile from the setup Python, then compileall of ivy_matrix."""
    lines = [line.strip() for line in install_script().splitlines()]
    assert '"$SETUP_PYTHON" -m venv --without-pip "$VENV"' in lines
    (pip,) = [line for line in lines if " -m pip " in line]
    assert pip.startswith('"$SETUP_PYTHON" -m pip --python "$VENV/bin/python" install ')
    assert "--no-compile" in pip
    assert "--require-hashes" in pip
    assert '"$VENV/bin/python" -m compileall -q "$GITHUB_ACTION_PATH/ivy_matrix"' in lines


def pyc_files(folder: Path) -> set[Path]:
    return set(folder.rglob("*.pyc"))


def test_after_the_install_compile_a_leg_compiles_none_of_the_package(tmp_path):
    """Once the install step's compileall ran, an update writes no bytecode of ivy_matrix."""
    action = tmp_path / "action"
    shutil.copytree(
        ROOT / "ivy_matrix", action / "ivy_matrix", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy2(ROOT / "entrypoint.py", action / "entrypoint.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["GITHUB_ACTION_PATH"] = str(action)
    (line,) = [line for line in install_script().splitlines() if "compileall" in line]
    subprocess.run(
        ["bash", "-c", line.strip().replace('"$VENV/bin/python"', '"$PYTHON"')],
        env={**env, "PYTHON": sys.executable},
        check=True,
        timeout=120,
    )
    compiled = pyc_files(action)
    assert len(compiled) >= len(list((action / "ivy_matrix").rglob("*.py")))
    work = tmp_path / "work"
    write_junit(work / "r.xml", [("test_grad", "passed"), ("test_jac", "failed")])

    subprocess.run(
        [
            sys.executable,
            str(action / "entrypoint.py"),
            "update",
            "--junit",
            "r.xml",
            "--backend",
            "torch",
        ],
        cwd=work,
        env={**env, "GITHUB_RUN_ID": "3", "GITHUB_REPOSITORY": "o/r"},
        capture_output=True,
        check=True,
        timeout=120,
    )

    assert pyc_files(action) == compiled
