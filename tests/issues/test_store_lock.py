"""Tests for issues/store_lock.py: the issue-body store's jobs take turns, or refuse.

The races run on the in-memory model (tests/github/memory.py) with threads.
"""

from __future__ import annotations

import random
import time
from functools import partial
from typing import Any

import pytest

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.issues.markers import dashboard_key, is_index
from ivy_matrix.issues.state_block import extract_state
from ivy_matrix.issues.store import IssueStore
from ivy_matrix.issues.store_lock import STORE_LOCK_WAIT, ConcurrentWritersError, StoreLock, Turns
from ivy_matrix.stores import Saved
from tests.concurrency import at_once
from tests.github.budget import RACING
from tests.github.fake_server import BOT_LOGIN, FakeGitHub
from tests.github.memory import MemoryGitHub
from tests.issues.helpers import REPO, Lines, client, issue_store, leg_change

LEGS = 16


def store(memory: MemoryGitHub, seed: int, *, wait: float = STORE_LOCK_WAIT) -> IssueStore:
    """Job ``seed``'s issue-body store: it takes turns, looking again every few milliseconds."""
    return issue_store(
        memory,
        seed,
        turns=Turns(holder=f"job {seed}", wait=wait, poll=(0.001, 0.004)),
        sleep=lambda s: time.sleep(min(s, 0.005)),
    )


def all_issues(memory: MemoryGitHub) -> list[dict[str, Any]]:
    with memory.lock:
        return list(memory.issues.values())


def test_sixteen_legs_on_the_issue_store_lose_no_cell_and_duplicate_no_issue(memory):
    """16 legs writing the issue-body store at once, with creates answered 502 after landing,
    keep every cell and create each issue once; no lock comment is left behind."""
    # 16 jobs taking turns on the issue bodies write about 85 times within seconds, over
    # GitHub's 80 a minute; this tests that no cell is lost and no issue duplicated.
    memory.budget.configure(RACING)
    memory.latency = (0.0, 0.002)
    memory.inject("create_issue", status=502, after_write=True, times=2)
    backends = [f"b{leg:02d}" for leg in range(LEGS)]
    outcomes: dict[str, Saved | Exception] = {}

    def leg(index: int) -> None:
        try:
            outcomes[backends[index]] = store(memory, index).update(
                leg_change(backends[index], index + 1)
            )
        except ConcurrentWritersError as error:  # a clear refusal is allowed, a loss is not
            outcomes[backends[index]] = error

    at_once([partial(leg, index) for index in range(LEGS)])
    assert len(outcomes) == LEGS
    landed = sorted(b for b, o in outcomes.items() if isinstance(o, Saved))
    assert landed == backends  # with a generous wait every leg gets its turn
    issues = all_issues(memory)
    assert all(i["state"] == "open" for i in issues)
    assert sum(is_index(i["body"]) for i in issues) == 1
    for key in ("core/gradients", "core/random"):
        [issue] = [i for i in issues if dashboard_key(i["body"]) == key]
        state = extract_state(issue["body"])
        assert state is not None
        assert sorted(state.backend_names) == landed
        assert all(set(row.cells) == set(landed) for row in state.rows)
    with memory.lock:
        assert not any(
            "ivy-matrix:lock" in c["body"] for cs in memory.comments.values() for c in cs
        )


def test_a_job_that_waits_too_long_refuses_and_writes_nothing(memory):
    """While another job holds the lock, a job past its wait raises an error that says to
    grant contents: write, and leaves the dashboard issues untouched."""
    store(memory, 1).update(leg_change("torch", 1))
    [index] = [i for i in all_issues(memory) if is_index(i["body"])]
    holder = StoreLock(
        memory,
        REPO,
        Turns(holder="run 7 job 70"),
        log=Lines(),
        sleep=lambda _s: None,
        rng=random.Random(0),
    )
    holder.acquire(index["number"])
    before = {i["number"]: i["body"] for i in all_issues(memory)}
    with pytest.raises(ConcurrentWritersError) as refused:
        store(memory, 2, wait=0.01).update(leg_change("jax", 2))
    message = str(refused.value)
    assert "run 7 job 70" in message
    assert "contents: write" in message
    assert "'branch'" in message
    assert {i["number"]: i["body"] for i in all_issues(memory)} == before
    holder.release()
    store(memory, 3).update(leg_change("jax", 2))
    gradients = next(i for i in all_issues(memory) if dashboard_key(i["body"]) == "core/gradients")
    state = extract_state(gradients["body"])
    assert state is not None
    assert sorted(state.backend_names) == ["jax", "torch"]


