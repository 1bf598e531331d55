"""The fan-in at scale (issue 26 item 1): ``update --legs`` against reading the same JUnit.

Shape: ``bench/generate.py`` JUnit of 7,000 tests x 4 backends times ``--scale`` (one case per
test function, so a case is a cell: 28,000 cells at scale 1, 1M at 35.7), in
``--dashboards`` dashboards (default 100 x scale: ~70 rows a dashboard, as Ivy's), cut into
``--legs`` legs (4 backends x legs/4 shards, as ``bench/github_scale.py`` cuts them). Every
leg's ``ivy-matrix collect`` runs beforehand, not measured. Then, in interleaved rounds, each a
fresh process against a fresh ``git http-backend`` remote (``tests/github/git_server.py``,
no latency) and the REST stand-in (which nothing should ask anything of):

- ``fan-in``: ``update --legs DIR`` into an empty branch (the target's like-for-like side);
- ``junit``: ``update`` of the same JUnit files (``--backend-from-path``) into an empty branch,
  the reference;
- ``fan-in-seeded`` (``--seeded``): ``update --legs DIR`` onto a branch holding run 100 (the
  same tests, other outcomes), as every run after the first finds it.

Each process runs under ``bench/children.py``-style accounting done here: a small launcher
runs ``cli.main`` in the measured process itself and, at its end, writes its own rusage and
its children's (the ``git`` processes it ran and waited for) to a file; the bench also reaps
it with ``os.wait4`` (the whole tree). CPU = user + system of the tree, python's own and the
git processes' given apart; peak RSS = the largest of the tree (python's own given apart: a
child's ``ru_maxrss`` on Linux starts from its forking parent's, so git's own cannot be told
this way). Bytes pushed are the bodies of
the ``git-receive-pack`` requests the server answered. Ratios fan-in / junit are taken per
round, and the report gives their median with min-max, beside the medians of each measure.
``--compare DIR`` also runs the ivy-matrix of another checkout (``PYTHONPATH``) in the same
rounds, for before/after figures that one slow spell of the machine cannot tell apart.
The leg files name the git server, so every round's server listens on ``--port``.

I/O: generated data, leg files and logs under ``--work`` (default ``bench/out/fan_in``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import generate
from children import cli_env

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))  # the stand-ins live in tests/, beside the product
import git_side  # noqa: E402  -- after the path entry
from github_scale import (  # noqa: E402
    BACKEND_FROM_PATH,
    BRANCH,
    REPOSITORY,
    ensure_set,
    machine,
)

from tests.github.budget import UNLIMITED  # noqa: E402
from tests.github.fake_server import FakeGitHub  # noqa: E402
from tests.github.git_server import GitServer  # noqa: E402

PYTHON = sys.executable
RUN, SEED_RUN = 101, 100
JOB_BASE = 2_000_000
FAN_IN_JOB = JOB_BASE - 1
IVY_TESTS = 7000  # tests per backend at Ivy's shape
# The git server's port: the legs' files name the server the fan-in job reaches, so every
# round's server listens where the legs said.
PORT = 47231
# Runs cli.main in this very process, then writes its own and its children's rusage.
LAUNCHER = """
import json, resource, sys
sys.argv = ["ivy-matrix", *sys.argv[2:]]
from ivy_matrix.cli import main
try:
    code = main()
finally:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(OUT, "w") as out:
        json.dump({"self_cpu_s": me.ru_utime + me.ru_stime, "self_rss_kb": me.ru_maxrss,
                   "children_cpu_s": kids.ru_utime + kids.ru_stime,
                   "children_rss_kb": kids.ru_maxrss}, out)
sys.exit(code)
"""
Json = dict[str, Any]
MODES = ("fan-in", "junit", "fan-in-seeded")


def collect_legs(manifest: Json, legs_dir: Path, logs: Path, port: int) -> int:
    """Every leg's ``collect`` (two at a time; not measured); the leg count."""
    if legs_dir.exists() and (legs_dir / "done").exists():
        return len(list(legs_dir.glob("*.json*")))
    shutil.rmtree(legs_dir, ignore_errors=True)
    legs_dir.mkdir(parents=True)
    logs.mkdir(parents=True, exist_ok=True)
    root = Path(manifest["root"])
    running: list[subprocess.Popen[bytes]] = []
    for index, entry in enumerate(manifest["files"]):
        backend = entry["path"].split("/")[0]
        cmd = [
            *(PYTHON, str(ROOT / "entrypoint.py"), "collect", "--junit", str(root / entry["path"])),
            *("--backend", backend, "--repository", REPOSITORY, "--run-id", str(RUN)),
            *("--job-id", str(JOB_BASE + index), "--leg-file", str(legs_dir)),
            *("--server-url", f"http://127.0.0.1:{port}"),
        ]
        with (logs / f"collect-{index:03d}.txt").open("wb") as log:
            running.append(
                subprocess.Popen(cmd, env=cli_env(), stdout=log, stderr=subprocess.STDOUT)
            )
        while len(running) >= 2:  # the machine's cores
            for proc in running:
                if proc.poll() is not None:
                    running.remove(proc)
                    if proc.returncode:
                        raise SystemExit(f"collect {proc.args!r} failed")
                    break
            else:
                time.sleep(0.05)
    for proc in running:
        if proc.wait():
            raise SystemExit(f"collect {proc.args!r} failed")
    (legs_dir / "done").write_text("")
    return len(manifest["files"])


