"""Growth over history (issue 26 item 4): does an update cost the same at run 1,000 as at run 50,
and does every stored file stop growing?

The store is the **local** store (``--store``), with the output folder (``--output-dir``) and the
static site (``--html``, the ``site`` target): every file an update keeps between runs. (The
branch store over a real git remote is not run here: 1,000 commits over ``git http-backend``
do not fit the time on 2 shared cores; the branch store holds the same state documents, the
same ``trend.json`` and the index file, whose bounds docs/state.md states.)

The shape (``--dashboards`` x ``--rows`` x 4 backends, default 10 x 100 x 4 = 4,000 cells) is
written fresh for every run, one result file per backend, in-process (``generate.Writer``):

- every run the same stable tests (``--rows`` less ``ROTATING`` per dashboard), and
  ``ROTATING`` tests per dashboard that change every ``ROTATE_EVERY`` runs (new names come,
  old ones stop reporting and retire after ``--retire-after-runs``, default 100): the
  retirement and history paths run;
- outcomes drawn from the run number (the seed), so results change from run to run: a few
  tests fail on one backend always, some fail in streaks (newly failing, then failing
  since), about 1% fail once and 1% are flaky (pass after a rerun), a few are skipped.

Phase 1 runs the ``--runs`` updates in order (``python entrypoint.py update``, each a fresh
process, as a CI job runs it) and records for each run its CPU (user + system of the process,
its children included: ``os.wait4``) and the size of every file of the store, the output
folder and the site. Before each checkpoint run (``--checkpoints``, default 50, 200, 500,
1000) it saves a copy of the store, the folders and that run's result files.

Phase 2 re-measures the checkpoint runs from those copies in ``--rounds`` interleaved rounds
(each round runs every checkpoint once, restoring its copy first), so a slow spell of the
machine hits both sides of a ratio alike: the figure is the median over the rounds of
CPU(run 1,000) / CPU(run 50). Phase 3 (``--callgrind``) counts each checkpoint run's
instructions once under ``valgrind --tool=callgrind``: the same whatever the machine's load.

I/O: writes result files, stores and folders under ``--work``; starts processes; prints the
figures and writes them as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import generate
from children import PYTHON, ROOT, Json, cli_env, run_child

ROTATING = 5  # tests per dashboard whose names change over time
ROTATE_EVERY = 20  # runs between two changes of a dashboard's rotating tests
RUN_BASE = 7_000_000_000  # run ids as GitHub's look (large, increasing)
BACKEND_FROM_PATH = r"(?P<backend>[^/]+)/[^/]+\.xml$"
FOLDERS = ("store", "out", "html")


def shape_tests(dashboards: int, rows: int, run: int) -> list[generate.Test]:
    """The tests run ``run`` reports: per dashboard (module) its stable tests and the rotating
    ones of the run's window (window ``k`` holds tests ``k .. k + ROTATING - 1``; it moves by
    one every ``ROTATE_EVERY`` runs, so one test comes and one goes)."""
    modules = generate.plan_modules(26, dashboards)
    stable = list(generate.iter_tests(26, dashboards * (rows - ROTATING), modules, variants=1))
    window = run // ROTATE_EVERY
    tests: list[generate.Test] = []
    per = rows - ROTATING
    for m, module in enumerate(modules):
        tests.extend(stable[m * per : (m + 1) * per])
        tests.extend(
            generate.Test(module, f"test_added_{k}", "False-False")
            for k in range(window, window + ROTATING)
        )
    return tests


def outcome(test_no: int, backend_no: int, run: int, draw: float) -> int:
    """A test's outcome on a backend in a run (``draw``: the run's random number for it)."""
    key = test_no * 7 + backend_no * 3
    if key % 41 == 0:
        return generate.FAIL  # broken on this backend, always
    if key % 29 == 1:
        return generate.SKIP
    if (run + key) % 150 < 6 and key % 11 == 2:
        return generate.FAIL  # a streak of 6 runs every 150: newly failing, then failing since
    if draw < 0.01:
        return generate.FAIL
    if draw < 0.02:
        return generate.FLAKY
    return generate.PASS


def write_run(data: Path, dashboards: int, rows: int, run: int) -> int:
    """Run ``run``'s result files under ``data`` (one per backend); returns the case count."""
    shutil.rmtree(data, ignore_errors=True)
    tests = shape_tests(dashboards, rows, run)
    for b, backend in enumerate(generate.BACKENDS):
        rng = random.Random(f"growth-{run}-{backend}")
        plan = bytearray(outcome(i, b, run, rng.random()) for i in range(len(tests)))
        counts = {
            "failures": plan.count(generate.FAIL),
            "errors": 0,
            "skipped": plan.count(generate.SKIP),
        }
        path = data / backend / "results.xml"
        path.parent.mkdir(parents=True)
        with path.open("w", encoding="utf-8", newline="\n") as out:
            out.write('<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n')
            out.write(
                f'<testsuite name="pytest" errors="0" failures="{counts["failures"]}" '
                f'skipped="{counts["skipped"]}" tests="{len(plan)}">\n'
            )
            writer = generate.Writer(out, backend, rng)
            for test, code in zip(tests, plan, strict=True):
                writer.case(test, code)
            writer.flush()
            out.write("</testsuite>\n</testsuites>\n")
    return len(tests) * len(generate.BACKENDS)


