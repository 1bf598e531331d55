"""The status target through the command: a fan-in job after the matrix sets a commit status
per backend and one for all on the head commit, against the budget-enforcing doubles.

Fixtures: jax with one new failure; failures that are all pre-existing; a tensorflow leg that
crashed (and a backend the config declares that never reports); a merge queue's merge_group
event; a fork's pull request through the workflow_run recipe; an identical re-run; a token
without ``statuses: write``; a matrix leg; a fork's read-only token.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.github.connection import Remote
from ivy_matrix.pr.statuses import NO_RESULTS
from tests.commands.test_update_github import FAST, MODULE, runner_env, write_results
from tests.conftest import quick_sleep
from tests.github.fake_server import FakeGitHub, RequestRecord
from tests.github.memory import MemoryGitHub

pytestmark = pytest.mark.timeout(120)

REPO = "acme/widgets"
BACKENDS = ("torch", "numpy", "tensorflow", "jax")
RUN = "60"
RUN_URL = f"https://github.com/{REPO}/actions/runs/{RUN}"
STATUS_WRITE = r"/statuses/"
STATUS_READ = r"/commits/[^/]+/status$"


def baseline(fake: FakeGitHub, tmp_path: Path, failing: str = "none", backends=BACKENDS) -> Path:
    """A default-branch store of ``backends``, 4 tests each, ``failing`` failing on each."""
    store = tmp_path / "baseline"
    for backend in backends:
        work = tmp_path / "main" / backend
        write_results(work / "junit.xml", backend, tests=4, failing=failing)
        env = runner_env(fake, work, IVY_MATRIX_TARGETS="summary", GITHUB_RUN_ID="50")
        argv = ["update", "--junit", str(work / "junit.xml"), "--backend", backend]
        assert main([*argv, "--store", str(store), "--job-id", "5"], env, remote=FAST) == 0
    return store


def event(tmp_path: Path, name: str, payload: Mapping[str, object]) -> dict[str, str]:
    """The runner's variables of an event ``name`` whose payload is ``payload``."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**payload, "repository": {"default_branch": "main"}}))
    return {"GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": str(path)}


def pull_request(tmp_path: Path, sha: str, number: int = 7, *, fork: bool = False):
    head = "someone/widgets" if fork else REPO
    return event(
        tmp_path,
        "pull_request",
        {
            "pull_request": {
                "number": number,
                "head": {"sha": sha, "repo": {"full_name": head, "fork": fork}},
                "base": {"sha": "basesha", "repo": {"full_name": REPO}},
            }
        },
    )


@dataclass
class Ran:
    """One fan-in job: its exit code, its log, and the requests it sent."""

    code: int
    log: str
    requests: list[RequestRecord]

    def sent(self, method: str, path: str) -> int:
        return sum(1 for r in self.requests if r.method == method and path in r.path)

    @property
    def writes(self) -> int:
        return sum(1 for r in self.requests if r.write)


def collect_legs(fake, tmp_path: Path, env: dict[str, str], failing: Mapping[str, str]) -> Path:
    """The matrix: one ``collect`` per backend of ``failing`` (backend -> failing test)."""
    legs = tmp_path / "legs"
    for job, (backend, test) in enumerate(failing.items(), 100):
        work = tmp_path / "pr" / backend
        write_results(work / "junit.xml", backend, tests=4, failing=test)
        leg_env = runner_env(fake, work, GITHUB_RUN_ID=RUN, **env)
        argv = ["collect", "--junit", str(work / "junit.xml"), "--backend", backend]
        argv += ["--leg-file", str(legs), "--job-id", str(job)]
        assert main(argv, leg_env, remote=FAST) == 0
    return legs


