"""Our types for what GitHub returns, and the issue calls the issue store and target make.

Pure: frozen dataclasses and a protocol. ``github.client.GitHubClient`` returns these and
implements :class:`IssueAPI`; tests can hand the stores and targets any other implementation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True, kw_only=True)
class Tree:
    """A git tree listed recursively: its sha and every file in it (path -> blob sha)."""

    sha: str
    files: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Issue:
    """An issue as ivy-matrix needs it. ``body`` is "" when the issue has none."""

    number: int
    node_id: str
    title: str
    body: str
    state: str
    html_url: str
    labels: tuple[str, ...] = ()


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
    """A pull request as the pr-comment target needs it: its number and head commit."""

    number: int
    head_sha: str


class IssueAPI(Protocol):
    """The issue calls of ``github.client.GitHubClient`` that targets/ and issues/store.py make."""

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

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> IssueComment: ...

    def delete_issue_comment(self, repo: str, comment_id: int) -> bool: ...

    def ensure_label(
        self, repo: str, name: str, *, color: str = "ededed", description: str = ""
    ) -> bool: ...

    def pin_issue(self, node_id: str, *, graphql_url: str | None = None) -> None: ...
