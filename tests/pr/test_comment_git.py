"""The pr-comment target over git: the verdict ref read and written over git's own protocol.

The REST API is the HTTP fake (tests/github/fake_server.py), the git remote a real one
(tests/github/git_server.py, ``git http-backend``), both on 127.0.0.1, so ``branch-transport:
auto`` uses git: a pull request's leg reads the baseline and records its verdicts over git,
and spends REST requests only on the pull request and its comment.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.github.git_transport import GitTransport
from ivy_matrix.pr.body import render_comment
from ivy_matrix.pr.comment_state import CommentState
from ivy_matrix.pr.verdict_ref import VerdictRef, verdict_ref
from tests.commands.test_update_git import OVER_GIT, git_env
from tests.commands.test_update_github import run_legs_at_once, write_results
from tests.github.budget import RACING
from tests.github.fake_server import FakeGitHub
from tests.github.git_server import GitServer
from tests.pr.test_comment_command import pr_event

pytestmark = pytest.mark.timeout(240)

REPO = "acme/widgets"
# The REST requests a pull request's leg may make over git: is the pull request open, and
# its comment (list, post, edit, delete a duplicate). Nothing under /git/.
PULL_AND_COMMENT = re.compile(
    r"^(GET /repos/acme/widgets/pulls/\d+"
    r"|(GET|POST) /repos/acme/widgets/issues/\d+/comments"
    r"|(PATCH|DELETE) /repos/acme/widgets/issues/comments/\d+)$"
)


def seed_baseline(api: FakeGitHub, git: GitServer, tmp_path: Path, backends: list[str]) -> None:
    """A default-branch run over git in which test_01 fails on every backend."""
    for backend in backends:
        work = tmp_path / "main" / backend
        write_results(work / "junit.xml", backend, tests=4, failing="test_01")
        env = git_env(api, git, work, IVY_MATRIX_JOB_ID="5", GITHUB_RUN_ID="50")
        argv = ["update", "--junit", str(work / "junit.xml"), "--backend", backend]
        with contextlib.chdir(work):
            assert main(argv, env, remote=OVER_GIT, stdout=io.StringIO()) == 0


def leg(
    api: FakeGitHub, git: GitServer, tmp_path: Path, number: int, backend: str, *, job: int
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of one leg of pull request ``number``: test_02 now fails."""
    work = tmp_path / "pr" / backend
    write_results(work / "junit.xml", backend, tests=4, failing="test_02")
    env = git_env(
        api,
        git,
        work,
        IVY_MATRIX_TARGETS="pr-comment\nbranch\nsummary",
        IVY_MATRIX_JOB_ID=str(job),
        GITHUB_RUN_ID="60",
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_EVENT_PATH=str(pr_event(tmp_path, number)),
    )
    summary = ["--summary-json", str(work / "s.json")]
    return ["update", "--junit", str(work / "junit.xml"), *summary, "--backend", backend], env


def the_record(git: GitServer, number: int) -> CommentState:
    """The verdicts in the pull request's verdict ref, read over git."""
    transport = GitTransport(server_url=git.url, repository=REPO, token="fake-token")
    try:
        state = VerdictRef(transport, number).read().state
    finally:
        transport.close()
    assert state is not None
    return state.verdicts


def compare_counts(api: FakeGitHub, git: GitServer, tmp_path: Path) -> dict[str, dict[str, int]]:
    """``compare --json``'s per-backend counts over every leg's results."""
    work = tmp_path / "compare"
    work.mkdir()
    env = git_env(api, git, work)
    argv = ["compare", "--junit", str(tmp_path / "pr" / "*" / "junit.xml")]
    argv += ["--backend-from-path", r"(?P<backend>[^/]+)/[^/]+\.xml$", "--json", "v.json"]
    with contextlib.chdir(work):
        assert main(argv, env, remote=OVER_GIT, stdout=io.StringIO()) == 0
    document = json.loads((work / "v.json").read_text(encoding="utf-8"))
    return {
        backend: {verdict: n for verdict, n in counts.items() if n}
        for backend, counts in document["backends"].items()
    }


def rest_requests(api: FakeGitHub) -> list[str]:
    with api.lock:
        return [f"{r.method} {r.path.split('?')[0]}" for r in api.requests]


