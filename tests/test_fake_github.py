"""Tests for tests/fake_github.py: real PyGithub against FakeGitHub, plus an OpenAPI shape check.

The fake is the ground truth for every GitHub-side test, so it is held to two standards here:
PyGithub 2.10 must work against it the way it works against github.com, and every JSON body it
serves must validate against the operation's schema in ../shared/github-api/openapi-subset.json.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from github import Auth, Github, GithubException, GithubRetry, InputGitTreeElement
from github.GithubException import RateLimitExceededException, UnknownObjectException

from tests.conftest import shared_dir
from tests.fake_github import FIRST_JOB_ID, FakeGitHub, git_blob_sha, job_display_name
from tests.openapi_check import find_operation, load_spec, response_schema, to_json_schema, validate

REPO = "acme/widgets"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def client(url: str, per_page: int = 30, retry: GithubRetry | None = None) -> Github:
    """A PyGithub client with throttling off and (by default) no retries."""
    return Github(
        auth=Auth.Token("t"),
        base_url=url,
        retry=retry,
        seconds_between_requests=None,
        seconds_between_writes=None,
        timeout=5,
        per_page=per_page,
    )


def call(url, method="GET", body=None, headers=None):
    """Make one raw HTTP request; return status, headers and the decoded JSON body (or None)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", "token t")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            raw = response.read()
            status, got = response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        raw, status, got = error.read(), error.code, dict(error.headers)
    return status, got, json.loads(raw) if raw else None


# --------------------------------------------------------------------------- actions


def test_jobs_are_listed_across_three_link_pages(fake):
    """Seventy jobs come back through three Link-paginated pages with increasing ids."""
    fake.add_run(REPO, 42, 1, [{"name": "tests", "matrix": ["torch", i]} for i in range(70)])
    jobs = list(client(fake.base_url).get_repo(REPO).get_workflow_run(42).jobs("latest"))
    assert [j.id for j in jobs] == list(range(FIRST_JOB_ID, FIRST_JOB_ID + 70))
    assert jobs[5].name == "tests (torch, 5)"
    pages = fake.requests_to("GET", r"/actions/runs/42/jobs$")
    assert [r.query.get("page", "1") for r in pages] == ["1", "2", "3"]
    assert pages[1].query["filter"] == "latest"


def test_filter_all_and_attempt_endpoint_separate_rerun_jobs(fake):
    """filter=latest shows the newest attempt, filter=all both, the attempt endpoint one."""
    fake.add_run(REPO, 7, 1, [{"name": "tests (jax)", "conclusion": "failure"}])
    fake.add_run(REPO, 7, 2, [{"name": "tests (jax)", "runner_name": "GitHub Actions 9"}])
    run = client(fake.base_url).get_repo(REPO).get_workflow_run(7)
    assert run.run_attempt == 2
    assert [j.run_attempt for j in run.jobs("latest")] == [2]
    assert [j.run_attempt for j in run.jobs("all")] == [1, 2]
    _, data = run._requester.requestJsonAndCheck("GET", f"{run.url}/attempts/1/jobs")
    assert [j["conclusion"] for j in data["jobs"]] == ["failure"]
    status, _, _ = call(f"{fake.base_url}/repos/{REPO}/actions/runs/7/attempts/3/jobs")
    assert status == 404


def test_job_names_follow_github_display_rules(fake):
    """Matrix values are appended, reusable workflows get a prefix, long names are cut to 97+...."""
    long_name = "x" * 120
    jobs = fake.add_run(
        REPO,
        9,
        jobs=[
            {"name": "tests", "matrix": ["torch", "", None, "3.11"]},
            {"name": "tests", "matrix": ["jax"], "caller": "ci"},
            {"name": long_name},
        ],
    )
    repo = client(fake.base_url).get_repo(REPO)
    names = [repo.get_workflow_job(j["id"]).name for j in jobs]
    assert names == ["tests (torch, 3.11)", "ci / tests (jax)", "x" * 97 + "..."]
    assert job_display_name("build") == "build"
    job = repo.get_workflow_job(jobs[0]["id"])
    assert job.html_url == f"https://github.com/{REPO}/actions/runs/9/job/{jobs[0]['id']}"
    assert job.check_run_url.endswith(f"/check-runs/{jobs[0]['id']}")


# --------------------------------------------------------------------------- issues


