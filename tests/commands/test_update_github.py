"""End to end: ``ivy-matrix update`` as a run's one writer, against the fake GitHub server.

Each test starts the fake on 127.0.0.1 and runs the command with a runner-like environment
(GITHUB_* variables, step summary and output files), then asserts on the fake's state: the
branch's files, the request log, and the cells' links. The command runs in-process
(``cli.main``) with a client without PyGithub's throttling and shortened waits; one test runs
``python entrypoint.py`` as a subprocess with the production client.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.github.client import GitHubClient, make_client
from ivy_matrix.github.connection import Remote
from ivy_matrix.model import DashboardId
from ivy_matrix.state.statefile import load_state
from ivy_matrix.state.trend import TREND_NAME, load_trend
from ivy_matrix.views.dashboards import render_files
from ivy_matrix.views.style import Style
from tests.concurrency import VirtualClock, at_once
from tests.conftest import shared_dir
from tests.github.budget import RACING
from tests.github.fake_server import FakeGitHub

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "entrypoint.py"
REPO = "acme/widgets"
RUN = 9_000_000_001
MODULE = "ivy_tests.test_ivy.test_functional.test_core.test_gradients"
GRADIENTS = DashboardId(title="gradients", category="core")
STATE = ".ivy-matrix/state/core/gradients.json"


@pytest.fixture(name="fake")
def fake_fixture() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake


def write_results(path: Path, backend: str, tests: int = 3, failing: str = "test_00") -> Path:
    cases = "".join(
        f'<testcase classname="{MODULE}" name="test_{i:02d}[{backend}-cpu]">'
        + ('<failure message="boom">tb</failure>' if f"test_{i:02d}" == failing else "")
        + "</testcase>"
        for i in range(tests)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>", encoding="utf-8")
    return path


def runner_env(fake: FakeGitHub, work: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "GITHUB_ACTIONS": "true",
        "GITHUB_RUN_ID": str(RUN),
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_API_URL": fake.base_url,
        "GITHUB_STEP_SUMMARY": str(work / "summary.md"),
        "GITHUB_OUTPUT": str(work / "output.txt"),
        "IVY_MATRIX_TOKEN": "fake-token",
        "IVY_MATRIX_TARGETS": "branch\nsummary",
    }
    env.update(extra)
    return env


def brief_sleep(seconds: float) -> None:
    """Every wait of the stores, targets and client, a tenth as long (at most half a second)."""
    time.sleep(min(seconds / 10, 0.5))


def fast_client(token: str, api_url: str) -> GitHubClient:
    """The production client's retry policy, without PyGithub's pauses between requests."""
    return make_client(token=token, api_url=api_url, timeout=10, sleep=brief_sleep)


FAST = Remote(client=fast_client, sleep=brief_sleep)


def run_legs_at_once(
    legs: list[tuple[list[str], dict[str, str]]],
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run ``cli.main`` for every (argv, env) leg in threads started together, each leg with
    its own output streams; its exit code and what it printed, by its last argument (its
    backend).

    The legs' waits (stores, targets) are on one VirtualClock, so how long a leg waits for the
    others is counted in their waits, not in how fast this machine runs their requests; the
    client's own retry pauses stay short real ones.
    """
    clock = VirtualClock()
    remote = Remote(client=fast_client, sleep=clock.sleep)
    results: dict[str, subprocess.CompletedProcess[str]] = {}

    def run_leg(argv: list[str], env: dict[str, str]) -> None:
        out, err = io.StringIO(), io.StringIO()
        code = main(argv, env, remote=remote, stdout=out, stderr=err)
        results[argv[-1]] = subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())

    at_once([partial(run_leg, argv, env) for argv, env in legs], clock=clock)
    return results


def run(
    work: Path, env: dict[str, str], *args: str, command: str = "update"
) -> subprocess.CompletedProcess[str]:
    """Run the command in-process in ``work``; its exit code and what it printed."""
    work.mkdir(parents=True, exist_ok=True)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(work):
        code = main([command, *args], env, remote=FAST, stdout=out, stderr=err)
    return subprocess.CompletedProcess([command, *args], code, out.getvalue(), err.getvalue())


def run_entrypoint(
    work: Path, env: dict[str, str], *args: str, command: str = "update"
) -> subprocess.CompletedProcess[str]:
    """Run ``python entrypoint.py`` as a subprocess in ``work``, as the action does."""
    work.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, str(ENTRYPOINT), command, *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def branch_state(fake: FakeGitHub):
    """core/gradients as its state on the branch says."""
    return load_state(fake.read_file(STATE, "ivy-matrix"), where=STATE)