def test_a_claim_left_by_a_job_that_died_expires(memory):
    """A claim older than the expiry does not block the next job, and is removed."""
    store(memory, 1).update(leg_change("torch", 1))
    [index] = [i for i in all_issues(memory) if is_index(i["body"])]
    dead = StoreLock(
        memory,
        REPO,
        Turns(holder="job that died"),
        log=Lines(),
        sleep=lambda _s: None,
        rng=random.Random(0),
        clock=lambda: time.time() - 3_600,
    )
    dead.acquire(index["number"])
    saved = store(memory, 2, wait=0.01).update(leg_change("jax", 2))
    assert saved.converged
    with memory.lock:
        assert memory.comments[index["number"]] == []


def test_an_error_while_waiting_removes_the_claim(memory):
    """When a request fails while a job waits for its turn, its claim comment is removed, so
    the other jobs need not wait for it to expire."""
    store(memory, 1).update(leg_change("torch", 1))
    [index] = [i for i in all_issues(memory) if is_index(i["body"])]
    memory.inject("list_issue_comments", status=502)
    lock = StoreLock(
        memory,
        REPO,
        Turns(holder="j"),
        log=Lines(),
        sleep=lambda _s: None,
        rng=random.Random(0),
    )
    with pytest.raises(GitHubAPIError):
        lock.acquire(index["number"])
    with memory.lock:
        assert memory.comments[index["number"]] == []


def claim_text(since: int | str, nonce: str = "deadbeef", holder: str = "job 9") -> str:
    return f"<!-- ivy-matrix:lock nonce={nonce} since={since} -->\nivy-matrix ({holder}) rm -rf"


def index_number(github: FakeGitHub | MemoryGitHub) -> int:
    with github.lock:
        [number] = [n for n, i in github.issues.items() if is_index(i["body"])]
    return number


def comments_of(github: FakeGitHub | MemoryGitHub, number: int) -> list[tuple[str, str]]:
    """(author, body) of each comment on issue ``number``."""
    with github.lock:
        return [(c.get("login", BOT_LOGIN), c["body"]) for c in github.comments[number]]


@pytest.fixture(name="github", params=["memory", "http"])
def github_fixture(request):
    """The in-memory model, or the HTTP fake reached through our client."""
    if request.param == "memory":
        yield MemoryGitHub()
        return
    with FakeGitHub() as fake:
        yield fake


def update_as(github: FakeGitHub | MemoryGitHub, seed: int, backend: str, log: Lines) -> Saved:
    """Job ``seed`` writes ``backend``'s column, waiting at most a moment for its turn."""
    with client(github) as gh:
        turns = Turns(holder=f"job {seed}", wait=0.01, poll=(0.001, 0.004))
        return issue_store(gh, seed, turns=turns, log=log).update(leg_change(backend, seed))


@pytest.mark.parametrize(
    "since",
    [0, int(time.time()), 9_999_999_999, "9" * 5_000],
    ids=["expired", "now", "future", "5000-digits"],
)
def test_a_claim_by_another_user_neither_holds_the_lock_nor_is_touched(github, since):
    """A claim written by any login but the token's own, whatever its date, does not hold
    the lock; it is never edited or deleted, and one warning names it without its text."""
    update_as(github, 1, "torch", Lines())
    index = index_number(github)
    github.add_comment(index, claim_text(since), login="mallory")
    log = Lines()

    saved = update_as(github, 2, "jax", log)

    assert saved.converged
    assert comments_of(github, index) == [("mallory", claim_text(since))]
    [warning] = [w for w in log.warnings if "lock claim" in w]
    assert "mallory" in warning
    assert f"issues/{index}#issuecomment-" in warning
    assert "rm -rf" not in warning


def test_a_claim_of_ours_dated_in_the_future_never_holds_and_is_removed(github):
    """A claim by the token's own login dated ahead of every clock (it would never expire) is
    void: the next job takes its turn at once and removes it."""
    update_as(github, 1, "torch", Lines())
    index = index_number(github)
    github.add_comment(index, claim_text(9_999_999_999), login=BOT_LOGIN)

    saved = update_as(github, 2, "jax", Lines())

    assert saved.converged
    assert comments_of(github, index) == []


def test_a_copy_of_our_claim_by_another_user_is_not_removed_with_ours(memory):
    """When another user copies this job's claim (nonce included) while it waits, the job
    removes only its own comment when it is done."""
    update_as(memory, 1, "torch", Lines())
    index = index_number(memory)

    def copy_claims() -> None:
        for _, body in comments_of(memory, index):
            if body.startswith("<!-- ivy-matrix:lock") and len(comments_of(memory, index)) < 2:
                memory.add_comment(index, body, login="mallory")

    memory.inject("list_issue_comments", status=None, before=copy_claims, times=1)

    update_as(memory, 2, "jax", Lines())

    [(author, body)] = comments_of(memory, index)
    assert author == "mallory"
    assert body.startswith("<!-- ivy-matrix:lock nonce=")