def test_issue_create_edit_and_comments_change_state(fake):
    """Creating, editing and commenting through PyGithub is reflected in fake state."""
    repo = client(fake.base_url).get_repo(REPO)
    issue = repo.create_issue("Dashboard: torch", body="v1", labels=["ivy-matrix"])
    issue.edit(body="v2", title="Dashboard")
    first = issue.create_comment("row torch")
    second = issue.create_comment("row jax")
    first.edit("row torch (updated)")
    second.delete()
    assert fake.issues[issue.number]["body"] == "v2"
    assert fake.issues[issue.number]["title"] == "Dashboard"
    assert fake.issues[issue.number]["labels"] == ["ivy-matrix"]
    assert [c["body"] for c in fake.comments[issue.number]] == ["row torch (updated)"]
    assert [c.body for c in repo.get_issue(issue.number).get_comments()] == ["row torch (updated)"]
    assert repo.get_label("IVY-MATRIX").color == "ededed"
    issue.edit(state="closed")
    assert fake.issues[issue.number]["state_reason"] == "completed"


def test_issue_list_filters_labels_and_state_and_mixes_in_prs(fake):
    """The issue list honours labels and state, newest first, and includes PRs with pull_request."""
    fake.add_issue(REPO, title="a", labels=["dash"])
    fake.add_issue(REPO, title="b", labels=["dash", "torch"], state="closed")
    fake.add_issue(REPO, title="pr", labels=["dash"], pull_request=True)
    fake.add_issue(REPO, title="other")
    repo = client(fake.base_url, per_page=1).get_repo(REPO)
    open_dash = list(repo.get_issues(labels=["dash"]))
    assert [i.title for i in open_dash] == ["pr", "a"]
    assert [i.pull_request is not None for i in open_dash] == [True, False]
    everything = [i.title for i in repo.get_issues(state="all", labels=["dash", "torch"])]
    assert everything == ["b"]
    assert repo.get_issues(state="all").totalCount == 4


def test_bodies_over_65536_characters_are_rejected_with_422(fake):
    """An issue or comment body of 65,537 characters fails with GitHub's validation error."""
    repo = client(fake.base_url).get_repo(REPO)
    issue = repo.create_issue("ok", body="x" * 65_536)
    with pytest.raises(GithubException) as caught:
        issue.edit(body="x" * 65_537)
    assert caught.value.status == 422
    assert caught.value.data["errors"] == [
        {
            "resource": "Issue",
            "code": "custom",
            "field": "body",
            "message": "body is too long (maximum is 65536 characters)",
        }
    ]
    with pytest.raises(GithubException) as caught:
        issue.create_comment("y" * 65_537)
    assert caught.value.status == 422
    assert caught.value.data["errors"][0]["resource"] == "IssueComment"
    assert len(fake.issues[issue.number]["body"]) == 65_536
    assert fake.comments[issue.number] == []


def test_conditional_get_returns_304_without_spending_budget(fake):
    """A GET with the issue's weak ETag answers 304 and does not count against the rate limit."""
    fake.add_issue(REPO, title="t", body="one")
    issue = client(fake.base_url).get_repo(REPO).get_issue(1)
    assert issue.etag is not None
    assert issue.etag.startswith('W/"')
    remaining = fake.rate_remaining
    assert issue.update() is False
    assert fake.requests[-1].status == 304
    assert fake.rate_remaining == remaining
    fake.issues[1]["body"] = "two"
    assert issue.update() is True
    assert issue.body == "two"


def test_if_match_on_an_unsafe_method_is_rejected_with_400(fake):
    """PATCH with If-Match answers 400 and leaves the issue alone."""
    fake.add_issue(REPO, title="t", body="one")
    url = f"{fake.base_url}/repos/{REPO}/issues/1"
    _, headers, _ = call(url)
    status, _, body = call(url, "PATCH", {"body": "two"}, {"If-Match": headers["ETag"]})
    assert status == 400
    assert body["message"] == (
        "Conditional request headers are not allowed in unsafe requests unless supported by "
        "the endpoint"
    )
    assert fake.issues[1]["body"] == "one"


# --------------------------------------------------------------------------- git data


