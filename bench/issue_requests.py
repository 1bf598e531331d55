"""What the issue target costs: content-creating requests per leg and per run, and big splits.

``python bench/issue_requests.py [--dashboards 100] [--rows 70] [--legs 4] [--big 50000]``
publishes dashboards of Ivy's shape on the in-memory GitHub (``tests/github/memory.py``) the
two ways a matrix can: from every leg (each leg's column in every dashboard, one leg after the
other) and from one fan-in job per run, for a first run (no issues yet) and a second run (every
cell links a new job). It counts the writes (content-creating requests: issue and comment
creates and edits) and prints one JSON line per scenario; then it times rendering and
splitting one dashboard of ``--big`` rows x 4 backends.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ivy_matrix.issues.bodies import compose_issue
from ivy_matrix.issues.publish import Publication, Timing, publish_issues
from ivy_matrix.issues.writer import IssueOptions
from ivy_matrix.model import DashboardId, DashboardState
from tests.github.budget import UNLIMITED
from tests.github.memory import MemoryGitHub
from tests.issues.helpers import make_state

REPO = "acme/widgets"
BACKENDS = ("torch", "jax", "numpy", "tensorflow")


def states_of(
    dashboards: int, rows: int, backends: tuple[str, ...], run: int
) -> list[DashboardState]:
    return [
        make_state(DashboardId(title=f"d{n:03d}", category="ivy"), rows, backends, run=run)
        for n in range(dashboards)
    ]


def publish(memory: MemoryGitHub, states: list[DashboardState], revision: int) -> Counter[str]:
    before = len(memory.writes())
    publication = Publication(states=states, touched=[s.key for s in states], revision=revision)
    # Measures what publishing costs, so the hour's budget does not hold any of it back.
    options = IssueOptions(writes_per_hour=10**9)
    publish_issues(memory, REPO, publication, options, timing=Timing(sleep=lambda _s: None))
    return Counter(memory.writes()[before:])


def scenarios(dashboards: int, rows: int, legs: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    backends = BACKENDS[:legs] if legs <= len(BACKENDS) else tuple(f"b{i}" for i in range(legs))
    per_leg = MemoryGitHub(limits=UNLIMITED)
    fan_in = MemoryGitHub(limits=UNLIMITED)
    revision = 0
    for run in (1, 2):
        leg_writes = []
        for leg in range(len(backends)):
            revision += 1
            # A leg publishes every dashboard, each with the columns landed so far.
            states = states_of(dashboards, rows, backends[: leg + 1], run=100 * run)
            leg_writes.append(sum(publish(per_leg, states, revision).values()))
        out.append(
            {
                "scenario": "every leg publishes",
                "run": run,
                "legs": legs,
                "dashboards": dashboards,
                "writes_per_leg": leg_writes,
                "writes_per_run": sum(leg_writes),
            }
        )
        counts = publish(fan_in, states_of(dashboards, rows, backends, run=100 * run), run)
        out.append(
            {
                "scenario": "one fan-in job publishes",
                "run": run,
                "legs": legs,
                "dashboards": dashboards,
                "writes_per_run": sum(counts.values()),
                "by_call": dict(sorted(counts.items())),
            }
        )
    return out


def big(rows: int) -> dict[str, object]:
    started = time.perf_counter()
    state = make_state(DashboardId(title="big", category="ivy"), rows, BACKENDS)
    built = time.perf_counter()
    bodies = compose_issue(state, existing_body=None, revision=1)
    composed = time.perf_counter()
    memory = MemoryGitHub(limits=UNLIMITED)
    counts = publish(memory, [state], 1)
    published = time.perf_counter()
    return {
        "scenario": f"one dashboard of {rows} rows x {len(BACKENDS)} backends",
        "parts": 1 + len(bodies.continuations),
        "characters": len(bodies.body) + sum(len(c) for c in bodies.continuations),
        "state_seconds": round(built - started, 2),
        "render_split_seconds": round(composed - built, 2),
        "publish_seconds": round(published - composed, 2),
        "writes": sum(counts.values()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dashboards", type=int, default=100)
    parser.add_argument("--rows", type=int, default=70)
    parser.add_argument("--legs", type=int, default=4)
    parser.add_argument("--big", type=int, default=50_000)
    args = parser.parse_args()
    for line in scenarios(args.dashboards, args.rows, args.legs):
        print(json.dumps(line))
    if args.big:
        print(json.dumps(big(args.big)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
