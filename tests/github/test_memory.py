"""Tests for tests/github/memory.py: it answers like GitHubClient on the HTTP fake.

The contract tests run one scenario twice, through real PyGithub on ``FakeGitHub`` and on
``MemoryGitHub``, with the same expected values, so store tests on the model hold on GitHub.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from ivy_matrix.errors import GitHubAPIError, RateLimitError, ReadOnlyTokenError
from ivy_matrix.github.client import GitHubClient
from ivy_matrix.github.git import INLINE_LIMIT
from ivy_matrix.github.types import CommitStatus
from ivy_matrix.results.jobs import Job
from tests.conftest import fake_client
from tests.github.budget import GITHUB_TOKEN, Limits, ManualClock
from tests.github.fake_server import FakeGitHub, git_blob_sha
from tests.github.memory import MemoryGitHub

REPO = "acme/widgets"
BRANCH = "ivy-matrix"
LABEL = "ivy-matrix"
# What `git write-tree` gives for README.md ("r") and a/b.md ("é ✅\n").
TREE = "dc06389b0a9f73eeef2c11fc66adbaf9dfb1b290"
TEXT = "é ✅\n"


@dataclass
class Side:
    """One implementation of the client, and the model behind it."""

    gh: GitHubClient | MemoryGitHub
    model: FakeGitHub | MemoryGitHub

    def make_read_only(self) -> None:
        if isinstance(self.model, FakeGitHub):
            self.model.configure(read_only=True)
        else:
            self.model.read_only = True


@pytest.fixture(name="side", params=["http", "memory"])
def side_fixture(request: pytest.FixtureRequest) -> Iterator[Side]:
    """GitHubClient on the HTTP fake, or the in-memory model."""
    if request.param == "memory":
        memory = MemoryGitHub()
        yield Side(memory, memory)
        return
    with FakeGitHub() as fake, fake_client(fake) as gh:
        yield Side(gh, fake)


def status_of(error: pytest.ExceptionInfo[GitHubAPIError]) -> int | None:
    return error.value.status


def test_branch_writes_are_compare_and_swap_on_content_addressed_objects(side):
    """Trees get git's ids; a branch is created once; a stale move returns False, changes nothing."""
    gh = side.gh
    assert gh.get_branch_head(REPO, BRANCH) is None
    tree = gh.create_tree(REPO, None, {"a/b.md": TEXT, "README.md": "r"})
    assert tree == TREE
    files = {"README.md": git_blob_sha(b"r"), "a/b.md": git_blob_sha(TEXT.encode())}
    root = gh.create_commit(REPO, "root", tree, [])
    assert gh.get_tree(REPO, root).files == files
    assert gh.get_blob_text(REPO, files["a/b.md"]) == TEXT
    assert gh.create_branch(REPO, BRANCH, root) is True
    assert gh.create_branch(REPO, BRANCH, root) is False  # "Reference already exists"
    winner = gh.create_commit(REPO, "w", gh.create_tree(REPO, tree, {"w": "w"}), [root])
    loser = gh.create_commit(REPO, "l", gh.create_tree(REPO, tree, {"a": None}), [root])
    assert gh.get_tree(REPO, loser).files == {"README.md": files["README.md"]}
    assert gh.update_branch(REPO, BRANCH, winner) is True
    assert gh.update_branch(REPO, BRANCH, loser) is False  # not a fast forward
    assert gh.update_branch(REPO, BRANCH, winner) is True  # a move to itself is one
    assert gh.update_branch(REPO, "gone", winner) is False
    assert gh.get_branch_head(REPO, BRANCH) == winner


def test_refs_under_a_prefix_are_listed_by_name(side):
    """Refs under a prefix are listed (name -> commit, by name, nothing outside it)."""
    gh = side.gh
    root = gh.create_commit(REPO, "root", gh.create_tree(REPO, None, {"r": "r"}), [])
    prefix = "refs/ivy-matrix/pr/"
    assert gh.list_refs(REPO, prefix) == {}
    for name in ("7", "12"):
        assert gh.create_ref(REPO, prefix + name, root) is True
    assert gh.create_ref(REPO, "refs/ivy-matrix/prx/1", root) is True
    assert gh.create_branch(REPO, BRANCH, root) is True
    assert gh.list_refs(REPO, prefix) == {prefix + "12": root, prefix + "7": root}
    assert gh.get_branch_head(REPO, BRANCH) == root


