"""Tests for branch_store.py: state and dashboards on a branch, one CAS commit per update.

Store logic and the races run on the in-memory model (tests/github/memory.py); the tests of
what goes over the wire run through real PyGithub on the HTTP fake.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping

import pytest

from ivy_matrix.errors import GitHubAPIError, StoreError
from ivy_matrix.fold import Merged, merge_batches
from ivy_matrix.github.client import GitHubClient
from ivy_matrix.merge import Batch, apply_batch
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.render import RenderedFile, Style, render_files
from ivy_matrix.statefile import dump_state, join_columns, load_state
from ivy_matrix.stores import Saved
from ivy_matrix.stores.branch import MAX_ATTEMPTS, BranchStore
from ivy_matrix.stores.layout import Leg
from ivy_matrix.stores.snapshot import git_blob_sha
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
        # A column under another backend's name is refused the same way.
        tip = memory.ref_sha(f"heads/{BRANCH}")
        assert tip is not None
        wrong = {f"{STATE_DIR}/x.json": None, f"{STATE_DIR}/core/gradients.d/b01.json": misplaced}
        tree = gh.create_tree(REPO, gh.get_tree(REPO, tip).sha, wrong)
        assert gh.update_branch(REPO, BRANCH, gh.create_commit(REPO, "y", tree, [tip]))
        with pytest.raises(StoreError, match=r"gradients.d/b01.json on branch .* holds dashboard"):
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


def test_revision_rises_by_one_per_commit_across_legs(memory):
    """Each commit raises the branch revision by exactly one, whichever leg makes it."""
    with client(memory) as gh:
        first = commit(store(gh), leg_change(0), "a")
        second = commit(store(gh), leg_change(1), "b")
        unchanged = commit(store(gh), leg_change(1), "c")
    assert (first.revision, second.revision, unchanged.revision) == (1, 2, 2)
    assert memory.read_file(f"{STATE_DIR}/REVISION", BRANCH) == "2\n"


# --------------------------------------------------------------------------- matrix legs


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
    gh: GitHubClient, leg: int, size: int, change, *, seed: int = 0, run: int = RUN
) -> BranchStore:
    """The branch store of leg ``leg`` of a matrix of ``size`` legs in run ``run``."""
    return BranchStore(
        gh,
        REPO,
        BRANCH,
        STATE_DIR,
        sleep=time.sleep,
        rng=random.Random(seed),
        base_delay=0.02,
        max_delay=0.5,
        render=lambda merged, keys: render_files(merged.ordered(), style=Style.IVY, only=keys),
        leg=Leg(
            run_id=run,
            index=leg,
            size=size,
            dashboards=frozenset(DASHBOARDS),
            backends=frozenset({f"b{leg:02d}"}),
            change=change,
        ),
    )


def run_leg(gh: GitHubClient, leg: int, size: int, **options) -> Saved:
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


def test_matrix_legs_write_only_their_column_and_the_last_one_renders(memory):
    """Legs of a 3-leg run commit only their column; the leg that completes it renders all."""
    with client(memory) as gh:
        first = run_leg(gh, 0, 3)
        second = run_leg(gh, 1, 3)
        assert not any(path.endswith(".md") for path in memory.files(BRANCH))
        last = run_leg(gh, 2, 3)
    assert (first.rendered, second.rendered, last.rendered) == (False, False, True)
    assert second.written == (
        f"{STATE_DIR}/LEGS",
        f"{STATE_DIR}/REVISION",
        f"{STATE_DIR}/core/gradients.d/b01.json",
        f"{STATE_DIR}/core/random.d/b01.json",
        f"{STATE_DIR}/stateful/layers.d/b01.json",
    )
    assert {"README.md", "core/gradients.md", "core/random.md", "stateful/layers.md"} <= set(
        last.written
    )
    assert_every_cell_landed(memory, legs=3)
    assert_markdown_is_a_render_of_the_state(memory)


def test_a_leg_reads_only_its_own_columns_until_the_run_is_complete(memory):
    """A leg reads the tree, the finished legs and its own columns; never another leg's."""
    with client(memory) as gh:
        for leg in range(3):
            run_leg(gh, leg, 5)
        before = len(memory.calls)
        run_leg(gh, 1, 5, run=RUN + 1)  # a new run: its column b01 has the old run's results
    calls = memory.calls[before:]
    # ref, tree, LEGS, REVISION, three b01 columns; its results to the inbox (tree, commit,
    # ref); the inbox listing; the fold: ref (same tip: no listing), tree, commit, ref; the
    # folded inbox ref deleted.
    assert calls.count("get_blob_text") == 5
    assert calls[7:] == [
        "create_tree",
        "create_commit",
        "create_ref",
        "list_refs",
        "get_branch_head",
        "create_tree",
        "create_commit",
        "update_branch",
        "delete_ref",
    ]