def compiled(code: Path) -> None:
    """``code``'s bytecode written beforehand: without it (a copied checkout, or
    ``PYTHONDONTWRITEBYTECODE`` set, as on this machine) every measured process compiles every
    module, about 0.7 G instructions alike at every run, which would flatten the ratios."""
    subprocess.run(
        [PYTHON, "-m", "compileall", "-q", str(code / "ivy_matrix")],
        check=True,
        capture_output=True,
    )


def update_cmd(data: Path, place: Path, run: int, *, code: Path = ROOT) -> list[str]:
    """One run's update, as the action runs it: the store, its output folder and its site."""
    return [
        PYTHON,
        str(code / "entrypoint.py"),
        "update",
        "--junit",
        f"{data}/**/*.xml",
        "--backend-from-path",
        BACKEND_FROM_PATH,
        "--run-id",
        str(RUN_BASE + run),
        "--job-id",
        str((RUN_BASE + run) * 10),
        "--repository",
        "acme/widgets",
        "--store",
        str(place / "store"),
        "--output-dir",
        str(place / "out"),
        "--html",
        str(place / "html"),
        "--targets",
        "file,site",
    ]


def sizes(place: Path) -> dict[str, int]:
    """Every file's size under the store, the output folder and the site, by relative path."""
    found: dict[str, int] = {}
    for folder in FOLDERS:
        root = place / folder
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.name != ".lock":
                found[str(path.relative_to(place))] = path.stat().st_size
    return found


