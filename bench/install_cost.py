"""CPU seconds the action spends on a fresh runner: a matrix leg's ``collect`` (issue 23) and the
install of the one job that writes, cold and warm; medians of interleaved rounds.

Each measurement runs the action's own step scripts (read from ``action.yml``) with bash, as
the runner would, on a fresh copy of the action's tracked files (no bytecode), with the Python
that ``--python`` names standing for setup-python's, and sums the CPU time (user + system, of
each process and the processes it waited for) of its parts:

- ``leg-before``: the install step of ``--before REV``'s action.yml (a venv, the whole lock from
  the package index, pip's cache off), then ``collect`` by that venv's Python with REV's code;
- ``leg``: this action.yml's plan step for ``command: collect``, which installs nothing, then
  ``collect`` by the set-up Python;
- ``leg-config``: the same leg given a config file: the plan, the install of PyYAML alone, then
  ``collect`` by that venv's Python;
- ``writer-cold``: the writer's plan, its install on a cache miss (a venv, the whole lock from the
  index, compiled, then ivy-matrix's own modules), and the save: the venv packed as
  actions/cache packs it (``tar --posix`` through ``zstdmt --long=30``);
- ``writer-warm``: the restore of that archive (``unzstd --long=30``), the plan and the install
  on a hit (the venv's key and interpreter checked, ivy-matrix's own modules compiled);
- ``writer-pip-cache``: the alternative of caching pip's downloads instead of the venv: the restore
  of an archive of the lock's wheels, then a venv and pip installing from those wheels with no
  index (``--no-index --find-links``: what a warm pip cache saves at best, since pip still asks
  the index about each package), as the install step did before, and ivy-matrix's modules.

Each writer measurement also times the imports of a writer that publishes (``ivy_matrix.cli``,
``commands.update`` and ``github.client``, which import PyGithub) right after its install: a
venv whose dependencies were not compiled compiles them there. The leg files of ``leg-before``
and ``leg`` are compared byte for byte (``checks``). Not measured: setup-python's
own step, and actions/cache's node process and download (``--cache-action DIR``, a checkout of
actions/cache, times its restore bundle's start, which fails fast here with no cache service).

pip runs as on a runner: no config file (``PIP_CONFIG_FILE=/dev/null``, so no local index or
wheel folder), no cache; ``--keep-pip-config`` keeps this machine's. It needs the package index.

    .venv/bin/python bench/install_cost.py --python python3.12 --before REV --rounds 5
    .venv/bin/python bench/install_cost.py --python python3.12 --json bench/out/install.json

I/O: writes under ``--work`` (default ``bench/out/install``: the leg's results, the archives)
and a temporary folder (the action's copies, removed at the end); starts bash, Python, pip, tar.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml
from children import ROOT, Json, cli_env, ensure_set, run_child

MEASUREMENTS = ("leg-before", "leg", "leg-config", "writer-cold", "writer-warm", "writer-pip-cache")
WRITER_IMPORTS = "import ivy_matrix.cli, ivy_matrix.commands.update, ivy_matrix.github.client"
CONFIG = "dashboards:\n  - match: '\\.test_functional\\.'\n    title: functional\n"
PACK = "zstdmt --long=30"
UNPACK = "unzstd --long=30"


def step_script(action_yml: str, step_id: str) -> str | None:
    """The ``run:`` script of the step ``step_id`` of an action.yml's text (None: no such step)."""
    doc = yaml.safe_load(action_yml)
    found = [s for s in doc["runs"]["steps"] if s.get("id") == step_id and "run" in s]
    return str(found[0]["run"]) if found else None


def copy_action(source: Path, commit: str | None, target: Path) -> None:
    """The action's tracked files as a runner gets them: this checkout's working tree, or the
    files of ``commit``."""
    target.mkdir(parents=True)
    if commit is None:
        names = subprocess.run(
            ["git", "ls-files", "-z"], cwd=source, capture_output=True, check=True
        ).stdout.split(b"\0")
        for name in filter(None, names):
            path = source / name.decode()
            if path.is_file():
                (target / name.decode()).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target / name.decode())
        return
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=source, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)


