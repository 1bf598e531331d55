"""The GitHub REST calls ivy-matrix makes, behind our own types and our own retry policy.

I/O. The only module that imports PyGithub (and the only one allowed ``Any``). Every method
returns our own frozen dataclasses or plain values, never PyGithub objects, and raises
:class:`~ivy_matrix.errors.GitHubAPIError` (or :class:`ReadOnlyTokenError`) with a message that
says what failed, why, and what to do.

**Retries are ours** (PLATFORM.md section 1.3). PyGithub's own retry is switched off
(``retry=None``): its default retries POST after a 5xx, which duplicates creates, and never
retries PATCH. Instead :meth:`GitHubClient._call` retries every request of this module, as
``github_retry.py`` decides (5xx, network errors and rate limits; bounded in tries and in
time, with a clear error when GitHub asks for longer). Retrying is safe because every
request here is idempotent at our level: reads; blobs, trees and commits (content-addressed:
a duplicate is the same object, or an unreferenced one); creating a ref (a second attempt that
finds "Reference already exists" reports a conflict and the caller re-reads); and moving a ref
with ``force=false`` to the same commit again (a fast-forward to itself succeeds).

The ``sleep`` and ``clock`` functions are parameters so tests never wait for real.
"""

from __future__ import annotations

import base64
import math
import random
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Self, TypeVar

from github import Auth, Github, GithubException

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github_retry import (
    DEFAULT_MAX_WAIT,
    DEFAULT_RETRIES,
    SECONDARY_WAIT,
    RetryPolicy,
    Wait,
    translate_error,
)
from ivy_matrix.github_types import Issue, IssueComment, Tree
from ivy_matrix.jobs import Job

_T = TypeVar("_T")

CONTENTS_READ = "contents: read"
CONTENTS_WRITE = "contents: write"
ACTIONS_READ = "actions: read"
ISSUES_WRITE = "issues: write"

_NEXT_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


def _repo_path(repo: str) -> str:
    owner, sep, name = repo.partition("/")
    if not (owner and sep and name) or "/" in name:
        raise GitHubAPIError(f"repository {repo!r} is not of the form OWNER/REPO")
    return f"/repos/{urllib.parse.quote(owner, safe='')}/{urllib.parse.quote(name, safe='')}"


def _branch_path(branch: str) -> str:
    return urllib.parse.quote(branch.removeprefix("refs/heads/"), safe="/")


def _message(data: Any) -> str:
    if isinstance(data, dict):
        message = str(data.get("message") or "")
        errors = data.get("errors")
        if isinstance(errors, list):
            details = [
                str(e.get("message") or e.get("code") or "") if isinstance(e, dict) else str(e)
                for e in errors
            ]
            extra = "; ".join(d for d in details if d)
            if extra:
                message = f"{message} ({extra})" if message else extra
        return message
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")[:200]
    return "" if data is None else str(data)[:200]


def _lower_headers(headers: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in (headers or {}).items()}


