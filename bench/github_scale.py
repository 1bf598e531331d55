"""Benchmark the GitHub path at Ivy's scale: concurrent matrix legs against the project's stand-in.

Issue 9 item 7. Ivy's shape: 7,000 tests x 4 backends in ~100 dashboards (``bench/generate.py``
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
behind ``tests/github/git_server.py``, seeded the same way), which the legs reach with git's
own protocol; ``--transport rest`` keeps it on the REST stand-in. Then every leg of run 101 (other
outcomes) starts at once as its own ``python entrypoint.py update`` process, with its own
token, so the fake's request log attributes each request to its leg. ivy-matrix runs exactly
as in production: ``make_client``'s PyGithub throttle is on (0.25 s between requests, 1 s
between writes), since the CLI has no way to turn it off. The fake answers each request after a
uniform random latency (default 20-80 ms). A configuration still running after ``--cap``
seconds is stopped (its legs killed) and reported as "stopped at cap" with its partial figures;
a leg that exits non-zero makes it "legs failed".

Figures per configuration: wall time per leg (median, max) and of the whole run; requests and
bytes sent/received per leg (median, max); commit tries per leg (ref updates, rejected ones
counted: max and mean); content-creating requests (POST/PATCH/PUT/DELETE) in the busiest
sliding minute, in the whole run, and per hour; cells lost (each leg's cases must be linked to
its job in the final dashboards on the branch) and duplicate dashboard issues (open issues per
dashboard marker, with ``--targets branch,issue``). Speed is reported, never asserted.

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
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import generate

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))  # the stand-in lives in tests/, beside the product
import git_side  # noqa: E402  -- after the path entry

from tests.github.budget import GITHUB_TOKEN, UNLIMITED  # noqa: E402
from tests.github.fake_server import FakeGitHub, RequestRecord  # noqa: E402
from tests.github.git_server import GitRequest, GitServer  # noqa: E402

PYTHON = sys.executable
ENTRYPOINT = ROOT / "entrypoint.py"
REPOSITORY = "acme/widgets"
BRANCH = "ivy-matrix"
SEED_RUN, RUN = 100, 101
JOB_BASE = 2_000_000
BACKEND_FROM_PATH = r"(?P<backend>[^/]+)/[^/]+\.xml$"
REF_WRITE = re.compile(r"/git/refs(/|$)")
MARKER = re.compile(r"<!-- ivy-matrix:dashboard=(.+?) -->")
WRITE_METHODS = ("POST", "PATCH", "PUT", "DELETE")
# The fake's state that a pre-seeded repository consists of (copied into each configuration).
SEEDED = ("blobs", "trees", "commits", "refs", "issues", "comments", "labels")
Json = dict[str, Any]


@dataclass(frozen=True)
class Leg:
    """One matrix job: a backend, a shard of its tests (one JUnit file), its token and job."""

    index: int
    backend: str
    shard: int
    path: Path
    cases: int
    cells: int  # distinct (module, test function): one dashboard row, so one cell of this leg

    @property
    def token(self) -> str:
        return f"leg-{self.index:03d}"

    @property
    def job_id(self) -> int:
        return JOB_BASE + self.index


@dataclass
class LegRun:
    leg: Leg
    started: float
    ended: float | None = None
    code: int | None = None
    cpu_s: float | None = None  # user + system time of the leg's process (os.wait4)
    log: Path | None = None
    records: list[RequestRecord] = field(default_factory=list)
    git_records: list[GitRequest] = field(default_factory=list)


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


def cli_env() -> dict[str, str]:
    """Our environment without GitHub or ivy-matrix settings: the command line says everything."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "IVY_MATRIX_", "RUNNER_"))
    }