def test_an_identical_re_run_of_a_leg_writes_nothing(memory):
    """A leg that runs again with the same results, after its run completed, writes nothing."""
    with client(memory) as gh:
        for leg in range(2):
            run_leg(gh, leg, 2)
        writes = len(memory.writes())
        again = run_leg(gh, 1, 2)
    assert again.commit_sha is None
    assert len(memory.writes()) == writes


def test_a_re_run_attempt_of_a_failed_leg_finds_the_run_complete_and_renders(memory):
    """Leg 1 of a done run runs again (attempt 2, new outcomes): it renders the new state."""
    with client(memory) as gh:
        for leg in range(3):
            run_leg(gh, leg, 3)
        again = run_leg(gh, 1, 3, attempt=2, flip=1)
    assert again.rendered
    assert "core/gradients.md" in again.written
    assert_markdown_is_a_render_of_the_state(memory)
    state = branch_states(memory)[DASHBOARDS[0]]
    assert state.rows[0].cells["b01"].latest.source.run.run_attempt == 2


def test_a_one_file_state_of_an_older_version_is_read_and_split_when_written(memory):
    """An older one-file state is read as it is, and replaced by its columns when a leg writes."""
    dashboard = DASHBOARDS[0]
    old = column_change(7, rows=3)(column_change(8, rows=3)({}).states).states[dashboard]
    legacy = f"{STATE_DIR}/core/gradients.json"
    memory.push(BRANCH, {legacy: dump_state(old)})
    with client(memory) as gh:
        assert store(gh).load() == {dashboard: old}
        saved = run_leg(gh, 1, 4, rows=3)
    files = memory.files(BRANCH)
    assert legacy not in files
    assert legacy in saved.written
    columns = sorted(p for p in files if p.startswith(f"{STATE_DIR}/core/gradients.d/"))
    assert columns == [f"{STATE_DIR}/core/gradients.d/b{n:02d}.json" for n in (1, 7, 8)]
    state = branch_states(memory)[dashboard]
    assert state.backend_names == ("b01", "b07", "b08")
    assert [row.cells["b07"] for row in state.rows] == [row.cells["b07"] for row in old.rows]


@pytest.mark.timeout(60)
def test_thirty_two_matrix_legs_at_once_all_land_in_few_tries(memory):
    """32 legs of one run race: every cell lands, no leg retries more than a few times, the
    legs' changes run once per try, and the markdown is a render of the state at the end."""
    legs = 32
    memory.latency = (0.0, 0.002)
    barrier = threading.Barrier(legs)
    outcomes: dict[int, Saved] = {}
    errors: list[BaseException] = []

    def leg_thread(leg: int) -> None:
        try:
            with client(memory) as gh:
                change = column_change(leg, rows=5)
                branch = matrix_store(gh, leg, legs, change, seed=leg)
                barrier.wait(timeout=10)
                outcomes[leg] = branch.update(change)
        except BaseException as error:  # noqa: BLE001  -- reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=leg_thread, args=(leg,)) for leg in range(legs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=50)
    assert errors == []
    memory.latency = (0.0, 0.0)
    assert_every_cell_landed(memory, legs=legs, rows=5)
    assert_markdown_is_a_render_of_the_state(memory)
    tries = sorted(o.attempts for o in outcomes.values())
    # At least one fold renders (the markdown check above is the invariant). Rarely a second
    # fold, racing the first one's ref deletions, renders again: redundant, not wrong.
    assert sum(o.rendered for o in outcomes.values()) >= 1
    assert tries[-1] <= MAX_ATTEMPTS
    print(f"tries: max {tries[-1]}, mean {sum(tries) / legs:.2f}")


