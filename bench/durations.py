"""Issue 28's cost of durations at Ivy's shape: CPU per update and state bytes, against a
reference checkout (code that reads no ``time``) in the same rounds.

Ivy's shape: 100 dashboards x 70 tests x 4 backends, one case per test (28,000 cells; the
generator writes a ``time`` on every case, as pytest does). Run ``r`` of the history is
``generate.py`` seed 1 with outcome seed ``r`` (the same tests, other outcomes and times).

- **State bytes**: each code updates runs 1 to ``--runs`` one after another into a store of its
  own (not timed); the bytes of the state documents (``state/**/*.json``) after run 1 and after
  the last run, and their ratio this / reference.
- **CPU per update**, in interleaved rounds, each command a fresh process (user + system time
  from ``os.wait4``), for each code in turn (which goes first alternates from round to round): ``fresh``, run 1 into an empty store; ``steady``,
  the last run into a copy of the store holding the runs before it (a full history: the
  durations of every result are read, merged and written). Each update renders every
  dashboard and the index into ``--output-dir``, as the action's users do. Ratios this /
  reference are taken per round; the report gives their median and min-max (targets: CPU
  at most 1.05, state bytes at most 1.15).

``--instructions`` also counts each code's ``fresh`` and ``steady`` update once under
``valgrind --tool=callgrind``: repeatable whatever else the machine is doing (CPU times on a
shared machine move by a tenth from round to round).

``--compare DIR`` is the reference: a checkout of other code (``git archive main | tar -x -C
DIR``); without it only this code is measured. ``--smoke`` measures a tiny shape once (the
test of the harness).

I/O: starts processes; writes data, stores and dashboards under ``--work``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import generate
from children import PYTHON, ROOT, Json, Run, cli_env, compiled, run_child

BACKEND_FROM_PATH = r"(?P<backend>[^/]+)/[^/]+\.xml$"
IVY = (28_000, 100)  # cases (7,000 tests x 4 backends), dashboards
SMOKE = (400, 5)
TARGETS = {"cpu": 1.05, "state_bytes": 1.15}
SHAPE = {"cases": IVY[0], "dashboards": IVY[1]}


def ivy_run(work: Path, run: int) -> Path:
    """Run ``run``'s result files at the shape (generated once, then reused)."""
    out = work / "data" / f"ivy-{SHAPE['cases']}-{SHAPE['dashboards']}-{run}"
    if not (out / "manifest.json").exists():
        shutil.rmtree(out, ignore_errors=True)
        generate.generate_set(
            out,
            cases=SHAPE["cases"],
            seed=1,
            modules=SHAPE["dashboards"],
            files_per_backend=4,
            backends=generate.BACKENDS,
            outcome_seed=run,
            variants=1,
        )
    return out


def update_cmd(code: Path, data: Path, store: Path, out: Path, run: int) -> list[str]:
    """``ivy-matrix update`` of one run's files, as the action runs it, with ``code``."""
    return [
        PYTHON,
        str(code / "entrypoint.py"),
        "update",
        *("--junit", f"{data}/**/*.xml"),
        *("--backend-from-path", BACKEND_FROM_PATH),
        *("--run-id", str(100 + run), "--job-id", str(1000 + run)),
        *("--repository", "acme/widgets"),
        *("--store", str(store), "--output-dir", str(out)),
    ]


def state_bytes(store: Path) -> int:
    return sum(p.stat().st_size for p in (store / "state").rglob("*.json"))


def history(code: Path, work: Path, suffix: str, runs: int) -> Json:
    """Runs 1 to ``runs`` into a store of ``code``'s own; its state bytes along the way. The
    store after ``runs - 1`` runs is kept for the ``steady`` updates."""
    store, out = work / f"stores/history{suffix}", work / f"dashboards/history{suffix}"
    for path in (store, out):
        shutil.rmtree(path, ignore_errors=True)
    sizes = {}
    for run in range(1, runs + 1):
        if run == runs:
            for source, kept in ((store, "before-last"), (out, "before-last-out")):
                target = work / f"stores/{kept}{suffix}"
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(source, target)
        run_child(
            update_cmd(code, ivy_run(work, run), store, out, run), env=cli_env(), parse_json=False
        )
        sizes[run] = state_bytes(store)
    return {"after_1": sizes[1], f"after_{runs}": sizes[runs], "by_run": sizes}


