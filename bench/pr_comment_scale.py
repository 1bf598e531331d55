"""Benchmark the pull-request comment at Ivy's scale: every leg of a pull request at once.

Issue 14 item 4 (and issue 15's comment cases): 7,000 tests x 4 backends in ~100 dashboards
(``bench/generate.py``), 32 legs = 4 backends x 8 shards of contiguous modules, one
``python entrypoint.py update --targets pr-comment,branch`` process per leg, all started at
once, against the project's GitHub stand-in (``tests/github/fake_server.py``) enforcing
GitHub's limits for a ``GITHUB_TOKEN`` (``tests/github/budget.py``: 1,000 requests an hour, 80
content-creating requests a minute and 500 an hour, shared by every job of the repository).

- **Baseline**: the stand-in is seeded with the dashboard branch of one full default-branch
  run (run 100, ``bench/github_scale.py``'s ``seed_repository``).
- **The pull request's results** (run 101): the same tests with other outcomes, and a fifth of
  the passing cases turned into failures, so that thousands of cells fail (a pull request that
  breaks a lot is the comment's worst case).
- **Faults**: ``--faults`` of all requests answer 502, 503, 403 or 429 as GitHub sends them,
  and ``--landed`` of the faults on writes land before their 502; comment edits take ``--slow-edits``
  seconds (GitHub's edits of long comments can take seconds), on top of ``--latency``.
- **Checks**: exactly one comment of ours on the pull request at the end (by its marker and
  author), and its per-backend counts equal ``ivy-matrix compare --json`` on all the legs'
  results (run afterwards against the same stand-in, its requests not counted).
- **Figures**: per leg, REST requests and content-creating requests (median, max, mean) and
  requests refused for a rate limit; for the run, comment writes, content-creating requests
  in the busiest minute, and the whole run's wall time. Requests are attributed to legs by
  token (each leg has its own; the budget is the repository's, shared).

I/O: writes generated data and leg folders under ``--work`` (default ``bench/out/pr-comment``).
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
import zlib
from pathlib import Path
from typing import Any

import generate
import github_scale as scale
from children import cli_env
from github_figures import FAN_IN, LEGS, RUN, Leg, LegRun, median_max

sys.path.insert(0, str(scale.ROOT))  # the stand-in lives in tests/, beside the product

from tests.github.budget import UNLIMITED, peak_per_minute
from tests.github.fake_server import BOT_LOGIN, FakeGitHub

Json = dict[str, Any]
COMMENT_EDIT = r"/issues/comments/\d+$"
COUNT_LINE = re.compile(r"^- \*\*(?P<backend>[^*]+)\*\*: (?P<said>.*)$", re.MULTILINE)
# The parts of a path that name one object (a sha, a ref's own name, a number), folded so that
# requests of one kind are counted together.
PATH_PARTS = (
    (re.compile(r"[0-9a-f]{40}"), "{sha}"),
    (re.compile(r"(/refs?/)(ivy-matrix|heads)/.*"), r"\1\2/{name}"),
    (re.compile(r"/\d+(?=/|$)"), "/{n}"),
)
PASSING_CASE = re.compile(r"^(<testcase [^>]*?) />$", re.MULTILINE)


def failing_set(manifest: Json, every: int) -> Json:
    """The run's JUnit with one passing case in ``every`` failed as well (chosen by a hash of
    the case, so every run of the benchmark fails the same ones)."""
    root = Path(manifest["root"])
    out = root.with_name(root.name + f"-fail{every}")
    if not (out / "manifest.json").exists():

        def broken(found: re.Match[str]) -> str:
            if zlib.crc32(found.group(1).encode()) % every:
                return found.group(0)
            return f'{found.group(1)}><failure message="AssertionError: broken">tb</failure></testcase>'

        for entry in manifest["files"]:
            text = (root / entry["path"]).read_text(encoding="utf-8")
            target = out / entry["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(PASSING_CASE.sub(broken, text), encoding="utf-8")
        (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return {**manifest, "root": str(out)}


def event_file(path: Path, number: int) -> Path:
    payload = {
        "pull_request": {
            "number": number,
            "state": "open",
            "head": {"sha": "feedface" * 5, "repo": {"full_name": scale.REPOSITORY}},
            "base": {"sha": "c0ffee00" * 5, "repo": {"full_name": scale.REPOSITORY}},
        },
        "repository": {"default_branch": "main"},
    }
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def shown_counts(body: str) -> dict[str, dict[str, int]]:
    """The per-backend counts a comment body states (only the verdicts it names): the list
    above the first section (failure groups below it are bold list items too)."""
    counts: dict[str, dict[str, int]] = {}
    for found in COUNT_LINE.finditer(body.split("\n### ", 1)[0]):
        said = found.group("said")
        parts = [] if said == "all passing" else said.split(", ")
        counts[found.group("backend")] = {
            verdict: int(number) for number, verdict in (p.split(" ", 1) for p in parts)
        }
    return counts


def compare_counts(
    fake: FakeGitHub, pr_root: Path, work: Path, number: int, transport: list[str]
) -> Json:
    """``ivy-matrix compare --json`` on every leg's results against the dashboard branch."""
    out = work / "compare.json"
    cmd = [
        scale.PYTHON, str(scale.ENTRYPOINT), "compare", "--junit", f"{pr_root}/**/*.xml",
        "--backend-from-path", scale.BACKEND_FROM_PATH, "--repository", scale.REPOSITORY,
        "--run-id", str(RUN), "--api-url", fake.base_url, "--token", "compare",
        "--branch", scale.BRANCH, "--targets", "branch", "--pr", str(number), "--json", str(out), *transport,
    ]  # fmt: skip
    done = subprocess.run(cmd, cwd=work, env=cli_env(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"compare failed ({done.returncode}):\n{done.stderr[-3000:]}")
    document: Json = json.loads(out.read_text(encoding="utf-8"))
    return {
        backend: {verdict: n for verdict, n in counts.items() if n}
        for backend, counts in document["backends"].items()
    }


def start_legs(
    fake: FakeGitHub, jobs: list[Leg], root: Path, event: Path, transport: list[str]
) -> list[tuple[LegRun, subprocess.Popen[bytes]]]:
    """Start every job's ``update`` at once: the legs, or the fan-in job alone (index -1,
    reading the leg files of its ``path``)."""
    started = []
    begin = time.perf_counter()
    env = cli_env() | {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}
    for leg in jobs:
        leg_dir = root / (f"{leg.index:03d}" if leg.index >= 0 else "fan-in")
        leg_dir.mkdir(parents=True)
        fan_in = leg.index < 0
        cmd = scale.update_command(
            junit=[] if fan_in else [str(leg.path)],
            backend_args=["--legs", str(leg.path)] if fan_in else ["--backend", leg.backend],
            api_url=fake.base_url,
            token=leg.token,
            run_id=RUN,
            job_id=leg.job_id,
        )
        cmd += ["--targets", "pr-comment,branch", "--store", str(leg_dir / "store"), *transport]
        log = leg_dir / "log.txt"
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, cwd=leg_dir, env=env, stdout=out, stderr=subprocess.STDOUT)
        started.append((LegRun(leg, started=time.perf_counter() - begin, log=log), proc))
    return started


