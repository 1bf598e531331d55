"""Tests for branch_store.py: state and dashboards on a branch, one CAS commit per update.

Store logic and the races run on the in-memory model (tests/memory_github.py); the tests of
what goes over the wire run through real PyGithub on the HTTP fake.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping

import pytest

from ivy_matrix.changes import Merged
from ivy_matrix.errors import GitHubAPIError, StoreError
from ivy_matrix.github_api import GitHubClient
from ivy_matrix.merge import Batch, apply_batch
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.render import RenderedFile, Style, render_files
from ivy_matrix.statefile import dump_state, join_columns, load_state
from ivy_matrix.stores import Saved
from ivy_matrix.stores.branch import BranchStore, git_blob_sha
from tests.conftest import fake_client
from tests.fake_github import FakeGitHub
from tests.memory_github import MemoryGitHub

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


def client(github: FakeGitHub | MemoryGitHub, **options) -> GitHubClient:
    """Our client on the HTTP fake, or the in-memory model itself."""
    if isinstance(github, MemoryGitHub):
        return github.as_client()
    options.setdefault("retries", 10)
    return fake_client(github, **options)


def store(gh: GitHubClient, seed: int = 0) -> BranchStore:
    return BranchStore(
        gh,
        REPO,
        BRANCH,
        STATE_DIR,
        sleep=time.sleep,
        rng=random.Random(seed),
        base_delay=0.02,
        max_delay=0.5,
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


# --------------------------------------------------------------------------- one writer


def test_first_update_creates_the_branch_and_makes_one_commit(fake):
    """A missing branch is created with a root commit that holds every file, and nothing else."""
    with client(fake) as gh:
        outcome_ = commit(store(gh), leg_change(0), "ivy-matrix: run 1")
    assert outcome_.attempts == 1
    assert outcome_.commit_sha == fake.ref_sha(f"heads/{BRANCH}")
    assert outcome_.revision == 1
    assert outcome_.written == (
        ".ivy-matrix/state/REVISION",
        ".ivy-matrix/state/core/gradients.d/b00.json",
        ".ivy-matrix/state/core/random.d/b00.json",
        ".ivy-matrix/state/stateful/layers.d/b00.json",
        "README.md",
        "core/gradients.md",
        "core/random.md",
        "stateful/layers.md",
    )
    assert len(history(fake)) == 1
    assert fake.commits[outcome_.commit_sha]["message"] == "ivy-matrix: run 1"
    assert [(r.method, r.path.rsplit("/git/", 1)[-1]) for r in fake.writes()] == [
        ("POST", "trees"),
        ("POST", "commits"),
        ("POST", "refs"),
    ]
    assert sorted(fake.files(BRANCH)) == sorted(outcome_.written)
    assert_every_cell_landed(fake, legs=1)
    assert fake.read_file("README.md", BRANCH).startswith("# Test dashboards")


def test_unchanged_update_makes_no_write_request(fake):
    """Running the same update again reads the branch and writes nothing at all."""
    with client(fake) as gh:
        branch = store(gh)
        commit(branch, leg_change(0), "first")
        writes = len(fake.writes())
        tip = fake.ref_sha(f"heads/{BRANCH}")
        again = commit(branch, leg_change(0), "second")
        fresh = commit(store(gh), leg_change(0), "third")  # a new store: no blob cache
    assert (again.commit_sha, again.attempts, again.written, again.revision) == (None, 1, (), 1)
    assert fresh.commit_sha is None
    assert len(fake.writes()) == writes
    assert fake.ref_sha(f"heads/{BRANCH}") == tip


def test_state_files_are_read_once_per_blob_and_cached_across_updates(fake):
    """A second update reads the tree but no blob it already knows."""
    with client(fake) as gh:
        branch = store(gh)
        commit(branch, leg_change(0), "first")
        before = len(fake.requests_to("GET", r"/git/blobs/"))
        commit(branch, leg_change(1), "second")
        assert len(fake.requests_to("GET", r"/git/blobs/")) == before
        assert len(store(gh).load()) == 3
    # A new store reads the six columns (two backends in three dashboards) and the revision
    # counter once each.
    assert len(fake.requests_to("GET", r"/git/blobs/")) == before + 7


def test_only_changed_files_are_written(fake):
    """A second leg that changes one dashboard writes that one, its page and the index."""
    with client(fake) as gh:
        branch = store(gh)
        commit(branch, leg_change(0), "first")

        def one_more_row(states):
            dashboard = DASHBOARDS[0]
            entry = Entry(
                source=Source(run=RunKey(RUN + 1, 1, 7), url=job_url(7)), outcome=Outcome.FAILURE
            )
            batch = Batch(dashboard=dashboard, cells={"test_new": {"b00": entry}})
            new = {**states, dashboard: apply_batch(states[dashboard], batch).state}
            return new, render_files(sorted(new.values(), key=lambda s: s.key), style=Style.IVY)

        result = commit(branch, one_more_row, "second")
    assert result.written == (
        ".ivy-matrix/state/REVISION",
        ".ivy-matrix/state/core/gradients.d/b00.json",
        "README.md",
        "core/gradients.md",
    )
    assert result.revision == 2
    tree_posts = fake.requests_to("POST", r"/git/trees$")
    assert sorted(e["path"] for e in tree_posts[-1].body["tree"]) == list(result.written)


def test_blob_sha_is_gits():
    """git_blob_sha agrees with git hash-object for UTF-8 text."""
    assert git_blob_sha("hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_load_of_a_missing_branch_is_empty_and_a_foreign_state_file_is_refused(memory):
    """No branch means no state; a state file in the wrong place is a clear StoreError."""
    with client(memory) as gh:
        branch = store(gh)
        assert branch.load() == {}
        commit(branch, leg_change(0, rows=1), "first")
        state = branch.load()[DASHBOARDS[0]]
        misplaced = dump_state(state)
        tip = memory.ref_sha(f"heads/{BRANCH}")
        assert tip is not None
        tree = gh.create_tree(REPO, gh.get_tree(REPO, tip).sha, {f"{STATE_DIR}/x.json": misplaced})
        assert gh.update_branch(REPO, BRANCH, gh.create_commit(REPO, "x", tree, [tip]))
        with pytest.raises(StoreError, match=r"holds dashboard 'core/gradients'"):
            branch.load()


def test_rendered_paths_must_stay_outside_the_state_folder(memory):
    """A rendered file that would overwrite state or escape the branch root is refused."""
    with client(memory) as gh:
        branch = store(gh)
        for path in (f"{STATE_DIR}/core/gradients.json", "../x.md", "/abs.md", "a//b.md"):

            def change(states, path=path):
                return dict(states), [RenderedFile(path=path, text="x")]

            with pytest.raises(ValueError, match=r"plain relative path|state folder"):
                commit(branch, change, "bad")
    assert memory.writes() == []


def test_read_only_token_error_reaches_the_caller(fake):
    """With a read-only token the update fails with GitHub's 403 mapped to ReadOnlyTokenError."""
    fake.configure(read_only=True)
    with client(fake) as gh, pytest.raises(GitHubAPIError, match="read-only"):
        commit(store(gh), leg_change(0, rows=1), "ro")


