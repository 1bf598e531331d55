"""What the tests of issues/ share: dashboards to publish, a log that keeps its lines, and the
issue target called on the HTTP fake or on the in-memory model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from ivy_matrix.github.client import GitHubClient
from ivy_matrix.issues.markers import dashboard_key
from ivy_matrix.issues.publish import Publication, Timing, publish_issues
from ivy_matrix.issues.report import IssuesReport
from ivy_matrix.issues.writer import IssueOptions
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.state.merge import Batch, apply_batch
from tests.conftest import fake_client, quick_sleep
from tests.github.fake_server import FakeGitHub, RequestRecord
from tests.github.memory import MemoryGitHub

REPO = "acme/widgets"
LABEL = "ivy-matrix"
GRADIENTS = DashboardId(title="gradients", category="core")
RANDOM = DashboardId(title="random", category="core")
_OPTIONS = {field.name for field in fields(IssueOptions)}
_TIMING = {field.name for field in fields(Timing)}


def client(github: FakeGitHub | MemoryGitHub, **options: Any) -> GitHubClient | MemoryGitHub:
    """Our client on the HTTP fake, or the in-memory model itself."""
    if isinstance(github, MemoryGitHub):
        return github
    options.setdefault("retries", 3)
    return fake_client(github, **options)


class Lines:
    """A log that keeps its lines."""

    def __init__(self) -> None:
        self.infos: list[str] = []
        self.warnings: list[str] = []

    def info(self, message: str) -> None:
        self.infos.append(message)

    def warning(self, message: str) -> None:
        self.warnings.append(message)


def source(job: int, run: int = 100) -> Source:
    """Where results of job ``job`` of run ``run`` come from."""
    return Source(
        run=RunKey(run, 1, job),
        url=f"https://github.com/{REPO}/actions/runs/{run}/job/{job}",
        time="2026-11-21T10:00:00Z",
    )


def make_state(
    dashboard: DashboardId,
    rows: int | Sequence[str],
    backends: tuple[str, ...] = ("torch", "jax", "numpy"),
    *,
    run: int = 100,
    fail_every: int = 3,
) -> DashboardState:
    """A dashboard of ``rows`` tests (``test_00000``, ... or the names given) x ``backends``,
    each backend's cells from its own job of run ``run``; every ``fail_every``-th fails."""
    names = [f"test_{i:05d}" for i in range(rows)] if isinstance(rows, int) else rows
    state = None
    for job, backend in enumerate(backends, start=1):
        src = source(job, run)
        cells = {
            name: {
                backend: Entry(
                    source=src,
                    outcome=Outcome.FAILURE if (i + job) % fail_every == 0 else Outcome.SUCCESS,
                )
            }
            for i, name in enumerate(names)
        }
        state = apply_batch(state, Batch(dashboard=dashboard, cells=cells)).state
    assert state is not None
    return state


def publish(
    fake: FakeGitHub | MemoryGitHub,
    states: Sequence[DashboardState],
    *,
    touched: Sequence[str] | None = None,
    revision: int | None = None,
    log: Lines | None = None,
    **options: Any,
) -> IssuesReport:
    """The issue target on ``states``; ``options`` are IssueOptions, Publication (``pages``,
    ``spent``) or Timing fields (``sleep`` defaults to a quick one)."""
    values = {name: options.pop(name) for name in list(options) if name in _OPTIONS}
    timing = {name: options.pop(name) for name in list(options) if name in _TIMING}
    timing.setdefault("sleep", quick_sleep)
    with client(fake) as gh:
        keys = [s.key for s in states] if touched is None else touched
        publication = Publication(states=states, touched=keys, revision=revision, **options)
        return publish_issues(
            gh, REPO, publication, IssueOptions(**values), log=log, timing=Timing(**timing)
        )


def ours(
    fake: FakeGitHub | MemoryGitHub, key: str, *, state: str | None = "open"
) -> list[dict[str, Any]]:
    """The fake's issues whose body carries the marker of ``key``."""
    with fake.lock:
        return [
            i
            for i in fake.issues.values()
            if dashboard_key(i["body"]) == key and (state is None or i["state"] == state)
        ]


def bodies_sent(records: list[RequestRecord]) -> list[str]:
    return [r.body["body"] for r in records if isinstance(r.body, dict) and "body" in r.body]


def comment_bodies(fake: FakeGitHub | MemoryGitHub, number: int) -> list[str]:
    with fake.lock:
        return [c["body"] for c in fake.comments[number]]