def save_copy(place: Path, data: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for folder in FOLDERS:
        if (place / folder).exists():
            shutil.copytree(place / folder, target / folder, symlinks=True)
    shutil.copytree(data, target / "data")


def restore(copy: Path, scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    for folder in FOLDERS:
        if (copy / folder).exists():
            shutil.copytree(copy / folder, scratch / folder, symlinks=True)


def phase_runs(args: argparse.Namespace, work: Path) -> list[Json]:
    """Phase 1: every run in order; per run its CPU and every file's size (JSON lines)."""
    place, data = work / "live", work / "data"
    shutil.rmtree(place, ignore_errors=True)
    place.mkdir(parents=True)
    log = (work / "runs.jsonl").open("w", encoding="utf-8")
    records: list[Json] = []
    started = time.perf_counter()
    for run in range(1, args.runs + 1):
        cases = write_run(data, args.dashboards, args.rows, run)
        if run in args.checkpoints:
            save_copy(place, data, work / f"at-{run}")
        cmd = update_cmd(data, place, run, code=args.code)
        child = run_child(cmd, env=cli_env(), parse_json=False)
        files = sizes(place)
        record: Json = {"run": run, "cases": cases, "cpu_s": round(child.cpu_s, 4)}
        record["wall_s"] = round(child.proc_wall_s, 4)
        record["sizes"] = files
        log.write(json.dumps(record) + "\n")
        log.flush()
        records.append(record)
        if run % 50 == 0 or run == 1:
            total = sum(files.values())
            print(
                f"  run {run}: cpu {child.cpu_s:.3f} s, {len(files)} files, "
                f"{total / 1e6:.2f} MB ({time.perf_counter() - started:.0f} s so far)",
                flush=True,
            )
    log.close()
    return records


def phase_rounds(args: argparse.Namespace, work: Path) -> dict[int, list[float]]:
    """Phase 2: each checkpoint run again from its saved copy, in interleaved rounds."""
    cpu: dict[int, list[float]] = {run: [] for run in args.checkpoints}
    scratch = work / "scratch"
    for r in range(args.rounds):
        order = args.checkpoints if r % 2 == 0 else list(reversed(args.checkpoints))
        for run in order:
            copy = work / f"at-{run}"
            restore(copy, scratch)
            cmd = update_cmd(copy / "data", scratch, run, code=args.code)
            cpu[run].append(run_child(cmd, env=cli_env(), parse_json=False).cpu_s)
        print(f"  round {r + 1}: " + ", ".join(f"{k}: {v[-1]:.3f}" for k, v in cpu.items()))
    return cpu


def phase_callgrind(args: argparse.Namespace, work: Path) -> dict[int, int]:
    """Phase 3: each checkpoint run's instructions under callgrind, once."""
    counts: dict[int, int] = {}
    scratch = work / "scratch"
    for run in args.checkpoints:
        copy = work / f"at-{run}"
        restore(copy, scratch)
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            *update_cmd(copy / "data", scratch, run, code=args.code),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, env=cli_env(), check=True)
        line = next(x for x in done.stderr.splitlines() if "Collected" in x)
        counts[run] = int(line.rsplit(":", 1)[1].strip().replace(",", ""))
        print(f"  callgrind run {run}: {counts[run]:,} instructions", flush=True)
    return counts


def window_median(records: list[Json], run: int, half: int = 10) -> float:
    """The median CPU of the runs around ``run`` (``run - half + 1 .. run + half``, in range)."""
    cpus: list[float] = [r["cpu_s"] for r in records if run - half < r["run"] <= run + half]
    return statistics.median(cpus)


def size_table(records: list[Json], checkpoints: list[int]) -> Json:
    """Each kind of file at the checkpoints: how many, the largest and their total bytes
    (one per dashboard for the kinds named by dashboard)."""
    by_run = {r["run"]: r["sizes"] for r in records}
    table: Json = {}
    for run in checkpoints:
        for path, size in by_run.get(run, {}).items():
            kind = file_kind(path)
            row = table.setdefault(kind, {})
            figures = row.setdefault(str(run), [0, 0, 0])
            figures[0] += 1
            figures[1] = max(figures[1], size)
            figures[2] += size
    return table


def file_kind(path: str) -> str:
    """A file's kind: its path, with each dashboard's name made generic."""
    parts = path.split("/")
    if parts[:2] == ["store", "state"]:
        return "store/state/<category>/<dashboard>.json"
    if parts[0] == "out" and len(parts) == 3 and parts[1] not in {"charts", "durations"}:
        return "out/<category>/<dashboard>.md"
    if parts[:3] == ["html", "data", "d"]:
        return "html/data/d/<category>/<dashboard>.js"
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--dashboards", type=int, default=10)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--checkpoints", default="50,200,500,1000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--work", type=Path, default=ROOT / "bench/out/growth")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--code",
        type=Path,
        default=ROOT,
        help="the checkout whose entrypoint.py runs the updates (e.g. a copy of one commit, "
        "so that editing this one does not change a measurement under way)",
    )
    parser.add_argument("--reuse", action="store_true", help="skip phase 1: use runs.jsonl")
    args = parser.parse_args()
    args.checkpoints = [int(x) for x in args.checkpoints.split(",") if int(x) <= args.runs]
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    compiled(args.code)
    print(
        f"growth: {args.runs} runs, {args.dashboards} dashboards x {args.rows} tests x "
        f"{len(generate.BACKENDS)} backends, checkpoints {args.checkpoints}",
        flush=True,
    )
    if args.reuse:
        lines = (work / "runs.jsonl").read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines]
    else:
        records = phase_runs(args, work)
    first, last = args.checkpoints[0], args.checkpoints[-1]
    report: Json = {
        "code": str(args.code),
        "shape": {
            "dashboards": args.dashboards,
            "rows": args.rows,
            "backends": len(generate.BACKENDS),
            "runs": args.runs,
        },
        "window_cpu_s": {str(c): round(window_median(records, c), 4) for c in args.checkpoints},
        "sizes": size_table(records, args.checkpoints),
        "totals": {
            str(r["run"]): sum(r["sizes"].values()) for r in records if r["run"] in args.checkpoints
        },
    }
    windows = report["window_cpu_s"]
    report["window_ratio"] = round(windows[str(last)] / windows[str(first)], 3)
    if args.rounds:
        cpu = phase_rounds(args, work)
        ratios = [b / a for a, b in zip(cpu[first], cpu[last], strict=True)]
        report["rounds_cpu_s"] = {str(k): [round(x, 4) for x in v] for k, v in cpu.items()}
        report["rounds_median_cpu_s"] = {
            str(k): round(statistics.median(v), 4) for k, v in cpu.items()
        }
        report["rounds_ratio"] = {
            "median": round(statistics.median(ratios), 3),
            "min": round(min(ratios), 3),
            "max": round(max(ratios), 3),
        }
    if args.callgrind:
        counts = phase_callgrind(args, work)
        report["instructions"] = {str(k): v for k, v in counts.items()}
        report["instructions_ratio"] = round(counts[last] / counts[first], 3)
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
