"""Tests for github/client.py: real PyGithub against FakeGitHub, with our retry policy and errors."""

from __future__ import annotations

import socket
import threading

import pytest

from ivy_matrix.errors import GitHubAPIError, RateLimitError, ReadOnlyTokenError
from ivy_matrix.github.client import GitHubClient, make_client
from ivy_matrix.github.connection import production_client
from ivy_matrix.github.git import INLINE_LIMIT
from ivy_matrix.github.types import PullRequest
from tests.github.budget import Limits, ManualClock
from tests.github.fake_server import FIRST_JOB_ID, FakeGitHub, git_blob_sha

REPO = "acme/widgets"


class Sleeps(list[float]):
    """A sleep function that records how long it was asked to wait, and returns at once."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class ClockSleeps(Sleeps):
    """A sleep that records how long it was asked to wait and moves ``clock`` on by that."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self.clock = clock

    def __call__(self, seconds: float) -> None:
        super().__call__(seconds)
        self.clock.advance(seconds)


def client(url: str, sleeps: Sleeps | None = None, **options) -> GitHubClient:
    options.setdefault("retries", 3)
    options.setdefault("sleep", Sleeps() if sleeps is None else sleeps)
    return make_client(token="t", api_url=url, timeout=5, **options)


def main_tip(fake: FakeGitHub) -> str:
    sha = fake.ref_sha("heads/main")
    assert sha is not None
    return sha


# --------------------------------------------------------------------------- jobs


def test_jobs_of_a_run_attempt_come_back_across_pages_in_one_listing(fake):
    """250 jobs are read as three pages of 100 from the attempt endpoint, as our Job type."""
    fake.add_run(REPO, 42, 1, [{"name": "tests", "matrix": [f"b{i}"]} for i in range(250)])
    with client(fake.base_url) as gh:
        jobs = gh.list_run_jobs(REPO, 42, 1)
    assert [j.id for j in jobs] == list(range(FIRST_JOB_ID, FIRST_JOB_ID + 250))
    assert jobs[3].name == "tests (b3)"
    assert jobs[3].html_url == f"https://github.com/{REPO}/actions/runs/42/job/{FIRST_JOB_ID + 3}"
    assert (jobs[3].status, jobs[3].run_attempt) == ("in_progress", 1)
    assert jobs[3].runner_name is not None
    pages = fake.requests_to("GET", r"/actions/runs/42/attempts/1/jobs$")
    assert [(r.query.get("page", "1"), r.query["per_page"]) for r in pages] == [
        ("1", "100"),
        ("2", "100"),
        ("3", "100"),
    ]


def test_jobs_are_listed_once_per_run_attempt(fake):
    """Asking twice for the same run attempt makes one listing; another attempt makes its own."""
    fake.add_run(REPO, 7, 1, [{"name": "tests (jax)", "conclusion": "failure"}])
    fake.add_run(REPO, 7, 2, [{"name": "tests (jax)"}])
    with client(fake.base_url) as gh:
        first = gh.list_run_jobs(REPO, 7, 2)
        again = gh.list_run_jobs(REPO, 7, 2)
        older = gh.list_run_jobs(REPO, 7, 1)
    assert first == again
    assert [j.run_attempt for j in first + older] == [2, 1]
    assert len(fake.requests_to("GET", r"/jobs$")) == 2


def test_missing_run_names_the_actions_read_permission(fake):
    """A 404 on the job listing says it may be missing and which permission the job needs."""
    with client(fake.base_url) as gh, pytest.raises(GitHubAPIError) as caught:
        gh.list_run_jobs(REPO, 404404, 1)
    assert caught.value.status == 404
    message = str(caught.value)
    assert "listing the jobs of run 404404 attempt 1 in acme/widgets failed" in message
    assert "permissions: actions: read" in message


# --------------------------------------------------------------------------- git data


def test_git_data_round_trip_tree_blob_commit_and_fast_forward(fake):
    """Read the tip and tree, write a tree and commit on it, and fast-forward the branch."""
    with client(fake.base_url) as gh:
        tip = main_tip(fake)
        tree = gh.get_tree(REPO, tip)
        assert tree.files == {"README.md": git_blob_sha(b"# acme/widgets\n")}
        assert gh.get_blob_text(REPO, tree.files["README.md"]) == "# acme/widgets\n"
        new_tree = gh.create_tree(REPO, tree.sha, {"dash/a.md": "é ✅\n", "README.md": None})
        commit = gh.create_commit(REPO, "add a", new_tree, [tip])
        assert gh.update_branch(REPO, "main", commit) is True
        assert gh.get_branch_head(REPO, "main") == commit
        assert gh.get_tree(REPO, commit).files == {"dash/a.md": git_blob_sha("é ✅\n".encode())}
    assert fake.files() == {"dash/a.md": "é ✅\n".encode()}


