"""Issue 19's local figures, in interleaved rounds against the bare expat floor.

What one round runs, each a fresh process, in this order:

- ``floor``: a fresh Python that tokenizes the main set's files with expat and no handlers
  (``FLOOR_CODE``: nothing imported but ``sys`` and pyexpat), process wall time;
- ``start-up`` (``python -c pass``) and ``imports`` (importing ivy-matrix's CLI and its
  ``update``, from the measured checkout): what a process pays before its work, for the
  ``net`` ratios (each side less these, in the same round);
- ``reading`` and ``least``: two lower bounds, from the measured checkout: every case read
  with ``scan_junit`` and let go; and the least an update that writes the durations files
  does (every case read, its node id and seconds kept, each backend's file encoded by the
  product's encoder and written through the last guard);
- ``e2e``: ``python entrypoint.py update`` of the main set (every backend, one call with
  ``--backend-from-path``) into an empty store, with ``--output-dir`` (every dashboard and the
  index rendered);
- ``e2e-rerun``: the same command again, on the store ``e2e`` just wrote: nothing is new;
- ``floor-leg``: the floor over one leg's files (torch's quarter of a set with other outcomes);
- ``leg-update``: that leg as a new run (``--run-id 101``) into a copy of a store holding the
  main set (4 backends; the copy, of the store and of its output folder, is made before the
  timer starts).

Ratios are taken **per round** (``e2e / floor``, ``e2e-rerun / floor``, ``leg-update /
floor-leg``, and ``leg-update / floor`` for reference), and reported as their median and
min-max over the rounds: a slow spell of the machine then hits a ratio's two sides alike.
With ``compare`` (a checkout of other code, e.g. main), the three updates also run with that
code's ``entrypoint.py`` in the same rounds, each into its own stores, so before and after are
measured side by side. ``instructions`` counts each command's instructions once under
``valgrind --tool=callgrind``: repeatable whatever else the machine is doing. Both checkouts
are byte-compiled first (``children.compiled``): with ``PYTHONDONTWRITEBYTECODE`` set, or a
``git archive`` checkout, every process would otherwise compile what it imports, which an
installed package never does.

I/O: starts processes; writes stores and output folders under the work folder.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from children import PYTHON, ROOT, Json, Run, cli_env, compiled, run_child, xml_files

BACKEND_FROM_PATH = r"(?P<backend>[^/]+)/[^/]+\.xml$"
REPOSITORY = "acme/widgets"
FLOOR_CODE = (
    "import sys\n"
    "from xml.parsers import expat\n"
    "for path in sys.argv[1:]:\n"
    "    parser = expat.ParserCreate()\n"
    "    with open(path, 'rb') as f:\n"
    "        while chunk := f.read(1 << 20):\n"
    "            parser.Parse(chunk, False)\n"
    "        parser.Parse(b'', True)\n"
)
# The two costs every process pays before its work: Python's start-up (the floor pays it too),
# and, for the updates, importing ivy-matrix (from the measured code's checkout).
START_UP_CODE = "pass"
# Two lower bounds, from the measured checkout (issue 26's fresh-update target against issue
# 28's durations files): ``reading`` reads every case with ``scan_junit`` and does nothing with
# it; ``least`` is the least any update that writes the durations files does: it reads every
# case, keeps its node id's start, name and seconds, and writes each backend's durations file
# (the product's own encoder, json's C one) through the last guard, as an update writes it.
READING_CODE = (
    "import sys\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from ivy_matrix.results.junit import scan_junit\n"
    "for path in sys.argv[3:]:\n"
    "    with open(path, 'rb') as f:\n"
    "        scan_junit(f, source=path, on_case=lambda case: None)\n"
)
LEAST_CODE = (
    "import sys\n"
    "from pathlib import Path\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from ivy_matrix.results.junit import scan_junit\n"
    "from ivy_matrix.runner.files import write_atomic\n"
    "from ivy_matrix.views.durations_file import durations_text\n"
    "backends = {}\n"
    "for path in sys.argv[3:]:\n"
    "    starts = backends.setdefault(Path(path).parent.name, {})\n"
    "    def keep(case, starts=starts):\n"
    "        if case.time is not None:\n"
    "            named = starts.get(case.classname)\n"
    "            if named is None:\n"
    "                named = starts[case.classname] = {}\n"
    "            named[case.name] = case.time\n"
    "    with open(path, 'rb') as f:\n"
    "        scan_junit(f, source=path, on_case=keep)\n"
    "for backend, starts in backends.items():\n"
    "    text = durations_text({start + '::': named for start, named in starts.items()})\n"
    "    write_atomic(Path(sys.argv[2]) / f'{backend}.json', text or '{}')\n"
)
IMPORTS_CODE = (
    "import importlib, os, sys\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "import ivy_matrix.cli\n"
    "for name in ('commands/update', 'update'):  # where the update command lives, by version\n"
    "    if os.path.exists(os.path.join(sys.argv[1], 'ivy_matrix', name + '.py')):\n"
    "        importlib.import_module('ivy_matrix.' + name.replace('/', '.'))\n"
    "        break\n"
)
UPDATES = ("e2e", "e2e-rerun", "leg-update")
RATIOS = {
    "e2e / floor": ("e2e", "floor"),
    "e2e-rerun / floor": ("e2e-rerun", "floor"),
    "leg-update / floor-leg": ("leg-update", "floor-leg"),
    "leg-update / floor": ("leg-update", "floor"),
    "reading / floor": ("reading", "floor"),
    "least / floor": ("least", "floor"),
}
# What each figure is held to (issue 26 item 2; issue 19 asked 1.5x of the re-run and 4x of
# the leg): medians of the per-round ratios.
TARGETS = {"e2e / floor": 3.5, "e2e-rerun / floor": 1.0, "leg-update / floor-leg": 5.0}
# Lower bounds, not updates: no net ratio (they import less than an update does).
BOUNDS = ("reading / floor", "least / floor")


@dataclass(frozen=True)
class Sets:
    """The main set (every backend) and one leg's set (torch, other outcomes)."""

    main: Path
    leg: Path