def test_a_leg_over_git_records_its_verdicts_with_only_comment_requests(tmp_path):
    """A pull request's leg over git reads the baseline and records its verdicts with no REST
    request: its only REST requests are the pull request's and its comment's, as many as
    the summary JSON reports, and the comment shows the verdict ref's record."""
    with FakeGitHub() as api, GitServer() as git:
        seed_baseline(api, git, tmp_path, ["torch"])
        number = int(api.add_issue(title="change", pull_request=True)["number"])
        with api.lock:
            api.requests.clear()
        argv, env = leg(api, git, tmp_path, number, "torch", job=2000)
        with contextlib.chdir(tmp_path / "pr" / "torch"):
            err = io.StringIO()
            code = main(argv, env, remote=OVER_GIT, stdout=io.StringIO(), stderr=err)
        assert code == 0, err.getvalue()
        spent = rest_requests(api)
        with api.lock:
            bodies = [c["body"] for c in api.comments[number]]
        record = the_record(git, number)
        assert git.ref_sha(verdict_ref(number)) is not None
    assert [r for r in spent if not PULL_AND_COMMENT.match(r)] == []
    summary = json.loads((tmp_path / "pr" / "torch" / "s.json").read_text(encoding="utf-8"))
    assert summary["requests"] == len(spent)
    assert len(spent) <= 5  # the pull request, list, post, list again: no ref, tree or blob
    assert bodies == [render_comment(record)]
    assert {(c.row.split("[")[0], c.verdict.value) for c in record.cells} == {
        ("test_01", "fixed"),
        ("test_02", "new"),
    }


def test_legs_racing_over_git_leave_one_comment_whose_counts_equal_compares(tmp_path):
    """Eight legs of a pull request at once over git, with REST faults: exactly one comment,
    its record's counts per backend and verdict equal ``compare``'s, and no leg spends a REST
    request on the verdict ref."""
    backends = [f"b{n}" for n in range(8)]
    with FakeGitHub(limits=RACING) as api, GitServer() as git:
        seed_baseline(api, git, tmp_path, backends)
        number = int(api.add_issue(title="change", pull_request=True)["number"])
        with api.lock:
            api.requests.clear()
        api.configure(latency=(0.001, 0.01), fail_rate=0.1, fail_kinds=("502", "503"), seed=5)
        legs = [leg(api, git, tmp_path, number, b, job=2000 + n) for n, b in enumerate(backends)]
        results = run_legs_at_once(legs)
        api.configure(fail_rate=0.0)
        spent = rest_requests(api)
        with api.lock:
            bodies = [c["body"] for c in api.comments[number]]
        record = the_record(git, number)
        expected = compare_counts(api, git, tmp_path)
    assert {b: r.returncode for b, r in results.items()} == dict.fromkeys(backends, 0)
    assert len(bodies) == 1
    assert bodies[0] == render_comment(record)
    counts = {b: {v.value: n for v, n in record.counts(b).items() if n} for b in sorted(backends)}
    assert counts == expected
    assert [r for r in spent if not PULL_AND_COMMENT.match(r)] == []
    assert len(spent) <= 15 * len(backends)


def chain(git: GitServer, commit: str) -> list[str]:
    """``commit`` and its ancestors, following first parents."""
    found = [commit]
    while parents := git.parents(found[-1]):
        found.append(parents[0])
    return found


def test_over_git_a_new_runs_verdicts_start_the_ref_afresh(tmp_path):
    """The verdict ref keeps no history of past runs: over git the first record of a new run
    is a commit with no parent (moved by compare and swap all the same), so the ref holds one
    run's commits however many runs the pull request has."""
    with FakeGitHub() as api, GitServer() as git:
        seed_baseline(api, git, tmp_path, ["torch"])
        number = int(api.add_issue(title="change", pull_request=True)["number"])
        first: list[str] = []
        for run in (60, 61, 62):
            argv, env = leg(api, git, tmp_path, number, "torch", job=2000 + run)
            env["GITHUB_RUN_ID"] = str(run)
            with contextlib.chdir(tmp_path / "pr" / "torch"):
                assert main(argv, env, remote=OVER_GIT, stdout=io.StringIO()) == 0
            commits = chain(git, git.ref_sha(verdict_ref(number)) or "")
            assert git.message(commits[-1]).startswith(f"ivy-matrix: verdicts of run {run} ")
            first.append(commits[-1])
            record = the_record(git, number)
            assert record.run.run_id == run
    assert len(set(first)) == 3
    assert len(commits) <= 2  # the record, and the comment shown


def test_a_verdict_ref_the_server_refuses_is_said_once_not_retried(tmp_path):
    """A ruleset that covers the verdict ref (a real pre-receive hook): the leg's one push is
    refused, the warning quotes the server, and the record is not pushed again and again as
    if another writer had moved it; the step still exits 0 (the comment is best-effort)."""
    with FakeGitHub() as api, GitServer() as git:
        seed_baseline(api, git, tmp_path, ["torch"])
        number = int(api.add_issue(title="change", pull_request=True)["number"])
        git.protect(verdict_ref(number))
        before = len(git.pushes())
        argv, env = leg(api, git, tmp_path, number, "torch", job=2000)
        with contextlib.chdir(tmp_path / "pr" / "torch"):
            err = io.StringIO()
            code = main(argv, env, remote=OVER_GIT, stdout=io.StringIO(), stderr=err)
        pushes = len(git.pushes()) - before
        assert git.ref_sha(verdict_ref(number)) is None
    assert code == 0, err.getvalue()
    assert f"GH006: Protected branch update failed for {verdict_ref(number)}." in err.getvalue()
    assert pushes == 1
