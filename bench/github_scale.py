"""Benchmark the GitHub path at Ivy's scale: concurrent matrix legs against the project's stand-in.

Issues 9 (item 7) and 14 (item 7). Ivy's shape: 7,000 tests x 4 backends in ~100 dashboards (``bench/generate.py``
writes the JUnit). A leg is one matrix job, backend x test shard: the 7,000 tests of a backend
are cut into shards of contiguous modules (dashboards), one JUnit file per leg. Leg counts map
to splits as follows (``split_for``):

- 1 leg: torch, shard 1 of 8 (~875 cases): one "leg of ~900 cases" alone, the reference;
- 4 legs: one per backend, no sharding (7,000 cases each);
- 32 legs: 4 backends x 8 shards (~875 cases each);
- 128 legs: 4 backends x 32 shards (~219 cases each), Ivy's 128-job matrix.

Each configuration starts a fresh ``tests/github/fake_server.py`` on 127.0.0.1, pre-seeded with the
branch (and issues) a real Ivy repository would have: the git objects written by one full
``update`` of all 28,000 cases (run 100) are copied in. With ``--transport git`` (the default)
the branch lives on a real git remote instead (``bench/git_side.py``: ``git http-backend``
behind ``tests/github/git_server.py``, seeded the same way, answering after the same latency),
which the legs reach with git's own protocol; ``--transport rest`` keeps it on the REST
stand-in. ``--rerun`` runs every leg again with the same results and counts its writes (an
identical re-run should make none). Then every leg of run 101 (other
outcomes) starts at once as its own ``python entrypoint.py update`` process, with its own
token, so the fake's request log attributes each request to its leg. ivy-matrix runs exactly
as in production (``make_client``: no pause between requests, our retries, which wait out
what GitHub asks). The fake answers each request after a uniform random latency (default
20-80 ms), and enforces GitHub's budgets for one repository's ``GITHUB_TOKEN``
(``tests/github/budget.py``: 1,000 requests an hour, 80 content-creating requests a minute
and 500 an hour, 100 at once; every leg's token pays into the repository's budget), on the
real clock: a refused leg waits as GitHub asks, as it would on github.com. ``--no-limits``
only records the spend. ``--faults`` answers that share of requests with a random fault (502,
503, 403 or 429 as GitHub sends them) and ``--landed`` lets that share of the faults on writes
land before their 502.

Set-ups (``--setups``), each for every leg count:

- ``legs``: every leg runs ``update`` with the branch target and renders what it changed
  (0.2.0's "one leg per backend", no longer a recipe: measured as the compare-and-swap between
  many writers);
- ``fan-in``: every leg runs ``ivy-matrix collect`` at once, with no api url and no token (so
  no request can be made), into one folder of leg files; then one job after the matrix runs
  ``update --legs`` on them and commits once, with a job id of its own (``FAN_IN_JOB``) that
  no cell may link. A configuration still running after ``--cap``
seconds is stopped (its legs killed) and reported as "stopped at cap" with its partial figures;
a leg that exits non-zero makes it "legs failed".

Figures per configuration: wall time per leg (median, max) and of the whole run; requests and
bytes sent/received per leg (median, max); commit tries per leg (ref updates, rejected ones
counted: max and mean); content-creating requests (POST/PATCH/PUT/DELETE) in the busiest
sliding minute, in the whole run, and per hour; cells lost (each leg's cases must be linked to
its job in the final dashboards on the branch) and duplicate dashboard issues (open issues per
dashboard marker, with ``--targets branch,issue``); and what the whole run spent beside
GitHub's limits (bench/github_figures.py): requests, content-creating requests, the worst
minute of them, refusals, bytes sent, and how many such runs an hour fit in the repository's
budget. Speed is reported, never asserted.

I/O: writes generated data and leg folders under ``--work`` (default ``bench/out/github``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import generate
from children import cli_env

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))  # the stand-in lives in tests/, beside the product
import git_side  # noqa: E402  -- after the path entry
from github_figures import (  # noqa: E402
    FAN_IN,
    JOB_BASE,
    LEGS,
    RUN,
    SEED_RUN,
    WRITE_METHODS,
    Leg,
    LegRun,
    Outcome,
    medians,
    print_config,
    print_table,
    ratios,
    summarize,
)

from tests.github.budget import GITHUB_TOKEN, UNLIMITED  # noqa: E402
from tests.github.fake_server import FakeGitHub, RequestRecord  # noqa: E402
from tests.github.git_server import GitServer  # noqa: E402

PYTHON = sys.executable
ENTRYPOINT = ROOT / "entrypoint.py"
REPOSITORY = "acme/widgets"
BRANCH = "ivy-matrix"
FAN_IN_JOB = JOB_BASE - 1  # the fan-in job's id (the legs' are JOB_BASE + index)
BACKEND_FROM_PATH = r"(?P<backend>[^/]+)/[^/]+\.xml$"
# The fake's state that a pre-seeded repository consists of (copied into each configuration).
SEEDED = ("blobs", "trees", "commits", "refs", "issues", "comments", "labels")
Json = dict[str, Any]


def split_for(legs: int, *, single_shards: int) -> tuple[tuple[str, ...], int, int]:
    """(backends, shards per backend, legs taken) for a leg count; see the module docstring."""
    if legs == 1:
        return ("torch",), single_shards, 1
    if legs < len(generate.BACKENDS):  # the first backends, unsharded (--quick)
        return generate.BACKENDS[:legs], 1, legs
    if legs % len(generate.BACKENDS):
        raise SystemExit(f"--legs: {legs} is not below or a multiple of {len(generate.BACKENDS)}")
    shards = legs // len(generate.BACKENDS)
    return generate.BACKENDS, shards, legs


def ensure_set(work: Path, *, tests: int, dashboards: int, shards: int, outcome_seed: int) -> Json:
    """Generate (or reuse) the JUnit of one run: every backend, cut into ``shards`` files each."""
    out = work / "data" / f"t{tests}-d{dashboards}-s{shards}-o{outcome_seed}-v1"
    manifest_path = out / "manifest.json"
    if manifest_path.exists():
        manifest: Json = json.loads(manifest_path.read_text())
    else:
        shutil.rmtree(out, ignore_errors=True)
        manifest = generate.generate_set(
            out,
            cases=tests * len(generate.BACKENDS),
            seed=1,
            modules=dashboards,
            files_per_backend=shards,
            backends=generate.BACKENDS,
            outcome_seed=outcome_seed,
            variants=1,  # one case per test function: a case is a cell, as in Ivy
        )
    manifest["root"] = str(out)
    return manifest


def legs_of(manifest: Json, backends: tuple[str, ...], count: int) -> list[Leg]:
    root = Path(manifest["root"])
    legs: list[Leg] = []
    for entry in manifest["files"]:
        backend, name = entry["path"].split("/")
        if backend not in backends or len(legs) >= count:
            continue
        shard = int(name.removeprefix("results-").removesuffix(".xml"))
        path = root / entry["path"]
        legs.append(Leg(len(legs), backend, shard, path, int(entry["tests"]), count_cells(path)))
    return legs


def count_cells(path: Path) -> int:
    """The dashboard cells one JUnit file fills: its distinct (classname, test function) pairs.

    A dashboard row is a test function; its parametrizations (``[cpu-torch-False-True]``)
    share the row, and the backend is the column.
    """
    text = path.read_text(encoding="utf-8")
    return len(set(re.findall(r'<testcase classname="([^"]+)" name="([^"\[]+)', text)))


def machine(load_start: list[float]) -> Json:
    """The report's ``machine``: Python, the platform, the cores, and the load average at the
    start (``load_start``) and now."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_start": load_start,
        "load_average_end": [round(x, 1) for x in os.getloadavg()],
    }