def test_missing_objects_are_404_and_invalid_writes_422(side):
    """A missing blob or tree is 404, a commit or ref of a missing object 422; a missing ref is
    None (even in a missing repository) and moving it returns False."""
    gh = side.gh
    with pytest.raises(GitHubAPIError) as caught:
        gh.get_blob_text(REPO, "0" * 40)
    assert status_of(caught) == 404
    with pytest.raises(GitHubAPIError) as caught:
        gh.get_tree(REPO, "1" * 40)
    assert status_of(caught) == 404
    with pytest.raises(GitHubAPIError) as caught:
        gh.create_commit(REPO, "bad", "0" * 40, [])
    assert status_of(caught) == 422
    with pytest.raises(GitHubAPIError) as caught:
        gh.create_branch(REPO, BRANCH, "0" * 40)
    assert status_of(caught) == 422
    assert gh.update_branch(REPO, "gone", "0" * 40) is False  # no such ref comes first
    assert gh.get_branch_head("acme/nope", "main") is None


def test_bodies_over_65536_characters_are_refused_with_422(side):
    """A body one character over the limit (or an empty comment) is 422 and nothing changes."""
    gh = side.gh
    assert gh.create_issue(REPO, title="empty", body="", labels=[]).body == ""
    issue = gh.create_issue(REPO, title="t", body="x" * 65_536, labels=[LABEL])
    with pytest.raises(GitHubAPIError) as caught:
        gh.update_issue(REPO, issue.number, body="y" * 65_537)
    assert status_of(caught) == 422
    with pytest.raises(GitHubAPIError) as caught:
        gh.create_issue_comment(REPO, issue.number, "z" * 65_537)
    assert status_of(caught) == 422
    with pytest.raises(GitHubAPIError) as caught:
        gh.create_issue_comment(REPO, issue.number, "")
    assert status_of(caught) == 422
    assert gh.get_issue(REPO, issue.number).body == "x" * 65_536
    assert gh.list_issue_comments(REPO, issue.number) == []


def test_listings_hold_every_item_newest_issue_first_oldest_comment_first(side):
    """101 issues and comments (two pages over HTTP) list whole; PRs and other labels are left out."""
    gh = side.gh
    side.model.add_issue(REPO, title="pr", body="b", labels=[LABEL], pull_request=True)
    side.model.add_issue(REPO, title="other", body="b", labels=["bug"])
    # Arranged in state: 202 creates in a second are over GitHub's 80 writes a minute.
    numbers = [
        side.model.add_issue(REPO, title=f"{i}", body="b", labels=[LABEL])["number"]
        for i in range(101)
    ]
    gh.update_issue(REPO, numbers[0], state="closed")
    listed = gh.list_issues(REPO, label=LABEL)
    assert [i.number for i in listed] == numbers[::-1]
    assert listed[0].labels == (LABEL,)
    assert listed[0].html_url == f"https://github.com/{REPO}/issues/{numbers[-1]}"
    assert [i.number for i in gh.list_issues(REPO, label=LABEL, state="closed")] == numbers[:1]
    ids = [side.model.add_comment(numbers[1], f"c{i}")["id"] for i in range(101)]
    comments = gh.list_issue_comments(REPO, numbers[1])
    assert [c.id for c in comments] == ids
    assert [c.body for c in comments[:2]] == ["c0", "c1"]


def test_labels_comments_and_closing_behave_alike(side):
    """A label is created once; edits and deletes of comments land; a closed issue says so."""
    gh = side.gh
    assert gh.ensure_label(REPO, LABEL, description="d") is True
    assert gh.ensure_label(REPO, LABEL.upper()) is False
    issue = gh.create_issue(REPO, title="t", body="b", labels=[LABEL, "x"])
    comment = gh.create_issue_comment(REPO, issue.number, "one")
    assert gh.update_issue_comment(REPO, comment.id, "two").body == "two"
    assert [c.body for c in gh.list_issue_comments(REPO, issue.number)] == ["two"]
    assert gh.delete_issue_comment(REPO, comment.id) is True
    assert gh.delete_issue_comment(REPO, comment.id) is False
    closed = gh.update_issue(REPO, issue.number, state="closed", labels=["x"])
    assert (closed.state, closed.labels, closed.body) == ("closed", ("x",), "b")
    with pytest.raises(GitHubAPIError) as caught:
        gh.get_issue(REPO, 999)
    assert status_of(caught) == 404