def update_argv(
    *, mode: str, manifest: Json, legs_dir: Path, api_url: str, server_url: str, run: int
) -> list[str]:
    inputs = (
        ["--junit", f"{manifest['root']}/**/*.xml", "--backend-from-path", BACKEND_FROM_PATH]
        if mode == "junit" or run == SEED_RUN
        else ["--legs", str(legs_dir)]
    )
    return [
        "update",
        *inputs,
        *("--server-url", server_url, "--api-url", api_url, "--token", "bench"),
        *("--repository", REPOSITORY, "--run-id", str(run), "--job-id", str(FAN_IN_JOB)),
        *("--branch", BRANCH, "--targets", "branch"),
    ]


def measure(argv: list[str], cwd: Path, code: Path | None = None) -> Json:
    """One fresh process running ``argv``: its figures (see the module docstring). ``code``:
    the ivy-matrix to import (a checkout's root; None: this one)."""
    cwd.mkdir(parents=True, exist_ok=True)
    out = cwd / "rusage.json"
    launcher = LAUNCHER.replace("OUT", repr(str(out)))
    start = time.perf_counter()
    with (cwd / "log.txt").open("wb") as log:
        proc = subprocess.Popen(
            [PYTHON, "-c", launcher, "-", *argv],
            cwd=cwd,
            env={**cli_env(), "PYTHONPATH": str(code or ROOT)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode:
        tail = (cwd / "log.txt").read_text(errors="replace")[-3000:]
        raise SystemExit(f"{argv[:3]} failed ({proc.returncode}):\n{tail}")
    inner = json.loads(out.read_text())
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "rss_mb": round(usage.ru_maxrss / 1024, 1),
        "python_cpu_s": round(inner["self_cpu_s"], 2),
        "python_rss_mb": round(inner["self_rss_kb"] / 1024, 1),
        "git_cpu_s": round(inner["children_cpu_s"], 2),
    }


def on_port(server: GitServer, port: int) -> GitServer:
    """``server`` listening on ``port`` (not started)."""
    server._server.server_close()  # noqa: SLF001  -- the stand-in binds port 0
    server._server = ThreadingHTTPServer(("127.0.0.1", port), server._handler())  # noqa: SLF001
    server._server.daemon_threads = True  # noqa: SLF001
    server._thread = threading.Thread(  # noqa: SLF001
        target=server._server.serve_forever,  # noqa: SLF001
        args=(0.01,),
        daemon=True,
    )
    return server


def run_one(
    mode: str,
    manifest: Json,
    legs_dir: Path,
    cwd: Path,
    *,
    seed_repo: Path | None,
    port: int,
    code: Path | None,
) -> Json:
    git = on_port(
        git_side.seeded_server(seed_repo, latency=(0.0, 0.0), seed=1)
        if mode == "fan-in-seeded" and seed_repo is not None
        else GitServer(),
        port,
    )
    with FakeGitHub(limits=UNLIMITED) as fake, git:
        fake.configure(keep_bodies=False)
        argv = update_argv(
            mode=mode,
            manifest=manifest,
            legs_dir=legs_dir,
            api_url=fake.base_url,
            server_url=git.url,
            run=RUN,
        )
        figures = measure(argv, cwd, code)
        pushes = [r for r in git.requests if r.is_push]
        files = git.files(BRANCH)
        figures["pushed_kb"] = round(sum(r.bytes_in for r in pushes) / 1e3, 1)
        figures["rest_requests"] = len(fake.requests)
        figures["files_on_branch"] = len(files)
        figures["markdown_mb"] = round(
            sum(len(d) for p, d in files.items() if p.endswith(".md")) / 1e6, 1
        )
    return figures


def seed_branch(manifest: Json, work: Path, port: int) -> Path:
    """A repository whose branch holds run 100 of the same tests (other outcomes)."""
    seed_repo = work / f"seed-{Path(manifest['root']).name}-p{port}.git"
    if seed_repo.exists():
        return seed_repo
    with FakeGitHub(limits=UNLIMITED) as fake, on_port(GitServer(), port) as git:
        fake.configure(keep_bodies=False)
        argv = update_argv(
            mode="junit",
            manifest=manifest,
            legs_dir=work,
            api_url=fake.base_url,
            server_url=git.url,
            run=SEED_RUN,
        )
        measure(argv, work / "logs" / "seed")
        git_side.keep_seed(git, work)
        shutil.move(work / "seed-repo.git", seed_repo)
    return seed_repo


def summary(rounds: list[Json]) -> Json:
    keys = rounds[0].keys()
    return {k: round(statistics.median(r[k] for r in rounds), 2) for k in keys}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scale", type=float, default=1.0, help="times Ivy's 7,000 tests x 4 backends"
    )
    parser.add_argument(
        "--cells", type=int, help="cells in all instead of --scale (1000000: 250,000 a backend)"
    )
    parser.add_argument("--dashboards", type=int, help="default: 100 x scale (~70 rows each)")
    parser.add_argument("--legs", type=int, default=128, help="a multiple of 4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seeded", action="store_true", help="also fan in onto a seeded branch")
    parser.add_argument("--work", type=Path, default=BENCH / "out" / "fan_in")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument(
        "--compare", type=Path, help="also run the ivy-matrix of this checkout, in the same rounds"
    )
    parser.add_argument(
        "--port", type=int, default=PORT, help="the git server's (the leg files name it)"
    )
    args = parser.parse_args(argv)
    if args.cells:
        args.scale = args.cells / (IVY_TESTS * len(generate.BACKENDS))
    if args.dashboards is None:
        args.dashboards = max(1, round(100 * args.scale))
    if args.legs % len(generate.BACKENDS):
        parser.error("--legs: a multiple of 4")
    return args


