"""The pr-comment target through the command: legs of a pull request run ``update`` (at once,
with faults), forks, the ``workflow_run`` recipe, closed pull requests, and the cases that used to
lose verdicts (shards of one backend, a comment cut to size, a hand edit, a hostile edit)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ivy_matrix.cli import main
from ivy_matrix.explain.reasons import TIMES
from ivy_matrix.github.connection import Remote
from ivy_matrix.pr.body import EXAMPLES, comment_marker, render_comment
from ivy_matrix.pr.comment_state import CommentState
from ivy_matrix.pr.verdict_ref import VerdictRef
from ivy_matrix.pr.verdicts import Verdict
from ivy_matrix.stores.remote import RestRemote
from tests.commands.test_update_github import FAST, run_legs_at_once, runner_env, write_results
from tests.conftest import fake_client, quick_sleep
from tests.github.budget import RACING
from tests.github.fake_server import FakeGitHub
from tests.github.memory import MemoryGitHub
from tests.pr.test_body import listed_cells, not_listed

pytestmark = pytest.mark.timeout(120)

REPO = "acme/widgets"


def shown_verdicts(client: Any, pr: int, body: str) -> CommentState:
    """The verdicts in the pull request's record, which ``body`` must show."""
    found = VerdictRef(RestRemote(client, REPO), pr).read().state
    assert found is not None
    assert body == render_comment(found.verdicts)
    return found.verdicts


# ----------------------------------------------------------------- the command, on the fake


def pr_event(tmp_path: Path, number: int, *, fork: bool = False) -> Path:
    head_repo = "someone/widgets" if fork else REPO
    path = tmp_path / "event.json"
    payload = {
        "pull_request": {
            "number": number,
            "head": {"sha": "headsha1", "repo": {"full_name": head_repo, "fork": fork}},
            "base": {"sha": "basesha", "repo": {"full_name": REPO}},
        },
        "repository": {"default_branch": "main"},
    }
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def build_baseline(fake: FakeGitHub, tmp_path: Path, backends: list[str]) -> Path:
    """A default-branch store in which every test of every backend passes."""
    store = tmp_path / "baseline"
    for backend in backends:
        work = tmp_path / "main" / backend
        write_results(work / "junit.xml", backend, tests=4, failing="none")
        env = runner_env(fake, work, IVY_MATRIX_TARGETS="summary", GITHUB_RUN_ID="50")
        argv = ["update", "--junit", str(work / "junit.xml"), "--backend", backend]
        assert main([*argv, "--store", str(store), "--job-id", "5"], env, remote=FAST) == 0
    return store


@pytest.mark.timeout(150)
def test_sixteen_pull_request_legs_through_the_command_leave_one_comment(tmp_path):
    """16 legs of a pull request run update at once with faults: one comment, every backend."""
    backends = [f"b{leg:02d}" for leg in range(16)]
    # Over the REST git-data API each leg's record costs 3 or more writes: 16 legs at once
    # pass GitHub's 80 a minute. This tests that no cell is lost, so it takes the racing budget.
    with FakeGitHub(limits=RACING) as fake:
        store = build_baseline(fake, tmp_path, backends)
        number = int(fake.add_issue(title="change", pull_request=True)["number"])
        event = pr_event(tmp_path, number)
        fake.inject(method="POST", path=r"/issues/\d+/comments$", status=500, after_write=True)
        fake.configure(latency=(0.001, 0.01), fail_rate=0.1, fail_kinds=("502", "503"), seed=3)
        legs = []
        for leg, backend in enumerate(backends):
            work = tmp_path / "pr" / backend
            write_results(work / "junit.xml", backend, tests=4, failing=f"test_{leg % 4:02d}")
            env = runner_env(
                fake,
                work,
                IVY_MATRIX_TARGETS="pr-comment\nsummary",
                IVY_MATRIX_JOB_ID=str(2000 + leg),
                GITHUB_RUN_ID="60",
                GITHUB_EVENT_NAME="pull_request",
                GITHUB_EVENT_PATH=str(event),
                IVY_MATRIX_STORE=str(store),
            )
            legs.append((["update", "--junit", str(work / "junit.xml"), "--backend", backend], env))
        results = run_legs_at_once(legs)
        fake.configure(fail_rate=0.0)
        assert {b: r.returncode for b, r in results.items()} == dict.fromkeys(backends, 0)
        with fake.lock:
            comments = list(fake.comments[number])
        assert len(comments) == 1
        state = shown_verdicts(fake_client(fake), number, comments[0]["body"])
    assert state.head == "headsha1"
    assert {c.backend for c in state.cells} == set(backends)
    assert state.counts()[Verdict.NEW] == 16
    assert "## ivy-matrix: 16 new failures" in comments[0]["body"]


