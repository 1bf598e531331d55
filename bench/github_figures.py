"""The figures of bench/github_scale.py: per leg, per run, and beside GitHub's limits.

Pure apart from reading leg logs and printing the report. ``summarize`` turns what the
stand-in logged and held at the end of one configuration into the report's JSON; the spend
and the limits come from the stand-in's budget (``tests/github/budget.py``), so a run's
figures are counted the way the tests count them.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ivy_matrix.state.statefile import join_columns, load_state
from ivy_matrix.state.trend import TREND_NAME, load_trend
from ivy_matrix.views.dashboards import render_files
from ivy_matrix.views.style import Style
from tests.github.budget import GITHUB_TOKEN, Spend, peak_per_minute
from tests.github.fake_server import RequestRecord
from tests.github.git_server import GitRequest

RUN = 101
SEED_RUN = 100  # the run the branch was seeded with, by job 1 (github_scale.py)
JOB_BASE = 2_000_000
REF_WRITE = re.compile(r"/git/refs(/|$)")
MARKER = re.compile(r"<!-- ivy-matrix:dashboard=(.+?) -->")
WRITE_METHODS = ("POST", "PATCH", "PUT", "DELETE")
LEGS, FAN_IN = "legs", "fan-in"
Json = dict[str, Any]


@dataclass(frozen=True)
class Leg:
    """One matrix job: a backend, a shard of its tests (one JUnit file), its token and job.

    Index -1 is the fan-in job after the matrix (token ``fan-in``, job ``JOB_BASE - 1``).
    """

    index: int
    backend: str
    shard: int
    path: Path
    cases: int
    cells: int  # distinct (module, test function): one dashboard row, so one cell of this leg

    @property
    def token(self) -> str:
        return f"leg-{self.index:03d}" if self.index >= 0 else "fan-in"

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


@dataclass(frozen=True)
class Outcome:
    """What the stand-in held when a configuration ended: its log, branch, issues and budget."""

    records: list[RequestRecord]
    files: dict[str, bytes]
    issues: list[Json]
    seeded_issues: set[int]
    spend: Spend
    git_records: list[GitRequest] = field(default_factory=list)  # with --transport git


def summarize(
    runs: list[LegRun], outcome: Outcome, *, wall: float, targets: str, setup: str
) -> Json:
    """Every figure of one configuration (see github_scale.py's docstring)."""
    records = outcome.records
    finished = [r for r in runs if r.code is not None]
    failed = [r for r in finished if r.code != 0]
    per_leg = [leg_figures(r) for r in runs]
    # A fan-in job is not a leg: the legs' figures leave it out, and it has its own.
    legs = [f for f, r in zip(per_leg, runs, strict=True) if r.leg.index >= 0]
    jobs = [f for f, r in zip(per_leg, runs, strict=True) if r.leg.index < 0]
    writes = sorted(r.at for r in records if r.method in WRITE_METHODS)
    peak = peak_per_minute(writes)
    result: Json = {
        "setup": setup,
        "status": (
            "stopped at cap" if len(finished) < len(runs) else "legs failed" if failed else "ok"
        ),
        "legs": len(legs),
        "cases_per_leg": median_max([f["cases"] for f in legs]),
        "finished": len(finished),
        "failed": len(failed),
        "failures": [tail(r.log) for r in failed[:3]],
        "run_wall_s": round(max((r.ended or wall) for r in runs), 2),
        "leg_wall_s": median_max([(r.ended - r.started) for r in finished if r.ended]),
        "leg_cpu_s": median_max([r.cpu_s for r in finished if r.cpu_s is not None]),
        "requests": len(records),
        "requests_per_leg": median_max([f["requests"] for f in legs]),
        "sent_kb_per_leg": median_max([f["sent_kb"] for f in legs]),
        "received_kb_per_leg": median_max([f["received_kb"] for f in legs]),
        # REST and git together: the leg's whole traffic (git requests are not REST requests
        # and spend none of the REST budget, docs/github.md; they are counted here anyway).
        "git_requests_per_leg": median_max([f["git_requests"] for f in legs]),
        "all_requests_per_leg": median_max([f["all_requests"] for f in legs]),
        "all_requests_per_leg_mean": mean([f["all_requests"] for f in legs]),
        "all_sent_kb_per_leg": median_max([f["all_sent_kb"] for f in legs]),
        "content_creating_per_leg_mean": mean([f["writes"] for f in legs]),
        "pushes_per_leg_mean": mean([f["pushes"] for f in legs]),
        **({"fan_in_job": jobs[0]} if jobs else {}),
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
        "lost_cells": lost_cells(runs, outcome.files),
        "pages_are_a_render_of_the_state": pages_are_a_render(outcome.files),
        "git": git_figures(outcome.git_records),
        "github": budget_figures(outcome.spend),
    }
    if "issue" in targets:
        result["issues"] = issue_figures(outcome.issues, outcome.seeded_issues)
    result["per_leg"] = per_leg
    return result


# What a leg's log says of its commits: "... (revision N, T attempt(s), git)".
COMMITTED = re.compile(r"committed \d+ file\(s\) to branch .*\((?:revision \d+, )?(\d+) attempt")


def leg_figures(run: LegRun) -> Json:
    refs = [r for r in run.records if r.method in {"POST", "PATCH"} and REF_WRITE.search(r.path)]
    git = leg_git_figures(run.git_records)
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


def leg_git_figures(records: list[GitRequest]) -> Json:
    """One leg's git traffic: HTTP requests, pushes, bytes sent and received, 5xx answers."""
    return {
        "git_requests": len(records),
        "pushes": sum(r.is_push for r in records),
        "git_sent_kb": round(sum(r.bytes_in for r in records) / 1000, 1),
        "git_received_kb": round(sum(r.bytes_out for r in records) / 1000, 1),
        "git_failed": sum(r.status >= 500 for r in records),
    }


def git_figures(records: list[GitRequest]) -> Json:
    """The run's git traffic: requests, pushes and the busiest minute of them, bytes sent."""
    pushes = sorted(r.at for r in records if r.is_push)
    return {
        "requests": len(records),
        "pushes": len(pushes),
        "pushes_peak_per_minute": peak_per_minute(pushes),
        "sent_mb_total": round(sum(r.bytes_in for r in records) / 1e6, 2),
        "failed_5xx": sum(r.status >= 500 for r in records),
    }


def mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 2) if values else None


