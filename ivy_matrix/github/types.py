"""Our types for what GitHub returns, the issue calls, and the calls of a whole client.

Pure: frozen dataclasses and protocols. ``github.client.GitHubClient`` returns these and
implements :class:`IssueAPI` and :class:`GitHubAPI`. The stores and targets each declare (or
take :class:`IssueAPI` for) the few calls they make, so tests can hand them any other
implementation (``tests/github/memory.py``) without a cast; :class:`GitHubAPI`, every call a
command makes, is what a command's connection (``github/connection.py``) hands out, with
what the client spent of GitHub's budgets (:class:`Spend`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from ivy_matrix.results.jobs import Job
from ivy_matrix.runner.reporter import Reporter


@dataclass(frozen=True, slots=True, kw_only=True)
class Tree:
    """A git tree listed recursively: its sha and every file in it (path -> blob sha)."""

    sha: str
    files: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class RefUpdate:
    """One ref moved by compare-and-swap: ``ref`` (a full name, ``refs/...``) from ``old``
    (None: it must not exist yet) to ``new``, a descendant of ``old`` (any commit where the
    transport compares and swaps any move: ``BranchRemote.swaps_any_move``, git)."""

    ref: str
    new: str
    old: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Issue:
    """An issue as ivy-matrix needs it. ``body`` is "" when the issue has none; ``author`` is
    the login of the user who opened it ("" when unknown)."""

    number: int
    node_id: str
    title: str
    body: str
    state: str
    html_url: str
    labels: tuple[str, ...] = ()
    author: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueComment:
    """A comment on an issue. ``body`` is "" when GitHub returns none; ``author`` is its
    user's login ("" when unknown)."""

    id: int
    body: str
    html_url: str
    author: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class PullRequest:
    """A pull request as the pr-comment target and the expectations command need it: its
    number, head commit, state (``open`` or ``closed``; a merged pull request is closed) and
    body ("" when it has none)."""

    number: int
    head_sha: str
    state: str = "open"
    body: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitStatus:
    """One commit status: its ``context`` (the check's name), ``state`` (``error``,
    ``failure``, ``pending`` or ``success``), ``description`` (at most 140 characters) and
    ``target_url`` ("" for none), as GitHub keeps the newest of each context on a commit."""

    context: str
    state: str
    description: str = ""
    target_url: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Spend:
    """What one client sent to GitHub (``github/spend.py`` counts it); the rate-limit
    figures are None when GitHub sent none (no request, or a server with rate limits off)."""

    requests: int = 0
    content_requests: int = 0
    rate_limit_remaining: int | None = None
    rate_limit: int | None = None  # the token's requests an hour (x-ratelimit-limit)


class IssueAPI(Protocol):
    """The issue calls of ``github.client.GitHubClient`` that issues/ makes."""

    def list_issues(self, repo: str, *, label: str, state: str = "all") -> list[Issue]: ...

    def get_issue(self, repo: str, number: int) -> Issue: ...

    def create_issue(self, repo: str, *, title: str, body: str, labels: list[str]) -> Issue: ...

    def update_issue(
        self,
        repo: str,
        number: int,
        *,
        body: str | None = None,
        state: str | None = None,
        state_reason: str | None = None,
        labels: list[str] | None = None,
    ) -> Issue: ...

    def list_issue_comments(self, repo: str, number: int) -> list[IssueComment]: ...

    def create_issue_comment(self, repo: str, number: int, body: str) -> IssueComment: ...

    def update_issue_comment(
        self, repo: str, comment_id: int, body: str, *, retry: bool = True
    ) -> IssueComment: ...

    def delete_issue_comment(self, repo: str, comment_id: int) -> bool: ...

    def ensure_label(
        self, repo: str, name: str, *, color: str = "ededed", description: str = ""
    ) -> bool: ...

    def pin_issue(self, node_id: str, *, graphql_url: str | None = None) -> None: ...


class GitHubAPI(IssueAPI, Protocol):
    """Every call a command makes through its connection: the issue calls, the run's jobs,
    pull requests, commit statuses and git data (what the stores, the issue target and the
    pull-request targets each declare a part of)."""

    def list_run_jobs(self, repo: str, run_id: int, attempt: int) -> list[Job]: ...

    def list_pull_requests(self, repo: str, *, head: str) -> list[PullRequest]: ...

    def get_pull_request(self, repo: str, number: int) -> PullRequest: ...

    def get_combined_status(self, repo: str, ref: str) -> list[CommitStatus]: ...

    def create_commit_status(self, repo: str, sha: str, status: CommitStatus) -> CommitStatus: ...

    def create_pull_request(
        self, repo: str, *, title: str, head: str, base: str, body: str
    ) -> PullRequest: ...

    def update_pull_request(
        self, repo: str, number: int, *, title: str, body: str
    ) -> PullRequest: ...

    def get_default_branch(self, repo: str) -> str: ...

    def get_branch_head(self, repo: str, branch: str) -> str | None: ...

    def get_tree(self, repo: str, tree_ish: str) -> Tree: ...

    def get_blob_text(self, repo: str, sha: str) -> str: ...

    def get_blob_texts(self, repo: str, shas: Collection[str]) -> dict[str, str]: ...

    def create_tree(
        self, repo: str, base_tree: str | None, files: Mapping[str, str | None]
    ) -> str: ...

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str: ...

    def create_branch(self, repo: str, branch: str, sha: str) -> bool: ...

    def update_branch(self, repo: str, branch: str, sha: str) -> bool: ...

    def replace_branch(self, repo: str, branch: str, sha: str, *, old: str) -> bool: ...

    def get_ref(self, repo: str, ref: str) -> str | None: ...

    def create_ref(self, repo: str, ref: str, sha: str) -> bool: ...

    def move_ref(self, repo: str, ref: str, sha: str) -> bool: ...

    def list_refs(self, repo: str, prefix: str) -> dict[str, str]: ...

    def spent(self) -> Spend: ...

    def report_to(self, log: Reporter) -> None: ...

    def close(self) -> None: ...