def update_command(
    *,
    junit: list[str],
    backend_args: list[str],
    api_url: str,
    token: str,
    run_id: int,
    job_id: int,
    server_url: str | None = None,
) -> list[str]:
    # The git server's URL as the server URL: branch-transport auto then uses git (same host).
    server = ["--server-url", server_url] if server_url else ["--branch-transport", "rest"]
    return [
        PYTHON,
        str(ENTRYPOINT),
        "update",
        *server,
        *(arg for pattern in junit for arg in ("--junit", pattern)),
        *backend_args,
        "--repository",
        REPOSITORY,
        "--run-id",
        str(run_id),
        "--job-id",
        str(job_id),
        "--api-url",
        api_url,
        "--token",
        token,
        "--branch",
        BRANCH,
    ]


# --- the pre-seeded repository ---------------------------------------------------------------


def seed_repository(
    args: argparse.Namespace, work: Path, targets: str, *, transport: str = "rest"
) -> tuple[Json, Json]:
    """One full update of every backend (run 100) into an empty stand-in; return its state."""
    manifest = ensure_set(
        work, tests=args.tests, dashboards=args.dashboards, shards=1, outcome_seed=1
    )
    seed_dir = work / "legs" / "seed"
    shutil.rmtree(seed_dir, ignore_errors=True)
    seed_dir.mkdir(parents=True)
    # Seeding arranges the repository a run starts from: its spend is not measured.
    git = GitServer() if transport == "git" else None
    with FakeGitHub(limits=UNLIMITED) as fake, git or contextlib.nullcontext():
        fake.configure(keep_bodies=False)
        cmd = update_command(
            junit=[f"{manifest['root']}/**/*.xml"],
            backend_args=["--backend-from-path", BACKEND_FROM_PATH],
            api_url=fake.base_url,
            token="seed",
            run_id=SEED_RUN,
            job_id=1,
            server_url=git.url if git else None,
        )
        cmd += ["--targets", targets, "--store", str(seed_dir / "store")]
        start = time.perf_counter()
        proc = subprocess.run(
            cmd, cwd=seed_dir, env=cli_env(), capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"seeding update failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        with fake.lock:
            state = {name: _copy(getattr(fake, name)) for name in SEEDED}
        if git is None:
            files = fake.files(BRANCH)
        else:
            files = git.files(BRANCH)
            state["git_repo"] = str(git_side.keep_seed(git, work))
        markdown = [p for p in files if p.endswith(".md")]
        text = "\n".join(files[p].decode(errors="replace") for p in markdown)
        info = {
            "cases": manifest["cases"],
            "dashboards": args.dashboards,
            "files_on_branch": len(files),
            "markdown_files": len(markdown),
            "markdown_mb": round(sum(len(files[p]) for p in markdown) / 1e6, 2),
            "state_mb": round(
                sum(len(d) for p, d in files.items() if p.endswith(".json")) / 1e6, 2
            ),
            "issues": len(state["issues"]),
            "seed_wall_s": round(wall, 1),
            "seed_requests": len(fake.requests),
            # The lost-cell count relies on this: every cell of the seeding run is linked once.
            "cells_expected": sum(
                count_cells(Path(manifest["root"]) / f["path"]) for f in manifest["files"]
            ),
            "cells_linked": len(re.findall(rf"/actions/runs/{SEED_RUN}/job/1\"", text)),
        }
    return state, info


def _copy(value: Any) -> Any:
    """A copy deep enough that one configuration's writes never reach the seed (bytes are shared)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# --- one configuration -----------------------------------------------------------------------


def seeded_fake(args: argparse.Namespace, seed: Json) -> FakeGitHub:
    """A fresh stand-in holding the seeded repository, with the run's latency and limits."""
    fake = FakeGitHub(limits=UNLIMITED if args.no_limits else GITHUB_TOKEN)
    for name in SEEDED:
        setattr(fake, name, _copy(seed[name]))
    # Seeded issues and comments keep their numbers; new ones continue after them.
    comment_ids = [c["id"] for cs in fake.comments.values() for c in cs]
    fake._next_issue = max(fake.issues, default=0) + 1  # noqa: SLF001  -- see above
    fake._next_comment = max(comment_ids, default=fake._next_comment - 1) + 1  # noqa: SLF001
    fake.configure(
        latency=tuple(args.latency),
        keep_bodies=False,
        seed=args.seed,
        fail_rate=args.faults,
        fail_landed=args.landed,
    )
    return fake


def seeded_git(args: argparse.Namespace, seed: Json) -> GitServer | None:
    """With ``--transport git``, a fresh git server holding the seeded branch (None else)."""
    if args.transport != "git":
        return None
    git = git_side.seeded_server(
        Path(seed["git_repo"]), latency=tuple(args.latency), seed=args.seed
    )
    git.fail_rate = args.faults
    return git


def collect_command(leg: Leg, legs_dir: Path, extra: Sequence[str] = ()) -> list[str]:
    """One leg's ``ivy-matrix collect`` of the fan-in set-up: no api url, no token
    (``extra``: more options, e.g. the server the fan-in job will use)."""
    return [
        *(PYTHON, str(ENTRYPOINT), "collect", "--junit", str(leg.path), "--backend", leg.backend),
        *("--repository", REPOSITORY, "--run-id", str(RUN), "--job-id", str(leg.job_id)),
        *("--leg-file", str(legs_dir)),
        *extra,
    ]


def leg_command(leg: Leg, *, api_url: str, server_url: str | None) -> list[str]:
    """The command line of one leg (the fan-in job when ``leg.index`` is -1: it reads the leg
    files of ``leg.path``)."""
    if leg.index < 0:
        junit: list[str] = []
        backend = ["--legs", str(leg.path)]
    else:
        junit, backend = [str(leg.path)], ["--backend", leg.backend]
    return update_command(
        junit=junit,
        backend_args=backend,
        api_url=api_url,
        token=leg.token,
        run_id=RUN,
        job_id=leg.job_id,
        server_url=server_url,
    )


def run_config(
    args: argparse.Namespace,
    work: Path,
    seed: Json,
    legs: list[Leg],
    *,
    setup: str,
    targets: str,
    tag: str,
) -> Json:
    """Start every leg at once (or the fan-in job) against fresh, pre-seeded stand-ins;
    measure until done or cap. With ``--rerun``, the same legs then run again."""
    fake = seeded_fake(args, seed)
    git = seeded_git(args, seed)
    root = work / "legs" / tag
    shutil.rmtree(root, ignore_errors=True)
    fan_in = setup == FAN_IN
    runs: list[LegRun] = []
    start = time.perf_counter()
    if fan_in:
        # The legs collect their files, all at once, with no network; then the job runs.
        # Over git, the leg files name the server the fan-in job reads the branch from.
        server = ["--server-url", git.url] if git else []
        runs = collect_legs(args, legs, root, start=start, extra=server)
    with fake, git or contextlib.nullcontext():
        cases = sum(leg.cases for leg in legs)
        jobs = [Leg(-1, "all", 0, root / "leg-files", cases, 0)] if fan_in else legs
        mine, wall = start_jobs(args, fake, git, jobs, root=root, targets=targets)
        runs += mine
        with fake.lock:
            outcome = Outcome(
                records=list(fake.requests),
                files=git.files(BRANCH) if git else fake.files(BRANCH),
                issues=list(fake.issues.values()),
                seeded_issues=set(seed["issues"]),
                spend=fake.budget.spent(),
                git_records=list(git.requests) if git else [],
            )
        rerun = None
        if args.rerun:
            rest_before, git_before = len(fake.requests), len(git.requests) if git else 0
            again, _ = start_jobs(args, fake, git, jobs, root=root / "rerun", targets=targets)
            rest = fake.requests[rest_before:]
            pushes = [r for r in (git.requests[git_before:] if git else []) if r.is_push]
            rerun = {
                "failed": sum(r.code != 0 for r in again),
                "rest_requests": len(rest),
                "rest_writes": sum(r.method in WRITE_METHODS for r in rest),
                "git_pushes": len(pushes),
            }
    by_token: dict[str, list[RequestRecord]] = {}
    for record in outcome.records:
        token = (record.authorization or "").split(" ")[-1]
        by_token.setdefault(token, []).append(record)
    for run in runs:
        run.records = by_token.get(run.leg.token, [])
        run.git_records = [r for r in outcome.git_records if r.token == run.leg.token]
    result = summarize(runs, outcome, wall=wall, targets=targets, setup=setup)
    if rerun is not None:
        result["rerun"] = rerun
    return result


def start_jobs(
    args: argparse.Namespace,
    fake: FakeGitHub,
    git: GitServer | None,
    jobs: list[Leg],
    *,
    root: Path,
    targets: str,
) -> tuple[list[LegRun], float]:
    """Every job's ``update`` process, started at once; (their runs, the wall) once all ended."""
    started: list[tuple[LegRun, subprocess.Popen[bytes]]] = []
    start = time.perf_counter()
    for leg in jobs:
        leg_dir = root / (f"{leg.index:03d}" if leg.index >= 0 else "fan-in")
        leg_dir.mkdir(parents=True)
        cmd = leg_command(leg, api_url=fake.base_url, server_url=git.url if git else None)
        cmd += ["--targets", targets, "--store", str(leg_dir / "store")]
        log = leg_dir / "log.txt"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                cmd, cwd=leg_dir, env=cli_env(), stdout=out, stderr=subprocess.STDOUT
            )
        started.append((LegRun(leg, started=time.perf_counter() - start, log=log), proc))
    wall = wait_for(started, start=start, cap=args.cap)
    return [run for run, _ in started], wall