def test_git_data_cas_accepts_fast_forward_and_rejects_stale_tip(fake):
    """Blob, tree, commit and ref update form a CAS: a fast-forward lands, a stale one gets 422."""
    repo = client(fake.base_url).get_repo(REPO)
    main = repo.get_git_ref("heads/main")
    repo.create_git_ref("refs/heads/ivy-matrix", main.object.sha)
    ref = repo.get_git_ref("heads/ivy-matrix")
    tip = repo.get_git_commit(ref.object.sha)

    def commit_on(parent, text):
        blob = repo.create_git_blob(text, "utf-8")
        element = InputGitTreeElement("dash/torch.md", "100644", "blob", sha=blob.sha)
        tree = repo.create_git_tree([element], parent.tree)
        return repo.create_git_commit(f"update {text}", tree, [parent])

    winner = commit_on(tip, "torch passed")
    loser = commit_on(tip, "torch failed")
    ref.edit(winner.sha)
    with pytest.raises(GithubException) as caught:
        ref.edit(loser.sha)
    assert caught.value.status == 422
    assert caught.value.data["message"] == "Update is not a fast forward"
    assert fake.ref_sha("heads/ivy-matrix") == winner.sha
    assert fake.read_file("dash/torch.md", "ivy-matrix") == "torch passed"
    assert fake.read_file("README.md", "ivy-matrix") == "# acme/widgets\n"
    ref.edit(loser.sha, force=True)
    assert fake.ref_sha("heads/ivy-matrix") == loser.sha


def test_refs_create_is_atomic_and_missing_refs_are_404(fake):
    """Creating an existing ref fails with 422; reading or deleting a missing one fails."""
    repo = client(fake.base_url).get_repo(REPO)
    sha = repo.get_branch("main").commit.sha
    lock = repo.create_git_ref("refs/dashboard-locks/torch", sha)
    with pytest.raises(GithubException) as caught:
        repo.create_git_ref("refs/dashboard-locks/torch", sha)
    assert (caught.value.status, caught.value.data["message"]) == (422, "Reference already exists")
    assert [r.ref for r in repo.get_git_matching_refs("dashboard-locks/")] == [lock.ref]
    lock.delete()
    with pytest.raises(UnknownObjectException):
        repo.get_git_ref("dashboard-locks/torch")
    with pytest.raises(GithubException) as caught:
        lock.delete()
    assert caught.value.status == 422


