"""Tests for github/git_transport.py and github/git_process.py: the branch over git's own
smart-HTTP protocol, against a real git remote on loopback (tests/github/git_server.py)."""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ivy_matrix.errors import (
    GitHubAPIError,
    PushRefusedError,
    RateLimitError,
    ReadOnlyTokenError,
    UsageError,
)
from ivy_matrix.github.git_process import (
    Answer,
    GitAuth,
    GitUnavailableError,
    last_answer,
    remote_url,
)
from ivy_matrix.github.git_transport import DENIED_TRIES, GitTransport
from ivy_matrix.github.types import RefUpdate
from ivy_matrix.stores.remote import AutoRemote, RestRemote
from tests.github.git_server import GitServer
from tests.github.memory import MemoryGitHub
from tests.stores.helpers import REPO, git_transport

BRANCH = "refs/heads/ivy-matrix"


def commit_of(transport: GitTransport, files: dict[str, str], parents: list[str]) -> str:
    tree = transport.write_tree(None, files.items())
    return transport.write_commit("test", tree, parents)


def test_the_remote_is_derived_as_actions_checkout_derives_it():
    """``{server-url}/{owner}/{repo}``: query and trailing slashes dropped, names quoted."""
    assert remote_url("https://github.com", "o/r") == "https://github.com/o/r"
    assert remote_url("https://ghe.example.com/?x=1", "o/r") == "https://ghe.example.com/o/r"
    assert remote_url("https://host/prefix/", "a b/c") == "https://host/prefix/a%20b/c"
    with pytest.raises(UsageError, match="OWNER/REPO"):
        remote_url("https://github.com", "nope")


def test_the_token_travels_in_a_header_never_in_the_url_or_the_command_line():
    """git gets the token through its environment, as the header actions/checkout sets; the
    URL and every argv hold none of it, and the server sees it as Basic x-access-token."""
    token = "ghs_secret_token_value"
    with GitServer(tokens=frozenset({token})) as server:
        transport = git_transport(server, token)
        tip = transport.read_tip("ivy-matrix")
        command = " ".join(transport._git.command("fetch", transport.url, "+refs/x:refs/y"))
        environment = transport._git._environment
        transport.close()
    assert tip is None
    assert {request.token for request in server.requests} == {token}
    encoded = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    for shown in (transport.url, command, repr(GitAuth(origin=server.url, token=token))):
        assert token not in shown
        assert encoded not in shown
    assert f"AUTHORIZATION: basic {encoded}" in environment.values()


def test_a_refused_token_is_a_clear_error_that_never_shows_it():
    """A token the server refuses (401) is an error saying so, without the token."""
    with GitServer(tokens=frozenset({"good"})) as server:
        transport = git_transport(server, "bad-secret")
        with pytest.raises(GitHubAPIError) as raised:
            transport.read_tip("ivy-matrix")
        transport.close()
    message = str(raised.value)
    assert "token was refused" in message
    assert "bad-secret" not in message
    assert base64.b64encode(b"x-access-token:bad-secret").decode() not in message


def test_a_token_with_a_line_break_is_refused_before_anything_is_sent():
    """A token that could split the header line is refused, and the message does not show it."""
    with pytest.raises(UsageError) as raised:
        GitAuth(origin="https://github.com", token="abc\ndef")
    assert "abc" not in str(raised.value)


def test_a_read_only_token_may_fetch_but_not_push():
    """A read-only token reads the branch; its push ("Permission to ... denied") is the error
    that names the permission."""
    with GitServer(read_only=frozenset({"ro"})) as server:
        server.push_files(BRANCH, {"a.md": "x"})
        transport = git_transport(server, "ro")
        tip = transport.read_tip("ivy-matrix")
        assert tip is not None
        commit = commit_of(transport, {"b.md": "y"}, [tip])
        with pytest.raises(ReadOnlyTokenError, match="contents: write"):
            transport.update_ref(RefUpdate(ref=BRANCH, new=commit, old=tip))
        transport.close()