def test_a_truncated_recursive_listing_is_completed_folder_by_folder(fake):
    """When GitHub cuts a recursive listing short, every file is still listed, folder by folder."""
    files = {
        f"{folder}/{sub}/{n}.md": f"{folder}{sub}{n}"
        for folder in "ab"
        for sub in "xy"
        for n in range(2)
    }
    files |= {f"a/x/{n}.json": str(n) for n in range(4)} | {"top.md": "top"}
    with client(fake.base_url) as gh:
        tip = main_tip(fake)
        tree = gh.create_tree(REPO, gh.get_tree(REPO, tip).sha, files)
        commit = gh.create_commit(REPO, "many", tree, [tip])
        fake.configure(tree_limit=3)
        before = len(fake.requests_to("GET", r"/git/trees/"))
        listed = gh.get_tree(REPO, commit)
    assert listed.sha == tree
    expected = {path: git_blob_sha(text.encode()) for path, text in files.items()}
    expected["README.md"] = git_blob_sha(b"# acme/widgets\n")
    assert listed.files == expected
    listings = fake.requests_to("GET", r"/git/trees/")[before:]
    # Cut short, the tree is listed again by its top level, then each folder recursively,
    # and a folder that is cut too (over 3 entries: a, a/x, b) by its top level in turn.
    assert [r.query.get("recursive") for r in listings] == [
        *("1", None),  # the whole tree, then its top level
        *("1", None, "1", None, "1"),  # a (cut), a/x (cut), a/y
        *("1", None, "1", "1"),  # b (cut), b/x, b/y
    ]
    assert [r.path.rsplit("/", 1)[1] for r in listings[:2]] == [commit, tree]