def test_trees_use_real_git_shas_and_nested_paths(fake):
    """Blob and tree shas are git's; nested paths build subtrees; a null sha deletes a path."""
    repo = client(fake.base_url).get_repo(REPO)
    blob = repo.create_git_blob("aGVsbG8K", "base64")
    assert blob.sha == git_blob_sha(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    nested = repo.create_git_tree(
        [
            InputGitTreeElement("a/b/c.md", "100644", "blob", sha=blob.sha),
            InputGitTreeElement("a/d.md", "100644", "blob", content="d"),
        ]
    )
    again = repo.create_git_tree(
        [
            InputGitTreeElement("a/d.md", "100644", "blob", content="d"),
            InputGitTreeElement("a/b/c.md", "100644", "blob", sha=blob.sha),
        ]
    )
    assert nested.sha == again.sha
    assert [(e.path, e.type) for e in nested.tree] == [("a", "tree")]
    recursive = repo.get_git_tree(nested.sha, recursive=True)
    assert [e.path for e in recursive.tree] == ["a", "a/b", "a/b/c.md", "a/d.md"]
    pruned = repo.create_git_tree(
        [InputGitTreeElement("a/b/c.md", "100644", "blob", sha=None)], nested
    )
    assert [e.path for e in repo.get_git_tree(pruned.sha, recursive=True).tree] == ["a", "a/d.md"]
    emptied = repo.create_git_tree([InputGitTreeElement("a", "040000", "tree", sha=None)], nested)
    assert emptied.sha == EMPTY_TREE
    assert repo.get_git_blob(blob.sha).content.replace("\n", "") == "aGVsbG8K"


def test_contents_api_follows_githubs_observed_cas_rules(fake):
    """New path 201 (sha ignored), update 200, stale sha 409, missing sha 422, bad branch 404."""
    repo = client(fake.base_url).get_repo(REPO)
    created = repo.create_file("dash/jax.md", "add", "v1")
    old_sha = created["content"].sha
    assert fake.requests[-1].status == 201
    updated = repo.update_file("dash/jax.md", "edit", "v2", old_sha)
    assert fake.requests[-1].status == 200
    with pytest.raises(GithubException) as caught:
        repo.update_file("dash/jax.md", "edit", "v3", old_sha)
    assert caught.value.status == 409
    assert caught.value.data["message"] == f"dash/jax.md does not match {old_sha}"
    with pytest.raises(GithubException) as caught:
        repo.create_file("dash/jax.md", "clobber", "v3")
    assert caught.value.status == 422
    assert caught.value.data["message"] == 'Invalid request.\n\n"sha" wasn\'t supplied.'
    repo.update_file("dash/new.md", "new", "n", "0" * 40)
    assert fake.requests[-1].status == 201
    with pytest.raises(UnknownObjectException):
        repo.create_file("x.md", "add", "x", branch="nope")
    content = repo.get_contents("dash/jax.md")
    assert not isinstance(content, list)
    assert content.decoded_content == b"v2"
    assert content.sha == updated["content"].sha
    listing = repo.get_contents("dash")
    assert isinstance(listing, list)
    assert sorted(c.path for c in listing) == ["dash/jax.md", "dash/new.md"]
    repo.delete_file("dash/jax.md", "rm", content.sha)
    assert sorted(fake.files()) == ["README.md", "dash/new.md"]


# --------------------------------------------------------------------------- platform behaviour


def test_read_only_token_gets_403_on_every_write(fake):
    """With read_only=True writes fail with 'Resource not accessible by integration', reads work."""
    fake.add_issue(REPO, title="t", body="one")
    fake.configure(read_only=True)
    repo = client(fake.base_url).get_repo(REPO)
    issue = repo.get_issue(1)
    with pytest.raises(GithubException) as caught:
        issue.edit(body="two")
    assert caught.value.status == 403
    assert caught.value.data["message"] == "Resource not accessible by integration"
    with pytest.raises(GithubException):
        repo.create_issue("new")
    assert fake.issues[1]["body"] == "one"
    assert len(fake.issues) == 1
    assert fake.request_counts() == {"GET": 2, "PATCH": 1, "POST": 1}
    assert all(r.status == 403 for r in fake.writes())


def test_rate_limit_headers_budget_and_exhaustion():
    """Every response carries x-ratelimit-*; the budget runs out with GitHub's primary-limit 403."""
    with FakeGitHub(rate_limit=3) as fake:
        status, headers, _ = call(f"{fake.base_url}/repos/{REPO}")
        assert status == 200
        assert {
            k.lower(): v for k, v in headers.items() if k.lower().startswith("x-ratelimit")
        } == {
            "x-ratelimit-limit": "3",
            "x-ratelimit-remaining": "2",
            "x-ratelimit-used": "1",
            "x-ratelimit-reset": str(fake.rate_reset),
            "x-ratelimit-resource": "core",
        }
        assert int(headers["Content-Length"]) > 0
        gh = client(fake.base_url)
        gh.get_repo(REPO)
        gh.get_repo(REPO)
        with pytest.raises(RateLimitExceededException) as caught:
            gh.get_repo(REPO)
        assert caught.value.status == 403
        assert caught.value.data["message"].startswith(
            "API rate limit exceeded for installation ID"
        )
        assert gh.get_rate_limit().rate.remaining == 0


def test_requests_without_authorization_get_401(fake):
    """A request with no Authorization header is answered 401 Requires authentication."""
    request = urllib.request.Request(f"{fake.base_url}/repos/{REPO}")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 401
    assert json.loads(caught.value.read())["message"] == "Requires authentication"


def test_ghes_api_v3_prefix_serves_urls_under_the_prefix(fake):
    """With base_url .../api/v3 PyGithub paginates and follows URLs that keep the prefix."""
    fake.add_run(REPO, 5, jobs=[{"name": f"leg {i}"} for i in range(5)])
    repo = client(fake.ghes_url, per_page=2).get_repo(REPO)
    assert repo.url == f"{fake.ghes_url}/repos/{REPO}"
    assert len(list(repo.get_workflow_run(5).jobs())) == 5
    issue = repo.create_issue("on GHES")
    issue.edit(body="edited")
    assert fake.issues[issue.number]["body"] == "edited"
    assert {r.prefix for r in fake.requests} == {"/api/v3"}


# --------------------------------------------------------------------------- faults


def test_fault_after_write_makes_a_retried_post_duplicate(fake):
    """A 502 returned after the issue was created makes PyGithub's POST retry create a second one."""
    fake.inject(method="POST", path=r"/issues$", status=502, after_write=True)
    gh = client(fake.base_url, retry=GithubRetry(total=2, backoff_factor=0))
    gh.get_repo(REPO).create_issue("dashboard")
    assert [i["title"] for i in fake.issues.values()] == ["dashboard", "dashboard"]
    assert [r.status for r in fake.requests_to("POST", r"/issues$")] == [502, 201]


def test_injected_patch_fault_is_not_retried_and_not_applied(fake):
    """A 502 before the write reaches PyGithub as an error on PATCH, and the body is unchanged."""
    fake.add_issue(REPO, title="t", body="one")
    fake.inject(method="PATCH", path=r"/issues/\d+$", status=502)
    issue = (
        client(fake.base_url, retry=GithubRetry(total=2, backoff_factor=0))
        .get_repo(REPO)
        .get_issue(1)
    )
    with pytest.raises(GithubException) as caught:
        issue.edit(body="two")
    assert caught.value.status == 502
    assert fake.issues[1]["body"] == "one"
    issue.edit(body="two")
    assert fake.issues[1]["body"] == "two"


def test_secondary_limits_and_fail_rate_produce_transient_errors(fake):
    """Injected 403/429 secondary limits raise RateLimitExceeded; fail_rate=1 fails every request."""
    fake.inject(path=r"^/repos/[^/]+/[^/]+$", status=403, retry_after=0)
    gh = client(fake.base_url)
    with pytest.raises(RateLimitExceededException) as caught:
        gh.get_repo(REPO)
    assert caught.value.headers is not None
    assert caught.value.headers["retry-after"] == "0"
    fake.configure(fail_rate=1.0, fail_kinds=["503", "429-no-retry-after"], seed=3)
    statuses = {call(f"{fake.base_url}/repos/{REPO}")[0] for _ in range(12)}
    assert statuses == {503, 429}
    fake.configure(fail_rate=0.0)
    assert gh.get_repo(REPO).full_name == REPO


def test_a_held_request_lets_a_test_force_last_writer_wins(fake):
    """A fault with status=None and an Event holds one PATCH so the other lands first."""
    fake.add_issue(REPO, title="t", body="start")
    release = threading.Event()
    hold = fake.inject(method="PATCH", path=r"/issues/1$", status=None, wait=release)
    url = f"{fake.base_url}/repos/{REPO}/issues/1"
    held = threading.Thread(target=call, args=(url, "PATCH", {"body": "leg A"}))
    held.start()
    while not hold.hits:
        time.sleep(0.005)
    call(url, "PATCH", {"body": "leg B"})
    assert fake.issues[1]["body"] == "leg B"
    release.set()
    held.join(timeout=5)
    assert fake.issues[1]["body"] == "leg A"


def test_control_endpoints_configure_and_dump_state(fake):
    """POST /_fake/config, /_fake/seed and /_fake/inject change the fake; GET /_fake/state reads it."""
    status, _, config = call(f"{fake.base_url}/_fake/config", "POST", {"read_only": True})
    assert (status, config["read_only"]) == (200, True)
    assert fake.config.read_only is True
    call(f"{fake.base_url}/_fake/config", "POST", {"read_only": False})
    seed = {"runs": [{"repo": REPO, "run_id": 3, "jobs": [{"name": "tests (torch)"}]}]}
    assert call(f"{fake.base_url}/_fake/seed", "POST", seed)[0] == 201
    call(
        f"{fake.base_url}/_fake/inject",
        "POST",
        {"method": "GET", "path": "/actions/", "status": 503},
    )
    assert call(f"{fake.base_url}/repos/{REPO}/actions/runs/3/jobs")[0] == 503
    _, _, state = call(f"{fake.base_url}/_fake/state")
    assert [j["name"] for j in state["jobs"].values()] == ["tests (torch)"]
    assert state["files"][REPO]["main"] == {"README.md": "# acme/widgets\n"}
    assert state["request_counts"] == {"GET": 1}
    assert call(f"{fake.base_url}/_fake/config", "POST", {"nope": 1})[0] == 400


def test_standalone_server_prints_url_and_dumps_state_on_sigterm(tmp_path):
    """python tests/fake_github.py prints its URL, serves, and writes the state file on SIGTERM."""
    state_file = tmp_path / "state.json"
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"issues": [{"title": "seeded", "comments": ["hi"]}]}))
    script = Path(__file__).with_name("fake_github.py")
    cmd = [
        sys.executable,
        str(script),
        "--port",
        "0",
        "--state-file",
        str(state_file),
        "--seed",
        str(seed),
    ]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
            issue = client(url).get_repo(REPO).get_issue(1)
            issue.create_comment("from a subprocess")
        finally:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    state = json.loads(state_file.read_text())
    assert [c["body"] for c in state["comments"]["1"]] == ["hi", "from a subprocess"]
    assert state["request_counts"] == {"GET": 2, "POST": 1}