def test_a_read_only_token_reads_but_every_write_raises_read_only_token_error(side):
    """With a read-only token reads work and writes raise ReadOnlyTokenError (403)."""
    gh = side.gh
    side.model.add_issue(REPO, title="t", body="b", labels=[LABEL])
    side.make_read_only()
    assert [i.title for i in gh.list_issues(REPO, label=LABEL)] == ["t"]
    with pytest.raises(ReadOnlyTokenError) as caught:
        gh.create_tree(REPO, None, {"a": "a"})
    assert status_of(caught) == 403
    with pytest.raises(ReadOnlyTokenError):
        gh.update_issue(REPO, 1, body="c")
    with pytest.raises(ReadOnlyTokenError):  # refused before GitHub looks for the comment
        gh.delete_issue_comment(REPO, 12345)
    assert gh.get_issue(REPO, 1).body == "b"


def test_a_commit_shows_the_newest_status_of_each_context_and_bad_ones_are_refused(side):
    """Each context shows its newest status (contexts compared without case); a commit GitHub
    does not have, a state it does not know and a description over 140 characters are 422,
    reading a missing commit's statuses is 404, and a read-only token may not set one."""
    gh = side.gh
    sha = side.model.add_commit(REPO)
    assert gh.get_combined_status(REPO, sha) == []
    url = "https://github.com/acme/widgets/actions/runs/1"
    first = CommitStatus(context="ivy-matrix/jax", state="failure", description="1 new: t")
    assert gh.create_commit_status(REPO, sha, first) == first
    gh.create_commit_status(REPO, sha, CommitStatus(context="ivy-matrix", state="success"))
    newest = CommitStatus(context="IVY-MATRIX/JAX", state="success", target_url=url)
    gh.create_commit_status(REPO, sha, newest)
    shown = {status.context: status for status in gh.get_combined_status(REPO, sha)}
    assert shown == {
        "IVY-MATRIX/JAX": newest,
        "ivy-matrix": CommitStatus(context="ivy-matrix", state="success"),
    }
    for sha_, status in [
        ("0" * 40, first),
        (sha, CommitStatus(context="c", state="done")),
        (sha, CommitStatus(context="c", state="success", description="x" * 141)),
    ]:
        with pytest.raises(GitHubAPIError) as caught:
            gh.create_commit_status(REPO, sha_, status)
        assert status_of(caught) == 422
    with pytest.raises(GitHubAPIError) as caught:
        gh.get_combined_status(REPO, "0" * 40)
    assert status_of(caught) == 404
    side.make_read_only()
    with pytest.raises(ReadOnlyTokenError):
        gh.create_commit_status(REPO, sha, first)
    assert len(gh.get_combined_status(REPO, sha)) == 2


# --------------------------------------------------------------------------- budgets, alike


@contextmanager
def budgeted_side(kind: str, limits: Limits, sleeps: list[float]) -> Iterator[Side]:
    """One side under ``limits`` on a ManualClock that the client's waits move."""
    clock = ManualClock()

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.advance(seconds)

    if kind == "memory":
        memory = MemoryGitHub(limits=limits, clock=clock, sleep=sleep)
        yield Side(memory.for_token("t"), memory)
        return
    with (
        FakeGitHub(limits=limits, clock=clock) as fake,
        fake_client(fake, clock=clock, sleep=sleep, retries=8) as gh,
    ):
        yield Side(gh, fake)


