"""Tests for tests/github/fake_server.py: GitHub's behaviour on the endpoints ivy-matrix calls.

The fake is the ground truth for every test of github/client.py and the end-to-end tests, so it is
held to two standards here: it answers the way GitHub does (status, error text, headers), and
every JSON body it serves validates against the operation's schema in
../shared/github-api/openapi-subset.json.
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

from tests.conftest import shared_dir
from tests.github.fake_server import FIRST_JOB_ID, FakeGitHub, git_blob_sha, job_display_name
from tests.github.openapi_check import (
    find_operation,
    load_spec,
    response_schema,
    to_json_schema,
    validate,
)

REPO = "acme/widgets"
R = f"/repos/{REPO}"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# The operations of the subset that ivy_matrix/github/client.py calls: exactly what the fake serves.
LIVE = {
    "repos/create-commit-status",
    "repos/get",
    "repos/get-combined-status-for-ref",
    "actions/list-jobs-for-workflow-run-attempt",
    "git/create-blob",
    "git/create-commit",
    "git/create-ref",
    "git/create-tree",
    "git/delete-ref",
    "git/get-blob",
    "git/get-commit",
    "git/get-ref",
    "git/get-tree",
    "git/list-matching-refs",
    "git/update-ref",
    "issues/create",
    "issues/create-comment",
    "issues/create-label",
    "issues/delete-comment",
    "issues/get",
    "issues/get-label",
    "issues/list-comments",
    "issues/list-for-repo",
    "issues/update",
    "issues/update-comment",
    "pulls/create",
    "pulls/get",
    "pulls/list",
    "pulls/update",
}


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


def pages(url):
    """Every page of a Link-paginated GET, following rel="next": [(url, body)]."""
    seen = []
    next_url: str | None = url
    while next_url is not None:
        status, headers, body = call(next_url)
        assert status == 200
        seen.append((next_url, body))
        found = re.search(r'<([^>]+)>; rel="next"', headers.get("Link", ""))
        next_url = found.group(1) if found else None
    return seen


# --------------------------------------------------------------------------- jobs


def test_jobs_of_an_attempt_come_back_across_three_link_pages(fake):
    """Seventy jobs come back through three Link-paginated pages of 30 with increasing ids."""
    fake.add_run(REPO, 42, 1, [{"name": "tests", "matrix": ["torch", i]} for i in range(70)])
    listed = pages(f"{fake.base_url}{R}/actions/runs/42/attempts/1/jobs")
    assert [len(body["jobs"]) for _, body in listed] == [30, 30, 10]
    assert {body["total_count"] for _, body in listed} == {70}
    jobs = [job for _, body in listed for job in body["jobs"]]
    assert [j["id"] for j in jobs] == list(range(FIRST_JOB_ID, FIRST_JOB_ID + 70))
    assert jobs[5]["name"] == "tests (torch, 5)"
    assert [r.query.get("page", "1") for r in fake.requests] == ["1", "2", "3"]


def test_each_attempt_lists_its_own_jobs_and_a_missing_one_is_404(fake):
    """A re-run's jobs are listed under attempt 2, the first ones under 1; attempt 3 is 404."""
    fake.add_run(REPO, 7, 1, [{"name": "tests (jax)", "conclusion": "failure"}])
    fake.add_run(REPO, 7, 2, [{"name": "tests (jax)", "runner_name": "GitHub Actions 9"}])
    _, _, first = call(f"{fake.base_url}{R}/actions/runs/7/attempts/1/jobs")
    _, _, second = call(f"{fake.base_url}{R}/actions/runs/7/attempts/2/jobs")
    assert [(j["run_attempt"], j["conclusion"]) for j in first["jobs"]] == [(1, "failure")]
    assert [(j["run_attempt"], j["runner_name"]) for j in second["jobs"]] == [
        (2, "GitHub Actions 9")
    ]
    assert call(f"{fake.base_url}{R}/actions/runs/7/attempts/3/jobs")[0] == 404
    assert call(f"{fake.base_url}{R}/actions/runs/8/attempts/1/jobs")[0] == 404