def update_command(
    *,
    junit: str,
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
        "--junit",
        junit,
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


def seed_repository(args: argparse.Namespace, work: Path, targets: str) -> tuple[Json, Json]:
    """One full update of every backend (run 100) into an empty stand-in; return its state."""
    manifest = ensure_set(
        work, tests=args.tests, dashboards=args.dashboards, shards=1, outcome_seed=1
    )
    seed_dir = work / "legs" / "seed"
    shutil.rmtree(seed_dir, ignore_errors=True)
    seed_dir.mkdir(parents=True)
    # Seeding arranges the repository a run starts from: its spend is not measured.
    git = GitServer() if args.transport == "git" else None
    with FakeGitHub(limits=UNLIMITED) as fake, git or contextlib.nullcontext():
        fake.configure(keep_bodies=False)
        cmd = update_command(
            junit=f"{manifest['root']}/**/*.xml",
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
        if git is not None:
            files = git.files(BRANCH)
            state["git_repo"] = str(git_side.keep_seed(git, work))
        else:
            files = fake.files(BRANCH)
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


def stand_ins(args: argparse.Namespace, seed: Json) -> tuple[FakeGitHub, GitServer | None]:
    """A fresh REST stand-in (and git server, with ``--transport git``), pre-seeded."""
    fake = FakeGitHub(limits=UNLIMITED if args.no_limits else GITHUB_TOKEN)
    for name in SEEDED:
        setattr(fake, name, _copy(seed[name]))
    # Seeded issues and comments keep their numbers; new ones continue after them.
    comment_ids = [c["id"] for cs in fake.comments.values() for c in cs]
    fake._next_issue = max(fake.issues, default=0) + 1  # noqa: SLF001  -- see above
    fake._next_comment = max(comment_ids, default=fake._next_comment - 1) + 1  # noqa: SLF001
    fake.configure(latency=tuple(args.latency), keep_bodies=False, seed=args.seed)
    if args.faults:
        fake.configure(fail_rate=args.faults, fail_kinds=("502", "503"))
    if args.transport != "git":
        return fake, None
    git = git_side.seeded_server(
        Path(seed["git_repo"]), latency=tuple(args.latency), seed=args.seed
    )
    git.fail_rate = args.faults
    return fake, git


def run_config(
    args: argparse.Namespace, work: Path, seed: Json, legs: list[Leg], *, targets: str, tag: str
) -> Json:
    """Start every leg at once against fresh, pre-seeded stand-ins; measure until done or cap.
    With ``--rerun``, every leg then runs again with the same results: its writes are counted
    (an identical re-run should make none)."""
    fake, git = stand_ins(args, seed)
    root = work / "legs" / tag
    shutil.rmtree(root, ignore_errors=True)
    with fake, git or contextlib.nullcontext():
        runs, wall = start_legs(args, fake, git, legs, root, targets=targets)
        result = collect(fake, git, runs, seed, wall=wall, targets=targets)
        if args.rerun:
            rest_before, git_before = len(fake.requests), len(git.requests) if git else 0
            again, _ = start_legs(args, fake, git, legs, root / "rerun", targets=targets)
            rest = fake.requests[rest_before:]
            pushes = [r for r in (git.requests[git_before:] if git else []) if r.is_push]
            result["rerun"] = {
                "failed": sum(r.code != 0 for r in again),
                "rest_requests": len(rest),
                "rest_writes": sum(r.method in WRITE_METHODS for r in rest),
                "git_pushes": len(pushes),
            }
        return result


def start_legs(
    args: argparse.Namespace,
    fake: FakeGitHub,
    git: GitServer | None,
    legs: list[Leg],
    root: Path,
    *,
    targets: str,
) -> tuple[list[LegRun], float]:
    """Every leg's process, started at once; (the legs, the run's wall) once all ended."""
    procs: list[subprocess.Popen[bytes]] = []
    runs: list[LegRun] = []
    start = time.perf_counter()
    for leg in legs:
        leg_dir = root / f"{leg.index:03d}"
        leg_dir.mkdir(parents=True)
        cmd = update_command(
            junit=str(leg.path),
            backend_args=["--backend", leg.backend],
            api_url=fake.base_url,
            token=leg.token,
            run_id=RUN,
            job_id=leg.job_id,
            server_url=git.url if git else None,
        )
        cmd += ["--targets", targets, "--store", str(leg_dir / "store")]
        if args.matrix:
            # The 1-leg reference is one leg of a matrix of 4 x single-shards legs.
            size = len(legs) if len(legs) > 1 else 4 * args.single_shards
            cmd += ["--matrix-size", str(size), "--matrix-index", str(leg.index)]
        log = leg_dir / "log.txt"
        with log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    cmd, cwd=leg_dir, env=cli_env(), stdout=out, stderr=subprocess.STDOUT
                )
            )
        runs.append(LegRun(leg, started=time.perf_counter() - start, log=log))
    return runs, wait_for(runs, procs, start=start, cap=args.cap)