def base_env(*, keep_pip_config: bool) -> dict[str, str]:
    """A runner's environment for the steps: no GitHub or ivy-matrix variables, bytecode
    written, and (unless kept) pip with no config file and no cache."""
    env = {k: v for k, v in cli_env().items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not keep_pip_config:
        env = {k: v for k, v in env.items() if not k.startswith("PIP_") or k == "PIP_CERT"}
        env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_CACHE_DIR": "1"}
    env |= {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "RUNNER_OS": "Linux"}
    env["RUNNER_ARCH"] = {"x86_64": "X64", "aarch64": "ARM64"}.get(platform.machine(), "X64")
    return env


class Round:
    """One measurement's parts in one round: the CPU seconds of each, run in ``folder``."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder = folder
        self.env = env
        self.parts: dict[str, float] = {}

    def bash(self, part: str, script: str, **env: str) -> dict[str, str]:
        """Run a step's script; return the outputs it wrote to GITHUB_OUTPUT."""
        output = self.folder / f"output-{part}"
        output.write_text("", encoding="utf-8")
        variables = {**self.env, "GITHUB_OUTPUT": str(output), **env}
        command = ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script]
        self.run(part, command, env=variables)
        lines = output.read_text(encoding="utf-8").splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def run(self, part: str, command: list[str], *, env: dict[str, str] | None = None) -> None:
        result = run_child(command, env=env or self.env, parse_json=False, cwd=self.folder)
        self.parts[part] = self.parts.get(part, 0.0) + result.cpu_s


