"""Measure the branch store alone at Ivy's shape: concurrent writers on the in-memory GitHub.

Issue 9 items 1-3, in-process and quick (a minute): what the store costs per leg, without
JUnit parsing, job lookup or HTTP. ``bench/github_scale.py`` measures the whole command
against the HTTP stand-in; this one isolates the store's design, so its figures say what the
layout and the commit protocol cost. Ivy's shape: ``--dashboards`` 100 x ``--rows`` 70 tests x
4 backends (7,000 tests, 28,000 cells). The branch is seeded with one whole run (run 100); then
every leg of run 101 starts at once, in its own thread with its own store, against
``tests/github/memory.py`` with a random latency per call (default 20-80 ms, slept outside the
model's lock, so the legs really overlap). A leg is one backend x one shard of contiguous
dashboards, as in ``bench/github_scale.py``: 1 leg = torch, shard 1 of 8; 4 legs = one per
backend; 32 = 4 x 8 shards; 128 = 4 x 32.

Figures per configuration: wall time per leg (median, max) and of the whole run; requests per
leg (median, max); bytes a leg sends (the texts of its tree writes, median and max); commit
tries (max, mean); content-creating requests (tree, commit, ref writes) in all and per minute
of the run; cells lost (each leg's cells must show its job on the branch); whether the
branch's markdown is a render of its state at the end. Speed is reported, never asserted.

    .venv/bin/python bench/store_scale.py [--legs 1 4 32 128]

Since 0.3.0 one job per run writes the branch; many writers at once are the writers of
several runs (the compare-and-swap between them), or 0.2.0's legs that each committed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source  # noqa: E402
from ivy_matrix.state.fold import Merged, merge_batches  # noqa: E402  -- after the path entry
from ivy_matrix.state.merge import Batch  # noqa: E402
from ivy_matrix.state.statefile import join_columns, load_state  # noqa: E402
from ivy_matrix.stores import branch  # noqa: E402
from ivy_matrix.stores.branch import BranchStore, Retries  # noqa: E402
from ivy_matrix.stores.layout import BranchPlace, Scope  # noqa: E402
from ivy_matrix.stores.remote import RestRemote  # noqa: E402
from ivy_matrix.views.dashboards import render_files  # noqa: E402
from ivy_matrix.views.style import Style  # noqa: E402
from tests.github.memory import MemoryGitHub  # noqa: E402

REPO, BRANCH, STATE_DIR = "acme/widgets", "ivy-matrix", ".ivy-matrix/state"
BACKENDS = ("torch", "numpy", "tensorflow", "jax")
WRITES = {
    "create_tree",
    "create_commit",
    "update_branch",
    "create_branch",
    "create_ref",
}
OUTCOMES = (Outcome.SUCCESS,) * 8 + (Outcome.FAILURE, Outcome.SKIPPED)


@dataclass
class Counted:
    """One leg's view of the model: every call counted, the bytes of every tree write summed."""

    model: MemoryGitHub
    calls: list[str] = field(default_factory=list)
    sent: int = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.model, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            # get_blob_texts is one read per blob (several at once).
            self.calls += [name] * (len(args[1]) if name == "get_blob_texts" else 1)
            if name == "create_tree":
                files: Mapping[str, str | None] = args[2]
                self.sent += sum(len(t.encode()) for t in files.values() if t is not None)
            return method(*args, **kwargs)

        return call


def dashboards(count: int) -> list[DashboardId]:
    return [DashboardId(category=f"mod{n // 10:02d}", title=f"test_{n:03d}") for n in range(count)]


def leg_change(
    run: int, job: int, backend: str, shard: list[DashboardId], rows: int
) -> Callable[[Mapping[DashboardId, DashboardState], Collection[int]], Merged]:
    rng = random.Random(f"{run}-{backend}")
    source = Source(
        run=RunKey(run, 1, job),
        url=f"https://github.com/{REPO}/actions/runs/{run}/job/{job}",
        time="2026-11-21T10:00:00Z",
    )
    entries = {o: Entry(source=source, outcome=o) for o in Outcome}
    batches = [
        Batch(
            dashboard=d,
            cells={f"test_{r:03d}": {backend: entries[rng.choice(OUTCOMES)]} for r in range(rows)},
        )
        for d in shard
    ]

    def change(states: Mapping[DashboardId, DashboardState], other_runs: Collection[int]) -> Merged:
        return merge_batches(states, batches, other_runs=other_runs)

    return change


def whole(
    change: Callable[[Mapping[DashboardId, DashboardState], Collection[int]], Merged],
) -> Callable[[Mapping[DashboardId, DashboardState]], Merged]:
    """A leg's change as an update without a scope applies it (every dashboard read)."""
    return lambda states: change(states, ())