def test_job_names_follow_github_display_rules(fake):
    """Matrix values are appended, reusable workflows get a prefix, long names are cut to 97+...."""
    fake.add_run(
        REPO,
        9,
        jobs=[
            {"name": "tests", "matrix": ["torch", "", None, "3.11"]},
            {"name": "tests", "matrix": ["jax"], "caller": "ci"},
            {"name": "x" * 120},
        ],
    )
    _, _, body = call(f"{fake.base_url}{R}/actions/runs/9/attempts/1/jobs")
    names = [job["name"] for job in body["jobs"]]
    assert names == ["tests (torch, 3.11)", "ci / tests (jax)", "x" * 97 + "..."]
    assert job_display_name("build") == "build"
    job = body["jobs"][0]
    assert job["html_url"] == f"https://github.com/{REPO}/actions/runs/9/job/{job['id']}"


# --------------------------------------------------------------------------- issues


def test_issue_create_edit_and_comments_change_state(fake):
    """Creating, editing, closing and commenting are reflected in state and in the answers."""
    base = fake.base_url + R
    status, _, issue = call(
        f"{base}/issues", "POST", {"title": "Dashboard", "body": "v1", "labels": ["ivy-matrix"]}
    )
    assert status == 201
    number = issue["number"]
    assert call(f"{base}/labels/IVY-MATRIX")[2]["color"] == "ededed"  # made on the fly
    assert call(f"{base}/issues/{number}", "PATCH", {"body": "v2"})[2]["body"] == "v2"
    first = call(f"{base}/issues/{number}/comments", "POST", {"body": "row torch"})[2]
    second = call(f"{base}/issues/{number}/comments", "POST", {"body": "row jax"})[2]
    call(f"{base}/issues/comments/{first['id']}", "PATCH", {"body": "row torch (updated)"})
    assert call(f"{base}/issues/comments/{second['id']}", "DELETE")[0] == 204
    assert call(f"{base}/issues/comments/{second['id']}", "DELETE")[0] == 404
    _, _, comments = call(f"{base}/issues/{number}/comments")
    assert [c["body"] for c in comments] == ["row torch (updated)"]
    assert [c["body"] for c in fake.comments[number]] == ["row torch (updated)"]
    closed = call(f"{base}/issues/{number}", "PATCH", {"state": "closed", "labels": []})[2]
    assert (closed["state"], closed["state_reason"], closed["labels"]) == (
        "closed",
        "completed",
        [],
    )
    assert fake.issues[number]["body"] == "v2"


def test_issue_list_filters_labels_and_state_newest_first_with_prs(fake):
    """The issue list honours labels and state, newest first, and includes PRs (pull_request)."""
    fake.add_issue(REPO, title="a", labels=["dash"])
    fake.add_issue(REPO, title="b", labels=["dash", "torch"], state="closed")
    fake.add_issue(REPO, title="pr", labels=["dash"], pull_request=True)
    fake.add_issue(REPO, title="other")
    listed = pages(f"{fake.base_url}{R}/issues?labels=dash&per_page=1")
    assert [body[0]["title"] for _, body in listed] == ["pr", "a"]
    assert ["pull_request" in body[0] for _, body in listed] == [True, False]
    _, _, both = call(f"{fake.base_url}{R}/issues?labels=dash,torch&state=all")
    assert [i["title"] for i in both] == ["b"]
    assert len(call(f"{fake.base_url}{R}/issues?state=all")[2]) == 4


def test_labels_are_created_once(fake):
    """A second label of the same name (any case) is 422 already_exists; a missing one is 404."""
    url = f"{fake.base_url}{R}/labels"
    assert call(f"{url}/ivy-matrix")[0] == 404
    status, _, label = call(url, "POST", {"name": "ivy-matrix", "color": "00ff00"})
    assert (status, label["color"]) == (201, "00ff00")
    status, _, error = call(url, "POST", {"name": "IVY-matrix"})
    assert status == 422
    assert error["errors"][0]["code"] == "already_exists"