def test_a_fork_pull_request_writes_no_comment_and_fills_the_summary(tmp_path):
    """A fork's read-only token: no write request at all; the comment goes to the job summary."""
    with FakeGitHub() as fake:
        store = build_baseline(fake, tmp_path, ["torch"])
        number = int(fake.add_issue(title="change", pull_request=True)["number"])
        work = tmp_path / "pr"
        write_results(work / "junit.xml", "torch", tests=4, failing="test_01")
        env = runner_env(
            fake,
            work,
            IVY_MATRIX_TARGETS="pr-comment\nsummary",
            GITHUB_RUN_ID="60",
            GITHUB_EVENT_NAME="pull_request",
            GITHUB_EVENT_PATH=str(pr_event(tmp_path, number, fork=True)),
            IVY_MATRIX_STORE=str(store),
        )
        argv = ["update", "--junit", str(work / "junit.xml"), "--backend", "torch"]
        assert main(argv, env, remote=FAST) == 0
        with fake.lock:
            assert fake.comments[number] == []
            assert not [r for r in fake.requests if r.write]
    summary = (work / "summary.md").read_text(encoding="utf-8")
    assert comment_marker(number) in summary
    assert "1 new failure" in summary


def test_the_workflow_run_recipe_comments_on_the_events_pull_request(tmp_path):
    """A workflow_run job posts the fork's comment on the pull request and head GitHub's event
    names, links each backend to its leg, and records nothing."""
    backends = ["torch", "jax"]
    with FakeGitHub() as fake:
        store = build_baseline(fake, tmp_path, backends)
        before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
        number = int(fake.add_issue(title="from a fork", pull_request=True)["number"])
        fork_event = pr_event(tmp_path, number, fork=True)
        artifacts = tmp_path / "download"
        for leg, backend in enumerate(backends):
            # The fork's legs: a read-only token; each collects its leg file (no network).
            folder = artifacts / f"results-{backend}"
            write_results(folder / "junit.xml", backend, tests=4, failing="test_01")
            env = runner_env(
                fake,
                folder,
                IVY_MATRIX_TARGETS="summary",
                GITHUB_RUN_ID="70",
                IVY_MATRIX_JOB_ID=str(3000 + leg),
                GITHUB_EVENT_NAME="pull_request",
                GITHUB_EVENT_PATH=str(fork_event),
                IVY_MATRIX_LEG_FILE=str(folder),
            )
            argv = ["collect", "--junit", str(folder / "junit.xml"), "--backend", backend]
            assert main(argv, env, remote=FAST) == 0
        assert fake.comments[number] == []
        event = tmp_path / "workflow_run.json"
        payload = {
            "workflow_run": {
                "id": 70,
                "run_attempt": 1,
                "event": "pull_request",
                "head_sha": "headsha1",
                "pull_requests": [{"number": number, "base": {"sha": "basesha"}}],
            },
            "repository": {"default_branch": "main"},
        }
        event.write_text(json.dumps(payload), encoding="utf-8")
        work = tmp_path / "comment-job"
        env = runner_env(
            fake,
            work,
            IVY_MATRIX_TARGETS="pr-comment",
            GITHUB_RUN_ID="80",
            IVY_MATRIX_RUN_ID="70",
            GITHUB_EVENT_NAME="workflow_run",
            GITHUB_EVENT_PATH=str(event),
            IVY_MATRIX_STORE=str(store),
            IVY_MATRIX_FAIL_ON="new",
        )
        argv = ["update", "--legs", str(artifacts)]
        assert main(argv, env, remote=FAST) == 1  # fail-on: new, and the fork broke test_01
        with fake.lock:
            comments = list(fake.comments[number])
        assert len(comments) == 1
        state = shown_verdicts(fake_client(fake), number, comments[0]["body"])
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
    assert (state.pr, state.head) == (number, "headsha1")
    links = {c.backend: c.link for c in state.cells}
    assert links == {
        "torch": f"https://github.com/{REPO}/actions/runs/70/job/3000",
        "jax": f"https://github.com/{REPO}/actions/runs/70/job/3001",
    }
    assert all(c.verdict is Verdict.NEW for c in state.cells)