def test_a_leg_commits_its_column_linked_to_its_job(fake, tmp_path):
    """One leg with a job id commits state, dashboards and index; its cells link its job."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777")
    result = run_entrypoint(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
    assert result.returncode == 0, result.stdout + result.stderr
    files = fake.files("ivy-matrix")
    assert {"README.md", "core/gradients.md", STATE} <= set(files)
    state = branch_state(fake)
    assert [row.name for row in state.rows] == ["test_00", "test_01", "test_02"]
    url = f"https://github.com/{REPO}/actions/runs/{RUN}/job/777"
    assert {row.cells["torch"].latest.source.url for row in state.rows} == {url}
    assert url in files["core/gradients.md"].decode()
    assert "committed" in result.stderr
    assert (tmp_path / "summary.md").read_text(encoding="utf-8").startswith("## ivy-matrix")
    assert "tests=3" in (tmp_path / "output.txt").read_text(encoding="utf-8")
    # The job id was given: no job listing was needed.
    assert fake.requests_to("GET", r"/actions/") == []


@pytest.mark.parametrize("targets", ["branch", "branch, issue"])
def test_rerun_with_identical_results_makes_no_write(fake, tmp_path, targets):
    """Running the same leg again reads the branch (and issues) and writes nothing at all."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777", IVY_MATRIX_TARGETS=targets)
    assert run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch").returncode == 0
    writes = len(fake.writes())
    again = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake.writes()) == writes
    assert "nothing to commit" in again.stderr


def test_job_is_found_by_runner_name_with_one_listing(fake, tmp_path):
    """Without a job id, one listing of the run's jobs finds the leg by its runner name."""
    jobs = fake.add_run(
        REPO,
        RUN,
        jobs=[
            {"name": "tests", "matrix": [b], "runner_name": f"runner-{b}"}
            for b in ("torch", "numpy", "jax")
        ],
    )
    numpy = next(job for job in jobs if job["name"] == "tests (numpy)")
    write_results(tmp_path / "results" / "junit.xml", "numpy")
    env = runner_env(fake, tmp_path, RUNNER_NAME="runner-numpy")
    result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "numpy")
    assert result.returncode == 0, result.stdout + result.stderr
    urls = {row.cells["numpy"].latest.source.url for row in branch_state(fake).rows}
    assert urls == {f"https://github.com/{REPO}/actions/runs/{RUN}/job/{numpy['id']}"}
    assert len(fake.requests_to("GET", r"/actions/runs/\d+/attempts/1/jobs")) == 1


def test_a_token_that_may_not_write_fails_naming_the_permission(fake, tmp_path):
    """A 403 'Resource not accessible by integration' on a push's run (no fork in the event)
    is a missing permission: exit 5 naming contents: write, never the fork warning and exit 0
    that recorded nothing (a fork's pull request is told from the event, below)."""
    fake.configure(read_only=True)
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777", GITHUB_EVENT_NAME="push")
    result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
    assert result.returncode == 5, result.stdout + result.stderr
    assert "'permissions: contents: write'" in result.stderr
    assert "Resource not accessible by integration" in result.stderr
    assert "workflow_run" not in result.stderr
    assert fake.ref_sha("heads/ivy-matrix") is None


