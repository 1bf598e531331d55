"""The issue calls: list, read, create and edit issues, their comments and labels; pin one.

I/O through :class:`~ivy_matrix.github.http.Transport` (no PyGithub here); the calls of
:class:`~ivy_matrix.github.types.IssueAPI`.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.http import (
    ISSUES_WRITE,
    PULLS_READ,
    PULLS_WRITE,
    HTTPError,
    OffHostError,
    Transport,
    bind,
    error_message,
    repo_path,
)
from ivy_matrix.github.retry import translate_error
from ivy_matrix.github.types import Issue, IssueComment, PullRequest

_T = TypeVar("_T")


class IssueCalls(Transport):
    """The issue calls of :class:`~ivy_matrix.github.client.GitHubClient`."""

    # Every call here needs 'issues: write' in the end, so that is the permission 403/404
    # messages name. Reads and deletes are retried by _call as usual; so are comment creates
    # (POST), which can duplicate a comment when a 5xx came after the write landed: callers
    # find their comments by marker afterwards and remove duplicates. Issue creates are never
    # resent blindly: a 5xx or network error is raised, and the caller lists the issues by
    # marker before creating again (issues/finding.py). Edits (PATCH) send the whole new
    # body, so repeating one is harmless.

    def list_issues(self, repo: str, *, label: str, state: str = "all") -> list[Issue]:
        """Every issue with ``label`` (all pages of 100), pull requests left out.

        ``GET /repos/{owner}/{repo}/issues?labels=<label>&state=<state>&per_page=100``.
        """
        url = f"{repo_path(repo)}/issues"
        params = {"labels": label, "state": state, "per_page": 100}
        what = f"listing the issues labelled {label!r} in {repo}"
        return [
            issue_from_json(item)
            for page in self._get_all(what, ISSUES_WRITE, url, params)
            for item in (page if isinstance(page, list) else [])
            if isinstance(item, dict) and not item.get("pull_request")
        ]

    def get_issue(self, repo: str, number: int) -> Issue:
        """One issue (``GET /repos/{owner}/{repo}/issues/{number}``)."""
        url = f"{repo_path(repo)}/issues/{number}"
        _, data = self._call(
            f"reading issue #{number} of {repo}", ISSUES_WRITE, bind(self._json, "GET", url, None)
        )
        return issue_from_json(data)

    def create_issue(self, repo: str, *, title: str, body: str, labels: list[str]) -> Issue:
        """A new issue (``POST /repos/{owner}/{repo}/issues``); never resent after a 5xx."""
        payload = {"title": title, "body": body, "labels": list(labels)}
        _, data = self._call(
            f"creating an issue in {repo}",
            ISSUES_WRITE,
            bind(self._json, "POST", f"{repo_path(repo)}/issues", None, payload),
            resend=False,
        )
        return issue_from_json(data)

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
        url = f"{repo_path(repo)}/issues/{number}"
        _, data = self._call(
            f"editing issue #{number} of {repo}",
            ISSUES_WRITE,
            bind(self._json, "PATCH", url, None, payload),
        )
        return issue_from_json(data)

    def list_issue_comments(self, repo: str, number: int) -> list[IssueComment]:
        """Every comment on an issue, oldest first (all pages of 100)."""
        url = f"{repo_path(repo)}/issues/{number}/comments"
        what = f"listing the comments of issue #{number} in {repo}"
        return [
            comment_from_json(item)
            for page in self._get_all(what, ISSUES_WRITE, url, {"per_page": 100})
            for item in (page if isinstance(page, list) else [])
            if isinstance(item, dict)
        ]

    def create_issue_comment(self, repo: str, number: int, body: str) -> IssueComment:
        """A new comment on an issue (``POST .../issues/{number}/comments``)."""
        url = f"{repo_path(repo)}/issues/{number}/comments"
        _, data = self._call(
            f"commenting on issue #{number} of {repo}",
            ISSUES_WRITE,
            bind(self._json, "POST", url, None, {"body": body}),
        )
        return comment_from_json(data)

    def update_issue_comment(
        self, repo: str, comment_id: int, body: str, *, retry: bool = True
    ) -> IssueComment:
        """Replace a comment's body (``PATCH .../issues/comments/{id}``); last writer wins.

        ``retry=False`` sends it once: a caller that merges concurrent writers' content re-reads
        before trying again, since a late repeat of a stale body would drop others' edits.
        """
        url = f"{repo_path(repo)}/issues/comments/{comment_id}"
        what = f"editing comment {comment_id} in {repo}"
        request = bind(self._json, "PATCH", url, None, {"body": body})
        _, data = self._call(what, ISSUES_WRITE, request) if retry else self._once(what, request)
        return comment_from_json(data)

    def _once(self, what: str, request: Callable[[], _T]) -> _T:
        """``request`` without retries; its failure as a GitHubAPIError."""
        try:
            return request()
        except HTTPError as error:
            message = error_message(error.data)
            raise translate_error(what, ISSUES_WRITE, error.status, message) from None
        except OSError as error:
            raise GitHubAPIError(f"{what} failed: {str(error) or type(error).__name__}") from None

    def delete_issue_comment(self, repo: str, comment_id: int) -> bool:
        """Delete a comment; False if it was already gone (a retried delete finds it so)."""
        url = f"{repo_path(repo)}/issues/comments/{comment_id}"

        def request() -> bool:
            try:
                self._json("DELETE", url)
            except HTTPError as error:
                if error.status == 404:  # noqa: PLR2004
                    return False
                raise
            return True

        return self._call(f"deleting comment {comment_id} in {repo}", ISSUES_WRITE, request)

    def list_pull_requests(self, repo: str, *, head: str) -> list[PullRequest]:
        """The open pull requests whose head is ``head`` (``owner:branch``).

        ``GET /repos/{owner}/{repo}/pulls?head=<owner:branch>&state=open&per_page=100``.
        """
        url = f"{repo_path(repo)}/pulls"
        params = {"head": head, "state": "open", "per_page": 100}
        what = f"listing the pull requests of {head} in {repo}"
        return [
            _pull_request(item)
            for page in self._get_all(what, PULLS_READ, url, params)
            for item in (page if isinstance(page, list) else [])
            if isinstance(item, dict)
        ]

    def get_pull_request(self, repo: str, number: int) -> PullRequest:
        """One pull request as GitHub has it now (``GET /repos/{owner}/{repo}/pulls/{number}``):
        the event payload of a re-run still shows the state of the first run."""
        url = f"{repo_path(repo)}/pulls/{number}"
        what = f"reading pull request #{number} of {repo}"
        _, data = self._call(what, PULLS_READ, bind(self._json, "GET", url, None))
        return _pull_request(data)

    def create_pull_request(
        self, repo: str, *, title: str, head: str, base: str, body: str
    ) -> PullRequest:
        """Open a pull request from branch ``head`` into ``base``
        (``POST /repos/{owner}/{repo}/pulls``). Never resent blindly, as issue creates: a
        caller that saw an error lists the pull requests of ``head`` before opening another
        (GitHub refuses a second open one for the same head with 422 anyway)."""
        body_json = {"title": title, "head": head, "base": base, "body": body}
        what = f"opening a pull request from {head} in {repo}"
        _, data = self._call(
            what,
            PULLS_WRITE,
            bind(self._json, "POST", f"{repo_path(repo)}/pulls", None, body_json),
            resend=False,
        )
        return _pull_request(data)

    def update_pull_request(self, repo: str, number: int, *, title: str, body: str) -> PullRequest:
        """Set a pull request's title and body (``PATCH /repos/{owner}/{repo}/pulls/{n}``:
        the whole new text, so repeating it is harmless)."""
        url = f"{repo_path(repo)}/pulls/{number}"
        what = f"updating pull request #{number} of {repo}"
        data_in = {"title": title, "body": body}
        _, data = self._call(what, PULLS_WRITE, bind(self._json, "PATCH", url, None, data_in))
        return _pull_request(data)

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
                self._json("GET", f"{repo_path(repo)}/labels/{quoted}")
            except HTTPError as error:
                if error.status == 404:  # noqa: PLR2004
                    return False
                raise
            return True

        def create() -> bool:
            body = {"name": name, "color": color, "description": description}
            try:
                self._json("POST", f"{repo_path(repo)}/labels", body=body)
            except HTTPError as error:
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
        url = graphql_url or self._graphql_url
        what = "pinning the index issue"

        def request() -> None:
            try:
                _, data = self._json(
                    "POST", url, body={"query": query, "variables": {"id": node_id}}
                )
            except OffHostError as error:
                raise GitHubAPIError(
                    f"{what} failed: {url} is not on the API host ({error})"
                ) from None
            errors = data.get("errors") if isinstance(data, dict) else None
            if errors:
                raise GitHubAPIError(
                    f"{what} failed: GitHub answered {error_message({'errors': errors})!r}"
                )

        self._call(what, ISSUES_WRITE, request)


def _login(item: Any) -> str:
    user = item.get("user")
    return str((user.get("login") if isinstance(user, dict) else None) or "")


def issue_from_json(item: Any) -> Issue:
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
        author=_login(item),
    )


def comment_from_json(item: Any) -> IssueComment:
    return IssueComment(
        id=int(item["id"]),
        body=str(item.get("body") or ""),
        html_url=str(item.get("html_url") or ""),
        author=_login(item),
    )


def _pull_request(item: Any) -> PullRequest:
    return PullRequest(
        number=int(item["number"]),
        head_sha=str((item.get("head") or {}).get("sha") or ""),
        state=str(item.get("state") or "open"),
        body=str(item.get("body") or ""),
    )