def fan_in(
    fake: FakeGitHub,
    tmp_path: Path,
    store: Path,
    legs: Path,
    env: dict[str, str],
    *,
    targets: str = "status\nsummary",
    remote: Remote = FAST,
    **extra: str,
) -> Ran:
    """The job after the matrix: ``update --legs`` with ``targets``."""
    work = tmp_path / "fan-in"
    work.mkdir(exist_ok=True)
    given = {"GITHUB_RUN_ID": RUN, "IVY_MATRIX_TARGETS": targets, "IVY_MATRIX_STORE": str(store)}
    job_env = runner_env(fake, work, **{**given, **env, **extra})
    before = len(fake.requests)
    err = io.StringIO()
    code = main(
        ["update", "--legs", str(legs)], job_env, remote=remote, stderr=err, stdout=io.StringIO()
    )
    with fake.lock:
        requests = fake.requests[before:]
    return Ran(code=code, log=err.getvalue(), requests=requests)


def shown(statuses: Mapping[str, Mapping[str, str]]) -> dict[str, tuple[str, str]]:
    return {context: (s["state"], s["description"]) for context, s in statuses.items()}


def test_a_new_failure_on_jax_fails_jax_and_the_aggregate_only(tmp_path):
    """jax breaks test_01: ivy-matrix/jax and ivy-matrix are failure, the others success; one
    read and backends + 1 writes, each status linking the run; the annotation names it."""
    with FakeGitHub() as fake:
        store = baseline(fake, tmp_path)
        sha = fake.add_commit()
        env = pull_request(tmp_path, sha)
        legs = collect_legs(
            fake, tmp_path, env, {b: "test_01" if b == "jax" else "none" for b in BACKENDS}
        )
        ran = fan_in(fake, tmp_path, store, legs, env)
        statuses = fake.commit_statuses(sha)
    assert ran.code == 0
    assert shown(statuses) == {
        "ivy-matrix/torch": ("success", "no new failures"),
        "ivy-matrix/numpy": ("success", "no new failures"),
        "ivy-matrix/tensorflow": ("success", "no new failures"),
        "ivy-matrix/jax": ("failure", "1 new: test_01"),
        "ivy-matrix": ("failure", "1 new on jax: test_01"),
    }
    assert {s["target_url"] for s in statuses.values()} == {RUN_URL}
    assert (ran.sent("GET", "/status"), ran.sent("POST", STATUS_WRITE)) == (1, len(BACKENDS) + 1)
    assert ran.writes == len(BACKENDS) + 1
    errors = [line for line in ran.log.splitlines() if line.startswith("::error")]
    assert errors == ["::error title=new failure on jax%3A test_01::boom"]


def test_failures_main_already_has_pass_every_status(tmp_path):
    """test_01 fails on every backend, on main too: every status is success."""
    with FakeGitHub() as fake:
        store = baseline(fake, tmp_path, failing="test_01")
        sha = fake.add_commit()
        env = pull_request(tmp_path, sha)
        legs = collect_legs(fake, tmp_path, env, dict.fromkeys(BACKENDS, "test_01"))
        ran = fan_in(fake, tmp_path, store, legs, env, IVY_MATRIX_FAIL_ON="new")
        statuses = fake.commit_statuses(sha)
    assert ran.code == 0
    assert shown(statuses) == {
        **{f"ivy-matrix/{b}": ("success", "no new failures; 1 pre-existing") for b in BACKENDS},
        "ivy-matrix": ("success", "no new failures on 4 backends; 4 pre-existing"),
    }
    assert "::error" not in ran.log


def test_a_crashed_leg_is_an_error_never_a_success(tmp_path):
    """tensorflow's leg left no leg file: its status and the aggregate are error."""
    with FakeGitHub() as fake:
        store = baseline(fake, tmp_path)
        sha = fake.add_commit()
        env = pull_request(tmp_path, sha)
        legs = collect_legs(fake, tmp_path, env, dict.fromkeys(("torch", "numpy", "jax"), "none"))
        ran = fan_in(fake, tmp_path, store, legs, env)
        statuses = fake.commit_statuses(sha)
    assert ran.code == 0
    assert shown(statuses)["ivy-matrix/tensorflow"] == ("error", NO_RESULTS)
    assert shown(statuses)["ivy-matrix"] == ("error", "no results from tensorflow")
    assert shown(statuses)["ivy-matrix/jax"] == ("success", "no new failures")