def test_bodies_over_65536_characters_are_rejected_with_422(fake):
    """An issue or comment body of 65,537 characters fails with GitHub's validation error."""
    base = fake.base_url + R
    _, _, issue = call(f"{base}/issues", "POST", {"title": "ok", "body": "x" * 65_536})
    status, _, error = call(f"{base}/issues/{issue['number']}", "PATCH", {"body": "x" * 65_537})
    assert status == 422
    assert error["errors"] == [
        {
            "resource": "Issue",
            "code": "custom",
            "field": "body",
            "message": "body is too long (maximum is 65536 characters)",
        }
    ]
    status, _, error = call(
        f"{base}/issues/{issue['number']}/comments", "POST", {"body": "y" * 65_537}
    )
    assert status == 422
    assert error["errors"][0]["resource"] == "IssueComment"
    assert len(fake.issues[issue["number"]]["body"]) == 65_536
    assert fake.comments[issue["number"]] == []


def test_if_match_on_an_unsafe_method_is_rejected_with_400(fake):
    """PATCH with If-Match answers 400 and leaves the issue alone."""
    fake.add_issue(REPO, title="t", body="one")
    url = f"{fake.base_url}{R}/issues/1"
    status, _, body = call(url, "PATCH", {"body": "two"}, {"If-Match": 'W/"abc"'})
    assert status == 400
    assert body["message"] == (
        "Conditional request headers are not allowed in unsafe requests unless supported by "
        "the endpoint"
    )
    assert fake.issues[1]["body"] == "one"


# --------------------------------------------------------------------------- git data


def test_ref_updates_are_compare_and_swap_with_githubs_messages(fake):
    """A fast-forward lands; a stale tip is 422 "not a fast forward"; a second create is 422."""
    base = fake.base_url + R
    tip = fake.ref_sha("heads/main")
    tree = fake.commits[tip]["tree"]

    def commit_on(text):
        entry = {"path": "dash/torch.md", "mode": "100644", "type": "blob", "content": text}
        _, _, made = call(f"{base}/git/trees", "POST", {"base_tree": tree, "tree": [entry]})
        body = {"message": text, "tree": made["sha"], "parents": [tip]}
        return call(f"{base}/git/commits", "POST", body)[2]["sha"]

    assert call(f"{base}/git/refs", "POST", {"ref": "refs/heads/ivy-matrix", "sha": tip})[0] == 201
    status, _, error = call(
        f"{base}/git/refs", "POST", {"ref": "refs/heads/ivy-matrix", "sha": tip}
    )
    assert (status, error["message"]) == (422, "Reference already exists")
    winner, loser = commit_on("torch passed"), commit_on("torch failed")
    ref = f"{base}/git/refs/heads/ivy-matrix"
    assert call(ref, "PATCH", {"sha": winner, "force": False})[0] == 200
    status, _, error = call(ref, "PATCH", {"sha": loser, "force": False})
    assert (status, error["message"]) == (422, "Update is not a fast forward")
    assert fake.read_file("dash/torch.md", "ivy-matrix") == "torch passed"
    assert fake.read_file("README.md", "ivy-matrix") == "# acme/widgets\n"
    status, _, error = call(f"{base}/git/refs/heads/gone", "PATCH", {"sha": winner})
    assert (status, error["message"]) == (422, "Reference does not exist")
    assert call(f"{base}/git/ref/heads/gone")[0] == 404


def test_trees_use_real_git_shas_and_nested_paths(fake):
    """Blob and tree shas are git's; nested paths build subtrees; a null sha deletes a path."""
    base = fake.base_url + R
    blob = git_blob_sha(b"d")
    entries = [
        {"path": "a/b/c.md", "mode": "100644", "type": "blob", "content": "hello\n"},
        {"path": "a/d.md", "mode": "100644", "type": "blob", "content": "d"},
    ]
    _, _, nested = call(f"{base}/git/trees", "POST", {"tree": entries})
    _, _, again = call(f"{base}/git/trees", "POST", {"tree": entries[::-1]})
    # What `git write-tree` gives for a/b/c.md ("hello\n") and a/d.md ("d").
    assert nested["sha"] == again["sha"] == "e57f29c15106aecc525e7cbb5e801057ebda77be"
    assert [(e["path"], e["type"]) for e in nested["tree"]] == [("a", "tree")]
    _, _, recursive = call(f"{base}/git/trees/{nested['sha']}?recursive=1")
    assert [e["path"] for e in recursive["tree"]] == ["a", "a/b", "a/b/c.md", "a/d.md"]
    delete = {"path": "a/b/c.md", "mode": "100644", "type": "blob", "sha": None}
    _, _, pruned = call(f"{base}/git/trees", "POST", {"base_tree": nested["sha"], "tree": [delete]})
    _, _, listed = call(f"{base}/git/trees/{pruned['sha']}?recursive=1")
    assert [(e["path"], e["sha"]) for e in listed["tree"]][1:] == [("a/d.md", blob)]
    whole = {"path": "a", "mode": "040000", "type": "tree", "sha": None}
    _, _, emptied = call(f"{base}/git/trees", "POST", {"base_tree": nested["sha"], "tree": [whole]})
    assert emptied["sha"] == EMPTY_TREE
    _, _, got = call(f"{base}/git/blobs/{blob}")
    assert (got["encoding"], got["content"]) == ("base64", "ZA==\n")