def test_a_protected_branch_fails_at_once_over_the_rest_api(fake, tmp_path):
    """branch-transport: rest, and GitHub refuses the branch's move as protected (422): one
    try, exit 5 with GitHub's words and what to do, not 30 tries lost to "other writers"."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777", IVY_MATRIX_BRANCH_TRANSPORT="rest")
    assert run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch").returncode == 0
    message = "Protected branch update failed for refs/heads/ivy-matrix."
    fault = fake.inject(method="PATCH", path=r"/git/refs/heads/ivy-matrix$", status=422,
                        message=message, times=50)  # fmt: skip
    write_results(tmp_path / "results" / "junit.xml", "torch", failing="test_01")
    result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
    assert result.returncode == 5, result.stdout + result.stderr
    assert message in result.stderr
    assert "branch protection rules and rulesets" in result.stderr
    assert fault.hits == 1


def test_fork_pull_request_skips_github_writes_up_front(fake, tmp_path):
    """A pull request from a fork is detected from the event payload: no write is even tried."""
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(
            {
                "pull_request": {
                    "number": 7,
                    "head": {"repo": {"full_name": "someone/widgets", "fork": True}},
                    "base": {"repo": {"full_name": REPO, "fork": False}},
                }
            }
        ),
        encoding="utf-8",
    )
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(
        fake,
        tmp_path,
        IVY_MATRIX_JOB_ID="777",
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_EVENT_PATH=str(event),
    )
    result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
    assert result.returncode == 0, result.stdout + result.stderr
    # A pull request's results never enter the dashboards, from a fork or not.
    assert "results of pull request #7 are not recorded into the dashboards" in result.stderr
    assert fake.writes() == []
    assert (tmp_path / "summary.md").is_file()


def test_dry_run_shows_what_it_would_commit_and_writes_nothing(fake, tmp_path):
    """--dry-run reads the branch, lists the files it would commit, and writes nothing."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777", IVY_MATRIX_DRY_RUN="true")
    result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "dry run: would commit" in result.stderr
    assert "core/gradients.md" in result.stderr
    assert fake.writes() == []


def test_requests_per_update_do_not_grow_with_the_number_of_tests(fake, tmp_path):
    """An update of 1,000 tests makes as many API requests as one of 5 (after the first)."""
    counts = []
    for index, tests in enumerate((5, 5, 1000)):
        work = tmp_path / f"run{index}"
        write_results(work / "junit.xml", f"b{index}", tests=tests)
        before = len(fake.requests)
        env = runner_env(
            fake, work, GITHUB_RUN_ID=str(RUN + index), IVY_MATRIX_JOB_ID=str(100 + index)
        )
        result = run(work, env, "--junit", "*.xml", "--backend", f"b{index}")
        assert result.returncode == 0, result.stdout + result.stderr
        counts.append(len(fake.requests) - before)
    # The first update creates the branch; every later one reads the ref, the tree, the index
    # file, the revision, its dashboard and the trend, and commits (tree, commit, the branch
    # moved). Through the REST API: git's protocol makes none of these requests.
    assert counts[1:] == [9, 9]


