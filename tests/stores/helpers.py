"""What the tests of the branch store share: writers' results, stores built for tests (over the
REST API's doubles or git's real protocol), and checks that every cell landed and that the
branch's markdown is a render of its state."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import fields
from functools import partial
from typing import Any, Protocol

from ivy_matrix.github.client import GitHubClient
from ivy_matrix.github.git_transport import GitTransport
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.runner.log import Progress
from ivy_matrix.state.fold import Merged, merge_batches
from ivy_matrix.state.merge import Batch
from ivy_matrix.state.statefile import join_columns, load_state
from ivy_matrix.state.trend import TREND_NAME, load_trend
from ivy_matrix.stores import Saved
from ivy_matrix.stores.branch import BranchStore, Retries
from ivy_matrix.stores.commit import Writing
from ivy_matrix.stores.layout import BranchPlace, Scope
from ivy_matrix.stores.remote import BranchRemote, RestRemote
from ivy_matrix.views.dashboards import render_files
from ivy_matrix.views.style import Style
from tests.concurrency import VirtualClock, at_once
from tests.conftest import fake_client
from tests.github.fake_server import FakeGitHub
from tests.github.git_server import GitServer
from tests.github.memory import MemoryGitHub

REPO = "acme/widgets"
BRANCH = "ivy-matrix"
STATE_DIR = ".ivy-matrix/state"
RUN = 4519946746
DASHBOARDS = (
    DashboardId(title="gradients", category="core"),
    DashboardId(title="random", category="core"),
    DashboardId(title="layers", category="stateful"),
)
ROWS = 40
OUTCOMES = (Outcome.SUCCESS, Outcome.FAILURE, Outcome.SKIPPED)
# What the stores are given in tests: our client on the HTTP fake, or the in-memory model,
# which has the same methods (the stores are typed against the protocols they declare).
Client = GitHubClient | MemoryGitHub


class Branches(Protocol):
    """A double that can show a branch's files: the HTTP fake, the model, the git server."""

    def files(self, branch: str, repo: str = REPO) -> dict[str, bytes]: ...


def client(github: FakeGitHub | MemoryGitHub, **options: Any) -> Client:
    """Our client on the HTTP fake, or the in-memory model itself."""
    if isinstance(github, MemoryGitHub):
        return github
    options.setdefault("retries", 10)
    return fake_client(github, **options)


def git_transport(server: GitServer, token: str = "t", **options: Any) -> GitTransport:
    """The git transport of the server's repository, with short waits between retries."""
    options.setdefault("sleep", lambda seconds: time.sleep(min(seconds, 0.02)))
    return GitTransport(server_url=server.url, repository=REPO, token=token, **options)


WRITING = frozenset(f.name for f in fields(Writing))
RETRIES = frozenset(f.name for f in fields(Retries))


def store(
    gh: Client | None,
    seed: int = 0,
    *,
    remote: BranchRemote | None = None,
    scope: Scope | None = None,
    log: Progress | None = None,
    **options: Any,
) -> BranchStore:
    """A branch store over ``gh``'s REST calls (or ``remote``) that retries after short waits,
    its jitter seeded with ``seed``, saying what it does in ``log``; ``options``: fields of its
    ``Writing`` and ``Retries``."""
    unknown = set(options) - WRITING - RETRIES
    if unknown:
        raise TypeError(f"store() got unknown options {sorted(unknown)}")
    retries = {
        "sleep": lambda seconds: time.sleep(min(seconds, 0.05)),
        "rng": random.Random(seed),
        "base_delay": 0.02,
        "max_delay": 0.5,
        **{k: v for k, v in options.items() if k in RETRIES},
    }
    if remote is None:
        assert gh is not None
        remote = RestRemote(gh, REPO)
    return BranchStore(
        remote,
        BranchPlace(repo=REPO, branch=BRANCH, state_dir=STATE_DIR),
        writing=Writing(**{k: v for k, v in options.items() if k in WRITING}),
        retries=Retries(**retries),
        scope=scope,
        log=log,
    )


def job_url(job_id: int, run: int = RUN) -> str:
    return f"https://github.com/{REPO}/actions/runs/{run}/job/{job_id}"


def outcome(leg: int, row: int) -> Outcome:
    return OUTCOMES[(leg + row) % len(OUTCOMES)]


def leg_batches(
    leg: int,
    *,
    rows: int = ROWS,
    run: int = RUN,
    attempt: int = 1,
    flip: int = 0,
    dashboards: Collection[DashboardId] = DASHBOARDS,
) -> list[Batch]:
    """Leg ``leg``'s results: its backend's column (``bNN``) in every dashboard."""
    backend, job_id = f"b{leg:02d}", 1000 + leg + 100 * (attempt - 1)
    source = Source(
        run=RunKey(run, attempt, job_id), url=job_url(job_id, run), time="2026-11-21T10:00:00Z"
    )
    return [
        Batch(
            dashboard=dashboard,
            cells={
                f"test_{row:02d}": {backend: Entry(source=source, outcome=outcome(leg + flip, row))}
                for row in range(rows)
            },
        )
        for dashboard in dashboards
    ]