# --------------------------------------------------------------------------- platform behaviour


def test_read_only_token_gets_403_on_every_write(fake):
    """With read_only=True writes fail with 'Resource not accessible by integration', reads work."""
    fake.add_issue(REPO, title="t", body="one")
    fake.configure(read_only=True)
    status, _, error = call(f"{fake.base_url}{R}/issues/1", "PATCH", {"body": "two"})
    assert (status, error["message"]) == (403, "Resource not accessible by integration")
    assert call(f"{fake.base_url}{R}/issues", "POST", {"title": "new"})[0] == 403
    assert call(f"{fake.base_url}{R}/issues/1")[0] == 200
    assert fake.issues[1]["body"] == "one"
    assert len(fake.issues) == 1
    assert fake.request_counts() == {"GET": 1, "PATCH": 1, "POST": 1}


def test_requests_without_authorization_get_401(fake):
    """A request with no Authorization header is answered 401 Requires authentication."""
    request = urllib.request.Request(f"{fake.base_url}{R}/issues")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 401
    assert json.loads(caught.value.read())["message"] == "Requires authentication"


def test_request_records_carry_time_and_body_sizes_and_bodies_can_be_dropped(fake):
    """Each record has its answer time and the bytes of both bodies; keep_bodies=False drops the body."""
    before = time.time()
    body = {"title": "Dashboard", "body": "v1"}
    _, headers, _ = call(f"{fake.base_url}{R}/issues", "POST", body)
    fake.configure(keep_bodies=False)
    call(f"{fake.base_url}{R}/issues", "POST", body)
    first, second = fake.requests
    assert before <= first.at <= second.at <= time.time()
    assert first.bytes_in == second.bytes_in == len(json.dumps(body).encode())
    assert first.bytes_out == int(headers["Content-Length"]) > 0
    assert (first.body, second.body) == (body, None)


def test_ghes_api_v3_prefix_is_kept_in_urls_and_links(fake):
    """Under .../api/v3 the URLs in bodies and Link headers keep the prefix."""
    fake.add_run(REPO, 5, jobs=[{"name": f"leg {i}"} for i in range(5)])
    listed = pages(f"{fake.ghes_url}{R}/actions/runs/5/attempts/1/jobs?per_page=2")
    assert len(listed) == 3
    assert all(url.startswith(fake.ghes_url + R) for url, _ in listed)
    assert listed[0][1]["jobs"][0]["url"].startswith(fake.ghes_url + R)
    assert {r.prefix for r in fake.requests} == {"/api/v3"}


# --------------------------------------------------------------------------- faults


def test_fault_after_write_answers_502_but_the_issue_exists(fake):
    """A 502 returned after the issue was created leaves the issue; a retry makes a second one."""
    fake.inject(method="POST", path=r"/issues$", status=502, after_write=True)
    assert call(f"{fake.base_url}{R}/issues", "POST", {"title": "dashboard"})[0] == 502
    assert call(f"{fake.base_url}{R}/issues", "POST", {"title": "dashboard"})[0] == 201
    assert [i["title"] for i in fake.issues.values()] == ["dashboard", "dashboard"]
    assert [r.status for r in fake.requests_to("POST", r"/issues$")] == [502, 201]