def test_gives_up_after_max_attempts_with_a_clear_error(memory):
    """When the tip moves before every PATCH, the update stops after max_attempts."""
    with client(memory) as gh:
        commit(store(gh), leg_change(0, rows=1), "seed")
        moves = iter(range(3))
        memory.inject(
            "update_branch",
            status=None,
            before=lambda: memory.push(BRANCH, {"other.md": f"{next(moves)}"}),
            times=3,
        )
        branch = BranchStore(gh, REPO, BRANCH, sleep=lambda _s: None, max_attempts=3)
        with pytest.raises(StoreError, match="moved it 3 times"):
            commit(branch, leg_change(1, rows=1), "never")
    assert memory.read_file("other.md", BRANCH) == "2"


# --------------------------------------------------------------------------- races


def test_two_legs_creating_the_branch_at_once_both_land(fake):
    """Leg A's branch creation is held until leg B created it and committed; A re-reads and lands."""
    release = threading.Event()
    hold = fake.inject(method="POST", path=r"/git/refs$", status=None, wait=release)
    results: dict[str, Saved] = {}

    def leg_a() -> None:
        with client(fake) as gh:
            results["a"] = commit(store(gh, 1), leg_change(0), "leg a")

    thread = threading.Thread(target=leg_a)
    thread.start()
    deadline = time.monotonic() + 10
    while not hold.hits and time.monotonic() < deadline:
        time.sleep(0.005)
    assert hold.hits == 1
    with client(fake) as gh:
        results["b"] = commit(store(gh, 2), leg_change(1), "leg b")
    release.set()
    thread.join(timeout=30)
    assert results["b"].attempts == 1
    assert results["a"].attempts == 2
    assert [r.status for r in fake.requests_to("POST", r"/git/refs$")] == [201, 422]
    assert len(history(fake)) == 2
    assert_every_cell_landed(fake, legs=2)


