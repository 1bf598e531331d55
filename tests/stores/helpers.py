"""What the tests of the branch store share: matrix legs' changes, stores built for tests, and
checks that every cell landed and that the pages are a render of the state."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from ivy_matrix.fold import Merged, merge_batches
from ivy_matrix.github.client import GitHubClient
from ivy_matrix.merge import Batch, apply_batch
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.render import RenderedFile, Style, render_files
from ivy_matrix.statefile import join_columns, load_state
from ivy_matrix.stores import Saved
from ivy_matrix.stores.branch import BranchStore
from ivy_matrix.stores.layout import Leg
from tests.concurrency import at_once
from tests.conftest import fake_client
from tests.github.fake_server import FakeGitHub
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
INBOX = f"refs/ivy-matrix/inbox/{BRANCH}/"
# What the stores are given in tests: our client on the HTTP fake, or the in-memory model,
# which has the same methods (the stores are typed against the protocols they declare).
Client = GitHubClient | MemoryGitHub


def client(github: FakeGitHub | MemoryGitHub, **options: Any) -> Client:
    """Our client on the HTTP fake, or the in-memory model itself."""
    if isinstance(github, MemoryGitHub):
        return github
    options.setdefault("retries", 10)
    return fake_client(github, **options)


def store(gh: Client, seed: int = 0, **options: Any) -> BranchStore:
    """A branch store that retries after short waits, its jitter seeded with ``seed``."""
    return BranchStore(
        gh,
        REPO,
        BRANCH,
        STATE_DIR,
        sleep=time.sleep,
        rng=random.Random(seed),
        base_delay=0.02,
        max_delay=0.5,
        **options,
    )


def commit(branch: BranchStore, change, message: str) -> Saved:
    """One update whose ``change`` returns (every state, the rendered files), as ``message``."""
    rendered: list[RenderedFile] = []

    def merged(states: Mapping[DashboardId, DashboardState]) -> Merged:
        new, files = change(states)
        rendered[:] = files
        return Merged(states=new, changed=tuple(state.key for state in new.values()))

    branch.message = message
    branch.render = lambda _states, _keys: list(rendered)
    return branch.update(merged)


def job_url(job_id: int) -> str:
    return f"https://github.com/{REPO}/actions/runs/{RUN}/job/{job_id}"


def outcome(leg: int, row: int) -> Outcome:
    return OUTCOMES[(leg + row) % len(OUTCOMES)]


def leg_change(leg: int, *, rows: int = ROWS, calls: list[int] | None = None):
    """The change one matrix leg makes: its own column in every dashboard, then a re-render."""
    backend, job_id = f"b{leg:02d}", 1000 + leg
    source = Source(run=RunKey(RUN, 1, job_id), url=job_url(job_id), time="2026-11-21T10:00:00Z")

    def change(states: Mapping[DashboardId, DashboardState]):
        if calls is not None:
            calls.append(leg)
        new = dict(states)
        for dashboard in DASHBOARDS:
            cells = {
                f"test_{row:02d}": {backend: Entry(source=source, outcome=outcome(leg, row))}
                for row in range(rows)
            }
            result = apply_batch(new.get(dashboard), Batch(dashboard=dashboard, cells=cells))
            new[dashboard] = result.state
        ordered = sorted(new.values(), key=lambda s: s.key)
        return new, render_files(ordered, style=Style.IVY)

    return change


def branch_states(fake: FakeGitHub | MemoryGitHub) -> dict[DashboardId, DashboardState]:
    files = fake.files(BRANCH)
    columns: dict[DashboardId, list[DashboardState]] = {}
    for path, data in files.items():
        if path.startswith(STATE_DIR + "/") and path.endswith(".json"):
            state = load_state(data.decode(), where=path)
            columns.setdefault(state.id, []).append(state)
    return {dashboard: join_columns(parts) for dashboard, parts in columns.items()}


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


def assert_every_cell_landed(fake: FakeGitHub | MemoryGitHub, legs: int, rows: int = ROWS) -> None:
    """Every (dashboard, row, backend) cell is in the branch's state and in its markdown."""
    states = branch_states(fake)
    assert set(states) == set(DASHBOARDS)
    files = fake.files(BRANCH)
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


def column_change(leg: int, *, rows: int = ROWS, run: int = RUN, attempt: int = 1, flip: int = 0):
    """The change of matrix leg ``leg``: its backend's column in every dashboard (pure)."""
    backend, job_id = f"b{leg:02d}", 1000 + leg + 100 * (attempt - 1)
    source = Source(
        run=RunKey(run, attempt, job_id),
        url=f"https://github.com/{REPO}/actions/runs/{run}/job/{job_id}",
        time="2026-11-21T10:00:00Z",
    )
    batches = [
        Batch(
            dashboard=dashboard,
            cells={
                f"test_{row:02d}": {backend: Entry(source=source, outcome=outcome(leg + flip, row))}
                for row in range(rows)
            },
        )
        for dashboard in DASHBOARDS
    ]

    def change(states: Mapping[DashboardId, DashboardState]) -> Merged:
        return merge_batches(states, batches)

    return change


def matrix_store(
    gh: Client, leg: int, size: int, change, *, seed: int = 0, run: int = RUN, **options: Any
) -> BranchStore:
    """The branch store of leg ``leg`` of a matrix of ``size`` legs in run ``run``."""
    return store(
        gh,
        seed,
        render=lambda merged, keys: render_files(merged.ordered(), style=Style.IVY, only=keys),
        leg=Leg(
            run_id=run,
            index=leg,
            size=size,
            dashboards=frozenset(DASHBOARDS),
            backends=frozenset({f"b{leg:02d}"}),
            change=change,
        ),
        **options,
    )


def run_leg(gh: Client, leg: int, size: int, **options) -> Saved:
    change = column_change(leg, **options)
    run = options.get("run", RUN)
    return matrix_store(gh, leg, size, change, run=run).update(change)


def assert_markdown_is_a_render_of_the_state(github: FakeGitHub | MemoryGitHub) -> None:
    """Every page and the index on the branch are what rendering its state gives, no more."""
    states = sorted(branch_states(github).values(), key=lambda s: s.key)
    expected = {f.path: f.text for f in render_files(states, style=Style.IVY)}
    files = github.files(BRANCH)
    pages = {path: data.decode() for path, data in files.items() if path.endswith(".md")}
    assert pages == expected


class FolderDiedError(Exception):
    """Raised by a hook: the leg that folded the inbox stops before it deletes the refs."""


def race_legs(
    memory: MemoryGitHub, size: int, *, seed: int = 0
) -> dict[int, Saved | BaseException]:
    """Every leg of a ``size``-leg run updates at once, each in its own thread and store; what
    each leg's update returned, or raised."""
    outcomes: dict[int, Saved | BaseException] = {}

    def run(leg: int) -> None:
        change = column_change(leg)
        branch = matrix_store(memory, leg, size, change, seed=seed + leg)
        try:
            outcomes[leg] = branch.update(change)
        except BaseException as error:  # noqa: BLE001  -- the caller looks at each outcome
            outcomes[leg] = error

    at_once([partial(run, leg) for leg in range(size)])
    return outcomes