def test_a_fork_workflow_run_without_pull_requests_finds_the_pull_request_by_its_head(tmp_path):
    """With GitHub's pull_requests empty, the comment goes to the one open pull request whose
    head is the event's owner:branch at the event's head sha."""
    memory = MemoryGitHub()
    with FakeGitHub() as fake:  # only for the runner variables
        store = build_baseline(fake, tmp_path, ["torch"])
        env = runner_env(fake, tmp_path / "comment-job")
    other = int(memory.add_issue(pull_request=True, head=("someone:fix", "oldsha"))["number"])
    number = int(memory.add_issue(pull_request=True, head=("someone:fix", "forkhead"))["number"])
    work = tmp_path / "download" / "results-torch"
    write_results(work / "junit.xml", "torch", tests=4, failing="test_02")
    event = tmp_path / "workflow_run.json"
    payload = {
        "workflow_run": {
            "id": 70,
            "event": "pull_request",
            "head_sha": "forkhead",
            "head_branch": "fix",
            "head_repository": {"owner": {"login": "someone"}},
            "pull_requests": [],
        },
        "repository": {"default_branch": "main"},
    }
    event.write_text(json.dumps(payload), encoding="utf-8")
    env |= {
        "IVY_MATRIX_TARGETS": "pr-comment",
        "IVY_MATRIX_RUN_ID": "70",
        "GITHUB_EVENT_NAME": "workflow_run",
        "GITHUB_EVENT_PATH": str(event),
        "IVY_MATRIX_STORE": str(store),
    }
    remote = Remote(client=lambda _token, _url: memory, sleep=quick_sleep)
    argv = ["update", "--junit", str(work / "junit.xml"), "--backend", "torch"]
    assert main(argv, env, remote=remote) == 0
    assert memory.comments[other] == []
    (comment,) = memory.comments[number]
    state = shown_verdicts(memory, number, comment["body"])
    assert (state.pr, state.head) == (number, "forkhead")


# ------------------------------------------- cases that used to lose verdicts or hang a leg


def junit(path: Path, backend: str, names: list[str], failing: set[str]) -> Path:
    """A result file of ``backend`` with one case per name, those in ``failing`` failed."""
    cases = "".join(
        f'<testcase classname="ivy_tests.test_core.test_gradients" name="{name}[{backend}]">'
        + ('<failure message="boom">tb</failure>' if name in failing else "")
        + "</testcase>"
        for name in names
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>", encoding="utf-8")
    return path


def leg_env(tmp_path: Path, number: int, work: Path, job: int) -> dict[str, str]:
    """A pull-request leg's runner variables: event, run 60, job ``job``, store ``baseline``."""
    event = tmp_path / "event.json"
    payload = {
        "pull_request": {
            "number": number,
            "state": "open",
            "head": {"sha": "headsha1", "repo": {"full_name": REPO, "fork": False}},
            "base": {"sha": "basesha", "repo": {"full_name": REPO}},
        },
        "repository": {"default_branch": "main"},
    }
    event.write_text(json.dumps(payload), encoding="utf-8")
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_RUN_ID": "60",
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_API_URL": "http://127.0.0.1:9",  # unused: the in-memory GitHub answers
        "GITHUB_STEP_SUMMARY": str(work / "summary.md"),
        "GITHUB_OUTPUT": str(work / "output.txt"),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "IVY_MATRIX_TOKEN": "fake-token",
        "IVY_MATRIX_TARGETS": "pr-comment\nsummary",
        "IVY_MATRIX_JOB_ID": str(job),
        "IVY_MATRIX_STORE": str(tmp_path / "baseline"),
    }


def run_leg(
    memory: MemoryGitHub, tmp_path: Path, number: int, backend: str, job: int, **results: Any
) -> int:
    """One leg of pull request ``number`` (its results: ``junit``'s names and failing)."""
    work = tmp_path / f"leg-{job}"
    path = junit(work / "junit.xml", backend, **results)
    remote = Remote(client=lambda _token, _url: memory, sleep=quick_sleep)
    argv = ["update", "--junit", str(path), "--backend", backend]
    return main(argv, leg_env(tmp_path, number, work, job), remote=remote)