def test_commit_post_that_landed_before_a_502_gives_one_commit(fake):
    """A 502 after the commit was stored is retried; the branch still gets exactly one commit."""
    fake.inject(method="POST", path=r"/git/commits$", status=502, after_write=True)
    with client(fake) as gh:
        result = commit(store(gh), leg_change(0), "once")
    assert history(fake) == [result.commit_sha]


@pytest.mark.parametrize("faults", [False, True])
def test_sixteen_concurrent_legs_never_lose_a_cell(memory, faults):
    """16 legs merge their own column into 3 dashboards at once; every cell lands, one commit each."""
    legs = 16
    memory.latency = (0.0, 0.002)  # every call pauses, so the legs really interleave
    if faults:
        # Writes that land and are then answered 502: the client's retry repeats them.
        memory.inject("update_branch", after_write=True, retried=True, times=3)
        memory.inject("create_commit", after_write=True, retried=True, times=3)
    barrier = threading.Barrier(legs)
    outcomes: dict[int, Saved] = {}
    errors: list[BaseException] = []
    calls: list[int] = []

    def run_leg(leg: int) -> None:
        try:
            with client(memory) as gh:
                branch = store(gh, leg)
                barrier.wait(timeout=10)
                outcomes[leg] = commit(branch, leg_change(leg, calls=calls), f"leg {leg}")
        except BaseException as error:  # noqa: BLE001  -- reported by the main thread
            errors.append(error)

    started = time.monotonic()
    threads = [threading.Thread(target=run_leg, args=(leg,)) for leg in range(legs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(outcomes) == list(range(legs))
    memory.latency = (0.0, 0.0)
    assert_every_cell_landed(memory, legs=legs)
    # Each leg's column landed in exactly one commit: no lost and no duplicated update.
    chain = history(memory)
    assert len(chain) == legs
    assert {o.commit_sha for o in outcomes.values()} - {None} <= set(chain)
    assert len(calls) == sum(o.attempts for o in outcomes.values())
    assert time.monotonic() - started < 60


def test_revision_rises_by_one_per_commit_across_legs(memory):
    """Each commit raises the branch revision by exactly one, whichever leg makes it."""
    with client(memory) as gh:
        first = commit(store(gh), leg_change(0), "a")
        second = commit(store(gh), leg_change(1), "b")
        unchanged = commit(store(gh), leg_change(1), "c")
    assert (first.revision, second.revision, unchanged.revision) == (1, 2, 2)
    assert memory.read_file(f"{STATE_DIR}/REVISION", BRANCH) == "2\n"
