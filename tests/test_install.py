"""The action's install step: a venv without pip of its own, dependencies not compiled ahead,
and ivy-matrix's own modules compiled once there, so that a leg compiles none of them at import;
and ``collect``, which needs none of the requirements: its import closure is the standard
library (and PyYAML only to read a config file).

``collect``'s import closure is checked by running it under an import hook that refuses every
module outside the standard library and ivy-matrix, in a Python started with ``-I -S`` (no
site-packages at all), and its leg file against the one the full venv writes. The figures (a
leg's CPU time on a fresh install, before and after) are in docs/development.md, measured with
bench/fresh_leg.sh; a test never times anything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import yaml

from tests.commands.results import write_junit

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"

# Runs a script (``python entrypoint.py ...`` as the action does) with every import outside
# the standard library refused, except the top-level names the test allows. An import is a
# breach when the refused module could have been found in site-packages (the standard library
# itself probes for modules that exist nowhere, such as Jython's ``org``). Writes what it saw
# as JSON to the file named by its first argument.
GUARD = r"""
import importlib.machinery, json, os, runpy, sys
report, allow, site_dirs, script, *args = sys.argv[1:]
allow, site_dirs = json.loads(allow), json.loads(site_dirs)
allowed = set(sys.stdlib_module_names) | {"__main__", "ivy_matrix"} | set(allow)
if allow:  # the allowed packages are found in site-packages, where nothing else is let in
    sys.path.extend(site_dirs)
breaches = []

class Refuse:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in allowed:
            return None
        if importlib.machinery.PathFinder.find_spec(top, site_dirs) is not None:
            breaches.append(name)
        raise ModuleNotFoundError(f"{name!r} is not in the standard library", name=name)

sys.meta_path.insert(0, Refuse())
sys.argv = [script, *args]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
try:
    runpy.run_path(script, run_name="__main__")
finally:
    stdlib = set(sys.stdlib_module_names) | {"__main__", "ivy_matrix"}
    loaded = sorted({name.partition(".")[0] for name in sys.modules} - stdlib)
    with open(report, "w", encoding="utf-8") as handle:
        json.dump({"breaches": breaches, "loaded": loaded}, handle)
"""


def site_dirs() -> list[str]:
    """Where this test's venv keeps the requirements (PyGithub, PyYAML, tabulate ...)."""
    return sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")})


def leg_env(tmp_path: Path) -> dict[str, str]:
    """A runner's environment for a leg: step outputs, a job summary, a failing fail-on and
    the packages of the ``python`` on the PATH recorded (a child process)."""
    event = tmp_path / "event.json"
    event.write_text("{}", encoding="utf-8")
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin",
        "GITHUB_ACTIONS": "true",
        "GITHUB_RUN_ID": "4242",
        "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_REPOSITORY": "acme/widgets",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_SHA": "9f2c0de",
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": str(event),
        "IVY_MATRIX_JOB_ID": "101",
        "IVY_MATRIX_FAIL_ON": "failures",
        "IVY_MATRIX_TRACK_PACKAGES": "pyyaml, tabulate",
    }