def test_pushes_compare_and_swap():
    """Two writers read the same tip: the first lands; the second's push is refused and
    leaves the branch at the first one's commit."""
    with GitServer() as server:
        server.push_files(BRANCH, {"a.md": "x"})
        first, second = git_transport(server, "one"), git_transport(server, "two")
        tip = first.read_tip("ivy-matrix")
        assert second.read_tip("ivy-matrix") == tip
        assert tip is not None
        mine = commit_of(first, {"b.md": "1"}, [tip])
        theirs = commit_of(second, {"b.md": "2"}, [tip])
        landed = first.update_ref(RefUpdate(ref=BRANCH, new=mine, old=tip))
        refused = second.update_ref(RefUpdate(ref=BRANCH, new=theirs, old=tip))
        first.close()
        second.close()
        assert server.ref_sha(BRANCH) == mine
    assert (landed, refused) == (True, False)


def test_a_push_that_landed_before_an_error_is_checked_not_repeated():
    """A push the server applied and then answered 500 for: the transport lists the refs,
    sees it landed, and says so without pushing it again."""
    with GitServer() as server:
        transport = git_transport(server)
        commit = commit_of(transport, {"a.md": "x"}, [])
        server.fail_next("git-receive-pack", after=True)
        landed = transport.update_ref(RefUpdate(ref=BRANCH, new=commit, old=None))
        pushes = [r for r in server.pushes() if r.status == 200]
        transport.close()
        assert server.ref_sha(BRANCH) == commit
    assert landed is True
    assert pushes == []  # the only push was the one answered 500
    assert transport.pushes == 1


def test_a_page_is_compressed_once_and_the_push_tries_one_delta_base(tmp_path: Path):
    """The work of a push is done once (issue 26): a written page is stored uncompressed in
    the private repository (the push compresses it into the pack it sends), and the push
    asks git for one delta base per object (the remote's version of the same page), not ten.
    ``git`` is a wrapper that logs each command line and runs the real one."""
    log = tmp_path / "argv.txt"
    wrapper = tmp_path / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {shutil.which("git")} "$@"\n')
    wrapper.chmod(0o755)
    text = "| test_relu | passed |\n" * 4000
    with GitServer() as server:
        transport = git_transport(server, program=str(wrapper))
        commit = commit_of(transport, {"a.md": text}, [])
        sha = transport.tree(commit).files["a.md"]
        loose = Path(transport.directory, "objects", sha[:2], sha[2:])
        stored = loose.stat().st_size
        landed = transport.update_ref(RefUpdate(ref=BRANCH, new=commit, old=None))
        transport.close()
        assert server.read_file("a.md", "ivy-matrix") == text
    assert landed is True
    assert stored >= len(text)  # zlib level 0: the bytes as they are
    pushes = [line for line in log.read_text().splitlines() if " push " in line]
    assert len(pushes) == 1
    assert "pack.window=1" in pushes[0].split()


def test_a_failed_push_whose_ref_another_writer_moved_is_refused_not_sent_again():
    """A push answered 502 before it reached git, while another writer moved the branch right
    then: the listing shows the other writer's commit, so the push is reported refused (the
    store reads again) and is not sent again over it."""
    with GitServer() as server:
        server.push_files(BRANCH, {"a.md": "x"})
        transport = git_transport(server)
        tip = transport.read_tip("ivy-matrix")
        assert tip is not None
        commit = commit_of(transport, {"c.md": "z"}, [tip])
        moved: list[str] = []
        server.fail_next(
            "git-receive-pack",
            after=False,
            then=lambda: moved.append(server.push_files(BRANCH, {"a.md": "another writer"})),
        )
        landed = transport.update_ref(RefUpdate(ref=BRANCH, new=commit, old=tip))
        transport.close()
        assert [server.ref_sha(BRANCH)] == moved
    assert landed is False
    assert transport.pushes == 1