# --------------------------------------------------------------------------- OpenAPI


@pytest.fixture(name="spec")
def _spec():
    return load_spec(shared_dir("github-api") / "openapi-subset.json")


def test_openapi_checker_rejects_wrong_shapes(spec):
    """The validator catches a missing field, a wrong type, a stray null and an unknown enum value."""
    _, operation = find_operation(spec, "GET", f"/repos/{REPO}/actions/jobs/1") or ("", {})
    schema = response_schema(spec, operation, 200)
    assert schema is not None
    with FakeGitHub() as fake:
        job = fake.add_run(REPO, 1, jobs=[{"name": "t"}])[0]
        _, _, good = call(f"{fake.base_url}/repos/{REPO}/actions/jobs/{job['id']}")
    assert validate(good, schema) == []
    assert validate({k: v for k, v in good.items() if k != "runner_name"}, schema) == [
        "$: missing required 'runner_name'"
    ]
    assert validate({**good, "id": "1"}, schema) == ["$.id: expected integer, got str"]
    assert validate({**good, "name": None}, schema) == ["$.name: expected string, got NoneType"]
    assert validate({**good, "status": "done"}, schema)[0].startswith("$.status: 'done' not in")
    assert validate({**good, "created_at": "yesterday"}, schema) == [
        "$.created_at: 'yesterday' is not a valid date-time"
    ]
    assert to_json_schema(spec, {"type": "string", "nullable": True}) == {
        "type": ["string", "null"]
    }