def test_a_fault_before_the_write_is_not_applied_and_silent_ones_change_nothing(fake):
    """A 502 before the write changes nothing; a silent fault answers 200 with the old body."""
    fake.add_issue(REPO, title="t", body="one")
    url = f"{fake.base_url}{R}/issues/1"
    fake.inject(method="PATCH", path=r"/issues/\d+$", status=502)
    assert call(url, "PATCH", {"body": "two"})[0] == 502
    fake.inject(method="PATCH", path=r"/issues/\d+$", silent=True)
    status, _, answer = call(url, "PATCH", {"body": "two"})
    assert (status, answer["body"], fake.issues[1]["body"]) == (200, "one", "one")
    assert call(url, "PATCH", {"body": "two"})[2]["body"] == "two"


def test_secondary_limits_and_fail_rate_produce_transient_errors(fake):
    """Injected 403/429 secondary limits carry retry-after; fail_rate=1 fails every request."""
    url = f"{fake.base_url}{R}/git/ref/heads/main"
    fake.inject(path=r"/git/ref/", status=403, retry_after=0)
    status, headers, error = call(url)
    assert (status, headers["Retry-After"]) == (403, "0")
    assert error["message"].startswith("You have exceeded a secondary rate limit")
    fake.configure(fail_rate=1.0, fail_kinds=["503", "429-no-retry-after"], seed=3)
    answers = [call(url) for _ in range(12)]
    assert {status for status, _, _ in answers} == {503, 429}
    assert not any("Retry-After" in headers for _, headers, _ in answers)
    fake.configure(fail_rate=0.0)
    assert call(url)[0] == 200


def test_random_faults_on_writes_can_land_before_their_error(fake):
    """With fail_landed=1, a random fault on a write applies it first and then answers 502;
    reads still fail before anything happens."""
    fake.add_issue(body="one")
    url = f"{fake.base_url}{R}/issues/1"
    fake.configure(fail_rate=1.0, fail_landed=1.0)
    assert call(url, "PATCH", {"body": "two"})[0] == 502
    assert call(url)[0] != 200
    fake.configure(fail_rate=0.0)
    assert call(url)[2]["body"] == "two"


def test_a_held_request_lets_a_test_force_last_writer_wins(fake):
    """A fault with status=None and an Event holds one PATCH so the other lands first."""
    fake.add_issue(REPO, title="t", body="start")
    release = threading.Event()
    hold = fake.inject(method="PATCH", path=r"/issues/1$", status=None, wait=release)
    url = f"{fake.base_url}{R}/issues/1"
    held = threading.Thread(target=call, args=(url, "PATCH", {"body": "leg A"}))
    held.start()
    deadline = time.monotonic() + 10
    while not hold.hits and time.monotonic() < deadline:
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
    fault = {"method": "GET", "path": "/actions/", "status": 503}
    assert call(f"{fake.base_url}/_fake/inject", "POST", fault)[0] == 201
    assert call(f"{fake.base_url}{R}/actions/runs/3/attempts/1/jobs")[0] == 503
    _, _, state = call(f"{fake.base_url}/_fake/state")
    assert [j["name"] for j in state["jobs"].values()] == ["tests (torch)"]
    assert state["files"][REPO]["main"] == {"README.md": "# acme/widgets\n"}
    assert state["request_counts"] == {"GET": 1}
    assert call(f"{fake.base_url}/_fake/config", "POST", {"nope": 1})[0] == 400