def test_a_push_refused_at_its_first_request_is_sent_again_without_a_listing():
    """A push whose first request (git's discovery of the remote's refs) fails sent nothing:
    it is sent again at once, with no listing to see what landed."""
    with GitServer() as server:
        transport = git_transport(server)
        commit = commit_of(transport, {"a.md": "x"}, [])
        server.fail_next("info/refs", after=False)
        landed = transport.update_ref(RefUpdate(ref=BRANCH, new=commit, old=None))
        transport.close()
        assert server.ref_sha(BRANCH) == commit
    assert landed is True
    assert (transport.pushes, transport.listings) == (2, 0)


def test_a_failed_fetch_is_retried():
    """A fetch answered 502 is tried again and reads the branch."""
    with GitServer() as server:
        tip = server.push_files(BRANCH, {"a.md": "x"})
        server.fail_next("git-upload-pack", after=False, times=2)
        transport = git_transport(server)
        found = transport.read_tip("ivy-matrix")
        transport.close()
    assert found == tip


def test_no_git_server_there_makes_the_transport_unavailable():
    """A server URL where nothing answers git (here: nothing at all) is GitUnavailableError at
    the first contact, which the automatic transport turns into the REST API."""
    with GitServer() as server:
        url = server.url
    transport = GitTransport(server_url=url, repository=REPO, token="t", sleep=lambda _: None)
    with pytest.raises(GitUnavailableError):
        transport.read_tip("ivy-matrix")
    transport.close()


def test_the_automatic_transport_falls_back_to_the_rest_api_with_a_warning():
    """auto: git first; where no git server answers, the REST API, said once in the log."""
    warnings: list[str] = []

    class Log:
        def info(self, message: str) -> None:
            del message

        def warning(self, message: str) -> None:
            warnings.append(message)

    with GitServer() as server:
        url = server.url
    memory = MemoryGitHub()
    memory.push("ivy-matrix", {"a.md": "x"})
    auto = AutoRemote(
        lambda: GitTransport(server_url=url, repository=REPO, token="t", sleep=lambda _: None),
        lambda: RestRemote(memory, REPO),
        Log(),
    )
    tip = auto.read_tip("ivy-matrix")
    assert tip == memory.ref_sha("heads/ivy-matrix")
    assert auto.name == "rest"
    assert len(warnings) == 1
    assert "REST API instead of git" in warnings[0]


# ---------------------------------------------------------------- refusals and rate limits