@pytest.mark.parametrize("kind", ["http", "memory"])
def test_each_call_spends_the_requests_the_client_sends(kind):
    """Pages of 100, blobs over 1 MB sent alone, a label's read before its create: the model
    charges what the client sends to GitHub, request for request."""
    with budgeted_side(kind, GITHUB_TOKEN, []) as side:
        gh, model = side.gh, side.model
        for i in range(150):  # two pages of issues
            model.add_issue(REPO, title=f"{i}", body="b", labels=[LABEL])
        big = "x" * (INLINE_LIMIT + 1)
        tree = gh.create_tree(REPO, None, {"big.md": big, "small.md": "s"})  # 2 POSTs
        root = gh.create_commit(REPO, "root", tree, [])
        assert gh.create_branch(REPO, BRANCH, root) is True
        files = gh.get_tree(REPO, root).files
        assert set(gh.get_blob_texts(REPO, files.values())) == set(files.values())  # 2 GETs
        assert len(gh.list_issues(REPO, label=LABEL)) == 150  # 2 GETs
        assert gh.ensure_label(REPO, "jax") is True  # GET, POST
        assert gh.ensure_label(REPO, "jax") is False  # GET
        issue = gh.create_issue(REPO, title="t", body="b", labels=[])
        gh.update_issue(REPO, issue.number, body="c")
        assert gh.delete_issue_comment(REPO, gh.create_issue_comment(REPO, 1, "c").id)
        status = CommitStatus(context="ivy-matrix", state="success")
        gh.create_commit_status(REPO, root, status)  # POST
        assert gh.get_combined_status(REPO, root) == [status]  # GET
        spent = model.budget.spent("t")
    assert (spent.requests, spent.content_requests, spent.refused) == (18, 10, 0)
    assert spent.bytes_sent > INLINE_LIMIT


@pytest.mark.parametrize("kind", ["http", "memory"])
def test_a_write_over_the_content_limit_waits_a_minute_then_lands(kind):
    """With 2 writes a minute the third issue waits GitHub's retry-after of 60 s, then lands."""
    sleeps: list[float] = []
    with budgeted_side(kind, Limits(content_per_minute=2), sleeps) as side:
        numbers = [
            side.gh.create_issue(REPO, title=f"{i}", body="", labels=[]).number for i in range(3)
        ]
        spent = side.model.budget.spent("t")
    assert sleeps == [60.0]
    assert len(set(numbers)) == 3
    assert (spent.content_requests, spent.refused, spent.peak_content_per_minute) == (4, 1, 3)


@pytest.mark.parametrize("kind", ["http", "memory"])
def test_a_spent_hour_ends_the_call_with_a_rate_limit_error(kind):
    """With the hour's 2 requests spent, the third read is an error at once: the reset is
    further away than the client waits."""
    sleeps: list[float] = []
    with budgeted_side(kind, Limits(requests_per_hour=2), sleeps) as side:
        assert [side.gh.get_branch_head(REPO, "main") is None for _ in range(2)] == [
            kind == "memory"
        ] * 2
        with pytest.raises(RateLimitError, match="the rate limit resets"):
            side.gh.get_branch_head(REPO, "main")
    assert sleeps == []


def test_legs_spend_on_their_own_tokens_from_one_shared_budget():
    """Each view's calls, its parallel blob reads included, count for its token; together
    they pay into the repository's budget."""
    memory = MemoryGitHub(limits=Limits(requests_per_hour=6))
    one, two = memory.for_token("leg-1"), memory.for_token("leg-2")
    tree = one.create_tree(REPO, None, {"a": "a", "b": "b", "c": "c"})
    shas = one.get_tree(REPO, tree).files.values()
    assert len(two.get_blob_texts(REPO, shas)) == 3
    assert memory.budget.remaining() == 1
    assert [memory.budget.spent(t).requests for t in ("leg-1", "leg-2")] == [2, 3]
    assert memory.calls == ["create_tree", "get_tree"] + ["get_blob_text"] * 3


def test_without_a_clock_to_move_a_refused_write_is_asked_again_until_the_client_gives_up():
    """The model's default sleep does not wait: the client's policy retries (5 waits of
    60 s fill its 300 s) and raises its RateLimitError; the write never lands."""
    memory = MemoryGitHub(limits=Limits(content_per_minute=1))
    memory.create_issue(REPO, title="a", body="", labels=[])
    with pytest.raises(RateLimitError, match="asks to wait 60 s"):
        memory.create_issue(REPO, title="b", body="", labels=[])
    assert [i["title"] for i in memory.issues.values()] == ["a"]
    assert memory.budget.spent().refused == 6


# --------------------------------------------------------------------------- the model alone


def test_the_model_has_the_clients_signatures():
    """Every client method the model offers takes the same parameters and returns the same type."""
    # The client's calls live in mixin classes (github/git.py, github/issues.py).
    members = {
        name: member
        for klass in reversed(GitHubClient.__mro__)
        if klass is not object
        for name, member in vars(klass).items()
    }
    shared = [
        name
        for name, member in members.items()
        if callable(member) and not name.startswith("_") and hasattr(MemoryGitHub, name)
    ]
    assert len(shared) >= 19
    for name in shared:
        theirs = inspect.signature(getattr(GitHubClient, name))
        ours = inspect.signature(getattr(MemoryGitHub, name))
        assert ours == theirs, name