def run_once(args: argparse.Namespace, work: Path, seed: Json, legs: list[Leg]) -> Json:
    """Every leg of the pull request at once against a fresh, pre-seeded stand-in (and, with
    ``--transport git``, a git remote holding the branch)."""
    fake = scale.seeded_fake(args, seed)
    git = scale.seeded_git(args, seed)
    transport = ["--branch-transport", "rest"]
    if git is not None:
        transport = ["--server-url", git.url, "--branch-transport", "git"]
    number = int(fake.add_issue(scale.REPOSITORY, title="a change", pull_request=True)["number"])
    slow = (("PATCH", COMMENT_EDIT, *args.slow_edits),)
    fake.configure(slow=slow)  # faults and latency: seeded_fake, from --faults and --landed
    root = work / "legs" / "run"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    begin = time.perf_counter()
    jobs = legs
    if args.setup == FAN_IN:
        # The legs collect their files at once with no network; then the fan-in job comments.
        server = transport[:2] if git else []
        scale.collect_legs(args, legs, root, start=begin, extra=server)
        cases = sum(leg.cases for leg in legs)
        jobs = [Leg(-1, "all", 0, root / "leg-files", cases, 0)]
    with fake, git or contextlib.nullcontext():
        event = event_file(work / "event.json", number)
        started = start_legs(fake, jobs, root, event, transport)
        wall = scale.wait_for(started, start=begin, cap=args.cap)
        fake.configure(fail_rate=0.0, slow=(), latency=(0.0, 0.0), limits=UNLIMITED)
        with fake.lock:
            records = list(fake.requests)
            comments = list(fake.comments.get(number, []))
        git_requests = (
            [] if git is None else [len(git.requests_of(r.leg.token)) for r, _ in started]
        )
        if git is not None:
            git.fail_rate, git.latency = 0.0, (0.0, 0.0)
        pr_root = Path(legs[0].path).parents[1]
        expected = compare_counts(fake, pr_root, work, number, transport)
    result = figures(started, records, comments, expected, number=number, wall=wall)
    if git is not None:
        result["git_requests_per_leg"] = median_max([float(n) for n in git_requests])
    return result


def by_path(records: list[Any], legs: int) -> list[Json]:
    """Where the legs' requests went: per method and path (numbers, shas and the ref's or
    comment's own names folded), requests per leg, refused ones and content-creating ones."""
    spent: dict[str, list[int]] = {}
    for record in records:
        path = record.path.split(scale.REPOSITORY, 1)[-1]
        for part, folded in PATH_PARTS:
            path = part.sub(folded, path)
        row = spent.setdefault(f"{record.method} {path}", [0, 0])
        row[0] += 1
        row[1] += record.status in {403, 429}
    ranked = sorted(spent.items(), key=lambda item: -item[1][0])
    return [
        {"request": name, "per_leg": round(n / legs, 2), "refused": refused}
        for name, (n, refused) in ranked
    ]