def collect_legs(
    args: argparse.Namespace,
    legs: list[Leg],
    root: Path,
    *,
    start: float,
    extra: Sequence[str] = (),
) -> list[LegRun]:
    """Every leg's ``collect`` into ``root/leg-files``, all started at once; their runs."""
    started: list[tuple[LegRun, subprocess.Popen[bytes]]] = []
    for leg in legs:
        leg_dir = root / f"{leg.index:03d}"
        leg_dir.mkdir(parents=True)
        log = leg_dir / "log.txt"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                collect_command(leg, root / "leg-files", extra),
                cwd=leg_dir,
                env=cli_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        started.append((LegRun(leg, started=time.perf_counter() - start, log=log), proc))
    wait_for(started, start=start, cap=args.cap)
    return [run for run, _ in started]


def wait_for(
    started: list[tuple[LegRun, subprocess.Popen[bytes]]], *, start: float, cap: float
) -> float:
    """Reap the processes as they end; kill those still running at ``cap``; the wall time."""
    deadline = start + cap
    while any(r.code is None for r, _ in started) and time.perf_counter() < deadline:
        time.sleep(0.05)
        for run, proc in started:
            if run.code is None:
                reap(run, proc, time.perf_counter() - start)
    for run, proc in started:
        if run.code is None:
            proc.kill()
            proc.wait()
    return time.perf_counter() - start


