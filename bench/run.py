"""Benchmark ivy-matrix against the bare expat floor and junitparser, side by side in one run.

Every measurement runs in a fresh child process, started with ``subprocess.Popen`` and reaped
with ``os.wait4``, so each one gets its own peak RSS (``ru_maxrss`` of that child only) and no
figure leaks into the next. Each is repeated ``--repeat`` times (the reading measurements in
interleaved rounds); the table shows the best wall time and the largest peak RSS. Ratios are taken between figures measured in this same run, on
the same files, so they hold across machines better than the absolute times do.

What is measured (see ``bench/README.md`` for the method and the latest figures):

- ``floor``: ``xml.parsers.expat`` with no handlers (the cost of reading the XML at all);
- ``expat-handlers``: the same, with no-op element handlers (informational);
- ``junitparser``: the reference, loading and classifying every case;
- ``scan``: ``ivy_matrix.results.junit.scan_junit`` reading and classifying;
- ``e2e``: ``ivy-matrix update`` into a fresh store, rendering every dashboard and the index;
- ``e2e-rerun``: the same update again with unchanged results;
- ``e2e-1m``: ``update`` of a 4 x 250k-case matrix, and ``leg-update``: one backend with a new
  run id into a store that already holds it;
- ``flat-memory``: ``scan_junit`` over one 1 GB file against one 10 MB file.

Speed is reported, never asserted: the exit status is 0 unless a measurement crashed.

I/O: writes generated data and stores under ``--work`` (default ``bench/out/``, gitignored).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import generate
import local
from children import (
    BENCH,
    MB,
    PYTHON,
    ROOT,
    ChildFailedError,
    Json,
    Run,
    cli_env,
    ensure_set,
    run_child,
    xml_files,
)

IVY_MATRIX = Path(PYTHON).with_name("ivy-matrix")
MEASURE = BENCH / "measure.py"
REPOSITORY = local.REPOSITORY
BACKEND_FROM_PATH = local.BACKEND_FROM_PATH

READ_KINDS = ("floor", "expat-handlers", "junitparser", "scan")
CLI_KINDS = ("e2e", "e2e-rerun", "e2e-1m", "leg-update")
ALL_MEASUREMENTS = (*READ_KINDS, *CLI_KINDS, "flat-memory")


def summarize(runs: list[Run], *, nbytes: int, cases: int, **extra: object) -> Json:
    # The best of the repeats: noise on a shared machine only ever adds time, so the minimum
    # is the steadiest estimate of what the code costs (the median is kept for reference).
    wall = min(r.wall_s for r in runs)
    return {
        "status": "ok",
        "wall_s": round(wall, 4),
        "median_wall_s": round(statistics.median(r.wall_s for r in runs), 4),
        "proc_wall_s": round(min(r.proc_wall_s for r in runs), 4),
        "median_proc_wall_s": round(statistics.median(r.proc_wall_s for r in runs), 4),
        "peak_rss_mb": round(max(r.maxrss_mb for r in runs), 1),
        "mb_per_s": round(nbytes / MB / wall, 1) if wall > 0 else None,
        "bytes": nbytes,
        "cases": cases,
        "repeats": len(runs),
        "walls_s": [round(r.wall_s, 4) for r in runs],
        **extra,
    }


def ensure_single(work: Path, nbytes: int, seed: int) -> tuple[Path, Json]:
    path = work / "data" / f"single-{nbytes}-s{seed}.xml"
    info_path = path.with_suffix(".json")
    if info_path.exists() and path.exists():
        return path, json.loads(info_path.read_text())
    start = time.perf_counter()
    info = generate.generate_single(path, target_bytes=nbytes, seed=seed, modules=40)
    info_path.write_text(json.dumps(info) + "\n")
    print(
        f"  generated {path.name}: {info['bytes'] / MB:.1f} MB in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return path, info


# --- the CLI --------------------------------------------------------------------------------


def cli_mode(requested: str) -> tuple[str | None, str]:
    """Return ("per-backend" | "single", "") when ``ivy-matrix update`` exists, else (None, why)."""
    if not (ROOT / "ivy_matrix" / "cli.py").exists():
        return None, "ivy_matrix/cli.py does not exist yet"
    try:
        proc = subprocess.run(
            [str(IVY_MATRIX), "update", "--help"],
            capture_output=True,
            text=True,
            timeout=60,
            env=cli_env(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"could not run ivy-matrix: {exc}"
    if proc.returncode != 0 or "--junit" not in proc.stdout:
        return None, "ivy-matrix has no 'update' subcommand yet (ivy-matrix update --help failed)"
    if requested == "auto":
        requested = "single" if "--backend-from-path" in proc.stdout else "per-backend"
    return requested, ""


def update_commands(
    data: Path,
    *,
    mode: str,
    store: Path,
    out: Path,
    run_id: int,
    job_base: int,
    backends: tuple[str, ...] = generate.BACKENDS,
) -> list[list[str]]:
    """The ``ivy-matrix update`` calls of one CI run: one per backend leg, or one for all."""
    common = local.common_args(store=store, out=out, run_id=run_id)
    if mode == "single":
        return [
            [
                str(IVY_MATRIX),
                "update",
                "--junit",
                f"{data}/**/*.xml",
                "--backend-from-path",
                BACKEND_FROM_PATH,
                "--job-id",
                str(job_base),
                *common,
            ]
        ]
    return [
        [
            str(IVY_MATRIX),
            "update",
            "--junit",
            f"{data}/{b}/*.xml",
            "--backend",
            b,
            "--job-id",
            str(job_base + i),
            *common,
        ]
        for i, b in enumerate(backends)
    ]


def run_update(cmds: list[list[str]]) -> Run:
    """Run the calls one after another (as a run's legs would); wall adds up, RSS is the max."""
    runs = [run_child(cmd, env=cli_env(), parse_json=False) for cmd in cmds]
    return Run(
        wall_s=sum(r.proc_wall_s for r in runs),
        proc_wall_s=sum(r.proc_wall_s for r in runs),
        maxrss_mb=max(r.maxrss_mb for r in runs),
    )


def fresh(*paths: Path) -> None:
    for p in paths:
        shutil.rmtree(p, ignore_errors=True)


def bench_cli(
    args: argparse.Namespace, work: Path, data: Path, manifest: Json, results: Json
) -> None:
    mode, why = cli_mode(args.e2e_mode)
    if mode is None:
        for kind in CLI_KINDS:
            results[kind] = {"status": "skipped", "reason": why}
        print(f"  e2e: skipped: {why}", flush=True)
        return
    nbytes, cases = int(manifest["bytes"]), int(manifest["cases"])
    # Issue 19: the fresh update, the identical re-run and one leg (a quarter of the set, new
    # outcomes, a new run) into a store of the whole set, in interleaved rounds (local.py).
    leg, leg_manifest = ensure_set(
        work, args.cases, args.seed, backends=("torch",), outcome_seed=args.seed + 1
    )
    runs: dict[str, list[Run]] = {}
    results["local"] = local.bench_local(
        local.Sets(main=data, leg=leg),
        work,
        rounds=args.repeat,
        compare=args.compare,
        count_instructions=args.instructions,
        runs=runs,
    )
    results["e2e"] = summarize(runs["e2e"], nbytes=nbytes, cases=cases, mode="single", calls=1)
    results["e2e-rerun"] = summarize(runs["e2e-rerun"], nbytes=nbytes, cases=cases, mode="single")
    results["leg-update"] = summarize(
        runs["leg-update"],
        nbytes=int(leg_manifest["bytes"]),
        cases=int(leg_manifest["cases"]),
        store_cases=cases,
    )
    for kind in ("e2e", "e2e-rerun", "leg-update"):
        print_row(kind, results[kind])

    if not args.big_cases:
        results["e2e-1m"] = {"status": "skipped", "reason": "--big-cases 0"}
        return
    big, big_manifest = ensure_set(work, args.big_cases, args.seed)
    base_store, base_out = work / "stores" / "big", work / "dashboards" / "big"
    big_runs = []
    for _ in range(args.big_repeat):
        fresh(base_store, base_out)
        big_runs.append(
            run_update(
                update_commands(
                    big, mode=mode, store=base_store, out=base_out, run_id=100, job_base=1001
                )
            )
        )
    results["e2e-1m"] = summarize(
        big_runs, nbytes=int(big_manifest["bytes"]), cases=int(big_manifest["cases"]), mode=mode
    )
    print_row("e2e-1m", results["e2e-1m"])


# --- reading --------------------------------------------------------------------------------


def scan_available() -> str:
    try:
        proc = subprocess.run(
            [PYTHON, "-c", "from ivy_matrix.results.junit import scan_junit"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return "importing ivy_matrix.results.junit timed out"
    return (
        ""
        if proc.returncode == 0
        else "ivy_matrix.results.junit.scan_junit cannot be imported: "
        + proc.stderr.strip().splitlines()[-1]
    )


def bench_read(args: argparse.Namespace, files: list[str], manifest: Json, results: Json) -> None:
    nbytes, cases = int(manifest["bytes"]), int(manifest["cases"])
    no_scan = scan_available()
    kinds = [k for k in READ_KINDS if not (k == "scan" and no_scan)]
    if no_scan:
        results["scan"] = {"status": "skipped", "reason": no_scan}
        print(f"  scan: skipped: {no_scan}", flush=True)
    # Interleaved rounds (floor, handlers, junitparser, scan, floor, ...): a slow spell of the
    # machine then hits every kind alike instead of skewing one ratio.
    all_runs: dict[str, list[Run]] = {kind: [] for kind in kinds}
    for _ in range(args.repeat):
        for kind in kinds:
            all_runs[kind].append(run_child([PYTHON, str(MEASURE), kind, *files]))
    for kind in kinds:
        runs = all_runs[kind]
        extra = {
            k: v
            for k, v in runs[-1].report.items()
            if k in ("counts", "flaky", "problems", "elements")
        }
        results[kind] = summarize(runs, nbytes=nbytes, cases=cases, **extra)
        print_row(kind, results[kind])


def bench_flat_memory(args: argparse.Namespace, work: Path, results: Json) -> None:
    no_scan = scan_available()
    if not args.single_bytes:
        results["flat-memory"] = {"status": "skipped", "reason": "--single-bytes 0"}
        return
    if no_scan:
        results["flat-memory"] = {"status": "skipped", "reason": no_scan}
        return
    small, small_info = ensure_single(work, generate.parse_size(args.single_small), args.seed)
    big, big_info = ensure_single(work, generate.parse_size(args.single_bytes), args.seed)
    s = run_child([PYTHON, str(MEASURE), "scan", str(small)])
    b = run_child([PYTHON, str(MEASURE), "scan", str(big)])
    results["flat-memory"] = {
        "status": "ok",
        "small": summarize([s], nbytes=int(small_info["bytes"]), cases=int(small_info["tests"])),
        "big": summarize([b], nbytes=int(big_info["bytes"]), cases=int(big_info["tests"])),
        "rss_growth_mb": round(b.maxrss_mb - s.maxrss_mb, 1),
    }
    print_row(f"scan {small_info['bytes'] / MB:.0f} MB file", results["flat-memory"]["small"])
    print_row(f"scan {big_info['bytes'] / MB:.0f} MB file", results["flat-memory"]["big"])


# --- report ---------------------------------------------------------------------------------


def print_row(name: str, m: Json) -> None:
    print(
        f"  {name:<22} {m['wall_s']:>9.3f} s {m['mb_per_s'] or 0:>8.1f} MB/s {m['peak_rss_mb']:>8.1f} MB RSS  {m['cases']:>9,} cases",
        flush=True,
    )


def ok(results: Json, *kinds: str) -> bool:
    return all(isinstance(results.get(k), dict) and results[k].get("status") == "ok" for k in kinds)


def ratios(r: Json) -> dict[str, float | None]:
    """Ratios of the median runs (the targets use these), and of the best runs.

    On a shared machine the spread between runs is wide (the bare floor varied by 2x within
    one run here); the median of interleaved runs is the typical cost, the best run the
    least disturbed one. Both are reported.
    """

    def ratio(a: str, b: str, key: str) -> float | None:
        if not ok(r, a, b) or key not in r[a] or key not in r[b]:
            return None
        return round(float(r[a][key]) / float(r[b][key]), 2)

    pairs = {
        "scan / floor": ("scan", "floor", "median_wall_s", "wall_s"),
        "junitparser / scan": ("junitparser", "scan", "median_wall_s", "wall_s"),
        "junitparser / floor": ("junitparser", "floor", "median_wall_s", "wall_s"),
        "expat-handlers / floor": ("expat-handlers", "floor", "median_wall_s", "wall_s"),
    }
    result: dict[str, float | None] = {}
    for name, (a, b, median_key, best_key) in pairs.items():
        result[name] = ratio(a, b, median_key)
        result[f"{name} (best runs)"] = ratio(a, b, best_key)
    # The updates: medians of per-round ratios, process wall time on both sides (local.py).
    per_round = r.get("local", {}).get("ratios", {})
    for name in local.RATIOS:
        result[name] = per_round[name]["median"] if name in per_round else None
    return result


def targets(r: Json, q: dict[str, float | None], primary: int, big: int) -> list[Json]:
    """Each target with its figure and met / missed; a target whose figure is missing is n/a."""
    rows: list[Json] = []

    def add(
        name: str, value: float | None, limit: float, *, at_least: bool = False, unit: str = ""
    ) -> None:
        if value is None:
            rows.append({"target": name, "value": None, "status": "n/a"})
            return
        met = value >= limit if at_least else value < limit
        by = "" if met else f" (missed by {abs(value - limit) / limit:.0%})"
        rows.append(
            {
                "target": name,
                "value": value,
                "limit": limit,
                "status": ("met" if met else "MISSED") + by,
                "unit": unit,
            }
        )

    add(
        f"read+classify >= 3x faster than junitparser ({primary:,} cases)",
        q["junitparser / scan"],
        3.0,
        at_least=True,
        unit="x",
    )
    add(
        f"read+classify within 2.5x of expat floor ({primary:,} cases)",
        q["scan / floor"],
        2.5,
        unit="x",
    )
    add(
        f"update peak RSS <= 40 MB ({primary:,} cases; issue 26, issue 4 asked < 100 MB)",
        r["e2e"]["peak_rss_mb"] if ok(r, "e2e") else None,
        40,
        unit="MB",
    )
    add(f"update within 3.5x of expat floor ({primary:,} cases)", q["e2e / floor"], 3.5, unit="x")
    add(
        f"identical re-run within 1x of the floor ({primary:,} cases)",
        q["e2e-rerun / floor"],
        1.0,
        unit="x",
    )
    add(
        f"one leg ({primary // 4:,} cases) into a store of 4 within 5x of its floor",
        q["leg-update / floor-leg"],
        5.0,
        unit="x",
    )
    add(
        f"update peak RSS < 200 MB ({big:,} cases)",
        r["e2e-1m"]["peak_rss_mb"] if ok(r, "e2e-1m") else None,
        200,
        unit="MB",
    )
    add(
        f"update end to end < 15 s ({big:,} cases)",
        r["e2e-1m"]["proc_wall_s"] if ok(r, "e2e-1m") else None,
        15,
        unit="s",
    )
    flat = r.get("flat-memory", {})
    add(
        "scan_junit RSS flat: 1 GB file within 10 MB of 10 MB file",
        flat.get("rss_growth_mb") if flat.get("status") == "ok" else None,
        10,
        unit="MB",
    )
    return rows


def print_report(report: Json) -> None:
    r = report["results"]
    assert isinstance(r, dict)
    print("\nmeasurement            wall s (best)     MB/s   peak RSS MB   cases   repeats")
    for kind in (*READ_KINDS, *CLI_KINDS):
        m = r.get(kind, {})
        if m.get("status") != "ok":
            print(f"{kind:<22} {m.get('status', 'missing')}: {m.get('reason', '')}")
            continue
        wall = m["proc_wall_s"] if kind in CLI_KINDS else m["wall_s"]
        print(
            f"{kind:<22} {wall:>12.3f} {m['mb_per_s'] or 0:>10.1f} {m['peak_rss_mb']:>11.1f} {m['cases']:>9,} {m['repeats']:>6}"
        )
    flat = r.get("flat-memory", {})
    if flat.get("status") == "ok":
        for size in ("small", "big"):
            m = flat[size]
            print(
                f"{'scan ' + format(m['bytes'] / MB, '.0f') + ' MB file':<22} {m['wall_s']:>12.3f} {m['mb_per_s'] or 0:>10.1f} {m['peak_rss_mb']:>11.1f} {m['cases']:>9,} {1:>6}"
            )
    print(
        "\nratios (same run, same files; medians of interleaved runs, and best runs;"
        " e2e uses process wall time on both sides)"
    )
    for name, value in report["ratios"].items():
        print(f"  {name:<34} {'n/a' if value is None else format(value, '.2f') + 'x'}")
    if r.get("local"):
        local.print_local(r["local"])
    print("\ntargets (reported, never enforced)")
    for t in report["targets"]:
        value = "n/a" if t["value"] is None else f"{t['value']}{t.get('unit', '')}"
        print(f"  [{t['status']}] {t['target']}: {value}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases", type=int, default=200_000, help="cases in the main set (all backends)"
    )
    parser.add_argument(
        "--big-cases",
        type=int,
        default=1_000_000,
        help="cases in the big set for e2e-1m and leg-update (0: skip)",
    )
    parser.add_argument(
        "--single-bytes", default="1G", help="size of the one-file flat-memory check (0: skip)"
    )
    parser.add_argument(
        "--single-small", default="10M", help="size of the file it is compared with"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=7,
        help="interleaved rounds (reading, and the local updates), each command once a round",
    )
    parser.add_argument(
        "--big-repeat", type=int, default=3, help="repeats of the 1M-case update (e2e-1m)"
    )
    parser.add_argument(
        "--compare",
        type=Path,
        help="a checkout of other code (e.g. main): its updates run in the same rounds",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count each local command's instructions once under valgrind's callgrind",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--e2e-mode",
        choices=("auto", "single", "per-backend"),
        default="auto",
        help="one update call with --backend-from-path, or one per backend (auto: single when supported)",
    )
    parser.add_argument(
        "--work", type=Path, default=BENCH / "out", help="generated data, stores and dashboards"
    )
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes, one repeat: checks that everything runs"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print a cProfile of scan_junit over the main set and exit",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.cases, args.big_cases, args.repeat, args.big_repeat = 2_000, 8_000, 1, 1
        args.single_bytes, args.single_small = "4M", "256K"
        args.work = args.work / "smoke"
    if args.single_bytes == "0":
        args.single_bytes = ""
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)

    print(
        f"ivy-matrix benchmarks: {args.cases:,} cases, {args.repeat} repeat(s), work dir {work}",
        flush=True,
    )
    data, manifest = ensure_set(work, args.cases, args.seed)
    files = xml_files(data)
    if args.profile:
        return subprocess.call([PYTHON, str(MEASURE), "profile", *files], cwd=ROOT)
    results: Json = {}
    crashed: list[str] = []
    steps: list[Callable[[], None]] = [
        lambda: bench_read(args, files, manifest, results),
        lambda: bench_cli(args, work, data, manifest, results),
        lambda: bench_flat_memory(args, work, results),
    ]
    for step in steps:
        try:
            step()
        except ChildFailedError as exc:
            crashed.append(str(exc))
            print(f"  CRASHED: {exc}", flush=True)
    for kind in ALL_MEASUREMENTS:
        results.setdefault(
            kind, {"status": "error", "reason": "; ".join(crashed)[:2000] or "not run"}
        )

    q = ratios(results)
    report = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "expat": __import__("pyexpat").EXPAT_VERSION,
            "commit": _commit(),
        },
        "params": {
            "cases": args.cases,
            "big_cases": args.big_cases,
            "repeat": args.repeat,
            "seed": args.seed,
            "single_bytes": args.single_bytes,
            "single_small": args.single_small,
            "smoke": args.smoke,
            "big_repeat": args.big_repeat,
            "compare": str(args.compare) if args.compare else None,
            "instructions": args.instructions,
            "e2e_call": "python entrypoint.py update --junit DATA/**/*.xml --backend-from-path "
            f"{local.BACKEND_FROM_PATH!r} --job-id J --run-id R --repository {local.REPOSITORY} "
            "--store S --output-dir O",
            "env_removed": "GITHUB_*, IVY_MATRIX_*, RUNNER_*",
        },
        "data": {k: v for k, v in manifest.items() if k != "files"},
        "results": results,
        "ratios": q,
        "targets": targets(results, q, args.cases, args.big_cases),
        "checks": checks(results, manifest),
    }
    print_report(report)
    for problem in report["checks"]:
        print(f"  check: {problem}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
        print(f"\nfigures written to {args.json}")
    return 1 if crashed else 0


def _commit() -> str:
    """The measured code's commit (with "+changes" when the tree differs from it)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def checks(results: Json, manifest: Json) -> list[str]:
    """Sanity: every reader saw every case, and scan_junit agrees with the generator's counts."""
    problems: list[str] = []
    files = manifest.get("files", [])
    expected = {
        "failed": sum(f["failures"] for f in files),
        "error": sum(f["errors"] for f in files),
        "skipped": sum(f["skipped"] for f in files),
    }
    for kind in ("junitparser", "scan"):
        m = results.get(kind)
        if not isinstance(m, dict) or m.get("status") != "ok":
            continue
        counts = m.get("counts", {})
        if sum(counts.values()) != manifest["cases"]:
            problems.append(
                f"{kind} saw {sum(counts.values())} cases, the set has {manifest['cases']}"
            )
        for status, n in expected.items():
            if counts.get(status, 0) != n:
                problems.append(
                    f"{kind} counted {counts.get(status, 0)} {status}, the generator wrote {n}"
                )
        if m.get("problems"):
            problems.append(f"{kind} reported problems: {m['problems'][:3]}")
    return problems


if __name__ == "__main__":
    sys.exit(main())
