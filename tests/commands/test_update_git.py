"""End to end: ``ivy-matrix update`` with the branch target over git's own protocol.

The REST API is the HTTP fake (tests/github/fake_server.py), the git remote a real one
(tests/github/git_server.py), both on 127.0.0.1: ``branch-transport: auto`` uses git there
(the server URL is the API's host), and the branch target makes no REST request.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

from ivy_matrix.cli import main
from ivy_matrix.github.connection import Remote
from ivy_matrix.github.git_transport import GitTransport
from ivy_matrix.state.statefile import load_state
from tests.commands.test_update_github import STATE, brief_sleep, fast_client, write_results
from tests.github.fake_server import FakeGitHub
from tests.github.git_server import GitServer


def git_factory(server_url: str, repository: str, token: str) -> GitTransport:
    """The production transport with short waits between retries."""
    return GitTransport(
        server_url=server_url, repository=repository, token=token, sleep=brief_sleep
    )


OVER_GIT = Remote(client=fast_client, sleep=brief_sleep, git=git_factory)


def run(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    work.mkdir(parents=True, exist_ok=True)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(work):
        code = main(["update", *args], env, remote=OVER_GIT, stdout=out, stderr=err)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def git_env(api: FakeGitHub, git: GitServer, work: Path, **extra: str) -> dict[str, str]:
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_RUN_ID": "9000000001",
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_REPOSITORY": "acme/widgets",
        "GITHUB_SERVER_URL": git.url,
        "GITHUB_API_URL": api.base_url,
        "GITHUB_STEP_SUMMARY": str(work / "summary.md"),
        "GITHUB_OUTPUT": str(work / "output.txt"),
        "IVY_MATRIX_TOKEN": "fake-token",
        "IVY_MATRIX_TARGETS": "branch\nsummary",
        **extra,
    }


def test_the_branch_target_over_git_makes_no_rest_request(tmp_path):
    """An update with a job id commits its cells over git: the REST API gets no request, the
    summary JSON says so (0 requests), and the log says what git sent."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    with FakeGitHub() as api, GitServer() as git:
        env = git_env(api, git, tmp_path, IVY_MATRIX_JOB_ID="777")
        result = run(
            tmp_path,
            env,
            "--junit",
            "results/*.xml",
            "--backend",
            "torch",
            "--summary-json",
            "s.json",
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert api.requests == []
        files = git.files("ivy-matrix")
        state = load_state(files[STATE].decode(), where=STATE)
        assert state.backend_names == ("torch",)
        assert all(row.cells["torch"].latest.source.url.endswith("/job/777") for row in state.rows)
        assert {"README.md", "core/gradients.md"} <= set(files)
        # One fetch (the branch does not exist yet: it finds nothing) and one push.
        assert "git over HTTPS: 1 fetch(es), 0 listing(s), 1 push(es)" in result.stderr
        summary = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
        assert summary.get("requests", 0) == 0


def test_branch_transport_rest_keeps_the_branch_on_the_rest_api(tmp_path):
    """branch-transport: rest writes the branch through the REST API, git untouched."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    with FakeGitHub() as api, GitServer() as git:
        env = git_env(
            api, git, tmp_path, IVY_MATRIX_JOB_ID="777", IVY_MATRIX_BRANCH_TRANSPORT="rest"
        )
        result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
        assert result.returncode == 0, result.stdout + result.stderr
        assert git.requests == []
        assert STATE in api.files("ivy-matrix")


def test_compare_reads_the_baseline_over_git_with_no_rest_request(tmp_path):
    """compare (what a pull request's leg runs to compare) reads the dashboard branch over git
    where the branch target would: the REST API gets no request, and the verdicts are
    those of the branch's results."""
    write_results(tmp_path / "main" / "junit.xml", "torch", failing="test_02")
    with FakeGitHub() as api, GitServer() as git:
        env = git_env(api, git, tmp_path, IVY_MATRIX_JOB_ID="777")
        assert (
            run(tmp_path / "main", env, "--junit", "junit.xml", "--backend", "torch").returncode
            == 0
        )
        write_results(tmp_path / "pr" / "junit.xml", "torch", failing="test_01")
        argv = ["compare", "--junit", "junit.xml", "--backend", "torch", "--pr", "4"]
        with contextlib.chdir(tmp_path / "pr"):
            code = main([*argv, "--json", "v.json"], env, remote=OVER_GIT, stdout=io.StringIO())
        assert code == 0
        assert api.requests == []
    cells = json.loads((tmp_path / "pr" / "v.json").read_text())["cells"]
    assert {c["row"].split("[")[0]: c["verdict"] for c in cells} == {
        "test_01": "new",
        "test_02": "fixed",
    }


UNRELATED = {"README.md": "# widgets\n", "src/widgets.py": "print('hi')\n"}


def test_a_dashboard_branch_of_unrelated_content_is_refused_and_left_alone(tmp_path):
    """A dashboard branch force-pushed with other content (no .ivy-matrix/state): the update
    fails naming the branch and what it holds, and writes nothing over it (it started afresh
    on top of it, silently, overwriting its README.md)."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    with FakeGitHub() as api, GitServer() as git:
        tip = git.push_files("refs/heads/ivy-matrix", UNRELATED)
        env = git_env(api, git, tmp_path, IVY_MATRIX_JOB_ID="777")

        result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")

        assert result.returncode == 4, result.stderr
        assert "branch ivy-matrix holds 2 file(s) but no ivy-matrix state" in result.stderr
        assert "README.md" in result.stderr
        assert git.ref_sha("refs/heads/ivy-matrix") == tip


def test_the_default_branch_as_the_dashboard_branch_is_refused(tmp_path):
    """--branch main, the repository's default branch (the event says) or the branch under
    test: refused before anything is written, never committed into it without a word."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"repository": {"default_branch": "main"}}), encoding="utf-8")
    cases = [
        ("refs/heads/main", "main", "the repository's default branch"),
        ("refs/heads/main", "refs/heads/main", "the repository's default branch"),
        ("refs/heads/dev", "dev", "the branch this run tests"),
    ]
    with FakeGitHub() as api, GitServer() as git:
        tips = {b: git.push_files(f"refs/heads/{b}", UNRELATED) for b in ("main", "dev")}
        for ref, branch, what in cases:
            env = git_env(
                api, git, tmp_path, IVY_MATRIX_JOB_ID="777", GITHUB_EVENT_NAME="push",
                GITHUB_EVENT_PATH=str(event), GITHUB_REF=ref,
                IVY_MATRIX_DASHBOARD_BRANCHES="main\ndev",
            )  # fmt: skip
            argv = ["--junit", "results/*.xml", "--backend", "torch", "--branch", branch]

            result = run(tmp_path, env, *argv)

            assert result.returncode == 2, result.stderr
            assert f"--branch got {branch!r}, {what}" in result.stderr
            assert "a branch of their own (the default is 'ivy-matrix')" in result.stderr
        assert {b: git.ref_sha(f"refs/heads/{b}") for b in tips} == tips
        assert git.pushes() == []


def test_one_403_on_the_fetch_is_waited_out_and_the_run_recorded(tmp_path):
    """One bare 403 (GitHub's secondary limits answer 403 too) on the branch's fetch: the
    update waits and records its results, exit 0; it once took it for a fork's read-only
    token, recorded nothing and exited 0 with a warning about forks."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    with FakeGitHub() as api, GitServer() as git:
        git.refuse_next("info/refs", 403)
        env = git_env(api, git, tmp_path, IVY_MATRIX_JOB_ID="777", GITHUB_EVENT_NAME="push")
        result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
        assert result.returncode == 0, result.stdout + result.stderr
        assert STATE in git.files("ivy-matrix")
    assert "perhaps a secondary rate limit" in result.stderr
    assert "read-only" not in result.stderr


def test_a_push_the_token_may_not_make_fails_naming_the_permission(tmp_path):
    """ "Permission to ... denied" on the push: exit 5 naming contents: write, at once."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    with FakeGitHub() as api, GitServer(read_only=frozenset({"fake-token"})) as git:
        env = git_env(api, git, tmp_path, IVY_MATRIX_JOB_ID="777", GITHUB_EVENT_NAME="push")
        result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
        assert git.refs() == {}
    assert result.returncode == 5, result.stdout + result.stderr
    assert "'permissions: contents: write'" in result.stderr
    assert "Permission to acme/widgets.git denied" in result.stderr


def test_a_protected_branch_fails_at_once_with_the_servers_words(tmp_path):
    """The dashboard branch protected (a real pre-receive hook answering as GitHub's branch
    protection): one push, exit 5, the server's words and what to do. It was retried 30 times
    (765-822 s a leg), then exit 4 "other writers moved it 30 times"."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    with FakeGitHub() as api, GitServer() as git:
        env = git_env(api, git, tmp_path, IVY_MATRIX_JOB_ID="777")
        assert run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch").returncode == 0
        git.protect("refs/heads/ivy-matrix")
        before = len(git.pushes())
        write_results(tmp_path / "results" / "junit.xml", "torch", failing="test_01")
        env["GITHUB_RUN_ID"] = "9000000002"
        result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
        pushes = len(git.pushes()) - before
    assert result.returncode == 5, result.stdout + result.stderr
    assert "GH006: Protected branch update failed for refs/heads/ivy-matrix." in result.stderr
    assert "branch 'ivy-matrix'" in result.stderr
    assert "bypass" in result.stderr
    assert "other writers" not in result.stderr
    assert pushes == 1