def _openapi_scenario(fake: FakeGitHub) -> list[tuple[str, str, object]]:
    """Requests that reach every endpoint the fake serves, successes and documented errors."""
    job = fake.add_run(REPO, 42, 1, [{"name": "tests (torch)"}])[0]
    fake.add_run(
        REPO, 42, 2, [{"name": "tests (torch)", "status": "completed", "conclusion": "success"}]
    )
    fake.add_issue(REPO, title="dash", body="b", labels=["ivy-matrix"])
    fake.add_issue(REPO, title="a PR", pull_request=True)
    comment = fake.add_comment(1, "hello")
    tip = fake.ref_sha("heads/main")
    assert tip is not None
    tree = fake.commits[tip]["tree"]
    readme = git_blob_sha(b"# acme/widgets\n")
    r = f"/repos/{REPO}"
    c = f"{r}/issues/comments/{comment['id']}"
    return [
        ("GET", "/rate_limit", None),
        ("GET", r, None),
        ("GET", f"{r}/actions/runs/42", None),
        ("GET", f"{r}/actions/runs/42/attempts/1", None),
        ("GET", f"{r}/actions/runs/42/jobs?filter=all&per_page=1", None),
        ("GET", f"{r}/actions/runs/42/attempts/2/jobs", None),
        ("GET", f"{r}/actions/jobs/{job['id']}", None),
        ("GET", f"{r}/issues?state=all", None),
        ("POST", f"{r}/issues", {"title": "new", "body": "b", "labels": ["x"]}),
        ("POST", f"{r}/issues", {"title": "too long", "body": "x" * 65_537}),
        ("GET", f"{r}/issues/1", None),
        ("GET", f"{r}/issues/2", None),
        ("GET", f"{r}/issues/999", None),
        ("PATCH", f"{r}/issues/1", {"body": "c", "state": "closed"}),
        ("PATCH", f"{r}/issues/1", {"body": "x" * 65_537}),
        ("PUT", f"{r}/issues/1/lock", {"lock_reason": "resolved"}),
        ("GET", f"{r}/issues/1/comments", None),
        ("POST", f"{r}/issues/1/comments", {"body": "again"}),
        ("POST", f"{r}/issues/1/comments", {"body": "x" * 65_537}),
        ("GET", c, None),
        ("PATCH", c, {"body": "edited"}),
        ("DELETE", c, None),
        ("POST", f"{r}/issues/1/labels", {"labels": ["torch"]}),
        ("GET", f"{r}/labels", None),
        ("POST", f"{r}/labels", {"name": "jax", "color": "00ff00", "description": "JAX"}),
        ("POST", f"{r}/labels", {"name": "jax"}),
        ("GET", f"{r}/labels/ivy-matrix", None),
        ("GET", f"{r}/git/ref/heads/main", None),
        ("GET", f"{r}/git/ref/heads/absent", None),
        ("GET", f"{r}/git/matching-refs/heads/", None),
        ("POST", f"{r}/git/blobs", {"content": "aGk=", "encoding": "base64"}),
        ("GET", f"{r}/git/blobs/{readme}", None),
        (
            "POST",
            f"{r}/git/trees",
            {
                "base_tree": tree,
                "tree": [{"path": "a/b.md", "mode": "100644", "type": "blob", "content": "b"}],
            },
        ),
        ("GET", f"{r}/git/trees/{tree}?recursive=1", None),
        ("POST", f"{r}/git/commits", {"message": "m", "tree": tree, "parents": [tip]}),
        ("GET", f"{r}/git/commits/{tip}", None),
        ("POST", f"{r}/git/refs", {"ref": "refs/heads/ivy-matrix", "sha": tip}),
        ("POST", f"{r}/git/refs", {"ref": "refs/heads/ivy-matrix", "sha": tip}),
        ("PATCH", f"{r}/git/refs/heads/ivy-matrix", {"sha": tip, "force": False}),
        ("DELETE", f"{r}/git/refs/heads/ivy-matrix", None),
        ("GET", f"{r}/branches/main", None),
        ("PUT", f"{r}/contents/docs/a.md", {"message": "m", "content": "YQ=="}),
        ("PUT", f"{r}/contents/docs/a.md", {"message": "m", "content": "Yg=="}),
        ("PUT", f"{r}/contents/README.md", {"message": "m", "content": "YQ==", "sha": "0" * 40}),
        ("PUT", f"{r}/contents/README.md", {"message": "m", "content": "YQ==", "sha": readme}),
        ("PUT", f"{r}/contents/x.md", {"message": "m", "content": "YQ==", "branch": "nope"}),
        ("GET", f"{r}/contents/README.md?ref=main", None),
        ("GET", f"{r}/contents/docs", None),
        ("GET", f"{r}/contents/missing.md", None),
        ("DELETE", f"{r}/contents/docs/a.md", {"message": "m", "sha": git_blob_sha(b"b")}),
    ]