def median_max(values: list[float]) -> Json:
    if not values:
        return {"median": None, "max": None}
    return {"median": round(statistics.median(values), 2), "max": round(max(values), 2)}


def lost_cells(runs: list[LegRun], files: dict[str, bytes]) -> Json:
    """Cells of each leg not linked to its job in the branch's dashboards (the union must hold).

    A leg fills one cell per row it has results for (its backend's column); the dashboards on
    the branch link each cell's newest result to the job that produced it, so a leg whose N
    cells all landed is linked N times. Counting links in the markdown keeps this independent
    of the state format. A fan-in job links no cell of its own: ``linked_to_fan_in_job``
    counts those that do (it must be 0).
    """
    text = "\n".join(d.decode(errors="replace") for p, d in files.items() if p.endswith(".md"))
    links = Counter(re.findall(rf"/actions/runs/{RUN}/job/(\d+)\"", text))
    legs = [run for run in runs if run.leg.index >= 0]
    lost = {
        run.leg.token: run.leg.cells - links.get(str(run.leg.job_id), 0)
        for run in legs
        if links.get(str(run.leg.job_id), 0) != run.leg.cells
    }
    return {
        "expected": sum(r.leg.cells for r in legs),
        "found": sum(links.get(str(r.leg.job_id), 0) for r in legs),
        "lost": sum(max(v, 0) for v in lost.values()),
        "legs_short": lost,
        "linked_to_fan_in_job": links.get(str(JOB_BASE - 1), 0),
        # Incremental: the cells no leg brought still link the seeding run.
        "still_linking_seed_run": len(re.findall(rf"/actions/runs/{SEED_RUN}/job/1\"", text)),
    }