def test_a_backend_the_config_declares_that_never_reported_is_an_error(tmp_path):
    """expected-backends in the config file names the matrix: paddle, which main never had and this run
    did not report, is error; without the setting it would go unseen."""
    with FakeGitHub() as fake:
        store = baseline(fake, tmp_path, backends=("torch", "jax"))
        sha = fake.add_commit()
        env = pull_request(tmp_path, sha)
        legs = collect_legs(fake, tmp_path, env, dict.fromkeys(("torch", "jax"), "none"))
        config = tmp_path / "ivy-matrix.yml"
        config.write_text("expected-backends: [torch, jax, paddle]\n", encoding="utf-8")
        ran = fan_in(fake, tmp_path, store, legs, env, IVY_MATRIX_CONFIG=str(config))
        statuses = fake.commit_statuses(sha)
    assert ran.code == 0
    assert shown(statuses) == {
        "ivy-matrix/torch": ("success", "no new failures"),
        "ivy-matrix/jax": ("success", "no new failures"),
        "ivy-matrix/paddle": ("error", NO_RESULTS),
        "ivy-matrix": ("error", "no results from paddle"),
    }


def test_a_merge_group_gets_statuses_on_its_head_and_no_comment(tmp_path):
    """A merge queue's merge_group: verdicts against its base, statuses on its head commit,
    and the pr-comment target quietly has no pull request to comment on."""
    with FakeGitHub() as fake:
        store = baseline(fake, tmp_path)
        sha = fake.add_commit(message="merge group")
        base = fake.ref_sha("heads/main")
        group = {
            "head_sha": sha,
            "head_ref": "refs/heads/gh-readonly-queue/main/pr-7-abc",
            "base_sha": base,
            "base_ref": "refs/heads/main",
        }
        env = event(tmp_path, "merge_group", {"merge_group": group})
        legs = collect_legs(
            fake, tmp_path, env, {b: "test_02" if b == "torch" else "none" for b in BACKENDS}
        )
        ran = fan_in(fake, tmp_path, store, legs, env, targets="status\npr-comment\nsummary")
        statuses = fake.commit_statuses(sha)
        with fake.lock:
            comments = [c for found in fake.comments.values() for c in found]
    assert ran.code == 0
    assert comments == []
    assert "::warning" not in ran.log
    assert shown(statuses)["ivy-matrix/torch"] == ("failure", "1 new: test_02")
    assert shown(statuses)["ivy-matrix"] == ("failure", "1 new on torch: test_02")
    assert ran.writes == len(BACKENDS) + 1


def test_an_identical_rerun_writes_nothing(tmp_path):
    """The same results again (statuses and comment): one read of the statuses, no write."""
    with FakeGitHub() as fake:
        store = baseline(fake, tmp_path)
        number = int(fake.add_issue(title="change", pull_request=True)["number"])
        sha = fake.add_commit()
        env = pull_request(tmp_path, sha, number)
        legs = collect_legs(
            fake, tmp_path, env, {b: "test_01" if b == "jax" else "none" for b in BACKENDS}
        )
        targets = "status\npr-comment\nsummary"
        first = fan_in(fake, tmp_path, store, legs, env, targets=targets)
        again = fan_in(fake, tmp_path, store, legs, env, targets=targets)
        statuses = fake.commit_statuses(sha)
        (comment,) = fake.comments[number]
    assert (first.code, again.code) == (0, 0)
    assert first.sent("POST", STATUS_WRITE) == len(BACKENDS) + 1
    assert (again.writes, again.sent("GET", "/status")) == (0, 1)
    url = f"https://github.com/{REPO}/pull/{number}#issuecomment-{comment['id']}"
    assert {s["target_url"] for s in statuses.values()} == {url}