def test_a_branch_whose_listing_github_cuts_short_is_still_read_whole(fake):
    """With GitHub truncating every listing of over 4 entries, a second leg still merges into
    every dashboard the first one wrote (nothing is taken for missing)."""
    with client(fake) as gh:
        commit(store(gh), leg_change(0), "first")
        fake.configure(tree_limit=4)
        commit(store(gh), leg_change(1), "second")
    assert any(r.query == {} for r in fake.requests_to("GET", r"/git/trees/"))
    assert_every_cell_landed(fake, legs=2)


def test_a_page_of_megabytes_is_committed_through_a_blob_of_its_own(fake):
    """A rendered page over the inline limit is sent with POST /git/blobs and lands whole."""
    big = "| test | ✅ |\n" * 200_000

    def with_big_page(states):
        new, files = leg_change(0, rows=2)(states)
        return new, [*files, RenderedFile(path="big.md", text=big)]

    with client(fake) as gh:
        commit(store(gh), with_big_page, "big")
    assert fake.files(BRANCH)["big.md"] == big.encode()
    assert len(fake.requests_to("POST", r"/git/blobs$")) == 1


# --------------------------------------------------------------------------- matrix legs: the inbox

INBOX = f"refs/ivy-matrix/inbox/{BRANCH}/"


class FolderDiedError(Exception):
    """Raised by a hook: the leg that folded the inbox stops before it deletes the refs."""