def ratios_of(rounds: dict[str, list[Json]], code: str) -> Json:
    """fan-in / junit of ``code``'s processes, per round: median, min and max."""
    per_round = [
        {"cpu": f["cpu_s"] / j["cpu_s"], "rss": f["rss_mb"] / j["rss_mb"]}
        for f, j in zip(rounds[f"fan-in {code}"], rounds[f"junit {code}"], strict=True)
    ]
    return {
        k: {
            "median": round(statistics.median(r[k] for r in per_round), 2),
            "min": round(min(r[k] for r in per_round), 2),
            "max": round(max(r[k] for r in per_round), 2),
        }
        for k in ("cpu", "rss")
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = args.work.resolve()
    tests = round(IVY_TESTS * args.scale)
    shards = args.legs // len(generate.BACKENDS)
    load_start = [round(x, 1) for x in os.getloadavg()]
    manifest = ensure_set(
        work, tests=tests, dashboards=args.dashboards, shards=shards, outcome_seed=2
    )
    tag = Path(manifest["root"]).name
    legs_dir = work / "legs" / f"{tag}-p{args.port}"
    legs = collect_legs(manifest, legs_dir, work / "logs" / tag, args.port)
    modes = ["fan-in", "junit"]
    seed_repo = None
    if args.seeded:
        modes.append("fan-in-seeded")
        seed_set = ensure_set(
            work, tests=tests, dashboards=args.dashboards, shards=1, outcome_seed=1
        )
        seed_repo = seed_branch(seed_set, work, args.port)
    codes: dict[str, Path | None] = {"this": None}
    if args.compare:
        codes["compare"] = args.compare.resolve()
    print(
        f"fan-in: {manifest['cases']:,} cells ({tests:,} tests x 4 backends), "
        f"{args.dashboards} dashboards, {legs} legs, {args.rounds} round(s), modes {modes}, "
        f"code {list(codes)}",
        flush=True,
    )
    rounds: dict[str, list[Json]] = {f"{m} {c}": [] for m in modes for c in codes}
    for round_no in range(args.rounds):
        for mode in modes:
            for name, code in codes.items():
                cwd = work / "runs" / tag / f"{mode}-{name}-r{round_no}"
                shutil.rmtree(cwd, ignore_errors=True)
                figures = run_one(
                    mode, manifest, legs_dir, cwd, seed_repo=seed_repo, port=args.port, code=code
                )
                rounds[f"{mode} {name}"].append(figures)
                print(f"  round {round_no} {mode} {name}: {json.dumps(figures)}", flush=True)
    report: Json = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(load_start),
        "settings": {
            "cells": manifest["cases"],
            "tests_per_backend": tests,
            "dashboards": args.dashboards,
            "legs": legs,
            "rounds": args.rounds,
            "modes": modes,
            "compare": str(args.compare) if args.compare else None,
            "git_latency_s": 0,
        },
        "medians": {m: summary(rs) for m, rs in rounds.items()},
        "fan_in_over_junit": {code: ratios_of(rounds, code) for code in codes},
    }
    for mode, figures in report["medians"].items():
        print(f"  median {mode}: {json.dumps(figures)}")
    for code, ratios in report["fan_in_over_junit"].items():
        print(f"  fan-in / junit, {code} (per round): {json.dumps(ratios)}", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    with contextlib.suppress(OSError):
        shutil.rmtree(work / "runs" / tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