def wait_for(
    runs: list[LegRun], procs: list[subprocess.Popen[bytes]], *, start: float, cap: float
) -> float:
    """Reap the legs as they end; kill those still running after ``cap`` s; the run's wall."""
    deadline = start + cap
    while any(r.code is None for r in runs) and time.perf_counter() < deadline:
        time.sleep(0.05)
        for run, proc in zip(runs, procs, strict=True):
            if run.code is None:
                reap(run, proc, time.perf_counter() - start)
    for run, proc in zip(runs, procs, strict=True):
        if run.code is None:
            proc.kill()
            proc.wait()
    return time.perf_counter() - start


def collect(
    fake: FakeGitHub,
    git: GitServer | None,
    runs: list[LegRun],
    seed: Json,
    *,
    wall: float,
    targets: str,
) -> Json:
    """The figures of one configuration, from both stand-ins' records."""
    with fake.lock:
        records = list(fake.requests)
        issues = list(fake.issues.values())
    git_records: list[GitRequest] = []
    if git is not None:
        git_records = list(git.requests)
        files = git.files(BRANCH)
    else:
        files = fake.files(BRANCH)
    by_token: dict[str, list[RequestRecord]] = {}
    for record in records:
        token = (record.authorization or "").split(" ")[-1]
        by_token.setdefault(token, []).append(record)
    for run in runs:
        run.records = by_token.get(run.leg.token, [])
        run.git_records = [r for r in git_records if r.token == run.leg.token]
    result = summarize(
        runs, records, files, issues, set(seed["issues"]), wall=wall, targets=targets
    )
    pushes = git_side.pushes_per_minute(git_records)
    result["git"] = {
        "requests": len(git_records),
        "pushes": len(pushes),
        "pushes_peak_per_minute": peak_per_window(pushes, 60.0),
        "sent_mb_total": round(sum(r.bytes_in for r in git_records) / 1e6, 2),
        "failed_5xx": sum(r.status >= 500 for r in git_records),
    }
    return result


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


def summarize(
    runs: list[LegRun],
    records: list[RequestRecord],
    files: dict[str, bytes],
    issues: list[Json],
    seeded_issues: set[int],
    *,
    wall: float,
    targets: str,
) -> Json:
    finished = [r for r in runs if r.code is not None]
    failed = [r for r in finished if r.code != 0]
    per_leg = [leg_figures(r) for r in runs]
    writes = sorted(r.at for r in records if r.method in WRITE_METHODS)
    peak = peak_per_window(writes, 60.0)
    result: Json = {
        "status": (
            "stopped at cap" if len(finished) < len(runs) else "legs failed" if failed else "ok"
        ),
        "legs": len(runs),
        "cases_per_leg": median_max([r.leg.cases for r in runs]),
        "finished": len(finished),
        "failed": len(failed),
        "failures": [tail(r.log) for r in failed[:3]],
        "run_wall_s": round(max((r.ended or wall) for r in runs), 2),
        "leg_wall_s": median_max([(r.ended - r.started) for r in finished if r.ended]),
        "leg_cpu_s": median_max([r.cpu_s for r in finished if r.cpu_s is not None]),
        "requests": len(records),
        "requests_per_leg": median_max([f["requests"] for f in per_leg]),
        "git_requests_per_leg": median_max([f["git_requests"] for f in per_leg]),
        "all_requests_per_leg": median_max([f["all_requests"] for f in per_leg]),
        "all_requests_per_leg_mean": round(statistics.fmean(f["all_requests"] for f in per_leg), 2)
        if per_leg
        else None,
        "all_sent_kb_per_leg": median_max([f["all_sent_kb"] for f in per_leg]),
        "content_creating_per_leg_mean": round(statistics.fmean(f["writes"] for f in per_leg), 2)
        if per_leg
        else None,
        "sent_kb_per_leg": median_max([f["sent_kb"] for f in per_leg]),
        "received_kb_per_leg": median_max([f["received_kb"] for f in per_leg]),
        "sent_mb_total": round(sum(r.bytes_in for r in records) / 1e6, 2),
        "commit_tries": {
            "max": max((f["tries"] for f in per_leg), default=0),
            "mean": round(statistics.fmean(f["tries"] for f in per_leg), 2) if per_leg else 0,
            "rejected_total": sum(f["rejected"] for f in per_leg),
        },
        "content_creating": {
            "total": len(writes),
            "peak_per_minute": peak,
            "per_hour_hourly_runs": len(writes),
            "per_hour_back_to_back": round(len(writes) / wall * 3600) if wall else None,
        },
        "lost_cells": lost_cells(runs, files),
    }
    if "issue" in targets:
        result["issues"] = issue_figures(issues, seeded_issues)
    result["per_leg"] = per_leg
    return result