def reap(run: LegRun, proc: subprocess.Popen[bytes], now: float) -> None:
    """Collect the leg's exit status and rusage if it has exited (its own figures only)."""
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid == 0:
        return
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    run.code, run.ended = proc.returncode, now
    # (Not ru_maxrss: the child is forked from this process, whose stand-in holds every
    # leg's uploads, so its peak RSS would count ours.)
    run.cpu_s = usage.ru_utime + usage.ru_stime


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=7000, help="tests per backend (rows)")
    parser.add_argument("--dashboards", type=int, default=100)
    parser.add_argument("--legs", default="1,32,128", help="comma-separated leg counts")
    parser.add_argument(
        "--setups",
        default=f"{LEGS},{FAN_IN}",
        help=f"comma-separated set-ups, of {LEGS} and {FAN_IN} (the module docstring)",
    )
    parser.add_argument(
        "--single-shards",
        type=int,
        default=8,
        help="the 1-leg reference is shard 1 of this many of torch (8: ~875 cases)",
    )
    parser.add_argument(
        "--latency", type=float, nargs=2, default=(0.02, 0.08), metavar=("LOW", "HIGH")
    )
    parser.add_argument("--targets", default="branch", help="--targets of every leg")
    parser.add_argument(
        "--seed-targets",
        help="--targets of the seeding update (default: --targets); 'branch' with legs that "
        "also publish issues makes the legs create every dashboard's issue at once",
    )
    parser.add_argument(
        "--transport",
        choices=("git", "rest"),
        default="git",
        help="the branch over git's protocol (a git http-backend server) or the REST API",
    )
    parser.add_argument(
        "--rerun", action="store_true", help="run every leg again, same results: count writes"
    )
    parser.add_argument(
        "--no-limits",
        action="store_true",
        help="the stand-in records what legs spend but refuses nothing (default: GitHub's limits)",
    )
    parser.add_argument(
        "--faults",
        type=float,
        default=0.0,
        help="share of requests the stand-in answers with a random fault (502, 503, 403 or 429)",
    )
    parser.add_argument(
        "--landed",
        type=float,
        default=0.0,
        help="share of the faults on writes that land before their 502",
    )
    parser.add_argument("--cap", type=float, default=600, help="seconds before legs are stopped")
    parser.add_argument("--repeat", type=int, default=1, help="rounds (configurations interleaved)")
    parser.add_argument("--seed", type=int, default=1, help="the stand-in's latency draws")
    parser.add_argument("--work", type=Path, default=BENCH / "out" / "github")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny scale, to check that it works: 8 tests x 4 backends, 1 dashboard, 1 leg",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.tests, args.dashboards, args.legs, args.single_shards = 8, 1, "1", 2
        args.latency, args.cap = (0.0, 0.0), 120
    unknown = set(args.setups.split(",")) - {LEGS, FAN_IN}
    if unknown:
        parser.error(f"--setups: unknown {', '.join(sorted(unknown))}")
    return args