@dataclass(frozen=True)
class Step:
    """One measured command of a round: what to do before the timer starts, then the command."""

    name: str
    cmd: list[str]
    prepare: Callable[[], None] = lambda: None


def update_cmd(
    code: Path, data: Path, *, store: Path, out: Path, run_id: int, job_id: int
) -> list[str]:
    """``ivy-matrix update`` as the action runs it (``python entrypoint.py``), from ``code``."""
    return [
        PYTHON,
        str(code / "entrypoint.py"),
        "update",
        "--junit",
        f"{data}/**/*.xml",
        "--backend-from-path",
        BACKEND_FROM_PATH,
        "--job-id",
        str(job_id),
        *common_args(store=store, out=out, run_id=run_id),
    ]


def common_args(*, store: Path, out: Path, run_id: int) -> list[str]:
    """What every measured update is given besides its result files and job."""
    return [
        "--run-id",
        str(run_id),
        "--repository",
        REPOSITORY,
        "--store",
        str(store),
        "--output-dir",
        str(out),
    ]


def _fresh(*paths: Path) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def _copy(source: Path, target: Path) -> None:
    _fresh(target)
    if source.exists():
        shutil.copytree(source, target)


def update_steps(code: Path, sets: Sets, work: Path, suffix: str) -> list[tuple[str, Step]]:
    """The three updates of a round with ``code``: (which floor they follow, step)."""
    store, out = work / f"stores/e2e{suffix}", work / f"dashboards/e2e{suffix}"
    base_store, base_out = work / f"stores/base{suffix}", work / f"dashboards/base{suffix}"
    leg_store, leg_out = work / f"stores/leg{suffix}", work / f"dashboards/leg{suffix}"
    e2e = update_cmd(code, sets.main, store=store, out=out, run_id=100, job_id=1001)
    leg = update_cmd(code, sets.leg, store=leg_store, out=leg_out, run_id=101, job_id=2001)

    def copy_base() -> None:
        _copy(base_store, leg_store)
        _copy(base_out, leg_out)

    return [
        ("floor", Step(f"e2e{suffix}", e2e, lambda: _fresh(store, out))),
        ("floor", Step(f"e2e-rerun{suffix}", e2e)),
        ("floor-leg", Step(f"leg-update{suffix}", leg, copy_base)),
    ]