def collect(
    tmp_path: Path,
    name: str,
    *extra: str,
    guarded: bool,
    allow: tuple[str, ...] = (),
) -> tuple[subprocess.CompletedProcess[str], Path, dict[str, list[str]]]:
    """``entrypoint.py collect`` of the example results from a copy of the action's folder
    (no bytecode), guarded (``-I -S`` and the hook: the standard library alone, and ``allow``)
    or by this venv's Python with every requirement; the run, its leg folder and, guarded,
    what the hook saw."""
    work = tmp_path / name
    action_copy = work / "action"
    shutil.copytree(
        ROOT / "ivy_matrix",
        action_copy / "ivy_matrix",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy2(ROOT / "entrypoint.py", action_copy / "entrypoint.py")
    shutil.copytree(ROOT / "examples", work / "examples")
    env = leg_env(work)
    for variable in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        env[variable] = str(work / variable.lower())
    report = work / "guard.json"
    script = [str(action_copy / "entrypoint.py"), "collect"]
    arguments = [
        "--junit",
        "examples/results/**/*.xml",
        "--backend-from-path",
        "results/(?P<backend>[^/]+)/",
        "--leg-file",
        str(work / "legs"),
        *extra,
    ]
    if guarded:
        allowed, dirs = json.dumps(list(allow)), json.dumps(site_dirs())
        command = [sys.executable, "-I", "-S", "-c", GUARD, str(report), allowed, dirs, *script]
    else:
        command = [sys.executable, *script]
    result = subprocess.run(
        [*command, *arguments],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    seen = json.loads(report.read_text(encoding="utf-8")) if guarded else {}
    return result, work / "legs", seen


def only_file(folder: Path) -> Path:
    (path,) = folder.iterdir()
    return path


def test_collect_imports_the_standard_library_alone(tmp_path):
    """A leg's collect (summary, outputs, annotations, fail-on, recorded packages) imports
    nothing outside the standard library and ivy-matrix, and tries to import nothing else."""
    result, legs, seen = collect(tmp_path, "bare", guarded=True)
    assert result.returncode == 1, result.stderr  # fail-on failures: the example has failures
    assert "::error::6 test(s) failed" in result.stdout + result.stderr
    assert seen == {"breaches": [], "loaded": []}
    assert only_file(legs).name.startswith("ivy-matrix-leg-4242-2-101-")


def test_collect_writes_the_same_leg_file_on_the_standard_library_as_in_the_venv(tmp_path):
    """The leg file collect writes on a bare Python is byte for byte the one the venv with
    every requirement writes, and so are its step outputs."""
    bare, bare_legs, _ = collect(tmp_path, "bare", guarded=True)
    full, full_legs, _ = collect(tmp_path, "full", guarded=False)
    assert bare.returncode == full.returncode == 1
    assert only_file(bare_legs).name == only_file(full_legs).name
    assert only_file(bare_legs).read_bytes() == only_file(full_legs).read_bytes()
    assert b'"pyyaml"' in only_file(bare_legs).read_bytes()  # the packages were recorded
    outputs = [
        (tmp_path / run / "github_output").read_text(encoding="utf-8").replace(run, "RUN")
        for run in ("bare", "full")
    ]
    assert outputs[0] == outputs[1]


def test_collect_with_a_config_file_and_no_pyyaml_says_what_to_do(tmp_path):
    """A config file on a Python without PyYAML is a usage error (exit 2) naming the file,
    PyYAML, the interpreter and the two ways out; not a crash."""
    result, legs, seen = collect(
        tmp_path, "bare", "--config", "examples/ivy-matrix.yml", guarded=True
    )
    assert result.returncode == 2
    assert seen["breaches"] == ["yaml"]
    message = result.stdout + result.stderr
    assert "config file examples/ivy-matrix.yml is YAML, and reading it needs PyYAML" in message
    assert sys.executable in message
    assert "-r requirements.lock" in message
    assert "give its settings as options or inputs instead" in message
    assert "Traceback" not in message
    assert not legs.exists()


def test_collect_with_a_config_file_needs_pyyaml_alone(tmp_path):
    """With PyYAML as the one package beside the standard library (what the action installs
    for such a leg), collect reads the config file and writes the venv's leg file."""
    bare, bare_legs, seen = collect(
        tmp_path, "bare", "--config", "examples/ivy-matrix.yml", guarded=True, allow=("yaml",)
    )
    full, full_legs, _ = collect(
        tmp_path, "full", "--config", "examples/ivy-matrix.yml", guarded=False
    )
    assert bare.returncode == full.returncode == 1, bare.stderr
    assert seen["breaches"] == []
    # (PyYAML's C extension registers Cython's runtime modules; nothing imports them.)
    assert [name for name in seen["loaded"] if "cython" not in name] == ["yaml"]
    assert only_file(bare_legs).read_bytes() == only_file(full_legs).read_bytes()
    assert b"gradients_and_random" in only_file(bare_legs).read_bytes()  # the config's rule


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