def race_legs(
    memory: MemoryGitHub, size: int, *, seed: int = 0
) -> dict[int, Saved | BaseException]:
    """Every leg of a ``size``-leg run updates at once, each in its own thread and store."""
    barrier = threading.Barrier(size)
    outcomes: dict[int, Saved | BaseException] = {}

    def run(leg: int) -> None:
        change = column_change(leg)
        branch = matrix_store(memory.as_client(), leg, size, change, seed=seed + leg)
        barrier.wait(timeout=10)
        try:
            outcomes[leg] = branch.update(change)
        except BaseException as error:  # noqa: BLE001  -- the caller looks at each outcome
            outcomes[leg] = error

    threads = [threading.Thread(target=run, args=(leg,)) for leg in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


def test_thirty_two_legs_with_faults_fold_their_inboxes_and_lose_nothing(memory):
    """32 racing legs, with inbox refs that land before a 502 and a folder that dies after its
    commit, put every cell on the branch, render it once complete and stay within 5 tries."""
    memory.latency = (0.0, 0.002)
    memory.inject("create_ref", after_write=True, retried=True, times=4)

    def die() -> None:
        raise FolderDiedError

    memory.inject("delete_ref", status=None, before=die, times=1)
    outcomes = race_legs(memory, 32)
    died = [leg for leg, outcome in outcomes.items() if isinstance(outcome, BaseException)]
    assert len(died) <= 1
    assert all(isinstance(outcomes[leg], FolderDiedError) for leg in died)
    saved = [outcome for outcome in outcomes.values() if isinstance(outcome, Saved)]
    assert max(s.attempts for s in saved) <= 5
    memory.latency = (0.0, 0.0)
    with memory.lock:
        # Left by the folder that died: already on the branch, folded by the next writer.
        left = [ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]
    assert len(left) <= 1
    assert_every_cell_landed(memory, legs=32)
    assert_markdown_is_a_render_of_the_state(memory)


def test_inbox_refs_left_by_a_dead_run_are_folded_by_the_next_leg_and_change_nothing(memory):
    """A leg folds inbox refs that an earlier run left behind (results already on the branch or
    not) and deletes them; folding results that are already in writes nothing new."""
    gh = memory.as_client()
    run_leg(gh, 0, 2)
    tip = memory.ref_sha(f"heads/{BRANCH}")
    # A leg of the old run that published its results, then died before folding them.
    change = column_change(1)
    dead = matrix_store(gh, 1, 2, change)
    assert dead.leg is not None

    def die() -> None:
        raise FolderDiedError

    memory.inject("list_refs", status=None, before=die)
    with pytest.raises(FolderDiedError):
        dead.update(change)
    assert memory.ref_sha(f"heads/{BRANCH}") == tip
    with memory.lock:
        assert len([ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]) == 1
    # A later run's leg folds it in with its own results, and the old run completes.
    later = run_leg(gh, 0, 2, run=RUN + 1)
    assert later.commit_sha is not None
    with memory.lock:
        assert not [ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]
    states = branch_states(memory)
    assert all("b01" in state.backend_names for state in states.values())
    assert_markdown_is_a_render_of_the_state(memory)


def test_results_folded_before_a_folder_died_are_folded_again_without_change(memory):
    """A folder that dies after its commit, before deleting its inbox ref, leaves the ref; the
    next leg folds it again, which changes nothing of its columns, and deletes it."""
    gh = memory.as_client()

    def die() -> None:
        raise FolderDiedError

    memory.inject("delete_ref", status=None, before=die)
    with pytest.raises(FolderDiedError):
        run_leg(gh, 0, 2)
    assert len(history(memory)) == 1
    with memory.lock:
        assert len([ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]) == 1
    last = run_leg(gh, 1, 2)
    assert len(history(memory)) == 2
    assert not [path for path in last.written if path.endswith("b00.json")]
    assert last.rendered
    with memory.lock:
        assert not [ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]
    assert_every_cell_landed(memory, legs=2)
    assert_markdown_is_a_render_of_the_state(memory)


def test_a_dry_run_leg_publishes_nothing_to_the_inbox(memory):
    """A matrix leg in a dry run reports the files it would change and writes no ref or object."""
    gh = memory.as_client()
    run_leg(gh, 0, 2)
    writes = len(memory.writes())
    change = column_change(1)
    branch = matrix_store(gh, 1, 2, change)
    branch.dry_run = True
    saved = branch.update(change)
    assert f"{STATE_DIR}/core/gradients.d/b01.json" in saved.written
    assert len(memory.writes()) == writes


def test_folding_keeps_as_many_results_per_cell_as_the_legs_history_says(memory):
    """Folded results keep the leg's ``history`` entries per cell, more than the default too."""
    gh = memory.as_client()
    runs = 12
    for offset in range(runs):
        change = column_change(0, run=RUN + offset)
        leg = Leg(
            run_id=RUN + offset,
            index=0,
            size=1,
            dashboards=frozenset(DASHBOARDS),
            backends=frozenset({"b00"}),
            change=change,
            history=runs,
        )
        BranchStore(gh, REPO, BRANCH, STATE_DIR, leg=leg).update(change)
    for state in branch_states(memory).values():
        assert {len(row.cells["b00"].entries) for row in state.rows} == {runs}


def test_a_leg_that_folds_reports_the_cells_its_own_results_changed(memory):
    """The folding leg's report counts its own changed cells, not the fold's (zero) view."""
    gh = memory.as_client()
    first = run_leg(gh, 0, 2)
    last = run_leg(gh, 1, 2)
    assert first.commit_sha is not None
    assert last.rendered
    assert first.merged.changed_cells == last.merged.changed_cells == ROWS * len(DASHBOARDS)