def seed_base(code: Path, sets: Sets, work: Path, suffix: str) -> None:
    """The store of 4 backends the leg goes into, made once with ``code`` (not timed)."""
    store, out = work / f"stores/base{suffix}", work / f"dashboards/base{suffix}"
    _fresh(store, out)
    run_child(
        update_cmd(code, sets.main, store=store, out=out, run_id=100, job_id=1001),
        env=cli_env(),
        parse_json=False,
    )


def rounds_plan(sets: Sets, work: Path, compare: Path | None) -> list[Step]:
    """One round's steps in order: each floor, then the updates compared with it."""
    floor = Step("floor", [PYTHON, "-c", FLOOR_CODE, *xml_files(sets.main)])
    floor_leg = Step("floor-leg", [PYTHON, "-c", FLOOR_CODE, *xml_files(sets.leg, ("torch",))])
    codes = [(ROOT, "")] + ([(compare, "@compare")] if compare is not None else [])
    start_up = Step("start-up", [PYTHON, "-c", START_UP_CODE])
    imports = [
        Step(f"imports{suffix}", [PYTHON, "-c", IMPORTS_CODE, str(code)]) for code, suffix in codes
    ]
    least_out = work / "least"
    bounds = [
        Step("reading", [PYTHON, "-c", READING_CODE, str(ROOT), "", *xml_files(sets.main)]),
        Step(
            "least",
            [PYTHON, "-c", LEAST_CODE, str(ROOT), str(least_out), *xml_files(sets.main)],
            lambda: _fresh(least_out),
        ),
    ]
    plan: dict[str, list[Step]] = {
        "floor": [floor, start_up, *imports, *bounds],
        "floor-leg": [floor_leg],
    }
    for code, suffix in codes:
        for follows, step in update_steps(code, sets, work, suffix):
            plan[follows].append(step)
    return plan["floor"] + plan["floor-leg"]


def per_round_ratios(
    runs: dict[str, list[Run]], suffix: str, *, cpu: bool = False, net: bool = False
) -> Json:
    """Each ratio's median and min-max over the rounds: process wall time on both sides, or
    with ``cpu`` the processes' CPU time (user + system; less disturbed by a loaded machine,
    though not free of it). With ``net``, each side less what its process pays before its
    work, in the same round: the floor less Python's start-up, an update less Python's
    start-up and ivy-matrix's imports (the work alone, as the reading figures count it)."""
    ratios: Json = {}
    starts, imports = runs.get("start-up"), runs.get("imports" + suffix)
    for name, (top, bottom) in RATIOS.items():
        tops, bottoms = runs.get(top + suffix), runs.get(bottom)
        if not tops or not bottoms or (net and (name in BOUNDS or not (starts and imports))):
            continue

        def cost(run: Run) -> float:
            return run.cpu_s if cpu else run.proc_wall_s

        if net and starts and imports:
            each = [
                (cost(t) - cost(i)) / max(cost(b) - cost(s), 1e-6)
                for t, b, s, i in zip(tops, bottoms, starts, imports, strict=True)
            ]
        else:
            each = [cost(t) / cost(b) for t, b in zip(tops, bottoms, strict=True)]
        ratios[name] = {
            "median": round(statistics.median(each), 2),
            "min": round(min(each), 2),
            "max": round(max(each), 2),
            "rounds": [round(r, 2) for r in each],
        }
        if name in TARGETS:
            ratios[name]["target"] = TARGETS[name]
            ratios[name]["met"] = ratios[name]["median"] <= TARGETS[name]
    return ratios


def summarize_runs(runs: list[Run]) -> Json:
    walls = [r.proc_wall_s for r in runs]
    return {
        "status": "ok",
        "median_wall_s": round(statistics.median(walls), 4),
        "min_wall_s": round(min(walls), 4),
        "max_wall_s": round(max(walls), 4),
        "median_cpu_s": round(statistics.median(r.cpu_s for r in runs), 4),
        "peak_rss_mb": round(max(r.maxrss_mb for r in runs), 1),
        "rounds": len(runs),
    }


