"""The action's install: a matrix leg's ``collect`` installs nothing and runs on the standard
library alone; the one job that writes installs the hashed lock into a venv, cached by the
lock's digest and the Python that made it.

``collect``'s import closure is checked by running it under an import hook that refuses every
module outside the standard library and ivy-matrix, in a Python started with ``-I -S`` (no
site-packages at all), and its leg file against the one the full venv writes. The install
step's shell is run by bash with a stand-in Python. The figures (CPU seconds of a leg and of
the writer's install, cold and warm) are in docs/development.md and bench/README.md, measured
with bench/install_cost.py; a test never times anything.
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

from tests.commands.results import write_junit
from tests.test_action_yml import action, run_script

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


# The install steps, run by bash with a stand-in Python that logs its arguments.

# The stand-in's ``-m venv DIR`` makes DIR/bin/python (a copy of the stand-in), as venv would.
MAKES_VENVS = 'if [ "$1 $2" = "-m venv" ]; then mkdir -p "$4/bin"; cp "$0" "$4/bin/python"; fi'


def outputs(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "output"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return dict(line.split("=", 1) for line in lines)


def test_a_collect_leg_installs_nothing_and_runs_the_set_up_python(tmp_path):
    """Without a config file, collect runs the set-up Python itself: no venv, no pip, and the
    interpreter is not even started to plan."""
    result = run_script(
        "plan", tmp_path, COMMAND="collect", CONFIG="", SETUP_PYTHON="/opt/py/bin/python3"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert outputs(tmp_path) == {"python": "/opt/py/bin/python3"}


def test_the_python_input_installs_nothing_for_any_command(tmp_path):
    """A given interpreter is used as it is, for a leg and for the writer."""
    for command in ("collect", "update"):
        (tmp_path / "output").unlink(missing_ok=True)
        result = run_script("plan", tmp_path, COMMAND=command, GIVEN_PYTHON="/my/python")
        assert result.returncode == 0, result.stderr
        assert outputs(tmp_path) == {"python": "/my/python"}


def lock_block(name: str) -> str:
    """The lines of ``name``'s requirement in requirements.lock: its pin and its hashes."""
    lines = LOCK.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name}=="))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith("\\"))
    return "\n".join(lines[start : end + 1]) + "\n"


def test_a_collect_leg_with_a_config_file_installs_pyyaml_alone_with_its_hashes(tmp_path):
    """A config file is YAML: the leg gets a venv holding PyYAML alone, installed with its
    hashes from the lock, and runs collect with that venv's Python."""
    venv = tmp_path / "yaml-venv"
    plan = run_script("plan", tmp_path, COMMAND="collect", CONFIG="c.yml", YAML_VENV=str(venv))
    assert plan.returncode == 0, plan.stderr
    assert outputs(tmp_path) == {"install": "pyyaml", "python": f"{venv}/bin/python"}
    result = run_script(
        "install",
        tmp_path,
        shows=MAKES_VENVS,
        INSTALL="pyyaml",
        SETUP_PYTHON=str(tmp_path / "python"),
        YAML_VENV=str(venv),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"python ran: -m venv --without-pip {venv}",
        (
            f"python ran: -m pip --python {venv}/bin/python install --disable-pip-version-check "
            f"--no-compile --require-hashes --no-deps -r {venv}/pyyaml.lock"
        ),
    ]
    assert (venv / "pyyaml.lock").read_text(encoding="utf-8") == lock_block("pyyaml")
    assert lock_block("pyyaml").count("--hash=sha256:") >= 2


WRITER_KEY = re.compile(r"ivy-matrix-venv-1-Linux-X64-py\d+\.\d+\.\d+\w*-[0-9a-f]{32}")


def plan_writer(tmp_path: Path, command: str, **env: str) -> dict[str, str]:
    (tmp_path / "output").unlink(missing_ok=True)
    result = run_script(
        "plan",
        tmp_path,
        COMMAND=command,
        CONFIG="c.yml",
        SETUP_PYTHON=env.pop("SETUP_PYTHON", sys.executable),
        RUNNER_OS="Linux",
        RUNNER_ARCH="X64",
        VENV="/tmp/r/ivy-matrix-venv",
        **env,
    )
    assert result.returncode == 0, result.stderr
    return outputs(tmp_path)


@pytest.mark.parametrize("command", ["update", "fan-in", "publish"])
def test_the_writer_installs_the_lock_under_a_key_of_the_runner_the_python_and_the_lock(
    tmp_path, command
):
    """The writer installs the whole lock into the venv, restored from and saved to the
    cache under a key naming the runner, the Python's version and a digest of the lock and
    the interpreter."""
    planned = plan_writer(tmp_path, command)
    assert planned.keys() == {"install", "key", "python"}
    assert planned["install"] == "lock"
    assert planned["python"] == "/tmp/r/ivy-matrix-venv/bin/python"
    assert WRITER_KEY.fullmatch(planned["key"]), planned["key"]
    assert f"-py{sys.version.split()[0]}-" in planned["key"]


def test_the_writer_key_changes_with_the_lock_and_with_the_interpreter(tmp_path):
    """Another lock, or the same version of Python at another path (a venv links to its
    interpreter), is another cache entry; the same ones are the same entry."""
    key = plan_writer(tmp_path, "update")["key"]
    assert plan_writer(tmp_path, "update")["key"] == key
    other = tmp_path / "other-action"
    other.mkdir()
    (other / "requirements.lock").write_text(LOCK.read_text() + "# changed\n", encoding="utf-8")
    assert plan_writer(tmp_path, "update", GITHUB_ACTION_PATH=str(other))["key"] != key
    link = tmp_path / "bin" / "python3"
    link.parent.mkdir()
    link.symlink_to(sys.executable)
    assert plan_writer(tmp_path, "update", SETUP_PYTHON=str(link))["key"] != key