def pages_are_a_render(files: dict[str, bytes]) -> bool:
    """Whether the branch's pages, index, trend and pictures are exactly what rendering its
    state (and trend) gives, with no other markdown (any layout's state files are read)."""
    parts: dict[str, list[Any]] = {}
    for path, data in files.items():
        if path.startswith(".ivy-matrix/state/") and path.endswith(".json"):
            state = load_state(data.decode(), where=path)
            parts.setdefault(state.key, []).append(state)
    states = sorted((join_columns(p) for p in parts.values()), key=lambda s: s.key)
    found = files.get(TREND_NAME)
    trend = load_trend(found.decode(), where=TREND_NAME) if found is not None else None
    expected = {f.path: f.text for f in render_files(states, style=Style.IVY, trend=trend)}
    shown = {p for p in files if p.endswith(".md")} | {p for p in expected if p in files}
    return {p: files[p].decode() for p in shown} == expected


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
    github = r["github"]
    print(
        f"  {name:>16}: {r['status']:<10} legs {r['finished']}/{r['legs']} (failed {r['failed']})"
        f"  run {r['run_wall_s']:.1f} s  leg {r['leg_wall_s']['median']} / {r['leg_wall_s']['max']} s"
        f"  REST req/leg {r['requests_per_leg']['median']} / {r['requests_per_leg']['max']}"
        f"  git req/leg {r['git_requests_per_leg']['median']} / {r['git_requests_per_leg']['max']}"
        f"  sent KB/leg {r['all_sent_kb_per_leg']['median']} / {r['all_sent_kb_per_leg']['max']}"
        f"  tries max {tries['max']} mean {tries['mean']} (rejected {tries['rejected_total']})"
        f"  writes/min peak {cc['peak_per_minute']}, run {cc['total']}"
        f"  lost {r['lost_cells']['lost']}  render {r['pages_are_a_render_of_the_state']}"
        + (f"  dup issues {r['issues']['duplicates_open']}" if "issues" in r else "")
        + f"  refused {github['refused']}  runs/hour within GitHub's limits "
        f"{github['runs_per_hour']}",
        flush=True,
    )


def medians(rounds: list[Json]) -> Json:
    """The round whose whole-run wall time is the median (all its figures are kept together)."""
    ordered = sorted(rounds, key=lambda r: r["run_wall_s"])
    return ordered[(len(ordered) - 1) // 2]


def ratios(configs: Json) -> Json:
    """Each configuration's whole-run time over its set-up's one-leg run."""
    found = {}
    for name, config in configs.items():
        ref = configs.get(f"1 {config['setup']}")
        if ref is None or ref["status"] != "ok" or ref is config or not ref["run_wall_s"]:
            continue
        found[name] = round(config["run_wall_s"] / ref["run_wall_s"], 2)
    return found


def budget_figures(spend: Spend) -> Json:
    """What the whole run spent, next to GitHub's limits for one repository's GITHUB_TOKEN.

    ``runs_per_hour``: how many such runs fit in an hour of the repository's budget (requests
    and content-creating requests alike); 0 means one run alone is over.
    """
    limits = GITHUB_TOKEN
    fits = [limits.requests_per_hour // max(spend.requests, 1)]
    fits.append(limits.content_per_hour // max(spend.content_requests, 1))
    return {
        "requests": spend.requests,
        "content_requests": spend.content_requests,
        "peak_content_per_minute": spend.peak_content_per_minute,
        "refused": spend.refused,
        "sent_mb": round(spend.bytes_sent / 1e6, 2),
        "limits": {
            "requests_per_hour": limits.requests_per_hour,
            "content_per_minute": limits.content_per_minute,
            "content_per_hour": limits.content_per_hour,
            "concurrent": limits.concurrent,
        },
        "runs_per_hour": min(fits),
        "over": [
            what
            for what, over in (
                ("requests/h", spend.requests > limits.requests_per_hour),
                ("content/min", spend.peak_content_per_minute > limits.content_per_minute),
                ("content/h", spend.content_requests > limits.content_per_hour),
            )
            if over
        ],
    }


def print_table(configs: Json) -> None:
    """Per-run totals of every configuration beside GitHub's limits, as a markdown table."""
    limits = GITHUB_TOKEN
    print(
        f"\n| set-up | legs | status | requests (limit {limits.requests_per_hour:,}/h) | "
        f"per leg median / max | content-creating (limit {limits.content_per_hour}/h) | "
        f"worst minute (limit {limits.content_per_minute}) | refused | tries max / mean | "
        f"sent MB | runs an hour that fit |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in configs.values():
        g, tries, per_leg = r["github"], r["commit_tries"], r["requests_per_leg"]
        job = f" (fan-in job {r['fan_in_job']['requests']})" if "fan_in_job" in r else ""
        print(
            f"| {r['setup']} | {r['legs']} | {r['status']} | {g['requests']:,} | "
            f"{per_leg['median']} / {per_leg['max']}{job} | {g['content_requests']:,} | "
            f"{g['peak_content_per_minute']:,} | {g['refused']:,} | "
            f"{tries['max']} / {tries['mean']} | {g['sent_mb']} | {g['runs_per_hour']} |",
            flush=True,
        )