def instructions(plan: list[Step]) -> Json:
    """Each command's instruction count under callgrind, once (steps prepared as in a round)."""
    if shutil.which("valgrind") is None:
        return {"status": "skipped", "reason": "valgrind is not installed"}
    counts: Json = {}
    for step in plan:
        step.prepare()
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *step.cmd],
            capture_output=True,
            text=True,
            env=cli_env(),
            cwd=ROOT,
            check=False,
        )
        found = re.search(r"Collected : (\d+)", proc.stderr)
        if proc.returncode != 0 or found is None:
            counts[step.name] = None
            continue
        counts[step.name] = int(found.group(1))
    ratios: Json = {}
    for suffix in ("", "@compare"):
        for name, (top, bottom) in RATIOS.items():
            a, b = counts.get(top + suffix), counts.get(bottom)
            if a and b:
                ratios[name + suffix] = round(a / b, 2)
    return {"status": "ok", "counts": counts, "ratios": ratios}


def bench_local(
    sets: Sets,
    work: Path,
    *,
    rounds: int,
    compare: Path | None,
    count_instructions: bool,
    runs: dict[str, list[Run]],
) -> Json:
    """Run the rounds; return each command's figures and the per-round ratios, and fill
    ``runs`` with every command's runs."""
    if compare is not None and not (compare / "entrypoint.py").is_file():
        raise SystemExit(f"--compare {compare}: no entrypoint.py there")
    for code in (ROOT, compare):
        if code is not None:
            compiled(code)  # both sides import their bytecode, as an installed package does
    load_before = os.getloadavg()
    seed_base(ROOT, sets, work, "")
    if compare is not None:
        seed_base(compare, sets, work, "@compare")
    plan = rounds_plan(sets, work, compare)
    runs.update({step.name: [] for step in plan})
    for index in range(rounds):
        for step in plan:
            step.prepare()
            runs[step.name].append(run_child(step.cmd, env=cli_env(), parse_json=False))
        shown = ", ".join(f"{name} {r[-1].proc_wall_s:.2f}" for name, r in runs.items())
        print(f"  round {index + 1}/{rounds}: {shown} (s)", flush=True)
    result: Json = {
        "load_average_before": [round(x, 1) for x in load_before],
        "load_average_after": [round(x, 1) for x in os.getloadavg()],
        "commands": {name: summarize_runs(r) for name, r in runs.items()},
        "ratios": per_round_ratios(runs, ""),
        "cpu_ratios": per_round_ratios(runs, "", cpu=True),
        "net_cpu_ratios": per_round_ratios(runs, "", cpu=True, net=True),
    }
    if compare is not None:
        result["compare"] = str(compare)
        result["ratios_compare"] = per_round_ratios(runs, "@compare")
        result["cpu_ratios_compare"] = per_round_ratios(runs, "@compare", cpu=True)
        result["net_cpu_ratios_compare"] = per_round_ratios(runs, "@compare", cpu=True, net=True)
    if count_instructions:
        result["instructions"] = instructions(plan)
    return result


def print_local(result: Json) -> None:
    print("\nlocal (issue 19): per-round ratios to the floor, process wall time on both sides")
    print(
        f"  load average before {result['load_average_before']}, "
        f"after {result['load_average_after']}"
    )
    for name, m in result["commands"].items():
        print(
            f"  {name:<22} median {m['median_wall_s']:.3f} s ({m['min_wall_s']:.3f}-"
            f"{m['max_wall_s']:.3f}), cpu {m['median_cpu_s']:.3f} s, "
            f"peak RSS {m['peak_rss_mb']:.1f} MB"
        )
    for key, label in (
        ("ratios", "this code"),
        ("ratios_compare", "compared code"),
        ("cpu_ratios", "this code, CPU time"),
        ("cpu_ratios_compare", "compared code, CPU time"),
        (
            "net_cpu_ratios",
            "this code, CPU time of the work alone (all less start-up, updates less imports)",
        ),
        ("net_cpu_ratios_compare", "compared code, CPU time of the work alone"),
    ):
        if key not in result:
            continue
        print(f"  ratios, {label}:")
        for name, r in result[key].items():
            target = (
                f"  (target <= {r['target']}x: {'met' if r['met'] else 'MISSED'})"
                if "target" in r
                else ""
            )
            print(f"    {name:<24} {r['median']:.2f}x  ({r['min']:.2f}-{r['max']:.2f}){target}")
    counted = result.get("instructions")
    if counted and counted.get("status") == "ok":
        print("  instructions (callgrind):")
        for name, n in counted["counts"].items():
            print(f"    {name:<22} {n:,}" if n else f"    {name:<22} failed")
        for name, r in counted["ratios"].items():
            print(f"    {name:<32} {r:.2f}x")