class Waits:
    """The transport's sleep: records each wait, waits for none."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def test_one_403_without_a_reason_is_waited_out_not_taken_for_a_read_only_token():
    """GitHub's secondary rate limits answer 403 as well as 429: a fetch answered one bare
    403 waits GitHub's minute and reads the branch (it once raised the read-only error, and
    the update recorded nothing and exited 0)."""
    waits = Waits()
    with GitServer() as server:
        tip = server.push_files(BRANCH, {"a.md": "x"})
        server.refuse_next("info/refs", 403)
        transport = git_transport(server, sleep=waits)
        found = transport.read_tip("ivy-matrix")
        transport.close()
    assert found == tip
    assert len(waits.seconds) == 1
    assert waits.seconds[0] >= 60


def test_a_429_on_a_push_waits_its_retry_after_and_lands():
    """A push answered 429 with retry-after: 7 waits exactly 7 s and lands (a 429 was once
    retried after a second, whatever it asked)."""
    waits = Waits()
    with GitServer() as server:
        transport = git_transport(server, sleep=waits)
        commit = commit_of(transport, {"a.md": "x"}, [])
        server.refuse_next("/git-receive-pack", 429, headers={"Retry-After": "7"})
        landed = transport.update_ref(RefUpdate(ref=BRANCH, new=commit, old=None))
        transport.close()
        assert server.ref_sha(BRANCH) == commit
    assert landed is True
    assert waits.seconds == [7.0]


def test_a_403_with_the_rate_limit_spent_waits_until_the_reset():
    """A 403 with x-ratelimit-remaining: 0 waits until x-ratelimit-reset (+1 s)."""
    waits = Waits()
    with GitServer() as server:
        tip = server.push_files(BRANCH, {"a.md": "x"})
        reset = int(time.time()) + 30
        headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}
        server.refuse_next("git-upload-pack", 403, headers=headers)
        transport = git_transport(server, sleep=waits)
        found = transport.read_tip("ivy-matrix")
        transport.close()
    assert found == tip
    assert len(waits.seconds) == 1
    assert 25 <= waits.seconds[0] <= 32


def test_a_wait_longer_than_the_budget_fails_at_once_saying_how_long():
    """A retry-after beyond what one command may wait (300 s in all) is a RateLimitError at
    once, naming the wait: no sleep at all."""
    waits = Waits()
    with GitServer() as server:
        server.push_files(BRANCH, {"a.md": "x"})
        server.refuse_next("info/refs", 429, headers={"Retry-After": "3600"})
        transport = git_transport(server, sleep=waits)
        with pytest.raises(RateLimitError, match="3600 s"):
            transport.read_tip("ivy-matrix")
        transport.close()
    assert waits.seconds == []


def test_a_403_that_says_the_permission_is_missing_fails_at_once_naming_it():
    """GitHub's "Permission to ... denied" on a push is not worth a retry: the error names
    contents: write, at the first try."""
    waits = Waits()
    with GitServer() as server:
        server.push_files(BRANCH, {"a.md": "x"})
        message = "Permission to acme/widgets.git denied to github-actions[bot]."
        server.refuse_next("=git-receive-pack", 403, times=5, message=message)
        transport = git_transport(server, sleep=waits)
        tip = transport.read_tip("ivy-matrix")
        commit = commit_of(transport, {"b.md": "y"}, [tip] if tip else [])
        with pytest.raises(ReadOnlyTokenError, match="contents: write") as raised:
            transport.update_ref(RefUpdate(ref=BRANCH, new=commit, old=tip))
        transport.close()
    assert "Permission to acme/widgets.git denied" in str(raised.value)
    assert (transport.pushes, waits.seconds) == (1, [])


def test_a_403_that_persists_is_a_missing_permission_after_a_few_tries():
    """A bare 403 on every try: after DENIED_TRIES tries (waits of GitHub's minute between)
    it is the missing permission, named."""
    waits = Waits()
    with GitServer() as server:
        server.push_files(BRANCH, {"a.md": "x"})
        transport = git_transport(server, sleep=waits)
        tip = transport.read_tip("ivy-matrix")
        commit = commit_of(transport, {"b.md": "y"}, [tip] if tip else [])
        server.refuse_next("=git-receive-pack", 403, times=DENIED_TRIES + 5)
        with pytest.raises(ReadOnlyTokenError, match="contents: write"):
            transport.update_ref(RefUpdate(ref=BRANCH, new=commit, old=tip))
        transport.close()
        assert server.ref_sha(BRANCH) == tip
    assert transport.pushes == DENIED_TRIES
    assert len(waits.seconds) == DENIED_TRIES - 1
    assert min(waits.seconds) >= 60


def test_the_trace_of_the_answers_is_read_and_deleted_and_never_holds_the_token(tmp_path):
    """The headers git traces (to read retry-after) are parsed from the last answer, and the
    file is gone after each command; git writes the token's header there as <redacted> (here
    a trace of the same command, with the same environment, kept to look at)."""
    token = "ghs_trace_secret_value"
    waits = Waits()
    with GitServer(tokens=frozenset({token})) as server:
        server.push_files(BRANCH, {"a.md": "x"})
        server.refuse_next("info/refs", 429, headers={"Retry-After": "2"})
        transport = git_transport(server, token, sleep=waits)
        transport.read_tip("ivy-matrix")
        left = list(Path(transport.directory).glob("trace-*"))
        kept = tmp_path / "trace"
        environment = {
            **transport._git._environment,
            "GIT_TRACE_CURL": str(kept),
            "GIT_TRACE_CURL_NO_DATA": "1",
        }
        subprocess.run(
            transport._git.command("ls-remote", transport.url),
            env=environment,
            capture_output=True,
            check=True,
        )
        transport.close()
    assert waits.seconds == [2.0]
    assert left == []
    text = kept.read_text(encoding="utf-8", errors="replace")
    encoded = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    assert "<redacted>" in text
    assert token not in text
    assert encoded not in text
    trace = (
        "12:00:00.1 http.c:684 <= Recv header: HTTP/1.1 401 Unauthorized\n"
        "12:00:00.1 http.c:684 <= Recv header: Retry-After: 99\n"
        "12:00:00.2 http.c:684 => Send header: Authorization: Basic <redacted>\n"
        "12:00:00.3 http.c:684 <= Recv header: HTTP/2 429\n"
        "12:00:00.3 http.c:684 <= Recv header: retry-after: 7\n"
        "12:00:00.3 http.c:684 <= Recv header: Set-Cookie: secret\n"
    )
    assert last_answer(trace) == Answer(status=429, headers={"retry-after": "7"})


def test_a_push_the_server_refuses_fails_at_once_with_its_words():
    """A real pre-receive hook refuses the branch as GitHub's branch protection does: the push
    is not a lost race (it was retried 30 times, minutes a leg, then "other writers moved
    it"): PushRefusedError at the first push, quoting the server and saying what to do."""
    waits = Waits()
    with GitServer() as server:
        tip = server.push_files(BRANCH, {"a.md": "x"})
        server.protect(BRANCH)
        transport = git_transport(server, sleep=waits)
        read = transport.read_tip("ivy-matrix")
        commit = commit_of(transport, {"b.md": "y"}, [tip])
        with pytest.raises(PushRefusedError) as raised:
            transport.update_ref(RefUpdate(ref=BRANCH, new=commit, old=read))
        transport.close()
        assert server.ref_sha(BRANCH) == tip
    message = str(raised.value)
    assert "GH006: Protected branch update failed for refs/heads/ivy-matrix." in message
    assert "pre-receive hook declined" in message
    assert "branch 'ivy-matrix'" in message
    assert "branch protection rules and rulesets" in message
    assert (transport.pushes, waits.seconds) == (1, [])


def test_a_ref_the_server_found_moved_is_a_lost_race_not_a_refusal():
    """Another writer moves the branch while the server takes our push (a hook moves it, and
    the server's own compare-and-swap then fails: "[remote rejected]" too): the ref moved, so
    it is a lost race, False, for the store to retry."""
    with GitServer() as server:
        tip = server.push_files(BRANCH, {"a.md": "x"})
        other = server.push_files("refs/other", {"a.md": "another writer"})
        # (A hook may move a ref only outside the quarantine of the objects being received.)
        server.pre_receive(f"env -u GIT_QUARANTINE_PATH git update-ref {BRANCH} {other}\n")
        transport = git_transport(server)
        transport.read_tip("ivy-matrix")
        commit = commit_of(transport, {"b.md": "y"}, [tip])
        landed = transport.update_ref(RefUpdate(ref=BRANCH, new=commit, old=tip))
        transport.close()
        assert server.ref_sha(BRANCH) == other
    assert landed is False
    assert transport.listings == 0  # the server's reason said so: no look needed


def test_a_ref_created_and_deleted_by_another_writer_meanwhile_is_a_lost_race():
    """The server's compare-and-swap finds the ref (a pull request's verdict ref) created by
    another writer ("cannot lock ref ...: reference already exists"), and it is deleted right
    after: the ref holds what this push expected again, yet it is a lost race, not a refusal
    (the server's reason says so; a look at the refs would have seen nothing moved)."""
    lease = "refs/ivy-matrix/pr/7"
    with GitServer() as server:
        server.push_files(BRANCH, {"a.md": "x"})
        other = server.push_files("refs/other", {"a.md": "another writer"})
        server.pre_receive(f"env -u GIT_QUARANTINE_PATH git update-ref {lease} {other}\n")
        transport = git_transport(server)
        transport.read_tip("ivy-matrix")
        commit = commit_of(transport, {"b.md": "y"}, [])
        # Had the transport looked at the refs (ls-remote), the lease would be gone by then.
        server.fail_next("git-upload-pack", after=False, then=lambda: server.delete_ref(lease))
        pushed = transport.update_ref(RefUpdate(ref=lease, new=commit, old=None))
        transport.close()
    assert pushed is False