def test_a_big_file_goes_as_a_blob_of_its_own_and_small_ones_inline(fake):
    """A text over the inline limit is sent with POST /git/blobs, then named by sha in the tree."""
    big = "| test | ✅ |\n" * (INLINE_LIMIT // 10)
    with client(fake.base_url) as gh:
        tip = main_tip(fake)
        tree = gh.create_tree(REPO, gh.get_tree(REPO, tip).sha, {"big.md": big, "small.md": "s"})
        commit = gh.create_commit(REPO, "big", tree, [tip])
        assert gh.update_branch(REPO, "main", commit) is True
    assert fake.files()["big.md"] == big.encode()
    (blob_post,) = fake.requests_to("POST", r"/git/blobs$")
    assert blob_post.body == {"content": big, "encoding": "utf-8"}
    entries = {e["path"]: e for e in fake.requests_to("POST", r"/git/trees$")[-1].body["tree"]}
    assert entries["big.md"]["sha"] == git_blob_sha(big.encode())
    assert "content" not in entries["big.md"]
    assert entries["small.md"]["content"] == "s"


def test_many_blobs_are_read_at_once_each_on_its_own_connection(fake):
    """get_blob_texts reads 40 blobs with several threads; every text comes back under its sha."""
    files = {f"f{n}.md": f"text {n} é" * n for n in range(40)}
    with client(fake.base_url) as gh:
        tree = gh.create_tree(REPO, None, files)
        shas = gh.get_tree(REPO, tree).files
        assert gh.parallel_reads > 1
        texts = gh.get_blob_texts(REPO, list(shas.values()))
    assert {path: texts[sha] for path, sha in shas.items()} == files
    assert len(fake.requests_to("GET", r"/git/blobs/")) == 40


def test_the_production_client_does_not_pause_between_requests():
    """production_client turns PyGithub's pauses between requests and between writes off."""
    with production_client("t", "http://127.0.0.1:9/api") as gh:
        # The pauses are private to PyGithub's requester (name-mangled attributes).
        pauses = vars(gh._requester)
        assert pauses["_Requester__seconds_between_requests"] is None
        assert pauses["_Requester__seconds_between_writes"] is None


def test_missing_branch_reads_as_none_and_create_branch_is_create_if_absent(fake):
    """A missing branch is None; creating it works once, then reports False (already exists)."""
    with client(fake.base_url) as gh:
        assert gh.get_branch_head(REPO, "ivy-matrix") is None
        tip = main_tip(fake)
        assert gh.create_branch(REPO, "ivy-matrix", tip) is True
        assert gh.create_branch(REPO, "ivy-matrix", tip) is False
        assert gh.get_branch_head(REPO, "ivy-matrix") == tip


def test_refs_are_create_if_absent_and_move_only_forward(fake):
    """A ref outside refs/heads (a pull request's verdict ref) is created once and moves by
    fast-forward only."""
    lock = "refs/ivy-matrix/pr/7"
    with client(fake.base_url) as gh:
        tree = gh.create_tree(REPO, None, {"LOCK": "x\n"})
        first = gh.create_commit(REPO, "holder: a", tree, [])
        other = gh.create_commit(REPO, "holder: b", tree, [])
        assert gh.get_ref(REPO, lock) is None
        assert gh.create_ref(REPO, lock, first) is True
        assert gh.create_ref(REPO, lock, other) is False
        assert gh.move_ref(REPO, lock, other) is False  # not a descendant of the lock
        recorded = gh.create_commit(REPO, "issue: #7", tree, [first])
        assert gh.move_ref(REPO, lock, recorded) is True
        assert gh.get_ref(REPO, lock) == recorded
    assert fake.ref_sha(lock) == recorded


def test_an_issue_create_is_not_resent_after_a_502(fake):
    """The client sends an issue-creating POST once; a 502 is raised, never blindly retried."""
    fake.inject(method="POST", path=r"/issues$", status=502, after_write=True)
    with client(fake.base_url) as gh, pytest.raises(GitHubAPIError) as raised:
        gh.create_issue(REPO, title="t", body="b", labels=[])
    assert raised.value.status == 502
    assert len(fake.requests_to("POST", r"/issues$")) == 1


def test_stale_tip_is_a_conflict_not_an_error(fake):
    """Moving a branch to a commit that is not a fast-forward returns False and changes nothing."""
    with client(fake.base_url) as gh:
        tip = main_tip(fake)
        tree = gh.get_tree(REPO, tip).sha
        winner = gh.create_commit(REPO, "w", gh.create_tree(REPO, tree, {"w": "w"}), [tip])
        loser = gh.create_commit(REPO, "l", gh.create_tree(REPO, tree, {"l": "l"}), [tip])
        assert gh.update_branch(REPO, "main", winner) is True
        assert gh.update_branch(REPO, "main", loser) is False
        assert gh.update_branch(REPO, "gone", winner) is False
    assert fake.ref_sha("heads/main") == winner


def test_invalid_request_is_not_retried(fake):
    """A 422 for a tree that does not exist fails at once with the status and GitHub's text."""
    sleeps = Sleeps()
    with client(fake.base_url, sleeps) as gh, pytest.raises(GitHubAPIError) as caught:
        gh.create_commit(REPO, "bad", "0" * 40, [])
    assert caught.value.status == 422
    assert "Tree SHA does not exist" in str(caught.value)
    assert sleeps == []
    assert len(fake.writes()) == 1


# --------------------------------------------------------------------------- retries


def test_server_errors_on_get_are_retried_with_growing_jittered_backoff(fake):
    """Two 502s then success: the GET succeeds after waits of about 1 s and then 2 s."""
    fake.inject(method="GET", path=r"/git/ref/", status=502, times=2)
    sleeps = Sleeps()
    with client(fake.base_url, sleeps) as gh:
        assert gh.get_branch_head(REPO, "main") == main_tip(fake)
    assert len(sleeps) == 2
    assert 0.5 <= sleeps[0] <= 1.5
    assert 1.0 <= sleeps[1] <= 3.0
    assert [r.status for r in fake.requests_to("GET", r"/git/ref/")] == [502, 502, 200]


def test_server_error_on_patch_is_retried(fake):
    """PyGithub never retries PATCH; our policy does, and the branch moves."""
    with client(fake.base_url) as gh:
        tip = main_tip(fake)
        commit = gh.create_commit(REPO, "c", gh.get_tree(REPO, tip).sha, [tip])
        fake.inject(method="PATCH", path=r"/git/refs/", status=503)
        assert gh.update_branch(REPO, "main", commit) is True
    assert fake.ref_sha("heads/main") == commit


def test_patch_that_landed_before_a_502_is_retried_safely(fake):
    """A 502 after the ref moved: the retry is a fast-forward to itself and succeeds."""
    with client(fake.base_url) as gh:
        tip = main_tip(fake)
        commit = gh.create_commit(REPO, "c", gh.get_tree(REPO, tip).sha, [tip])
        fake.inject(method="PATCH", path=r"/git/refs/", status=502, after_write=True)
        assert gh.update_branch(REPO, "main", commit) is True
    assert fake.ref_sha("heads/main") == commit
    assert [r.status for r in fake.requests_to("PATCH", r"/git/refs/")] == [502, 200]


def test_post_that_landed_before_a_502_makes_no_duplicate(fake):
    """Creating a ref that landed before a 502 reports a conflict on retry; one ref."""
    tip = main_tip(fake)
    fake.inject(method="POST", path=r"/git/refs$", status=502, after_write=True)
    with client(fake.base_url) as gh:
        assert gh.create_branch(REPO, "ivy-matrix", tip) is False
        assert gh.get_branch_head(REPO, "ivy-matrix") == tip
    assert sorted(fake.refs[REPO]) == ["refs/heads/ivy-matrix", "refs/heads/main"]
    assert [r.status for r in fake.requests_to("POST", r"/git/refs$")] == [502, 422]


@pytest.mark.parametrize("status", [403, 429])
def test_rate_limit_with_retry_after_waits_that_long(fake, status):
    """A secondary limit (403 or 429) with retry-after: 7 waits exactly 7 s, then succeeds."""
    fake.inject(method="GET", path=r"/git/ref/", status=status, retry_after=7)
    sleeps = Sleeps()
    with client(fake.base_url, sleeps) as gh:
        assert gh.get_branch_head(REPO, "main") == main_tip(fake)
    assert sleeps == [7.0]


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_limit_without_retry_after_waits_a_minute(fake, status):
    """Without retry-after and with budget left, the wait is GitHub's 'at least one minute'."""
    fake.inject(method="PATCH", path=r"/git/refs/", status=status)
    sleeps = Sleeps()
    with client(fake.base_url, sleeps) as gh:
        tip = main_tip(fake)
        commit = gh.create_commit(REPO, "c", gh.get_tree(REPO, tip).sha, [tip])
        assert gh.update_branch(REPO, "main", commit) is True
    assert len(sleeps) == 1
    assert sleeps[0] >= 60


def test_secondary_limit_longer_than_max_wait_fails_at_once(fake):
    """A 60 s secondary-limit wait with max_wait=30 fails without sleeping, saying rate limited."""
    fake.inject(method="GET", status=429)
    sleeps = Sleeps()
    with client(fake.base_url, sleeps, max_wait=30) as gh, pytest.raises(RateLimitError) as caught:
        gh.get_branch_head(REPO, "main")
    assert sleeps == []
    assert caught.value.status == 429
    message = str(caught.value)
    assert "rate limited" in message
    assert "wait 60 s" in message
    assert "at most 30 s" in message


@pytest.mark.parametrize("status", [403, 429])
def test_exhausted_primary_limit_waits_until_reset(status):
    """With the hour's budget spent (403 or 429, remaining 0) the client waits until
    x-ratelimit-reset (+1 s) and then succeeds."""
    clock = ManualClock()
    limits = Limits(requests_per_hour=1, status=status)
    with FakeGitHub(limits=limits, clock=clock) as fake:
        sleeps = ClockSleeps(clock)
        with client(fake.base_url, sleeps, clock=clock) as gh:
            # The first read spends the budget of 1 and starts the hour; the second, 20 s
            # before its end, waits for the reset.
            assert gh.get_branch_head(REPO, "main") == main_tip(fake)
            clock.advance(3580)
            assert gh.get_branch_head(REPO, "main") == main_tip(fake)
        assert sleeps == [21.0]
        assert fake.budget.spent("t").refused == 1


def test_exhausted_primary_limit_beyond_max_wait_is_a_clear_error():
    """A reset an hour away with max_wait=300 fails at once, naming the wait and the budget."""
    sleeps = Sleeps()
    clock = ManualClock()
    with (
        FakeGitHub(limits=Limits(requests_per_hour=0), clock=clock) as fake,
        client(fake.base_url, sleeps, max_wait=300, clock=clock) as gh,
        pytest.raises(RateLimitError) as caught,
    ):
        gh.get_branch_head(REPO, "main")
    assert sleeps == []
    assert caught.value.status == 403
    message = str(caught.value)
    assert "reading branch 'main' of acme/widgets failed: GitHub rate limited the token" in message
    assert "the rate limit resets" in message
    assert "at most 300 s" in message


@pytest.mark.parametrize("status", [403, 429])
def test_content_creation_limit_waits_the_retry_after_for_every_kind_of_write(status):
    """With one write a minute, a PATCH, a POST and a DELETE each wait GitHub's retry-after
    of 60 s (PyGithub's own retry would give up on the PATCH) and then land."""
    clock = ManualClock()
    limits = Limits(content_per_minute=1, status=status)
    with FakeGitHub(limits=limits, clock=clock) as fake:
        issue = int(fake.add_issue()["number"])
        comment = int(fake.add_comment(issue, "a comment to delete")["id"])
        sleeps = ClockSleeps(clock)
        with client(fake.base_url, sleeps, clock=clock) as gh:
            tip = main_tip(fake)
            commit = gh.create_commit(REPO, "c", gh.get_tree(REPO, tip).sha, [tip])
            assert gh.update_branch(REPO, "main", commit) is True
            assert gh.create_ref(REPO, "refs/x/y", tip) is True
            assert gh.delete_issue_comment(REPO, comment) is True
        assert sleeps == [60.0, 60.0, 60.0]
        assert fake.ref_sha("heads/main") == commit
        assert fake.ref_sha("refs/x/y") == tip
        assert fake.comments[issue] == []
        spent = fake.budget.spent("t")
        assert (spent.content_requests, spent.refused, spent.peak_content_per_minute) == (7, 3, 2)


def test_over_100_concurrent_requests_waits_a_minute_without_retry_after():
    """The concurrency limit's 403 has no retry-after: the client waits GitHub's minute."""
    clock = ManualClock()
    release = threading.Event()
    with FakeGitHub(limits=Limits(concurrent=1), clock=clock) as fake:
        hold = fake.inject(method="GET", path=r"/issues/1$", status=None, wait=release)
        fake.add_issue(REPO, title="held")
        waits: list[float] = []
        answered = threading.Event()

        def sleep(seconds: float) -> None:
            waits.append(seconds)
            release.set()  # the held request is answered while this one waits
            answered.wait()

        with client(fake.base_url) as holder, client(fake.base_url, sleep=sleep) as gh:

            def hold_one() -> None:
                holder.get_issue(REPO, 1)
                answered.set()

            held = threading.Thread(target=hold_one)
            held.start()
            for _ in range(6000):  # until the held request is in flight (at most 30 s)
                if hold.hits:
                    break
                threading.Event().wait(0.005)
            assert hold.hits == 1
            assert gh.get_branch_head(REPO, "main") == main_tip(fake)
            held.join()
        # One wait: the fake frees the held request's slot before it answers it, so the retry
        # after `answered` is served however late the fake's thread runs (test_budget.py).
        assert len(waits) == 1
        assert waits[0] >= 60
        assert fake.budget.spent("t").refused == 1


def test_repeated_rate_limits_stop_within_max_wait(fake):
    """Retry-after waits add up; the next one that would pass max_wait ends the call instead."""
    fake.inject(method="GET", status=429, retry_after=40, times=10)
    sleeps = Sleeps()
    gh = client(fake.base_url, sleeps, retries=10, max_wait=100)
    with gh, pytest.raises(RateLimitError, match="asks to wait 40 s"):
        gh.get_branch_head(REPO, "main")
    assert sleeps == [40.0, 40.0]
    assert sum(sleeps) <= 100


def test_retries_are_bounded_and_the_error_says_how_often(fake):
    """With retries=2 a lasting 503 fails after three tries with a clear message."""
    fake.inject(method="GET", status=503, times=5)
    sleeps = Sleeps()
    with client(fake.base_url, sleeps, retries=2) as gh, pytest.raises(GitHubAPIError) as caught:
        gh.get_tree(REPO, main_tip(fake))
    assert caught.value.status == 503
    assert "3 time(s) in a row" in str(caught.value)
    assert len(sleeps) == 2


def test_retries_zero_fails_on_the_first_transient_error(fake):
    """retries=0 (as tests of other modules use) makes exactly one request."""
    fake.inject(method="GET", status=502)
    with (
        client(fake.base_url, retries=0) as gh,
        pytest.raises(GitHubAPIError, match="server error"),
    ):
        gh.get_branch_head(REPO, "main")
    assert len(fake.requests) == 1


def test_network_errors_are_retried_then_reported():
    """A refused connection is retried with backoff and then reported as a network error."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps = Sleeps()
    gh = client(f"http://127.0.0.1:{port}", sleeps, retries=1)
    with gh, pytest.raises(GitHubAPIError, match="network error"):
        gh.get_branch_head(REPO, "main")
    assert len(sleeps) == 1


# --------------------------------------------------------------------------- permissions


def test_read_only_token_is_detected_as_its_own_error(fake):
    """A token that may not write gets 403 'Resource not accessible by integration':
    ReadOnlyTokenError, naming the permission (a fork's is known from the event)."""
    fake.configure(read_only=True)
    sleeps = Sleeps()
    with client(fake.base_url, sleeps) as gh:
        tip = gh.get_branch_head(REPO, "main")  # reads still work
        assert tip is not None
        with pytest.raises(ReadOnlyTokenError) as caught:
            gh.create_branch(REPO, "ivy-matrix", tip)
    assert isinstance(caught.value, GitHubAPIError)
    assert caught.value.status == 403
    message = str(caught.value)
    assert "read-only" in message
    assert "fork" in message
    assert "permissions: contents: write" in message
    assert sleeps == []
    assert len(fake.writes()) == 1


def test_other_403_names_the_permission_to_grant(fake):
    """A plain 403 on a write says which permission the workflow must grant."""
    fake.inject(method="POST", path=r"/git/trees$", status=403, message="Must have push access")
    with client(fake.base_url) as gh, pytest.raises(GitHubAPIError) as caught:
        gh.create_tree(REPO, None, {"a": "a"})
    assert not isinstance(caught.value, ReadOnlyTokenError)
    assert "Must have push access" in str(caught.value)
    assert "permissions: contents: write" in str(caught.value)


def test_missing_repository_404_names_the_permission(fake):
    """A 404 on a repository read says it may not exist or be invisible, and names contents: read."""
    with client(fake.base_url) as gh, pytest.raises(GitHubAPIError) as caught:
        gh.get_tree("acme/nope", "0" * 40)
    assert caught.value.status == 404
    assert "permissions: contents: read" in str(caught.value)


def test_bad_repository_name_and_empty_token_are_refused_before_any_request(fake):
    """OWNER/REPO is checked and an empty token is refused without a request."""
    with client(fake.base_url) as gh, pytest.raises(GitHubAPIError, match="OWNER/REPO"):
        gh.get_branch_head("widgets", "main")
    with pytest.raises(GitHubAPIError, match="no GitHub token"):
        make_client(token=" ", api_url=fake.base_url)
    assert fake.requests == []


# --------------------------------------------------------------------------- GHES


def test_ghes_api_prefix_is_kept_for_every_request_and_page(fake):
    """With api_url .../api/v3 pages, reads and writes all go under the prefix."""
    fake.add_run(REPO, 5, 1, [{"name": "leg", "matrix": [i]} for i in range(150)])
    with client(fake.ghes_url + "/") as gh:
        assert len(gh.list_run_jobs(REPO, 5, 1)) == 150
        assert gh.create_branch(REPO, "ivy-matrix", main_tip(fake)) is True
    assert {r.prefix for r in fake.requests} == {"/api/v3"}
    assert all(r.authorization == "token t" for r in fake.requests)


def test_a_pull_request_is_read_with_its_state_now(fake):
    """get_pull_request answers with the state GitHub has now (a closed one says closed); an
    issue that is no pull request is a 404."""
    opened = int(fake.add_issue(title="open", pull_request=True)["number"])
    closed = int(fake.add_issue(title="closed", pull_request=True, state="closed")["number"])
    plain = int(fake.add_issue(title="an issue")["number"])
    with client(fake.base_url) as gh:
        assert gh.get_pull_request(REPO, opened).state == "open"
        assert gh.get_pull_request(REPO, closed) == PullRequest(
            number=closed, head_sha="0" * 40, state="closed"
        )
        with pytest.raises(GitHubAPIError) as raised:
            gh.get_pull_request(REPO, plain)
    assert raised.value.status == 404