@pytest.mark.parametrize(("method", "path"), [("POST", STATUS_WRITE), ("GET", "/status")])
@pytest.mark.parametrize("fail_on", ["nothing", "new"])
def test_without_statuses_write_the_run_warns_and_exits_as_fail_on_says(
    tmp_path, method, path, fail_on
):
    """GitHub refuses the statuses (no 'statuses: write'): one warning naming the permission,
    nothing more sent to statuses, the comment still written, and the exit code fail-on's."""
    with FakeGitHub() as fake:
        store = baseline(fake, tmp_path)
        number = int(fake.add_issue(title="change", pull_request=True)["number"])
        sha = fake.add_commit()
        env = pull_request(tmp_path, sha, number)
        legs = collect_legs(
            fake, tmp_path, env, {b: "test_01" if b == "jax" else "none" for b in BACKENDS}
        )
        message = "Resource not accessible by integration"
        fake.inject(method=method, path=path, status=403, message=message, times=20)
        ran = fan_in(
            fake,
            tmp_path,
            store,
            legs,
            env,
            targets="status\npr-comment",
            IVY_MATRIX_FAIL_ON=fail_on,
        )
        statuses = fake.commit_statuses(sha)
        comments = fake.comments[number]
    assert ran.code == (1 if fail_on == "new" else 0)
    assert statuses == {}
    assert ran.sent("POST", STATUS_WRITE) == (1 if method == "POST" else 0)
    warnings = [line for line in ran.log.splitlines() if "statuses: write" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith("::warning")
    assert len(comments) == 1


def test_a_matrix_leg_sets_its_own_backends_status_and_no_aggregate(tmp_path):
    """A leg with one backend's results sets ivy-matrix/<backend> alone and says why not more."""
    with FakeGitHub() as fake:
        store = baseline(fake, tmp_path)
        sha = fake.add_commit()
        work = tmp_path / "leg"
        write_results(work / "junit.xml", "jax", tests=4, failing="test_03")
        env = runner_env(
            fake,
            work,
            IVY_MATRIX_TARGETS="status",
            IVY_MATRIX_STORE=str(store),
            **pull_request(tmp_path, sha),
        )
        err = io.StringIO()
        argv = ["update", "--junit", str(work / "junit.xml"), "--backend", "jax"]
        assert main(argv, env, remote=FAST, stderr=err) == 0
        statuses = fake.commit_statuses(sha)
    assert shown(statuses) == {"ivy-matrix/jax": ("failure", "1 new: test_03")}
    assert "the ivy-matrix status comes from the job that reads every backend" in err.getvalue()


def test_a_forks_pull_request_sends_nothing_and_says_where_statuses_come_from(tmp_path):
    """A fork's read-only token: no request to statuses, and a warning naming workflow_run."""
    with FakeGitHub() as fake:
        store = baseline(fake, tmp_path)
        sha = fake.add_commit()
        env = pull_request(tmp_path, sha, fork=True)
        legs = collect_legs(fake, tmp_path, env, dict.fromkeys(BACKENDS, "none"))
        ran = fan_in(fake, tmp_path, store, legs, env)
    assert ran.code == 0
    assert ran.sent("GET", "/status") + ran.writes == 0
    assert "workflow_run" in ran.log


def test_a_forks_pull_request_gets_its_statuses_through_the_workflow_run_recipe(tmp_path):
    """The fork's legs collect; a workflow_run job (pull_requests empty, as GitHub leaves it
    for forks) finds the pull request by its head, comments, and sets the statuses on the
    fork's head commit, each linking the comment."""
    memory = MemoryGitHub()
    sha = memory.add_commit()
    number = int(memory.add_issue(pull_request=True, head=("someone:fix", sha))["number"])
    with FakeGitHub() as fake:  # the runner's variables; the default branch's store
        store = baseline(fake, tmp_path)
        fork = pull_request(tmp_path, sha, number, fork=True)
        legs = collect_legs(
            fake, tmp_path, fork, {b: "test_02" if b == "numpy" else "none" for b in BACKENDS}
        )
        payload = {
            "workflow_run": {
                "id": int(RUN),
                "event": "pull_request",
                "head_sha": sha,
                "head_branch": "fix",
                "head_repository": {"owner": {"login": "someone"}},
                "pull_requests": [],
            }
        }
        recipe = event(tmp_path, "workflow_run", payload)
        remote = Remote(client=lambda _token, _url: memory.for_token("recipe"), sleep=quick_sleep)
        ran = fan_in(
            fake,
            tmp_path,
            store,
            legs,
            recipe,
            targets="status\npr-comment",
            remote=remote,
            GITHUB_RUN_ID="80",
            IVY_MATRIX_RUN_ID=RUN,
        )
    assert ran.code == 0
    (comment,) = memory.comments[number]
    url = f"https://github.com/{REPO}/pull/{number}#issuecomment-{comment['id']}"
    statuses = memory.commit_statuses(sha)
    assert {s.context: (s.state, s.description) for s in statuses.values()} == {
        "ivy-matrix/torch": ("success", "no new failures"),
        "ivy-matrix/numpy": ("failure", "1 new: test_02"),
        "ivy-matrix/tensorflow": ("success", "no new failures"),
        "ivy-matrix/jax": ("success", "no new failures"),
        "ivy-matrix": ("failure", "1 new on numpy: test_02"),
    }
    assert {s.target_url for s in statuses.values()} == {url}
    spent = memory.budget.spent("recipe")
    assert memory.calls.count("create_commit_status") == len(BACKENDS) + 1
    assert memory.calls.count("get_combined_status") == 1
    assert spent.refused == 0


ERRORS = (
    *("KeyError", "ValueError", "TypeError", "IndexError", "OSError", "NameError"),
    *("AttributeError", "RuntimeError", "LookupError", "EOFError", "MemoryError"),
)


def test_annotations_go_to_new_failures_one_per_signature_at_most_ten(tmp_path):
    """The status target alone works out the verdicts, so the annotations are the pull
    request's: one per failure signature, new failures before failing new tests, 10 at most,
    the rest counted in the log."""
    with FakeGitHub() as fake:
        store = baseline(fake, tmp_path, backends=("jax",))  # test_00 .. test_03 pass
        sha = fake.add_commit()
        env = pull_request(tmp_path, sha)
        work = tmp_path / "pr" / "jax"
        names = [f"test_{i:02d}" for i in range(4)] + [f"test_new_{i}" for i in range(7)]
        cases = "".join(
            f'<testcase classname="{MODULE}" name="{name}[jax-cpu]">'
            f'<failure message="{error}: bad">tb</failure></testcase>'
            for name, error in zip(names, ERRORS, strict=True)
        )
        work.mkdir(parents=True)
        (work / "junit.xml").write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>")
        legs = tmp_path / "legs"
        argv = ["collect", "--junit", str(work / "junit.xml"), "--backend", "jax"]
        leg_env = runner_env(fake, work, GITHUB_RUN_ID=RUN, **env)
        assert main([*argv, "--leg-file", str(legs), "--job-id", "100"], leg_env, remote=FAST) == 0
        ran = fan_in(fake, tmp_path, store, legs, env)
        statuses = fake.commit_statuses(sha)
    assert shown(statuses)["ivy-matrix/jax"][1].startswith("11 new: test_00, test_01, ")
    titles = [
        line.split("title=")[1].split("::")[0]
        for line in ran.log.splitlines()
        if line.startswith("::error")
    ]
    assert len(titles) == 10
    assert [t.split(" on ")[0] for t in titles] == ["new failure"] * 4 + ["new test failing"] * 6
    assert "... and 1 more failure lines among the new failures" in ran.log