def _sample_path(template: str) -> str:
    sha = "0" * 40
    samples = {"ref": "heads/main", "path": "README.md", "branch": "main", "name": "bug"}
    samples |= {"file_sha": sha, "tree_sha": sha, "commit_sha": sha}
    concrete = template.replace("{owner}/{repo}", REPO)
    return re.sub(r"\{([^}]+)\}", lambda m: samples.get(m.group(1), "1"), concrete)


def test_every_implemented_endpoint_matches_the_openapi_subset(spec):
    """Each response body of every subset operation the fake serves validates against its schema."""
    covered: set[str] = set()
    problems: list[str] = []
    with FakeGitHub() as fake:
        for method, target, body in _openapi_scenario(fake):
            status, _, payload = call(fake.base_url + target, method, body)
            path = target.split("?")[0]
            found = find_operation(spec, method, path)
            assert found is not None, f"{method} {path} is not in the subset"
            template, operation = found
            covered.add(operation["operationId"])
            if str(status) not in operation["responses"]:
                problems.append(f"{method} {target}: status {status} is not documented")
                continue
            schema = response_schema(spec, operation, status)
            if schema is None:
                assert payload is None, f"{method} {target} has an undocumented body"
                continue
            problems += [f"{method} {template} {status} {e}" for e in validate(payload, schema)]
        unserved = {
            operation["operationId"]
            for template, item in spec["paths"].items()
            for method, operation in item.items()
            if not fake.serves(method.upper(), _sample_path(template))
        }
    assert problems == []
    assert set(spec["info"]["x-operations"]) - unserved == covered
    assert unserved == {
        "checks/get",
        "issues/pin-comment",
        "issues/unpin-comment",
        "pulls/get",
        "pulls/list",
        "repos/list-pull-requests-associated-with-commit",
    }