class GitHubClient:
    """The GitHub calls ivy-matrix makes; build it with :func:`make_client`.

    One client per process (or thread): it holds one HTTP session and a cache of job
    listings, one per (repository, run, attempt).
    """

    def __init__(
        self,
        github: Github,
        *,
        retries: int = DEFAULT_RETRIES,
        max_wait: float = DEFAULT_MAX_WAIT,
        secondary_wait: float = SECONDARY_WAIT,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self._github = github
        self._requester = github.requester
        self._retry = RetryPolicy(
            retries=retries, max_wait=max_wait, secondary_wait=secondary_wait, clock=clock, rng=rng
        )
        self._sleep = sleep
        self._jobs: dict[tuple[str, int, int], list[Job]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the HTTP connections."""
        self._github.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, permission: str, request: Callable[[], _T]) -> _T:
        """Run ``request``, retrying transient failures (see the module docstring)."""
        waited = 0.0
        attempt = 0
        while True:
            try:
                return request()
            except GithubException as error:
                message = _message(error.data)
                headers = _lower_headers(error.headers)
                wait = self._retry.wait_for(error.status, headers, message, attempt)
                if wait is None:
                    raise translate_error(what, permission, error.status, message) from None
                status: int | None = error.status
                said = f"{error.status} {message}".strip()
            except OSError as error:  # requests' connection errors and timeouts are OSErrors
                wait = Wait(self._retry.backoff(attempt), rate_limited=False, why="network error")
                status, said = None, str(error) or type(error).__name__
            self._retry.give_up_unless_retryable(
                what, wait, status=status, said=said, attempt=attempt, waited=waited
            )
            self._sleep(wait.seconds)
            waited += wait.seconds
            attempt += 1

    def _json(
        self,
        verb: str,
        url: str,
        *,
        parameters: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], Any]:
        return self._requester.requestJsonAndCheck(verb, url, parameters=parameters, input=body)

    def _get_all(
        self, what: str, permission: str, url: str, parameters: dict[str, Any]
    ) -> list[Any]:
        """Every page of a ``Link``-paginated GET, one retried request per page."""
        pages: list[Any] = []
        next_url: str | None = url
        params: dict[str, Any] | None = parameters
        while next_url is not None:
            headers, data = self._call(what, permission, _bind(self._json, "GET", next_url, params))
            pages.append(data)
            found = _NEXT_LINK.search(_lower_headers(headers).get("link", ""))
            next_url = found.group(1) if found else None
            params = None
        return pages

    # ------------------------------------------------------------------ actions

    def list_run_jobs(self, repo: str, run_id: int, attempt: int) -> list[Job]:
        """Every job of one run attempt (all pages); listed once per client and cached."""
        key = (repo, run_id, attempt)
        with self._lock:
            cached = self._jobs.get(key)
        if cached is not None:
            return list(cached)
        url = f"{_repo_path(repo)}/actions/runs/{run_id}/attempts/{attempt}/jobs"
        what = f"listing the jobs of run {run_id} attempt {attempt} in {repo}"
        jobs = [
            _job(item, attempt)
            for page in self._get_all(what, ACTIONS_READ, url, {"per_page": 100})
            for item in (page.get("jobs") or [] if isinstance(page, dict) else [])
        ]
        with self._lock:
            self._jobs[key] = jobs
        return list(jobs)

    def get_branch_head(self, repo: str, branch: str) -> str | None:
        """The commit sha ``branch`` points at, or None if there is no such branch."""
        url = f"{_repo_path(repo)}/git/ref/heads/{_branch_path(branch)}"

        def request() -> str | None:
            try:
                _, data = self._json("GET", url)
            except GithubException as error:
                # 404: no such ref; 409: "Git Repository is empty."
                if error.status in {404, 409}:
                    return None
                raise
            return str(data["object"]["sha"])

        return self._call(f"reading branch {branch!r} of {repo}", CONTENTS_READ, request)

    def get_tree(self, repo: str, tree_ish: str) -> Tree:
        """A tree (or a commit's tree) listed recursively, in one request."""
        url = f"{_repo_path(repo)}/git/trees/{urllib.parse.quote(tree_ish, safe='')}"
        _, data = self._call(
            f"listing the files of {tree_ish[:12]} in {repo}",
            CONTENTS_READ,
            _bind(self._json, "GET", url, {"recursive": "1"}),
        )
        if data.get("truncated"):
            raise GitHubAPIError(
                f"listing the files of {tree_ish[:12]} in {repo} failed: GitHub cut the listing "
                f"short (more than 100,000 files); use a dedicated branch for ivy-matrix"
            )
        files = {
            str(entry["path"]): str(entry["sha"])
            for entry in data.get("tree") or []
            if entry.get("type") == "blob"
        }
        return Tree(sha=str(data["sha"]), files=files)

    def get_blob_text(self, repo: str, sha: str) -> str:
        """The UTF-8 text of one blob."""
        url = f"{_repo_path(repo)}/git/blobs/{sha}"
        what = f"reading blob {sha[:12]} of {repo}"
        _, data = self._call(what, CONTENTS_READ, _bind(self._json, "GET", url, None))
        content = str(data.get("content") or "")
        raw = base64.b64decode(content) if data.get("encoding") == "base64" else content.encode()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise GitHubAPIError(f"{what} failed: it is not UTF-8 text") from None

    # ------------------------------------------------------------------ git data: writes

    def create_tree(self, repo: str, base_tree: str | None, files: Mapping[str, str | None]) -> str:
        """A tree: ``base_tree`` with each path set to its text, or deleted where it is None."""
        entries: list[dict[str, Any]] = [
            {"path": path, "mode": "100644", "type": "blob", "sha": None}
            if text is None
            else {"path": path, "mode": "100644", "type": "blob", "content": text}
            for path, text in sorted(files.items())
        ]
        body: dict[str, Any] = {"tree": entries}
        if base_tree is not None:
            body["base_tree"] = base_tree
        _, data = self._call(
            f"writing a tree of {len(entries)} file(s) to {repo}",
            CONTENTS_WRITE,
            _bind(self._json, "POST", f"{_repo_path(repo)}/git/trees", None, body),
        )
        return str(data["sha"])

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str:
        """A commit of ``tree`` on ``parents``; return its sha (no branch moves)."""
        body = {"message": message, "tree": tree, "parents": list(parents)}
        _, data = self._call(
            f"writing a commit to {repo}",
            CONTENTS_WRITE,
            _bind(self._json, "POST", f"{_repo_path(repo)}/git/commits", None, body),
        )
        return str(data["sha"])

    def create_branch(self, repo: str, branch: str, sha: str) -> bool:
        """Create ``branch`` at ``sha``; False if it already exists (re-read it then)."""
        body = {"ref": f"refs/heads/{branch.removeprefix('refs/heads/')}", "sha": sha}
        what = f"creating branch {branch!r} in {repo}"

        def request() -> bool:
            try:
                self._json("POST", f"{_repo_path(repo)}/git/refs", body=body)
            except GithubException as error:
                message = _message(error.data).lower()
                if error.status == 422 and "already exists" in message:  # noqa: PLR2004
                    return False
                if error.status == 409:  # noqa: PLR2004  -- "Git Repository is empty."
                    raise GitHubAPIError(
                        f"{what} failed: the repository is empty; push a first commit to its "
                        f"default branch and re-run",
                        status=409,
                    ) from None
                raise
            return True

        return self._call(what, CONTENTS_WRITE, request)

    def update_branch(self, repo: str, branch: str, sha: str) -> bool:
        """Move ``branch`` to ``sha`` if that is a fast-forward; False if the branch moved on.

        ``force`` is always false, so this is a compare-and-swap on the branch tip: False means
        another writer got there first (422 "not a fast forward", 409, or the branch was
        deleted), and the caller re-reads and tries again.
        """
        url = f"{_repo_path(repo)}/git/refs/heads/{_branch_path(branch)}"

        def request() -> bool:
            try:
                self._json("PATCH", url, body={"sha": sha, "force": False})
            except GithubException as error:
                message = _message(error.data).lower()
                if error.status == 409:  # noqa: PLR2004
                    return False
                if error.status == 422 and (  # noqa: PLR2004
                    "fast forward" in message or "reference does not exist" in message
                ):
                    return False
                raise
            return True

        return self._call(f"moving branch {branch!r} of {repo}", CONTENTS_WRITE, request)

    # ------------------------------------------------------------------ issues, comments, labels
    # Every call here needs 'issues: write' in the end, so that is the permission 403/404
    # messages name. Reads and deletes are retried by _call as usual; so are creates (POST),
    # which can duplicate an issue or comment when a 5xx came after the write landed: callers
    # find their objects by marker afterwards and remove duplicates (targets/issues.py). Edits
    # (PATCH) send the whole new body, so repeating one is harmless.

    def list_issues(self, repo: str, *, label: str, state: str = "all") -> list[Issue]:
        """Every issue with ``label`` (all pages of 100), pull requests left out.

        ``GET /repos/{owner}/{repo}/issues?labels=<label>&state=<state>&per_page=100``.
        """
        url = f"{_repo_path(repo)}/issues"
        params = {"labels": label, "state": state, "per_page": 100}
        what = f"listing the issues labelled {label!r} in {repo}"
        return [
            _issue(item)
            for page in self._get_all(what, ISSUES_WRITE, url, params)
            for item in (page if isinstance(page, list) else [])
            if isinstance(item, dict) and not item.get("pull_request")
        ]

    def get_issue(self, repo: str, number: int) -> Issue:
        """One issue (``GET /repos/{owner}/{repo}/issues/{number}``)."""
        url = f"{_repo_path(repo)}/issues/{number}"
        _, data = self._call(
            f"reading issue #{number} of {repo}", ISSUES_WRITE, _bind(self._json, "GET", url, None)
        )
        return _issue(data)

    def create_issue(self, repo: str, *, title: str, body: str, labels: list[str]) -> Issue:
        """A new issue (``POST /repos/{owner}/{repo}/issues``); see the section note on retries."""
        payload = {"title": title, "body": body, "labels": list(labels)}
        _, data = self._call(
            f"creating an issue in {repo}",
            ISSUES_WRITE,
            _bind(self._json, "POST", f"{_repo_path(repo)}/issues", None, payload),
        )
        return _issue(data)

    def update_issue(
        self,
        repo: str,
        number: int,
        *,
        body: str | None = None,
        state: str | None = None,
        state_reason: str | None = None,
        labels: list[str] | None = None,
    ) -> Issue:
        """Edit an issue (``PATCH /repos/{owner}/{repo}/issues/{number}``); unset fields stay.

        Issue edits are last-writer-wins: GitHub has no conditional write here (PLATFORM.md
        3.3), so no ``If-Match`` is ever sent.
        """
        payload: dict[str, Any] = {}
        if body is not None:
            payload["body"] = body
        if state is not None:
            payload["state"] = state
        if state_reason is not None:
            payload["state_reason"] = state_reason
        if labels is not None:
            payload["labels"] = list(labels)
        url = f"{_repo_path(repo)}/issues/{number}"
        _, data = self._call(
            f"editing issue #{number} of {repo}",
            ISSUES_WRITE,
            _bind(self._json, "PATCH", url, None, payload),
        )
        return _issue(data)

    def list_issue_comments(self, repo: str, number: int) -> list[IssueComment]:
        """Every comment on an issue, oldest first (all pages of 100)."""
        url = f"{_repo_path(repo)}/issues/{number}/comments"
        what = f"listing the comments of issue #{number} in {repo}"
        return [
            _comment(item)
            for page in self._get_all(what, ISSUES_WRITE, url, {"per_page": 100})
            for item in (page if isinstance(page, list) else [])
            if isinstance(item, dict)
        ]

    def create_issue_comment(self, repo: str, number: int, body: str) -> IssueComment:
        """A new comment on an issue (``POST .../issues/{number}/comments``)."""
        url = f"{_repo_path(repo)}/issues/{number}/comments"
        _, data = self._call(
            f"commenting on issue #{number} of {repo}",
            ISSUES_WRITE,
            _bind(self._json, "POST", url, None, {"body": body}),
        )
        return _comment(data)

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> IssueComment:
        """Replace a comment's body (``PATCH .../issues/comments/{id}``); last writer wins."""
        url = f"{_repo_path(repo)}/issues/comments/{comment_id}"
        _, data = self._call(
            f"editing comment {comment_id} in {repo}",
            ISSUES_WRITE,
            _bind(self._json, "PATCH", url, None, {"body": body}),
        )
        return _comment(data)

    def delete_issue_comment(self, repo: str, comment_id: int) -> bool:
        """Delete a comment; False if it was already gone (a retried delete finds it so)."""
        url = f"{_repo_path(repo)}/issues/comments/{comment_id}"

        def request() -> bool:
            try:
                self._json("DELETE", url)
            except GithubException as error:
                if error.status == 404:  # noqa: PLR2004
                    return False
                raise
            return True

        return self._call(f"deleting comment {comment_id} in {repo}", ISSUES_WRITE, request)

    def ensure_label(
        self, repo: str, name: str, *, color: str = "ededed", description: str = ""
    ) -> bool:
        """Create label ``name`` unless it exists; True if this call created it.

        ``GET .../labels/{name}``, then ``POST .../labels`` when it is missing; a concurrent
        creator's 422 ``already_exists`` counts as "exists".
        """
        quoted = urllib.parse.quote(name, safe="")
        what = f"creating label {name!r} in {repo}"

        def exists() -> bool:
            try:
                self._json("GET", f"{_repo_path(repo)}/labels/{quoted}")
            except GithubException as error:
                if error.status == 404:  # noqa: PLR2004
                    return False
                raise
            return True

        def create() -> bool:
            body = {"name": name, "color": color, "description": description}
            try:
                self._json("POST", f"{_repo_path(repo)}/labels", body=body)
            except GithubException as error:
                codes = str(error.data).lower()
                if error.status == 422 and "already_exists" in codes:  # noqa: PLR2004
                    return False
                raise
            return True

        if self._call(f"reading label {name!r} of {repo}", ISSUES_WRITE, exists):
            return False
        return self._call(what, ISSUES_WRITE, create)

    def pin_issue(self, node_id: str, *, graphql_url: str | None = None) -> None:
        """Pin an issue to its repository (GraphQL ``pinIssue``; REST has no endpoint for it).

        ``POST {graphql_url}`` (default: the GraphQL endpoint beside the REST API). GitHub allows
        at most three pinned issues per repository, and whether ``GITHUB_TOKEN`` may pin is
        unverified (PLATFORM.md 3.3), so callers treat failure as a warning.
        """
        query = "mutation($id: ID!) { pinIssue(input: {issueId: $id}) { issue { number } } }"
        url = graphql_url or self._requester.graphql_url
        what = "pinning the index issue"

        def request() -> None:
            try:
                _, data = self._requester.requestJsonAndCheck(
                    "POST", url, input={"query": query, "variables": {"id": node_id}}
                )
            except AssertionError as error:  # PyGithub refuses URLs off the API's host
                raise GitHubAPIError(
                    f"{what} failed: {url} is not on the API host ({error})"
                ) from None
            errors = data.get("errors") if isinstance(data, dict) else None
            if errors:
                raise GitHubAPIError(
                    f"{what} failed: GitHub answered {_message({'errors': errors})!r}"
                )

        self._call(what, ISSUES_WRITE, request)


def _bind(
    function: Callable[..., tuple[dict[str, Any], Any]],
    verb: str,
    url: str,
    parameters: dict[str, Any] | None,
    body: dict[str, Any] | None = None,
) -> Callable[[], tuple[dict[str, Any], Any]]:
    """A request with its arguments fixed, ready to be retried."""

    def request() -> tuple[dict[str, Any], Any]:
        return function(verb, url, parameters=parameters, body=body)

    return request


def _job(item: Any, attempt: int) -> Job:
    runner = item.get("runner_name")
    return Job(
        id=int(item["id"]),
        name=str(item.get("name") or ""),
        runner_name=str(runner) if runner else None,
        html_url=str(item.get("html_url") or ""),
        status=str(item.get("status") or ""),
        run_attempt=int(item.get("run_attempt") or attempt),
    )


def make_client(
    *,
    token: str,
    api_url: str,
    retries: int = DEFAULT_RETRIES,
    throttle: bool = True,
    timeout: float = 15,
    max_wait: float = DEFAULT_MAX_WAIT,
    secondary_wait: float = SECONDARY_WAIT,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
) -> GitHubClient:
    """A client for the API at ``api_url`` (``GITHUB_API_URL``; GHES: ``https://host/api/v3``).

    ``throttle=False`` turns off PyGithub's pauses between requests (for tests); ``retries``
    and ``max_wait`` bound our own retries (see the module docstring).
    """
    if not token.strip():
        raise GitHubAPIError(
            "no GitHub token: set the 'token' input (it defaults to github.token) or GITHUB_TOKEN"
        )
    github = Github(
        auth=Auth.Token(token),
        base_url=api_url.rstrip("/"),
        timeout=max(math.ceil(timeout), 1),
        retry=None,
        seconds_between_requests=0.25 if throttle else None,
        seconds_between_writes=1.0 if throttle else None,
        per_page=100,
    )
    return GitHubClient(
        github,
        retries=retries,
        max_wait=max_wait,
        secondary_wait=secondary_wait,
        sleep=sleep,
        clock=clock,
        rng=rng,
    )


def _issue(item: Any) -> Issue:
    labels = item.get("labels") or []
    return Issue(
        number=int(item["number"]),
        node_id=str(item.get("node_id") or ""),
        title=str(item.get("title") or ""),
        body=str(item.get("body") or ""),
        state=str(item.get("state") or "open"),
        html_url=str(item.get("html_url") or ""),
        labels=tuple(
            str(label.get("name") if isinstance(label, dict) else label) for label in labels
        ),
    )


def _comment(item: Any) -> IssueComment:
    return IssueComment(
        id=int(item["id"]),
        body=str(item.get("body") or ""),
        html_url=str(item.get("html_url") or ""),
    )