def install_lock(tmp_path: Path, venv: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_script(
        "install",
        tmp_path,
        shows=MAKES_VENVS,
        INSTALL="lock",
        KEY="k1",
        SETUP_PYTHON=str(tmp_path / "python"),
        VENV=str(venv),
        **env,
    )


def test_a_cache_miss_installs_the_lock_compiled_and_marks_the_venv_with_its_key(tmp_path):
    """On a miss, a venv without pip gets the hashed lock, compiled (the cache then holds the
    bytecode: a warm run compiles no dependency), and the key it was made for."""
    venv = tmp_path / "venv"
    result = install_lock(tmp_path, venv, RESTORED="false")
    assert result.returncode == 0, result.stderr
    lock = ROOT / "requirements.lock"
    assert [line for line in result.stdout.splitlines() if "python ran" in line] == [
        f"python ran: -m venv --without-pip {venv}",
        (
            f"python ran: -m pip --python {venv}/bin/python install --disable-pip-version-check "
            f"--require-hashes --no-deps -r {lock}"
        ),
        f"python ran: -m compileall -q {ROOT}/ivy_matrix",
    ]
    assert (venv / ".ivy-matrix-key").read_text(encoding="utf-8") == "k1\n"


def test_a_restored_venv_is_used_as_it_is(tmp_path):
    """A hit whose venv carries its key and runs here installs nothing: only ivy-matrix's own
    modules are compiled (they come with the action, not the cache)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    install_lock(tmp_path, tmp_path / "first", RESTORED="false")  # makes the stand-in
    shutil.copy(tmp_path / "python", venv / "bin" / "python")
    (venv / ".ivy-matrix-key").write_text("k1\n", encoding="utf-8")
    result = install_lock(tmp_path, venv, RESTORED="true")
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if "python ran" in line] == [
        "python ran: -c ",
        f"python ran: -m compileall -q {ROOT}/ivy_matrix",
    ]


@pytest.mark.parametrize("broken", ["other key", "no interpreter"])
def test_a_restored_venv_that_does_not_fit_is_installed_again(tmp_path, broken):
    """A hit whose venv was made for another key, or whose interpreter is gone, is warned
    about and installed again."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    install_lock(tmp_path, tmp_path / "first", RESTORED="false")  # makes the stand-in
    if broken == "other key":
        shutil.copy(tmp_path / "python", venv / "bin" / "python")
        (venv / ".ivy-matrix-key").write_text("k0\n", encoding="utf-8")
    else:
        (venv / ".ivy-matrix-key").write_text("k1\n", encoding="utf-8")
    result = install_lock(tmp_path, venv, RESTORED="true")
    assert result.returncode == 0, result.stderr
    assert "::warning::The cached venv k1 does not run here: installing again" in result.stdout
    assert any(" -m pip " in line for line in result.stdout.splitlines())
    assert (venv / ".ivy-matrix-key").read_text(encoding="utf-8") == "k1\n"


def test_the_cache_is_restored_and_saved_for_the_writer_only_and_saved_after_a_miss_only():
    """The cache steps run when the plan installs the lock; the save only when the restore
    missed; both name the same folder and the plan's key."""
    steps = {step.get("name"): step for step in action()["runs"]["steps"]}
    restore = steps["Restore the venv from the cache"]
    save = steps["Save the venv to the cache"]
    assert restore["uses"].startswith("actions/cache/restore@")
    assert save["uses"].startswith("actions/cache/save@")
    assert restore["uses"].split("@")[1] == save["uses"].split("@")[1]
    assert restore["if"] == "steps.plan.outputs.install == 'lock'"
    assert save["if"] == (
        "steps.plan.outputs.install == 'lock' && steps.restore.outputs.cache-hit != 'true'"
    )
    expected = {
        "path": "${{ runner.temp }}/ivy-matrix-venv",
        "key": "${{ steps.plan.outputs.key }}",
    }
    assert restore["with"] == save["with"] == expected
    order = list(steps)
    assert order.index("Restore the venv from the cache") < order.index("Install ivy-matrix")
    assert order.index("Install ivy-matrix") < order.index("Save the venv to the cache")
    assert order.index("Save the venv to the cache") < order.index("Update the dashboards")


def pyc_files(folder: Path) -> set[Path]:
    return set(folder.rglob("*.pyc"))


def install_script() -> str:
    (step,) = [s for s in action()["runs"]["steps"] if s.get("id") == "install"]
    return str(step["run"])


def test_after_the_install_compile_an_update_compiles_none_of_the_package(tmp_path):
    """Once the install step's compileall ran, an update writes no bytecode of ivy_matrix."""
    action_copy = tmp_path / "action"
    shutil.copytree(
        ROOT / "ivy_matrix",
        action_copy / "ivy_matrix",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy2(ROOT / "entrypoint.py", action_copy / "entrypoint.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["GITHUB_ACTION_PATH"] = str(action_copy)
    (line,) = [line for line in install_script().splitlines() if "compileall" in line]
    subprocess.run(
        ["bash", "-c", line.strip().replace('"$VENV/bin/python"', '"$PYTHON"')],
        env={**env, "PYTHON": sys.executable},
        check=True,
        timeout=120,
    )
    compiled = pyc_files(action_copy)
    assert len(compiled) >= len(list((action_copy / "ivy_matrix").rglob("*.py")))
    work = tmp_path / "work"
    write_junit(work / "r.xml", [("test_grad", "passed"), ("test_jac", "failed")])

    subprocess.run(
        [
            sys.executable,
            str(action_copy / "entrypoint.py"),
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

    assert pyc_files(action_copy) == compiled