def test_missing_token_for_the_branch_target_is_a_clear_user_error(fake, tmp_path):
    """The branch target without a token exits 2 (usage) naming the input to set."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777", IVY_MATRIX_TOKEN="")
    result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
    assert result.returncode == 2
    assert "::error::" in result.stderr
    assert "token" in result.stderr


@pytest.mark.timeout(120)
def test_the_writers_of_eight_runs_at_once_lose_nothing(fake, tmp_path):
    """The writers of 8 runs (one job each, say 8 workflows) start at once, with latency and
    20% transient faults: nothing is lost, each issue is created once and shows every run.

    (The writers are threads running the whole command, with its waits shortened;
    tests/stores/ runs the store's own races with and without faults.)
    """
    fail_rate = 0.2
    # Transient faults that GitHub answers with a short or no wait: 5xx, and secondary rate
    # limits that say retry-after: 0. (Without retry-after GitHub asks for a minute's wait.)
    # 8 writers each committing and editing issues make about 120 writes within seconds, over
    # GitHub's 80 a minute; this tests that nothing is lost, so it takes the racing budget.
    fake.configure(
        limits=RACING,
        latency=(0.002, 0.02),
        fail_rate=fail_rate,
        fail_kinds=("502", "503", "403-secondary", "429"),
        retry_after=(0, 0),
        seed=11,
    )
    # And two issue creates that land, then answer 502 (the client must not resend them).
    landed_then_502 = fake.inject(
        method="POST", path=r"/issues$", status=502, after_write=True, times=2
    )
    backends = [f"b{leg:02d}" for leg in range(8)]
    legs = []
    for leg, backend in enumerate(backends):
        work = tmp_path / backend
        write_results(work / "junit.xml", backend, tests=12, failing=f"test_{leg % 12:02d}")
        env = runner_env(
            fake,
            work,
            GITHUB_RUN_ID=str(RUN + leg),
            IVY_MATRIX_JOB_ID=str(1000 + leg),
            IVY_MATRIX_TARGETS="branch, issue",
        )
        # Threads share the working directory: each names its results by absolute path.
        legs.append((["update", "--junit", str(work / "*.xml"), "--backend", backend], env))
    results = run_legs_at_once(legs)
    assert {b: r.returncode for b, r in results.items()} == dict.fromkeys(backends, 0)
    state = branch_state(fake)
    assert sorted(state.backend_names) == backends
    assert [row.name for row in state.rows] == [f"test_{i:02d}" for i in range(12)]
    for leg, backend in enumerate(backends):
        for row in state.rows:
            entry = row.cells[backend].latest
            assert entry.source.url.endswith(f"/runs/{RUN + leg}/job/{1000 + leg}")
            expected = "failure" if row.name == f"test_{leg % 12:02d}" else "success"
            assert entry.outcome.value == expected
    table = fake.read_file("core/gradients.md", "ivy-matrix")
    assert table.count("badge/-failure-red") == 8
    revision = fake.read_file(".ivy-matrix/state/REVISION", "ivy-matrix").strip()
    # Runs that found no issue at once may each create one: one issue per marker stays open
    # (the lowest number), every other is closed as its duplicate; the dashboard issue shows
    # the newest revision with every column.
    assert landed_then_502.hits == 2
    states = [i["state"] for i in fake.issues.values()]
    assert states.count("open") == 2
    for number, issue in fake.issues.items():
        if issue["state"] == "closed":
            assert any("Duplicate of" in c["body"] for c in fake.comments[number]), number
    issues = dashboard_issues(fake)
    assert set(issues) == {
        "<!-- ivy-matrix:dashboard=core/gradients -->",
        "<!-- ivy-matrix:index -->",
    }
    body = issues["<!-- ivy-matrix:dashboard=core/gradients -->"]["body"]
    assert f"<!-- ivy-matrix:revision={revision} -->" in body
    assert body.count("badge/-failure-red") == 8
    assert all(len(issue["body"]) <= 65_536 for issue in fake.issues.values())


def dashboard_issues(fake: FakeGitHub):
    """Open issues that carry a dashboard marker, by the marker line."""
    found = {}
    for issue in fake.issues.values():
        first = (issue.get("body") or "").split("\n", 1)[0]
        if issue["state"] == "open" and first.startswith("<!-- ivy-matrix:"):
            found[first] = issue
    return found


def test_legs_publish_one_issue_per_dashboard_with_the_branch_revision(fake, tmp_path):
    """Two legs with branch and issue targets: one issue per dashboard plus the index, updated."""
    for job, backend in enumerate(("torch", "jax"), start=301):
        work = tmp_path / backend
        write_results(work / "junit.xml", backend)
        env = runner_env(
            fake, work, IVY_MATRIX_JOB_ID=str(job), IVY_MATRIX_TARGETS="branch, issue, summary"
        )
        result = run(work, env, "--junit", "*.xml", "--backend", backend)
        assert result.returncode == 0, result.stdout + result.stderr
    issues = dashboard_issues(fake)
    assert set(issues) == {
        "<!-- ivy-matrix:dashboard=core/gradients -->",
        "<!-- ivy-matrix:index -->",
    }
    body = issues["<!-- ivy-matrix:dashboard=core/gradients -->"]["body"]
    assert "<!-- ivy-matrix:revision=2 -->" in body
    assert "/job/301" in body
    assert "/job/302" in body
    assert all(len(issue["body"]) <= 65_536 for issue in fake.issues.values())


def test_issue_target_without_the_branch_target_is_a_clear_user_error(fake, tmp_path):
    """The issue target publishes the branch's state: without the branch target an update
    exits 2 before reading anything, saying to add 'branch', and writes nothing."""
    write_results(tmp_path / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="401", IVY_MATRIX_TARGETS="issue, summary")
    result = run(tmp_path, env, "--junit", "*.xml", "--backend", "torch")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "add 'branch' to targets" in result.stderr
    assert fake.writes() == []
    assert not fake.issues


def read_outputs(path: Path) -> dict[str, str]:
    """The name=value lines a step wrote to $GITHUB_OUTPUT (single-line values only)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and "<<" not in line)