def plan(args: argparse.Namespace, work: Path) -> tuple[dict[str, list[Leg]], Json]:
    """The legs of every leg count, and how each count splits the backends into shards."""
    plans: dict[str, list[Leg]] = {}
    splits: Json = {}
    for count in (int(n) for n in args.legs.split(",") if n):
        backends, shards, take = split_for(count, single_shards=args.single_shards)
        manifest = ensure_set(
            work, tests=args.tests, dashboards=args.dashboards, shards=shards, outcome_seed=2
        )
        plans[str(count)] = legs_of(manifest, backends, take)
        splits[str(count)] = {"backends": list(backends), "shards_per_backend": shards}
    return plans, splits


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = args.work.resolve()
    load_start = [round(x, 1) for x in os.getloadavg()]
    print(
        f"GitHub path: {args.tests} tests x {len(generate.BACKENDS)} backends, "
        f"{args.dashboards} dashboards, legs {args.legs}, set-ups {args.setups}, transport "
        f"{args.transport}, latency "
        f"{args.latency[0] * 1000:.0f}-{args.latency[1] * 1000:.0f} ms, targets "
        f"{args.targets}, {'no limits' if args.no_limits else 'GitHub limits'}, cap "
        f"{args.cap:.0f} s",
        flush=True,
    )
    seed, seed_info = seed_repository(
        args, work, args.seed_targets or args.targets, transport=args.transport
    )
    print(f"  seeded: {json.dumps(seed_info)}", flush=True)
    plans, splits = plan(args, work)
    names = [
        (f"{count} {setup}", count, setup) for setup in args.setups.split(",") for count in plans
    ]
    rounds: dict[str, list[Json]] = {name: [] for name, _, _ in names}
    for round_no in range(args.repeat):
        for name, count, setup in names:
            tag = f"{count}-{setup}-r{round_no}"
            result = run_config(
                args, work, seed, plans[count], setup=setup, targets=args.targets, tag=tag
            )
            print_config(name, result)
            rounds[name].append(result)
    configs = {name: medians(rs) for name, rs in rounds.items()}
    print_table(configs)
    report: Json = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(load_start),
        "settings": {
            "tests_per_backend": args.tests,
            "backends": list(generate.BACKENDS),
            "dashboards": args.dashboards,
            "latency_s": list(args.latency),
            "targets": args.targets,
            "seed_targets": args.seed_targets or args.targets,
            "setups": args.setups.split(","),
            "transport": args.transport,
            "rerun": args.rerun,
            "limits": "none (recorded only)" if args.no_limits else "GitHub's, for a GITHUB_TOKEN",
            "faults": {"rate": args.faults, "landed_share_of_writes": args.landed},
            "cap_s": args.cap,
            "repeat": args.repeat,
            "splits": splits,
            "client": "production make_client (no pause between requests; our retries wait "
            "what GitHub asks), one process per leg, all started at once",
        },
        "seed": seed_info,
        "configs": configs,
        "run_wall_over_single_leg": ratios(configs),
        "rounds_run_wall_s": {n: [r["run_wall_s"] for r in rs] for n, rs in rounds.items()},
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(f"  whole run / single leg: {json.dumps(report['run_wall_over_single_leg'])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
