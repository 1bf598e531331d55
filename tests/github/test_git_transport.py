"""Tests for github/git_transport.py and github/git_process.py: the branch over git's own
smart-HTTP protocol, against a real git remote on loopback (tests/github/git_server.py)."""

from __future__ import annotations

import base64

import pytest

from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError, UsageError
from ivy_matrix.github.git_process import GitAuth, GitUnavailableError, remote_url
from ivy_matrix.github.git_transport import GitTransport
from ivy_matrix.github.types import RefUpdate
from ivy_matrix.stores.remote import AutoRemote, RestRemote
from tests.github.git_server import GitServer
from tests.github.memory import MemoryGitHub
from tests.stores.helpers import REPO, git_transport

BRANCH = "refs/heads/ivy-matrix"


def commit_of(transport: GitTransport, files: dict[str, str], parents: list[str]) -> str:
    tree = transport.write_tree(None, files)
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
    """A read-only token (a fork's pull request) reads the branch; its push is the read-only
    error the stores degrade on."""
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