def test_outputs_and_summary_link_where_the_dashboards_are_published(fake, tmp_path):
    """Step outputs, the summary JSON and the job summary carry the issue and index URLs."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(
        fake, tmp_path, IVY_MATRIX_JOB_ID="777", IVY_MATRIX_TARGETS="branch, issue, summary"
    )
    result = run(
        tmp_path, env, "--junit", "results/*.xml", "--backend", "torch", "--summary-json", "s.json"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    outputs = read_outputs(tmp_path / "output.txt")
    issues = dashboard_issues(fake)
    number = issues["<!-- ivy-matrix:dashboard=core/gradients -->"]["number"]
    dashboard = f"https://github.com/{REPO}/issues/{number}"
    index = f"https://github.com/{REPO}/issues/{issues['<!-- ivy-matrix:index -->']['number']}"
    assert json.loads(outputs["dashboard-urls"]) == {"core/gradients": dashboard}
    assert outputs["index-url"] == index
    summary = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert summary["dashboards"]["core/gradients"]["url"] == dashboard
    assert summary["index_url"] == index
    job_summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert f"[core/gradients]({dashboard})" in job_summary
    assert f"All dashboards: {index}" in job_summary


def test_branch_target_links_the_dashboard_files(fake, tmp_path):
    """With the branch target alone, the URLs point at the files on the branch."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777")
    assert run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch").returncode == 0
    outputs = read_outputs(tmp_path / "output.txt")
    base = f"https://github.com/{REPO}/blob/ivy-matrix"
    assert json.loads(outputs["dashboard-urls"]) == {"core/gradients": f"{base}/core/gradients.md"}
    assert outputs["index-url"] == f"{base}/README.md"


def test_a_dashboard_named_readme_on_the_branch_leaves_the_index_its_file(fake, tmp_path):
    """On the branch, README.md stays the index and links the README dashboard's own file."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777")
    args = ("--junit", "results/*.xml", "--backend", "torch", "--dashboard", "README")
    result = run(tmp_path, env, *args)

    assert result.returncode == 0, result.stdout + result.stderr
    files = fake.files("ivy-matrix")
    (dashboard,) = [p for p in files if p.endswith(".md") and p != "README.md"]
    assert dashboard.casefold() != "readme.md"
    assert "test_00" in files[dashboard].decode()
    index = files["README.md"].decode()
    assert index.startswith("# Test dashboards\n")
    assert f"]({dashboard})" in index
    urls = json.loads(read_outputs(tmp_path / "output.txt")["dashboard-urls"])
    assert urls == {"README": f"https://github.com/{REPO}/blob/ivy-matrix/{dashboard}"}


def test_adopted_ivy_table_on_the_branch_then_one_leg_changes_one_cell(fake, tmp_path):
    """adopt --targets branch puts a seed on the branch byte for byte; a leg then changes one cell."""
    seed = min(shared_dir("ivy-seeds").glob("0*.txt"))
    text = seed.read_text(encoding="utf-8")
    env = runner_env(fake, tmp_path)
    adopt_args = ("--dashboard", "core/gradients", str(seed), "--targets", "branch")
    adopt = run(tmp_path, env, *adopt_args, command="adopt")
    assert adopt.returncode == 0, adopt.stdout + adopt.stderr
    assert fake.read_file("core/gradients.md", "ivy-matrix") == text
    again = run(tmp_path, env, *adopt_args, command="adopt")
    assert again.returncode == 3
    assert "pass --force" in again.stderr

    first_row = text.splitlines()[2].split("|")[1].strip()
    results = tmp_path / "leg" / "junit.xml"
    results.parent.mkdir()
    results.write_text(
        f'<testsuites><testsuite><testcase classname="{MODULE}" name="{first_row}[torch-cpu]"/>'
        "</testsuite></testsuites>",
        encoding="utf-8",
    )
    result = run(
        tmp_path / "leg",
        runner_env(fake, tmp_path / "leg", IVY_MATRIX_JOB_ID="888"),
        "--junit",
        "junit.xml",
        "--backend",
        "torch",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    before = text.splitlines()
    after = fake.read_file("core/gradients.md", "ivy-matrix").splitlines()
    changed = [
        i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a.split() != b.split()
    ]
    assert changed == [2]
    assert "/job/888" in after[2]


def branch_pages_are_a_render_of_its_state(fake: FakeGitHub) -> bool:
    """Whether the branch's pages, trend and pictures are exactly what rendering its state (and
    its trend) gives, with no other markdown."""
    states = [branch_state(fake)]
    files = fake.files("ivy-matrix")
    found = files.get(TREND_NAME)
    trend = load_trend(found.decode(), where="the branch") if found is not None else None
    expected = {f.path: f.text for f in render_files(states, style=Style.IVY, trend=trend)}
    pages = {p for p in files if p.endswith(".md")}
    shown = {p: files[p].decode() for p in pages | set(expected) if p in files}
    return shown == expected


def test_each_run_commits_and_publishes_the_issues_that_show_every_run(fake, tmp_path):
    """Runs one after another, each with one writer: every commit keeps the pages a render of
    the state, and the issues show every run's results."""
    for leg in range(3):
        work = tmp_path / f"run{leg}"
        write_results(work / "junit.xml", f"b{leg}")
        env = runner_env(
            fake,
            work,
            GITHUB_RUN_ID=str(RUN + leg),
            IVY_MATRIX_JOB_ID=str(700 + leg),
            IVY_MATRIX_TARGETS="branch, issue",
        )
        result = run(work, env, "--junit", "*.xml", "--backend", f"b{leg}")
        assert result.returncode == 0, result.stdout + result.stderr
        assert branch_pages_are_a_render_of_its_state(fake)
    assert branch_state(fake).backend_names == ("b0", "b1", "b2")
    body = dashboard_issues(fake)["<!-- ivy-matrix:dashboard=core/gradients -->"]["body"]
    assert all(f"/job/{700 + leg}" in body for leg in range(3))
    # The index issue shows the trend's pictures of the commit that holds them.
    index = dashboard_issues(fake)["<!-- ivy-matrix:index -->"]["body"]
    head = fake.ref_sha("heads/ivy-matrix")
    pinned = f"https://github.com/{REPO}/raw/{head}/charts"
    assert f"![Pass rate per backend]({pinned}/pass-rate.svg)" in index
    assert f"![Parity across backends]({pinned}/parity.svg)" in index
    assert {"charts/pass-rate.svg", "charts/parity.svg"} <= set(fake.files("ivy-matrix"))