def figures(
    started: list[tuple[LegRun, subprocess.Popen[bytes]]],
    records: list[Any],
    comments: list[Json],
    expected: Json,
    *,
    number: int,
    wall: float,
) -> Json:
    by_token: dict[str, list[Any]] = {}
    for record in records:
        by_token.setdefault((record.authorization or "").split(" ")[-1], []).append(record)
    runs = [run for run, _ in started]
    per_leg = [by_token.get(run.leg.token, []) for run in runs]
    requests = [float(len(r)) for r in per_leg]
    content = [float(sum(x.write for x in r)) for r in per_leg]
    leg_records = [x for r in per_leg for x in r]
    ours = [
        c
        for c in comments
        if c["body"].startswith(f"<!-- ivy-matrix:pr={number} -->")
        and c.get("login", BOT_LOGIN) == BOT_LOGIN
    ]
    shown = shown_counts(ours[0]["body"]) if len(ours) == 1 else {}
    edits = [x for x in leg_records if x.write and re.search(r"/issues/(\d+/)?comments", x.path)]
    return {
        "legs": len(runs),
        "legs_failed": sum(run.code != 0 for run in runs),
        "run_wall_s": round(wall, 1),
        "leg_wall_s": median_max([(run.ended or wall) - run.started for run in runs]),
        "rest_requests_per_leg": median_max(requests) | {"mean": statistics.mean(requests)},
        "content_requests_per_leg": median_max(content) | {"mean": statistics.mean(content)},
        "refused_for_limits": sum(x.status in {403, 429} for x in leg_records),
        "requests_all_legs": sum(requests),
        "content_all_legs": sum(content),
        "content_peak_per_minute": peak_per_minute(x.at for x in leg_records if x.write),
        "by_path": by_path(leg_records, len(runs)),
        "comment_writes": len(edits),
        "comments_of_ours": len(ours),
        "failing_cells": sum(
            n for counts in expected.values() for v, n in counts.items() if v != "fixed"
        ),
        "counts_equal_compare": shown == expected,
        "comment_counts": shown,
        "compare_counts": expected,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=7000, help="tests per backend (rows)")
    parser.add_argument("--dashboards", type=int, default=100)
    parser.add_argument("--legs", type=int, default=32, help="a multiple of 4 (backend x shard)")
    parser.add_argument("--latency", type=float, nargs=2, default=(0.02, 0.08))
    parser.add_argument("--slow-edits", type=float, nargs=2, default=(0.5, 5.0))
    parser.add_argument("--faults", type=float, default=0.1, help="share of requests that fail")
    parser.add_argument("--landed", type=float, default=0.3, help="share of write faults landed")
    parser.add_argument("--fail-every", type=int, default=5, help="one passing case in N fails")
    parser.add_argument(
        "--setup",
        choices=(LEGS, FAN_IN),
        default=LEGS,
        help="legs: every leg runs update (racing); fan-in: legs collect, one job comments",
    )
    parser.add_argument(
        "--transport",
        choices=("git", "rest"),
        default="git",
        help="how the legs read the dashboard branch (git: a git remote on loopback holds it)",
    )
    parser.add_argument("--no-limits", action="store_true", help="record spend, refuse nothing")
    parser.add_argument("--cap", type=float, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=scale.BENCH / "out" / "pr-comment")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--quick", action="store_true", help="tiny: 8 tests, 4 legs, no faults")
    args = parser.parse_args(argv)
    if args.quick:
        args.tests, args.dashboards, args.legs, args.cap = 8, 1, 4, 120
        args.latency, args.slow_edits, args.faults = (0.0, 0.0), (0.0, 0.0), 0.0
    work = args.work.resolve()
    seed, seed_info = scale.seed_repository(args, work, "branch", transport=args.transport)
    backends, shards, take = scale.split_for(args.legs, single_shards=8)
    manifest = scale.ensure_set(
        work, tests=args.tests, dashboards=args.dashboards, shards=shards, outcome_seed=2
    )
    legs = scale.legs_of(failing_set(manifest, args.fail_every), backends, take)
    result = run_once(args, work, seed, legs)
    report: Json = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "settings": {
            "tests_per_backend": args.tests,
            "backends": list(generate.BACKENDS),
            "dashboards": args.dashboards,
            "legs": args.legs,
            "setup": args.setup,
            "branch_transport": args.transport,
            "latency_s": list(args.latency),
            "slow_edits_s": list(args.slow_edits),
            "faults": {"rate": args.faults, "landed_share_of_writes": args.landed},
            "limits": "none (recorded)" if args.no_limits else "GitHub's for a GITHUB_TOKEN",
        },
        "seed": seed_info,
        "result": result,
    }
    print(json.dumps(report, indent=1), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    ok = result["comments_of_ours"] == 1 and result["counts_equal_compare"]
    return 0 if ok and not result["legs_failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