COMMITTED = re.compile(r"committed \d+ file\(s\) to branch .*\((?:revision \d+, )?(\d+) attempt")


def leg_figures(run: LegRun) -> Json:
    refs = [r for r in run.records if r.method in {"POST", "PATCH"} and REF_WRITE.search(r.path)]
    git = git_side.leg_git_figures(run.git_records)
    log = run.log.read_text(errors="replace") if run.log and run.log.exists() else ""
    commits = [int(n) for n in COMMITTED.findall(log)]
    return {
        "leg": run.leg.token,
        "backend": run.leg.backend,
        "shard": run.leg.shard,
        "cases": run.leg.cases,
        "exit": run.code,
        "wall_s": round(run.ended - run.started, 2) if run.ended is not None else None,
        "cpu_s": round(run.cpu_s, 2) if run.cpu_s is not None else None,
        "requests": len(run.records),
        "writes": sum(r.method in WRITE_METHODS for r in run.records),
        "sent_kb": round(sum(r.bytes_in for r in run.records) / 1000, 1),
        "received_kb": round(sum(r.bytes_out for r in run.records) / 1000, 1),
        # REST: the ref writes; git: the branch commits the leg's log reports (0: its results
        # were folded by another leg), counting every compare-and-swap try of each.
        "tries": sum(commits) if run.git_records else len(refs),
        "rejected": sum(r.status == 422 for r in refs),
        **git,
        "all_requests": len(run.records) + git["git_requests"],
        "all_sent_kb": round(sum(r.bytes_in for r in run.records) / 1000 + git["git_sent_kb"], 1),
    }


def median_max(values: list[float]) -> Json:
    if not values:
        return {"median": None, "max": None}
    return {"median": round(statistics.median(values), 2), "max": round(max(values), 2)}


def peak_per_window(times: list[float], window: float) -> int:
    """The most events in any window of ``window`` seconds (times sorted)."""
    best, first = 0, 0
    for last, moment in enumerate(times):
        while moment - times[first] > window:
            first += 1
        best = max(best, last - first + 1)
    return best


def lost_cells(runs: list[LegRun], files: dict[str, bytes]) -> Json:
    """Cells of each leg not linked to its job in the branch's dashboards (the union must hold).

    A leg fills one cell per row it has results for (its backend's column); the dashboards on
    the branch link each cell's newest result to the job that produced it, so a leg whose N
    cells all landed is linked N times. Counting links in the markdown keeps this independent of the state format.
    """
    text = "\n".join(d.decode(errors="replace") for p, d in files.items() if p.endswith(".md"))
    links = Counter(re.findall(rf"/actions/runs/{RUN}/job/(\d+)\"", text))
    lost = {
        run.leg.token: run.leg.cells - links.get(str(run.leg.job_id), 0)
        for run in runs
        if links.get(str(run.leg.job_id), 0) != run.leg.cells
    }
    return {
        "expected": sum(r.leg.cells for r in runs),
        "found": sum(links.get(str(r.leg.job_id), 0) for r in runs),
        "lost": sum(max(v, 0) for v in lost.values()),
        "legs_short": lost,
    }


def issue_figures(issues: list[Json], seeded: set[int]) -> Json:
    open_by_marker: Counter[str] = Counter()
    created = closed = 0
    for issue in issues:
        found = MARKER.search((issue.get("body") or "").split("\n", 1)[0])
        if found is None:
            continue
        if issue["number"] not in seeded:
            created += 1
        if issue.get("state") == "open":
            open_by_marker[found.group(1)] += 1
        elif issue["number"] not in seeded:
            closed += 1
    return {
        "dashboards_with_issue": len(open_by_marker),
        "duplicates_open": sum(n - 1 for n in open_by_marker.values()),
        "created_in_run": created,
        "created_then_closed": closed,
    }


def tail(log: Path | None) -> str:
    if log is None or not log.exists():
        return ""
    return "\n".join(log.read_text(errors="replace").strip().splitlines()[-6:])


# --- report ----------------------------------------------------------------------------------