def record_baseline(tmp_path: Path, backends: list[str], names: list[str]) -> None:
    """A default-branch run in which every test of every backend passes."""
    for backend in backends:
        path = junit(tmp_path / "main" / f"{backend}.xml", backend, names, set())
        argv = ["update", "--junit", str(path), "--backend", backend, "--run-id", "50"]
        store = ["--store", str(tmp_path / "baseline"), "--job-id", "5", "--targets", "summary"]
        assert main([*argv, *store], {}) == 0


def our_comment(memory: MemoryGitHub, number: int) -> str:
    with memory.lock:
        bodies: list[str] = [c["body"] for c in memory.comments[number]]
    assert len(bodies) == 1
    assert bodies[0].startswith(comment_marker(number) + "\n")
    return bodies[0]


def test_two_legs_of_one_backend_each_show_their_new_failure(tmp_path, memory):
    """Two torch shards of one run, each with one new failure: the comment says 2 new
    failures and lists both (it used to keep one shard per backend)."""
    shards = [[f"test_{i:02d}" for i in range(4)], [f"test_{i:02d}" for i in range(10, 14)]]
    record_baseline(tmp_path, ["torch"], shards[0] + shards[1])
    number = int(memory.add_issue(pull_request=True)["number"])
    for job, names in enumerate(shards, 11):
        assert run_leg(memory, tmp_path, number, "torch", job, names=names, failing={names[1]}) == 0
    body = our_comment(memory, number)
    assert "## ivy-matrix: 2 new failures" in body
    assert "- **torch**: 2 new\n" in body
    assert re.search(r"^  - test_01: \[torch\]", body, re.MULTILINE)
    assert re.search(r"^  - test_11: \[torch\]", body, re.MULTILINE)


def test_a_comment_cut_to_size_counts_what_compare_counts(tmp_path, memory):
    """One leg with 5,000 failing new tests: the comment is cut to fit, and its counts are
    compare's (it used to say several times as many)."""
    names = [f"test_{i:05d}" for i in range(5000)]
    record_baseline(tmp_path, ["torch"], ["test_other"])
    number = int(memory.add_issue(pull_request=True)["number"])
    assert run_leg(memory, tmp_path, number, "torch", 11, names=names, failing=set(names)) == 0
    out = tmp_path / "verdicts.json"
    argv = ["compare", "--junit", str(tmp_path / "leg-11" / "junit.xml"), "--backend", "torch"]
    store = ["--store", str(tmp_path / "baseline"), "--pr", str(number), "--json", str(out)]
    assert main([*argv, *store], {}) == 0
    expected = json.loads(out.read_text(encoding="utf-8"))["backends"]["torch"]
    assert expected["new-test"] == 5000  # tests the baseline does not have, on its backend
    body = our_comment(memory, number)
    assert "- **torch**: 5000 new-test\n" in body
    listed, cut = listed_cells(body), not_listed(body)
    assert listed == {Verdict.NEW_TEST: EXAMPLES}  # 5,000 cells of one failure line
    assert cut == {"new-test": 5000 - EXAMPLES}


def test_a_hand_edited_comment_is_restored_with_every_backend(tmp_path, memory):
    """The comment edited by hand after the torch and jax legs: the numpy leg's write shows
    all three backends again (a hand edit used to drop the others until their legs ran)."""
    names = ["test_00", "test_01"]
    record_baseline(tmp_path, ["torch", "jax", "numpy"], names)
    number = int(memory.add_issue(pull_request=True)["number"])
    for job, backend in enumerate(["torch", "jax"], 11):
        assert (
            run_leg(memory, tmp_path, number, backend, job, names=names, failing={"test_01"}) == 0
        )
    with memory.lock:
        memory.comments[number][0]["body"] = comment_marker(number) + "\n\nLGTM, ignore these."
    assert run_leg(memory, tmp_path, number, "numpy", 13, names=names, failing={"test_01"}) == 0
    body = our_comment(memory, number)
    assert "## ivy-matrix: 3 new failures" in body
    for backend in ("torch", "jax", "numpy"):
        assert f"- **{backend}**: 1 new\n" in body