class Bench:
    """The measurements, each preparing a fresh folder and filling a Round."""

    def __init__(self, args: argparse.Namespace, work: Path, data: Path) -> None:
        self.args = args
        self.work = work
        self.data = data
        self.python = args.python
        self.env = base_env(keep_pip_config=args.keep_pip_config)
        self.action_yml = (ROOT / "action.yml").read_text(encoding="utf-8")
        self.archive = work / "venv.tar.zst"  # the writer's cache entry, from writer-cold
        self.wheels_archive = work / "wheels.tar.zst"
        self.legs: dict[str, bytes] = {}
        # The action's copies: outside the checkout, where mypy would find a second ivy_matrix.
        self.runs = Path(tempfile.mkdtemp(prefix="ivy-matrix-install-"))

    def fresh(self, name: str, commit: str | None = None) -> tuple[Path, Path]:
        """A fresh folder: the action's copy and a work folder holding the leg's results."""
        folder = self.runs / name
        shutil.rmtree(folder, ignore_errors=True)
        copy_action(ROOT, commit, folder / "action")
        (folder / "work").mkdir()
        shutil.copytree(self.data / "torch", folder / "work" / "results")
        (folder / "work" / "config.yml").write_text(CONFIG, encoding="utf-8")
        return folder, folder / "action"

    def step_env(self, folder: Path, action: Path) -> dict[str, str]:
        return {
            "GITHUB_ACTION_PATH": str(action),
            "SETUP_PYTHON": self.python,
            "GIVEN_PYTHON": "",
            "VENV": str(folder / "temp" / "ivy-matrix-venv"),
            "YAML_VENV": str(folder / "temp" / "ivy-matrix-yaml"),
        }

    def collect(self, r: Round, name: str, python: str, action: Path, *extra: str) -> None:
        folder = action.parent / "work"
        command = [python, str(action / "entrypoint.py"), "collect", "--junit", "results/*.xml"]
        command += ["--backend", "torch", "--leg-file", "legs", "--run-id", "23"]
        command += ["--repository", "acme/widgets", "--job-id", "7", *extra]
        r.folder = folder
        r.run("collect", command)
        (leg,) = (folder / "legs").iterdir()
        self.legs[name] = leg.read_bytes()

    def leg_before(self, r: Round) -> None:
        folder, action = self.fresh("leg-before", self.args.before)
        old = subprocess.run(
            ["git", "show", f"{self.args.before}:action.yml"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        script = step_script(old, "install")
        assert script is not None, "--before: its action.yml has no install step"
        r.folder = folder
        outputs = r.bash("install", script, **self.step_env(folder, action))
        self.collect(r, "leg-before", outputs["python"], action)

    def leg(self, r: Round) -> None:
        folder, action = self.fresh("leg")
        r.folder = folder
        plan = step_script(self.action_yml, "plan")
        assert plan is not None
        outputs = r.bash("plan", plan, **self.step_env(folder, action), COMMAND="collect")
        assert "install" not in outputs, outputs
        self.collect(r, "leg", outputs["python"], action)

    def leg_config(self, r: Round) -> None:
        folder, action = self.fresh("leg-config")
        r.folder = folder
        env = {**self.step_env(folder, action), "COMMAND": "collect", "CONFIG": "config.yml"}
        outputs = self.plan_and_install(r, env)
        self.collect(r, "leg-config", outputs["python"], action, "--config", "config.yml")

    def plan_and_install(self, r: Round, env: dict[str, str], restored: str = "") -> dict[str, str]:
        plan, install = (
            step_script(self.action_yml, "plan"),
            step_script(self.action_yml, "install"),
        )
        assert plan is not None
        assert install is not None
        outputs = r.bash("plan", plan, **env)
        installing = {"INSTALL": outputs["install"], "KEY": outputs.get("key", "")}
        r.bash("install", install, **env, **installing, RESTORED=restored)
        return outputs

    def writer_imports(self, r: Round, python: str, action: Path) -> None:
        r.run(
            "imports", [python, "-c", WRITER_IMPORTS], env={**self.env, "PYTHONPATH": str(action)}
        )

    def writer_cold(self, r: Round) -> None:
        folder, action = self.fresh("writer-cold")
        r.folder = folder
        env = {**self.step_env(folder, action), "COMMAND": "fan-in"}
        outputs = self.plan_and_install(r, env)
        venv = Path(env["VENV"])
        self.archive.unlink(missing_ok=True)
        r.run("save", self.pack(self.archive, venv))
        self.writer_imports(r, outputs["python"], action)

    def writer_warm(self, r: Round) -> None:
        folder, action = self.fresh("writer-warm")
        r.folder = folder
        env = {**self.step_env(folder, action), "COMMAND": "fan-in"}
        (folder / "temp").mkdir()
        r.run("restore", self.unpack(self.archive, folder / "temp"))
        outputs = self.plan_and_install(r, env, restored="true")
        self.writer_imports(r, outputs["python"], action)

    def writer_pip_cache(self, r: Round) -> None:
        folder, action = self.fresh("writer-pip-cache")
        r.folder = folder
        (folder / "temp").mkdir()
        r.run("restore", self.unpack(self.wheels_archive, folder / "temp"))
        venv = folder / "temp" / "ivy-matrix-venv"
        python = str(venv / "bin" / "python")
        lock = str(action / "requirements.lock")
        wheels = str(folder / "temp" / "wheels")
        r.run("install", [self.python, "-m", "venv", "--without-pip", str(venv)])
        pip = [self.python, "-m", "pip", "--python", python, "install", "--no-compile"]
        pip += ["--require-hashes", "--no-deps", "--no-index", "--find-links", wheels, "-r", lock]
        r.run("install", pip)
        r.run("install", [python, "-m", "compileall", "-q", str(action / "ivy_matrix")])
        self.writer_imports(r, python, action)

    def pack(self, archive: Path, folder: Path) -> list[str]:
        return [
            "tar", "--posix", "-cf", str(archive), "-P", "-C", str(folder.parent), folder.name,
            "--use-compress-program", PACK,
        ]  # fmt: skip

    def unpack(self, archive: Path, into: Path) -> list[str]:
        return ["tar", "-xf", str(archive), "-P", "-C", str(into), "--use-compress-program", UNPACK]

    def prepare(self) -> None:
        """The pip-cache alternative's wheels, downloaded once and packed; the writer's first
        cache entry (writer-warm restores the archive writer-cold wrote last)."""
        wheels = self.work / "wheels"
        if not wheels.exists():
            download = [self.python, "-m", "pip", "download", "--no-deps", "--require-hashes"]
            download += ["-r", str(ROOT / "requirements.lock"), "-d", str(wheels)]
            subprocess.run(download, env=self.env, check=True, capture_output=True)
        self.wheels_archive.unlink(missing_ok=True)
        subprocess.run(self.pack(self.wheels_archive, wheels), check=True)
        self.writer_cold(Round(self.work, self.env))

    def measurements(self) -> dict[str, Callable[[Round], None]]:
        every: dict[str, Callable[[Round], None]] = {
            "leg-before": self.leg_before,
            "leg": self.leg,
            "leg-config": self.leg_config,
            "writer-cold": self.writer_cold,
            "writer-warm": self.writer_warm,
            "writer-pip-cache": self.writer_pip_cache,
        }
        if self.args.before is None:
            del every["leg-before"]
        return every


def median_range(values: list[float]) -> Json:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def node_start(cache_action: Path, rounds: int) -> Json:
    """CPU seconds of actions/cache's restore bundle starting with no cache service (it warns
    and reports a miss): the least its node process costs a step."""
    bundle = cache_action / "dist" / "restore-only" / "index.js"
    env = {"PATH": os.environ.get("PATH", ""), "INPUT_PATH": "x", "INPUT_KEY": "k"}
    with tempfile.TemporaryDirectory() as folder:
        env["GITHUB_WORKSPACE"] = folder
        times = [
            run_child(["node", str(bundle)], env=env, parse_json=False).cpu_s for _ in range(rounds)
        ]
    return median_range(times)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--python",
        default=shutil.which("python3.12") or sys.executable,
        help="setup-python's interpreter (default python3.12 on the PATH, else this one)",
    )
    parser.add_argument("--before", help="a commit whose install step leg-before measures")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cases", type=int, default=7000, help="test cases of the leg")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--legs", type=int, default=128, help="legs of the run, for its total")
    parser.add_argument("--keep-pip-config", action="store_true")
    parser.add_argument("--cache-action", type=Path, help="a checkout of actions/cache")
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / "out" / "install")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    # One leg of a 4-backend run: generate.py's cases count every backend's.
    data, manifest = ensure_set(work, args.cases * 4, args.seed, backends=("torch",))
    bench = Bench(args, work, data)
    version = subprocess.run(
        [args.python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"python {version} ({args.python}), {manifest['cases']} cases, {args.rounds} rounds")
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in bench.measurements()}
    try:
        bench.prepare()
        for index in range(args.rounds):
            for name, measure in bench.measurements().items():
                r = Round(work, bench.env)
                measure(r)
                runs[name].append(r.parts)
            shown = ", ".join(f"{n} {sum(parts[-1].values()):.2f}" for n, parts in runs.items())
            print(f"  round {index + 1}/{args.rounds}: {shown} (CPU s)", flush=True)
    finally:
        shutil.rmtree(bench.runs, ignore_errors=True)
    report: Json = {
        "settings": {
            "python": version,
            "cases": manifest["cases"],
            "bytes": manifest["bytes"],
            "rounds": args.rounds,
            "before": args.before,
            "pip": "this machine's config" if args.keep_pip_config else "no config, no cache",
            "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores",
            "load_average_before": [round(x, 1) for x in load_before],
            "load_average_after": [round(x, 1) for x in os.getloadavg()],
        },
        "measurements": {},
        "checks": [],
    }
    for name, parts in runs.items():
        totals = [sum(p.values()) for p in parts]
        report["measurements"][name] = {
            "cpu_s": median_range(totals),
            "parts": {part: median_range([p[part] for p in parts]) for part in parts[0]},
        }
    # The leg file is the same with nothing installed as from the venv (the config's rule
    # names other dashboards: its leg differs on purpose).
    if "leg-before" in bench.legs and bench.legs["leg-before"] != bench.legs["leg"]:
        report["checks"].append("the leg files of leg-before and leg differ")
    leg_total = report["measurements"]["leg"]["cpu_s"]["median"]
    report["run"] = {"legs": args.legs, "legs_cpu_s": round(leg_total * args.legs, 1)}
    if args.cache_action:
        report["cache_action_node_start"] = node_start(args.cache_action, args.rounds)
    print_report(report)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if report["checks"] else 0


def print_report(report: Json) -> None:
    settings = report["settings"]
    print(f"\n{json.dumps(settings)}")
    print("measurement        CPU s median (min-max)   parts (medians)")
    for name, m in report["measurements"].items():
        c = m["cpu_s"]
        parts = ", ".join(f"{p} {v['median']:.3f}" for p, v in m["parts"].items())
        print(f"  {name:<17} {c['median']:6.3f} ({c['min']:.3f}-{c['max']:.3f})   {parts}")
    run = report["run"]
    print(f"  {run['legs']} legs: {run['legs_cpu_s']} CPU s")
    if "cache_action_node_start" in report:
        print(f"  actions/cache restore bundle start: {report['cache_action_node_start']}")
    for check in report["checks"]:
        print(f"  CHECK FAILED: {check}")


if __name__ == "__main__":
    sys.exit(main())