def split(legs: int, all_dashboards: list[DashboardId]) -> list[tuple[str, list[DashboardId]]]:
    if legs == 1:
        return [("torch", all_dashboards[: len(all_dashboards) // 8])]
    shards = max(legs // len(BACKENDS), 1)
    size = -(-len(all_dashboards) // shards)
    return [
        (backend, all_dashboards[s * size : (s + 1) * size])
        for backend in BACKENDS
        for s in range(shards)
    ][:legs]


def store_for(gh: Any, scope: Scope | None, seed: int) -> BranchStore:
    return BranchStore(
        RestRemote(gh, REPO),
        BranchPlace(repo=REPO, branch=BRANCH, state_dir=STATE_DIR),
        retries=Retries(rng=random.Random(seed)),
        scope=scope,
    )


def seed_branch(model: MemoryGitHub, all_dashboards: list[DashboardId], rows: int) -> None:
    for n, backend in enumerate(BACKENDS):
        change = leg_change(100, 1000 + n, backend, all_dashboards, rows)
        store_for(model, None, n).update(whole(change))


def measure(legs: int, args: argparse.Namespace) -> dict[str, Any]:
    model = MemoryGitHub()
    all_dashboards = dashboards(args.dashboards)
    seed_branch(model, all_dashboards, args.rows)
    model.latency = (args.latency[0] / 1000, args.latency[1] / 1000)
    plan = split(legs, all_dashboards)
    barrier = threading.Barrier(len(plan))
    results: dict[int, dict[str, Any]] = {}
    errors: list[BaseException] = []

    def run_leg(index: int, backend: str, shard: list[DashboardId]) -> None:
        counted = Counted(model)
        change = leg_change(101, 5000 + index, backend, shard, args.rows)
        scope = Scope(dashboards=frozenset(shard), change=change)
        store = store_for(counted, scope, index)
        barrier.wait()
        started = time.monotonic()
        try:
            saved = store.update(whole(change))
        except BaseException as error:  # noqa: BLE001  -- reported below
            errors.append(error)
            return
        results[index] = {
            "wall": time.monotonic() - started,
            "requests": len(counted.calls),
            "writes": sum(c in WRITES for c in counted.calls),
            "sent": counted.sent,
            "tries": saved.attempts,
            "end": time.monotonic(),
        }

    threads = [
        threading.Thread(target=run_leg, args=(i, backend, shard))
        for i, (backend, shard) in enumerate(plan)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    run_wall = time.monotonic() - started
    model.latency = (0.0, 0.0)
    lost = count_lost(model, plan, args.rows)
    rendered = markdown_is_render(model)
    walls = [r["wall"] for r in results.values()]
    writes = sum(r["writes"] for r in results.values())
    return {
        "legs": legs,
        "errors": len(errors),
        "run_s": run_wall,
        "leg_s_median": statistics.median(walls),
        "leg_s_max": max(walls),
        "requests_median": statistics.median(r["requests"] for r in results.values()),
        "requests_max": max(r["requests"] for r in results.values()),
        "sent_kb_median": statistics.median(r["sent"] for r in results.values()) / 1000,
        "sent_kb_max": max(r["sent"] for r in results.values()) / 1000,
        "tries_max": max(r["tries"] for r in results.values()),
        "tries_mean": statistics.mean(r["tries"] for r in results.values()),
        "content_requests": writes,
        "content_per_min": writes / max(run_wall, 1e-9) * 60,
        "cells_lost": lost,
        "markdown_is_render": rendered,
    }


def branch_states(model: MemoryGitHub) -> dict[DashboardId, DashboardState]:
    columns: dict[DashboardId, list[DashboardState]] = {}
    for path, data in model.files(BRANCH).items():
        if path.startswith(STATE_DIR + "/") and path.endswith(".json"):
            state = load_state(data.decode(), where=path)
            columns.setdefault(state.id, []).append(state)
    return {d: join_columns(parts) for d, parts in columns.items()}


def count_lost(model: MemoryGitHub, plan: list[tuple[str, list[DashboardId]]], rows: int) -> int:
    states = branch_states(model)
    lost = 0
    for index, (backend, shard) in enumerate(plan):
        url = f"/runs/101/job/{5000 + index}"
        for dashboard in shard:
            cells = {row.name: row.cells.get(backend) for row in states[dashboard].rows}
            for r in range(rows):
                cell = cells.get(f"test_{r:03d}")
                lost += cell is None or not cell.latest.source.url.endswith(url)
    return lost


def markdown_is_render(model: MemoryGitHub) -> bool:
    states = sorted(branch_states(model).values(), key=lambda s: s.key)
    expected = {f.path: f.text for f in render_files(states, style=Style.IVY)}
    files = model.files(BRANCH)
    return {p: d.decode() for p, d in files.items() if p.endswith(".md")} == expected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--legs", type=int, nargs="+", default=[1, 4, 32, 128])
    parser.add_argument("--dashboards", type=int, default=100)
    parser.add_argument("--rows", type=int, default=70)
    parser.add_argument("--latency", type=float, nargs=2, default=(20.0, 80.0), help="ms")
    parser.add_argument("--spread", type=float, default=branch.CONTENTION_SPREAD)
    args = parser.parse_args()
    branch.CONTENTION_SPREAD = args.spread
    keys = None
    for legs in args.legs:
        row = measure(legs, args)
        if keys is None:
            keys = list(row)
            print("| " + " | ".join(keys) + " |")
            print("|" + "---|" * len(keys))
        print(
            "| "
            + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row.values())
            + " |"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