def test_a_hostile_edit_of_the_comment_does_not_hold_a_leg_up(tmp_path, memory):
    """The comment edited into the old hidden block's opener and 60,000 spaces (which used to
    keep a leg busy for minutes): the next leg replaces it, well within the hang guard."""
    names = ["test_00", "test_01"]
    record_baseline(tmp_path, ["torch"], names)
    number = int(memory.add_issue(pull_request=True)["number"])
    hostile = comment_marker(number) + "\n<!-- ivy-matrix:verdicts " + " " * 60_000
    memory.add_comment(number, hostile)
    assert run_leg(memory, tmp_path, number, "torch", 11, names=names, failing={"test_01"}) == 0
    assert "## ivy-matrix: 1 new failure" in our_comment(memory, number)


def test_a_closed_pull_request_gets_no_comment(tmp_path, memory, capsys):
    """A re-run after the pull request was closed: the event still says open, GitHub says
    closed, so no comment and nothing written, and the log says why."""
    names = ["test_00", "test_01"]
    record_baseline(tmp_path, ["torch"], names)
    number = int(memory.add_issue(pull_request=True, state="closed")["number"])
    assert run_leg(memory, tmp_path, number, "torch", 11, names=names, failing={"test_01"}) == 0
    assert memory.comments[number] == []
    assert memory.writes() == []
    assert f"pull request #{number} is closed" in capsys.readouterr().err


def test_a_pull_request_that_does_not_exist_gets_nothing_written(tmp_path, memory, capsys):
    """An event naming a pull request GitHub does not have: no record and no comment, a
    warning instead."""
    names = ["test_00", "test_01"]
    record_baseline(tmp_path, ["torch"], names)
    assert run_leg(memory, tmp_path, 4242, "torch", 11, names=names, failing={"test_01"}) == 0
    assert memory.writes() == []
    assert "there is no pull request #4242" in capsys.readouterr().err


def read_outputs(path: Path) -> dict[str, str]:
    """The name=value lines a step wrote to $GITHUB_OUTPUT (single-line values only)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and "<<" not in line)


def test_a_pull_requests_job_shows_its_verdicts_in_summary_outputs_and_annotations(
    tmp_path, memory, capsys
):
    """The job that publishes a pull request's verdicts puts them where a red check leads: the
    job summary (headline, counts, the new failures, the comment's link), the step outputs
    (each verdict's count, comment-url: also when the comment was already current) and the
    error annotations, spent on the new failures and titled as such."""
    names = [f"test_{i:02d}" for i in range(4)]
    record_baseline(tmp_path, ["torch"], names)
    number = int(memory.add_issue(pull_request=True)["number"])
    failing = {"test_01", "test_02", "test_09"}  # 2 regressions, 1 test the base lacks
    for again in (False, True):
        capsys.readouterr()
        work = tmp_path / "leg-11"
        if again:
            (work / "summary.md").unlink()
            (work / "output.txt").unlink()
        assert (
            run_leg(
                memory, tmp_path, number, "torch", 11, names=[*names, "test_09"], failing=failing
            )
            == 0
        )
        log = capsys.readouterr().err
        summary = (work / "summary.md").read_text(encoding="utf-8")
        outputs = read_outputs(work / "output.txt")
        with memory.lock:
            (comment,) = memory.comments[number]
        # The comment's address, built from its id: the same whether this job wrote it or it
        # was already current (the in-memory GitHub's own html_url says /issues/).
        url = f"https://github.com/{REPO}/pull/{number}#issuecomment-{comment['id']}"
        assert summary.startswith("## ivy-matrix: 3 new failures\n")
        assert "- **torch**: 2 new, 1 new-test\n" in summary
        assert f"Every verdict is in [the pull request's comment]({url}).\n" in summary
        new = summary[
            summary.index("### New failures (2)") : summary.index("### New tests that fail")
        ]
        assert f"- boom: **2 tests {TIMES} 1 backend (torch)**\n" in new
        assert "## ivy-matrix: 5 test cases, 3 failed" in summary  # the totals follow
        assert "Pre-existing" not in summary
        assert {k: v for k, v in outputs.items() if k.startswith("pr-")} == {
            "pr-new": "2",
            "pr-new-test": "1",
            "pr-pre-existing": "0",
            "pr-fixed": "0",
            "pr-flaky": "0",
            "pr-no-baseline": "0",
        }
        assert outputs["comment-url"] == url
        errors = [line for line in log.splitlines() if line.startswith("::error")]
        assert errors == [
            "::error title=new failure on torch%3A test_01 and 1 more test::boom%0Atest_01, test_02",
            "::error title=new test failing on torch%3A test_09::boom",
        ]