def prepared(code: Path, work: Path, suffix: str, kind: str, runs: int) -> list[str]:
    """The command of ``code``'s ``fresh`` or ``steady`` update, its store made ready."""
    store, out = work / f"stores/{kind}{suffix}", work / f"dashboards/{kind}{suffix}"
    for path in (store, out):
        shutil.rmtree(path, ignore_errors=True)
    run = 1 if kind == "fresh" else runs
    if kind == "steady":
        shutil.copytree(work / f"stores/before-last{suffix}", store)
        shutil.copytree(work / f"stores/before-last-out{suffix}", out)
    return update_cmd(code, ivy_run(work, run), store, out, run)


def one_round(codes: list[tuple[Path, str]], work: Path, runs: int) -> dict[str, Run]:
    """Each code's ``fresh`` and ``steady`` update once, codes taking turns (the caller
    alternates which goes first from round to round)."""
    found: dict[str, Run] = {}
    for kind in ("fresh", "steady"):
        for code, suffix in codes:
            found[kind + suffix] = run_child(
                prepared(code, work, suffix, kind, runs), env=cli_env(), parse_json=False
            )
    return found


def instructions(codes: list[tuple[Path, str]], work: Path, runs: int) -> Json:
    """Each update's instructions under callgrind, once."""
    if shutil.which("valgrind") is None:
        return {"status": "skipped", "reason": "valgrind is not installed"}
    counts: Json = {}
    for kind in ("fresh", "steady"):
        for code, suffix in codes:
            cmd = prepared(code, work, suffix, kind, runs)
            proc = subprocess.run(
                ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                capture_output=True,
                text=True,
                env=cli_env(),
                cwd=ROOT,
                check=False,
            )
            found = re.search(r"Collected : (\d+)", proc.stderr)
            counts[kind + suffix] = int(found.group(1)) if proc.returncode == 0 and found else None
    ratios = {
        kind: round(counts[kind] / counts[kind + "@ref"], 4)
        for kind in ("fresh", "steady")
        if counts.get(kind) and counts.get(kind + "@ref")
    }
    return {"status": "ok", "counts": counts, "ratios": ratios}


def ratio_stats(values: list[float]) -> Json:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "rounds": [round(v, 3) for v in values],
    }


def measure(
    work: Path, compare: Path | None, rounds: int, runs: int, *, count: bool = False
) -> Json:
    codes = [(ROOT, "")] + ([(compare, "@ref")] if compare is not None else [])
    for code, _ in codes:
        compiled(code)
    for run in range(1, runs + 1):
        ivy_run(work, run)
    report: Json = {"shape": {**SHAPE, "runs": runs}}
    report["state_bytes"] = {
        suffix or "this": history(code, work, suffix, runs) for code, suffix in codes
    }
    measured: dict[str, list[Run]] = {}
    for index in range(rounds):
        order = codes if index % 2 == 0 else codes[::-1]  # neither code always goes first
        for name, child in one_round(order, work, runs).items():
            measured.setdefault(name, []).append(child)
    report["cpu_s"] = {
        name: {
            "median": round(statistics.median(r.cpu_s for r in found), 3),
            "peak_rss_mb": round(max(r.maxrss_mb for r in found), 1),
        }
        for name, found in measured.items()
    }
    if compare is not None:
        sizes = report["state_bytes"]
        report["ratios"] = {
            f"state bytes after {n} run(s)": round(
                sizes["this"][f"after_{n}"] / sizes["@ref"][f"after_{n}"], 4
            )
            for n in (1, runs)
        }
        for kind in ("fresh", "steady"):
            report["ratios"][f"CPU, {kind} update"] = ratio_stats(
                [
                    a.cpu_s / b.cpu_s
                    for a, b in zip(measured[kind], measured[kind + "@ref"], strict=True)
                ]
            )
        report["targets"] = TARGETS
    if count:
        report["instructions"] = instructions(codes, work, runs)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / "out" / "durations")
    parser.add_argument("--compare", type=Path, default=None, help="the reference checkout")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=10, help="runs of history (default 10)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    parser.add_argument("--instructions", action="store_true", help="also count instructions")
    parser.add_argument("--smoke", action="store_true", help="a tiny shape, once")
    args = parser.parse_args(argv)
    if args.smoke:
        SHAPE.update(cases=SMOKE[0], dashboards=SMOKE[1])
        args.rounds, args.runs = 1, 2
    report = measure(
        args.work, args.compare, args.rounds, max(args.runs, 2), count=args.instructions
    )
    text = json.dumps(report, indent=1)
    if args.json is not None:
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