def test_injected_faults_apply_write_then_fail_or_repeat(memory):
    """after_write applies the call then raises; retried applies it twice; before runs first."""
    memory.inject("create_issue", status=502, after_write=True)
    with pytest.raises(GitHubAPIError) as caught:
        memory.create_issue(REPO, title="a", body="b", labels=[])
    assert status_of(caught) == 502
    memory.inject("create_issue", after_write=True, retried=True)
    second = memory.create_issue(REPO, title="b", body="b", labels=[])
    assert [i["title"] for i in memory.issues.values()] == ["a", "b", "b"]
    assert second.number == 3
    memory.inject("get_issue", status=503)
    with pytest.raises(GitHubAPIError):
        memory.get_issue(REPO, 1)
    seen: list[str] = []
    memory.inject("get_issue", status=None, before=lambda: seen.append("hook"))
    assert memory.get_issue(REPO, 1).title == "a"
    assert seen == ["hook"]
    assert memory.writes() == ["create_issue"] * 3
    with pytest.raises(TypeError, match="no method"):
        memory.inject("get_job_by_magic")


def test_a_competing_writer_moves_the_branch_between_read_and_write(memory):
    """A before-hook on update_branch lets another writer land first: the move returns False."""
    root = memory.create_commit(REPO, "root", memory.create_tree(REPO, None, {"a": "a"}), [])
    assert memory.create_branch(REPO, BRANCH, root)
    theirs = memory.create_commit(
        REPO, "theirs", memory.create_tree(REPO, None, {"a": "b"}), [root]
    )
    ours = memory.create_commit(REPO, "ours", memory.create_tree(REPO, None, {"a": "c"}), [root])
    memory.inject(
        "update_branch", status=None, before=lambda: memory.update_branch(REPO, BRANCH, theirs)
    )
    assert memory.update_branch(REPO, BRANCH, ours) is False
    assert memory.read_file("a", BRANCH) == "b"


def test_threads_racing_on_one_branch_never_lose_a_move():
    """Eight threads each fast-forward the branch until they land; the history holds all eight."""
    # Writers retrying at once pass 80 writes a minute: they wait as the client does, on a
    # clock that moves when they sleep.
    clock = ManualClock()
    memory = MemoryGitHub(clock=clock, sleep=clock.advance)
    memory.latency = (0.0, 0.001)
    root = memory.create_commit(REPO, "root", memory.create_tree(REPO, None, {}), [])
    memory.create_branch(REPO, BRANCH, root)

    def writer(n: int) -> None:
        while True:
            tip = memory.get_branch_head(REPO, BRANCH)
            assert tip is not None
            tree = memory.create_tree(REPO, memory.get_tree(REPO, tip).sha, {f"f{n}": str(n)})
            if memory.update_branch(REPO, BRANCH, memory.create_commit(REPO, f"{n}", tree, [tip])):
                return

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(memory.files(BRANCH)) == [f"f{n}" for n in range(8)]


def test_pins_stop_at_three_and_jobs_are_listed_per_attempt(memory):
    """A fourth pinned issue is refused as GitHub does; jobs come back for their run attempt."""
    issues = [memory.create_issue(REPO, title=f"{n}", body="b", labels=[]) for n in range(4)]
    for issue in issues[:3]:
        memory.pin_issue(issue.node_id)
    memory.pin_issue(issues[0].node_id)  # pinning again changes nothing
    with pytest.raises(GitHubAPIError, match="three issues are pinned"):
        memory.pin_issue(issues[3].node_id)
    assert memory.pinned == [i.node_id for i in issues[:3]]
    job = Job(
        id=1,
        name="tests (torch)",
        runner_name=None,
        html_url="u",
        status="completed",
        run_attempt=2,
    )
    memory.add_jobs(REPO, 42, 2, [job])
    assert memory.list_run_jobs(REPO, 42, 2) == [job]
    with pytest.raises(GitHubAPIError) as caught:
        memory.list_run_jobs(REPO, 42, 1)
    assert status_of(caught) == 404