def print_config(name: str, r: Json) -> None:
    tries = r["commit_tries"]
    cc = r["content_creating"]
    print(
        f"  {name:>9}: {r['status']:<10} legs {r['finished']}/{r['legs']} (failed {r['failed']})"
        f"  run {r['run_wall_s']:.1f} s  leg {r['leg_wall_s']['median']} / {r['leg_wall_s']['max']} s"
        f"  REST req/leg {r['requests_per_leg']['median']} / {r['requests_per_leg']['max']}"
        f"  git req/leg {r['git_requests_per_leg']['median']} / {r['git_requests_per_leg']['max']}"
        f"  sent KB/leg {r['all_sent_kb_per_leg']['median']} / {r['all_sent_kb_per_leg']['max']}"
        f"  tries max {tries['max']} mean {tries['mean']} (rejected {tries['rejected_total']})"
        f"  writes/min peak {cc['peak_per_minute']}, run {cc['total']}"
        f"  lost {r['lost_cells']['lost']}"
        + (f"  dup issues {r['issues']['duplicates_open']}" if "issues" in r else ""),
        flush=True,
    )


def medians(rounds: list[Json]) -> Json:
    """The round whose whole-run wall time is the median (all its figures are kept together)."""
    ordered = sorted(rounds, key=lambda r: r["run_wall_s"])
    return ordered[(len(ordered) - 1) // 2]


def ratios(configs: Json) -> Json:
    ref = configs.get("1")
    if ref is None or ref["status"] != "ok":
        return {}
    base = ref["run_wall_s"]
    return {
        name: round(c["run_wall_s"] / base, 2)
        for name, c in configs.items()
        if name != "1" and base
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=7000, help="tests per backend (rows)")
    parser.add_argument("--dashboards", type=int, default=100)
    parser.add_argument("--legs", default="1,4,32,128", help="comma-separated leg counts")
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
        "--transport",
        choices=("git", "rest"),
        default="git",
        help="the branch over git's protocol (a git http-backend server) or the REST API",
    )
    parser.add_argument(
        "--faults",
        type=float,
        default=0.0,
        help="share of requests answered 5xx (git: half of them after the work landed)",
    )
    parser.add_argument(
        "--seed-targets",
        help="--targets of the seeding update (default: --targets); 'branch' with legs that "
        "also publish issues makes the legs create every dashboard's issue at once",
    )
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="legs pass --matrix-size/--matrix-index: they queue their results in the inbox, "
        "one leg at a time folds them",
    )
    parser.add_argument(
        "--no-limits",
        action="store_true",
        help="the stand-in records what legs spend but refuses nothing (default: GitHub's limits)",
    )
    parser.add_argument("--cap", type=float, default=600, help="seconds before legs are stopped")
    parser.add_argument(
        "--rerun", action="store_true", help="run every leg again, same results: count writes"
    )
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
    leg_counts = [int(n) for n in args.legs.split(",") if n]
    work = args.work.resolve()
    print(
        f"GitHub path: {args.tests} tests x {len(generate.BACKENDS)} backends, "
        f"{args.dashboards} dashboards, legs {leg_counts}, latency {args.latency[0] * 1000:.0f}-"
        f"{args.latency[1] * 1000:.0f} ms, targets {args.targets}, cap {args.cap:.0f} s",
        flush=True,
    )
    seed, seed_info = seed_repository(args, work, args.seed_targets or args.targets)
    print(f"  seeded: {json.dumps(seed_info)}", flush=True)
    plans: dict[str, list[Leg]] = {}
    splits: Json = {}
    for count in leg_counts:
        backends, shards, take = split_for(count, single_shards=args.single_shards)
        manifest = ensure_set(
            work, tests=args.tests, dashboards=args.dashboards, shards=shards, outcome_seed=2
        )
        plans[str(count)] = legs_of(manifest, backends, take)
        splits[str(count)] = {"backends": list(backends), "shards_per_backend": shards}
    rounds: dict[str, list[Json]] = {name: [] for name in plans}
    for round_no in range(args.repeat):
        for name, legs in plans.items():
            result = run_config(
                args, work, seed, legs, targets=args.targets, tag=f"{name}-r{round_no}"
            )
            print_config(name, result)
            rounds[name].append(result)
    configs = {name: medians(rs) for name, rs in rounds.items()}
    report: Json = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "settings": {
            "tests_per_backend": args.tests,
            "backends": list(generate.BACKENDS),
            "dashboards": args.dashboards,
            "latency_s": list(args.latency),
            "targets": args.targets,
            "transport": args.transport,
            "faults": args.faults,
            "matrix": args.matrix,
            "rerun": args.rerun,
            "seed_targets": args.seed_targets or args.targets,
            "cap_s": args.cap,
            "repeat": args.repeat,
            "splits": splits,
            "client": "production make_client: PyGithub throttle on (0.25 s between requests, "
            "1 s between writes), one process per leg, all started at once",
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