def leg_change(
    leg: int, **options: Any
) -> Callable[[Mapping[DashboardId, DashboardState]], Merged]:
    """The change of leg ``leg`` on every dashboard it is given (pure)."""
    batches = leg_batches(leg, **options)
    return lambda states: merge_batches(states, batches)


def leg_scope(
    leg: int,
    *,
    run: int = RUN,
    history: int = 10,
    retire_after_runs: int = 0,
    calls: list[int] | None = None,
    **options: Any,
) -> Scope:
    """What leg ``leg`` touches and its change."""
    batches = leg_batches(leg, run=run, **options)

    def change(states: Mapping[DashboardId, DashboardState], other_runs: Collection[int]) -> Merged:
        if calls is not None:
            calls.append(leg)
        return merge_batches(
            states,
            batches,
            history=history,
            retire_after_runs=retire_after_runs,
            other_runs=other_runs,
        )

    return Scope(
        dashboards=frozenset(batch.dashboard for batch in batches),
        change=change,
        retire_after_runs=retire_after_runs,
    )


def run_leg(
    gh: Client | None,
    leg: int,
    *,
    stored: Mapping[str, Any] | None = None,
    **options: Any,
) -> Saved:
    """One leg's update (``options``: of its scope), through a store of its own built with
    ``stored`` (``remote``, ``dry_run``, ...)."""
    scope = leg_scope(leg, **options)
    # With a scope the store applies the scope's change; the one given here is not used.
    return store(gh, leg, scope=scope, **(stored or {})).update(lambda _: Merged(states={}))


def branch_states(github: Branches) -> dict[DashboardId, DashboardState]:
    """Every dashboard's state on the branch (any layout: columns are joined)."""
    parts: dict[DashboardId, list[DashboardState]] = {}
    for path, data in github.files(BRANCH).items():
        if path.startswith(STATE_DIR + "/") and path.endswith(".json"):
            state = load_state(data.decode(), where=path)
            parts.setdefault(state.id, []).append(state)
    return {dashboard: join_columns(columns) for dashboard, columns in parts.items()}


def history(fake: FakeGitHub | MemoryGitHub) -> list[str]:
    """Commits from the branch tip back to its root commit (the branch starts with no parent)."""
    sha = fake.ref_sha(f"heads/{BRANCH}")
    chain = []
    while sha is not None:
        chain.append(sha)
        parents = fake.commits[sha]["parents"]
        assert len(parents) <= 1
        sha = parents[0] if parents else None
    return chain


def assert_every_cell_landed(github: Branches, legs: int, rows: int = ROWS) -> None:
    """Every (dashboard, row, backend) cell is in the branch's state and in its markdown."""
    states = branch_states(github)
    assert set(states) == set(DASHBOARDS)
    files = github.files(BRANCH)
    for dashboard in DASHBOARDS:
        state = states[dashboard]
        assert sorted(state.backend_names) == [f"b{leg:02d}" for leg in range(legs)]
        assert [row.name for row in state.rows] == [f"test_{row:02d}" for row in range(rows)]
        for row in state.rows:
            for leg in range(legs):
                entry = row.cells[f"b{leg:02d}"].latest
                assert (entry.outcome, entry.source.url) == (
                    outcome(leg, int(row.name[5:])),
                    job_url(1000 + leg),
                )
        markdown = files[f"{dashboard.category}/{dashboard.title}.md"].decode()
        lines = [line for line in markdown.splitlines() if line.startswith("| test_")]
        assert len(lines) == rows
        for line in lines:
            assert all(f'/job/{1000 + leg}"' in line for leg in range(legs)), line
    assert b"# Test dashboards" in files["README.md"]


def assert_markdown_is_a_render_of_the_state(github: Branches) -> None:
    """Every page, the index, the trend and its pictures on the branch are what rendering its
    state and its trend gives, and there is no other markdown."""
    states = sorted(branch_states(github).values(), key=lambda s: s.key)
    files = github.files(BRANCH)
    found = files.get(TREND_NAME)
    trend = load_trend(found.decode(), where="the branch") if found is not None else None
    expected = {f.path: f.text for f in render_files(states, style=Style.IVY, trend=trend)}
    shown = {p for p in files if p.endswith(".md")} | {p for p in expected if p in files}
    assert {path: files[path].decode() for path in shown} == expected


def race_legs(
    make: Callable[[int], tuple[Client | None, dict[str, Any]]],
    legs: int,
    *,
    clock: VirtualClock | None = None,
    **options: Any,
) -> dict[int, Saved | BaseException]:
    """``legs`` writers (each its own run's one writer) update at once, each in its own thread and store
    (``make(leg)``: its client, and its store's other arguments); what each leg's update
    returned, or raised. With ``clock``, the stores wait on it."""
    outcomes: dict[int, Saved | BaseException] = {}

    def run(leg: int) -> None:
        gh, stored = make(leg)
        if clock is not None:
            stored = {"sleep": clock.sleep, "clock": lambda: clock.now, **stored}
        try:
            outcomes[leg] = run_leg(gh, leg, stored=stored, **options)
        except BaseException as error:  # noqa: BLE001  -- the caller looks at each outcome
            outcomes[leg] = error

    at_once([partial(run, leg) for leg in range(legs)], clock=clock)
    return outcomes