def test_publish_renders_the_issues_once_and_then_writes_nothing(fake, tmp_path):
    """Updates with the branch target alone leave pages and no issues; publish writes the
    issues; a second publish finds everything in place and writes nothing."""
    for leg in range(2):
        work = tmp_path / f"leg{leg}"
        write_results(work / "junit.xml", f"b{leg}")
        env = runner_env(fake, work, IVY_MATRIX_JOB_ID=str(700 + leg))
        assert run(work, env, "--junit", "*.xml", "--backend", f"b{leg}").returncode == 0
    assert branch_pages_are_a_render_of_its_state(fake)
    assert not dashboard_issues(fake)
    env = runner_env(fake, tmp_path, IVY_MATRIX_TARGETS="branch, issue")
    result = run(tmp_path, env, command="publish")
    assert result.returncode == 0, result.stdout + result.stderr
    assert branch_pages_are_a_render_of_its_state(fake)
    assert "<!-- ivy-matrix:dashboard=core/gradients -->" in dashboard_issues(fake)
    writes = len(fake.writes())
    again = run(tmp_path, env, command="publish")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [(r.method, r.path, r.body) for r in fake.writes()[writes:]] == [], again.stderr


def test_publish_without_the_branch_target_is_a_clear_user_error(fake, tmp_path):
    """publish needs the branch state: without the branch target it exits 2 saying so."""
    env = runner_env(fake, tmp_path, IVY_MATRIX_TARGETS="issue")
    result = run(tmp_path, env, command="publish")
    assert result.returncode == 2
    assert "add 'branch' to" in result.stderr


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"IVY_MATRIX_MATRIX_SIZE": "3", "IVY_MATRIX_MATRIX_INDEX": "0"}, "input 'matrix-size'"),
        ({"IVY_MATRIX_LEG_METADATA": "ivy-matrix-leg.json"}, "input 'leg-metadata'"),
    ],
    ids=["matrix-size", "leg-metadata"],
)
def test_a_retired_input_stops_the_run_naming_the_fan_in_recipe(fake, tmp_path, variables, named):
    """matrix-size, matrix-index and leg-metadata (0.2.0's ways for legs to write) stop the run
    with exit 2 before anything is read or written, naming the input and the recipe to use."""
    write_results(tmp_path / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, **variables)
    for command in ("update", "collect"):
        result = run(tmp_path, env, "--junit", "*.xml", "--backend", "torch", command=command)
        assert result.returncode == 2, result.stdout + result.stderr
        assert f"::error::{named}" in result.stderr
        assert "retired in ivy-matrix 0.3.0" in result.stderr
        assert "docs/workflows.md#a-fan-in-job-after-the-matrix-any-width" in result.stderr
    assert fake.requests == []
    assert not (tmp_path / "output.txt").exists()