def test_standalone_server_prints_url_and_dumps_state_on_sigterm(tmp_path):
    """python tests/github/fake_server.py prints its URL, serves, and writes the state file on SIGTERM."""
    state_file = tmp_path / "state.json"
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"issues": [{"title": "seeded", "comments": ["hi"]}]}))
    script = Path(__file__).with_name("fake_server.py")
    cmd = [sys.executable, str(script), "--port", "0", "--state-file", str(state_file)]
    with subprocess.Popen([*cmd, "--seed", str(seed)], stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
            comment = {"body": "from a subprocess"}
            assert call(f"{url}{R}/issues/1/comments", "POST", comment)[0] == 201
        finally:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    state = json.loads(state_file.read_text())
    assert [c["body"] for c in state["comments"]["1"]] == ["hi", "from a subprocess"]
    assert state["request_counts"] == {"POST": 1}


# --------------------------------------------------------------------------- OpenAPI


@pytest.fixture(name="spec")
def _spec():
    return load_spec(shared_dir("github-api") / "openapi-subset.json")


def test_openapi_checker_rejects_wrong_shapes(spec):
    """The validator catches a missing field, a wrong type, a stray null and an unknown enum value."""
    path = f"{R}/actions/runs/1/attempts/1/jobs"
    _, operation = find_operation(spec, "GET", path) or ("", {})
    schema = response_schema(spec, operation, 200)
    assert schema is not None
    with FakeGitHub() as fake:
        fake.add_run(REPO, 1, jobs=[{"name": "t"}])
        _, _, listing = call(fake.base_url + path)
    assert validate(listing, schema) == []
    job_schema = schema["properties"]["jobs"]["items"]
    good = listing["jobs"][0]
    assert validate({k: v for k, v in good.items() if k != "runner_name"}, job_schema) == [
        "$: missing required 'runner_name'"
    ]
    assert validate({**good, "id": "1"}, job_schema) == ["$.id: expected integer, got str"]
    assert validate({**good, "name": None}, job_schema) == ["$.name: expected string, got NoneType"]
    assert validate({**good, "status": "done"}, job_schema)[0].startswith("$.status: 'done' not in")
    assert validate({**good, "created_at": "yesterday"}, job_schema) == [
        "$.created_at: 'yesterday' is not a valid date-time"
    ]
    assert to_json_schema(spec, {"type": "string", "nullable": True}) == {
        "type": ["string", "null"]
    }


def _openapi_scenario(fake: FakeGitHub) -> list[tuple[str, str, object]]:
    """Requests that reach every endpoint the fake serves, successes and documented errors."""
    fake.add_run(REPO, 42, 2, [{"name": "tests (torch)", "conclusion": "success"}])
    fake.add_issue(REPO, title="dash", body="b", labels=["ivy-matrix"])
    fake.add_issue(REPO, title="a PR", pull_request=True)
    comment = fake.add_comment(1, "hello")
    tip = fake.ref_sha("heads/main")
    assert tip is not None
    tree = fake.commits[tip]["tree"]
    readme = git_blob_sha(b"# acme/widgets\n")
    c = f"{R}/issues/comments/{comment['id']}"
    too_long = "x" * 65_537
    new_file = {"path": "a/b.md", "mode": "100644", "type": "blob", "content": "b"}
    return [
        ("GET", f"{R}", None),
        ("GET", f"{R}/actions/runs/42/attempts/2/jobs?per_page=1", None),
        ("GET", f"{R}/actions/runs/42/attempts/1/jobs", None),
        ("GET", f"{R}/issues?state=all", None),
        ("POST", f"{R}/issues", {"title": "new", "body": "b", "labels": ["x"]}),
        ("POST", f"{R}/issues", {"title": "too long", "body": too_long}),
        ("GET", f"{R}/issues/1", None),
        ("GET", f"{R}/issues/2", None),
        ("GET", f"{R}/issues/999", None),
        ("PATCH", f"{R}/issues/1", {"body": "c", "state": "closed"}),
        ("PATCH", f"{R}/issues/1", {"body": too_long}),
        ("GET", f"{R}/issues/1/comments", None),
        ("GET", f"{R}/pulls/2", None),
        ("GET", f"{R}/pulls/1", None),
        ("POST", f"{R}/issues/1/comments", {"body": "again"}),
        ("POST", f"{R}/issues/1/comments", {"body": too_long}),
        ("PATCH", c, {"body": "edited"}),
        ("PATCH", c, {"body": too_long}),
        ("DELETE", c, None),
        ("POST", f"{R}/labels", {"name": "jax", "color": "00ff00", "description": "JAX"}),
        ("POST", f"{R}/labels", {"name": "jax"}),
        ("GET", f"{R}/labels/ivy-matrix", None),
        ("GET", f"{R}/labels/absent", None),
        ("GET", f"{R}/git/ref/heads/main", None),
        ("GET", f"{R}/git/ref/heads/absent", None),
        ("GET", f"{R}/git/blobs/{readme}", None),
        ("POST", f"{R}/git/blobs", {"content": "big page", "encoding": "utf-8"}),
        ("POST", f"{R}/git/blobs", {"encoding": "utf-8"}),
        ("POST", f"{R}/git/trees", {"base_tree": tree, "tree": [new_file]}),
        ("POST", f"{R}/git/trees", {"base_tree": "0" * 40, "tree": [new_file]}),
        ("GET", f"{R}/git/trees/{tip}?recursive=1", None),
        ("GET", f"{R}/git/trees/{'0' * 40}", None),
        ("POST", f"{R}/git/commits", {"message": "m", "tree": tree, "parents": [tip]}),
        ("POST", f"{R}/git/commits", {"message": "m", "tree": "0" * 40, "parents": []}),
        ("POST", f"{R}/git/refs", {"ref": "refs/heads/ivy-matrix", "sha": tip}),
        ("POST", f"{R}/git/refs", {"ref": "refs/heads/ivy-matrix", "sha": tip}),
        ("PATCH", f"{R}/git/refs/heads/ivy-matrix", {"sha": tip, "force": False}),
        ("PATCH", f"{R}/git/refs/heads/gone", {"sha": tip, "force": False}),
        ("POST", f"{R}/pulls", {"title": "t", "head": "ivy-matrix", "base": "main", "body": "b"}),
        ("POST", f"{R}/pulls", {"title": "t", "head": "acme:ivy-matrix", "base": "main"}),
        ("POST", f"{R}/pulls", {"title": "t", "head": "absent", "base": "main"}),
        ("GET", f"{R}/pulls?head=acme:ivy-matrix&state=open&per_page=100", None),
        ("GET", f"{R}/pulls?state=all", None),
        ("PATCH", f"{R}/pulls/4", {"title": "t2", "body": "c"}),
        ("PATCH", f"{R}/pulls/4", {"body": too_long}),
        ("POST", f"{R}/git/refs", {"ref": "refs/ivy-matrix/inbox/ivy-matrix/1-1-0-ab", "sha": tip}),
        ("GET", f"{R}/git/matching-refs/ivy-matrix/inbox/ivy-matrix/", None),
        # (Deleting it again is 422 with GitHub's message, a body the subset leaves out.)
        ("DELETE", f"{R}/git/refs/ivy-matrix/inbox/ivy-matrix/1-1-0-ab", None),
        ("GET", f"{R}/git/commits/{tip}", None),
        ("GET", f"{R}/git/commits/{'0' * 40}", None),
        (
            "POST",
            f"{R}/statuses/{tip}",
            {
                "state": "failure",
                "context": "ivy-matrix/jax",
                "description": "1 new: test_roll",
                "target_url": "https://github.com/acme/widgets",
            },
        ),
        ("POST", f"{R}/statuses/{tip}", {"state": "success", "context": "ivy-matrix"}),
        ("GET", f"{R}/commits/{tip}/status", None),
        ("GET", f"{R}/commits/heads/main/status?per_page=1", None),
        ("GET", f"{R}/commits/{'0' * 40}/status", None),
    ]


def _sample_path(template: str) -> str:
    samples = {"ref": "heads/main", "path": "README.md", "branch": "main", "name": "bug"}
    samples |= {"file_sha": "0" * 40, "tree_sha": "0" * 40, "commit_sha": "0" * 40}
    concrete = template.replace("{owner}/{repo}", REPO)
    return re.sub(r"\{([^}]+)\}", lambda m: samples.get(m.group(1), "1"), concrete)


def test_every_served_endpoint_matches_the_openapi_subset(spec):
    """Each answer of every operation ivy-matrix calls validates against its schema; the fake
    serves exactly those operations of the subset."""
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
        served = {
            operation["operationId"]
            for template, item in spec["paths"].items()
            for method, operation in item.items()
            if fake.serves(method.upper(), _sample_path(template))
        }
    assert problems == []
    assert covered == served == LIVE


def test_a_client_that_went_away_is_not_reported_as_an_error(capsys):
    """A reset connection (a benchmark's leg killed at its cap) prints nothing; a real error
    in serving still prints its traceback."""
    with FakeGitHub() as fake:
        server = fake._server
        assert server is not None
        for error in (ConnectionResetError("reset"), ValueError("boom")):
            try:
                raise error
            except (ConnectionResetError, ValueError):
                server.handle_error(None, ("127.0.0.1", 1))
    printed = capsys.readouterr().err
    assert "ConnectionResetError" not in printed
    assert "ValueError: boom" in printed
