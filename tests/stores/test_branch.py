"""Tests for stores/branch.py: state and dashboards on a branch, one CAS commit per update.

Store logic and the races run on the in-memory model (tests/github/memory.py); the tests of
what goes over the wire run through real PyGithub on the HTTP fake. The matrix legs and
their inbox are tested in tests/stores/test_inbox.py.
"""

from __future__ import annotations

import threading
import time
from functools import partial

import pytest

from ivy_matrix.errors import GitHubAPIError, StoreError
from ivy_matrix.fold import merge_batches
from ivy_matrix.merge import Batch, apply_batch
from ivy_matrix.model import Entry, Outcome, RunKey, Source
from ivy_matrix.render import RenderedFile, Style, render_files
from ivy_matrix.stores import Saved
from ivy_matrix.stores.branch import BranchStore
from tests.concurrency import at_once
from tests.github.budget import RACING
from tests.stores.helpers import (
    BRANCH,
    DASHBOARDS,
    REPO,
    RUN,
    STATE_DIR,
    assert_every_cell_landed,
    assert_markdown_is_a_render_of_the_state,
    client,
    column_change,
    commit,
    history,
    job_url,
    leg_change,
    store,
)


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
        "trend.json",
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
        "trend.json",  # the store's newest run is a new point
    )
    assert result.revision == 2
    tree_posts = fake.requests_to("POST", r"/git/trees$")
    assert sorted(e["path"] for e in tree_posts[-1].body["tree"]) == list(result.written)


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


def test_two_legs_creating_the_branch_at_once_both_land(fake):
    """Leg A's branch creation is held until leg B created it and committed; A re-reads and lands."""
    release = threading.Event()
    hold = fake.inject(method="POST", path=r"/git/refs$", status=None, wait=release)
    results: dict[str, Saved] = {}

    def leg_a() -> None:
        with client(fake) as gh:
            results["a"] = commit(store(gh, 1), leg_change(0), "leg a")

    thread = threading.Thread(target=leg_a, daemon=True)
    thread.start()
    while not hold.hits:  # leg A's create is held (a hang is the suite's hang guard's)
        time.sleep(0.005)
    assert hold.hits == 1
    with client(fake) as gh:
        results["b"] = commit(store(gh, 2), leg_change(1), "leg b")
    release.set()
    thread.join()
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
    # A race of 16 legs each committing (up to 16 tries of 3 writes) passes GitHub's content
    # limits; this tests that nothing is lost, so it takes the racing budget.
    memory.budget.configure(RACING)
    legs = 16
    memory.latency = (0.0, 0.002)  # every call pauses, so the legs really interleave
    if faults:
        # Writes that land and are then answered 502: the client's retry repeats them.
        memory.inject("update_branch", after_write=True, retried=True, times=3)
        memory.inject("create_commit", after_write=True, retried=True, times=3)
    outcomes: dict[int, Saved] = {}
    calls: list[int] = []

    def run_leg(leg: int) -> None:
        outcomes[leg] = commit(store(memory, leg), leg_change(leg, calls=calls), f"leg {leg}")

    at_once([partial(run_leg, leg) for leg in range(legs)])
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


def test_render_all_renders_every_page_not_only_the_changed_ones(memory):
    """A store built with render_all (the publish command) restores a page that went missing,
    where an update that changes nothing renders and writes nothing."""

    def render(merged, keys):
        return render_files(merged.ordered(), style=Style.IVY, only=keys)

    def nothing_new(states):
        return merge_batches(states, [])

    BranchStore(memory, REPO, BRANCH, STATE_DIR, render=render).update(column_change(0))
    tip = memory.ref_sha(f"heads/{BRANCH}")
    assert tip is not None
    tree = memory.create_tree(REPO, memory.get_tree(REPO, tip).sha, {"stateful/layers.md": None})
    assert memory.update_branch(REPO, BRANCH, memory.create_commit(REPO, "x", tree, [tip]))
    plain = BranchStore(memory, REPO, BRANCH, STATE_DIR, render=render).update(nothing_new)
    assert plain.written == ()
    assert "stateful/layers.md" not in memory.files(BRANCH)
    every = BranchStore(memory, REPO, BRANCH, STATE_DIR, render=render, render_all=True)
    assert every.update(nothing_new).written == (f"{STATE_DIR}/REVISION", "stateful/layers.md")
    assert_markdown_is_a_render_of_the_state(memory)
