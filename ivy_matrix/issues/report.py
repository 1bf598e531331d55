"""What the issue writer did to each issue: typed results, and the writes a dry run planned.

Pure: value types only. :class:`Written` is one issue as the writer leaves it;
:class:`IssuesReport` is the issue target's result. The progress lines are logged as the writes happen (``runner/log.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ivy_matrix.github.types import Issue
from ivy_matrix.views.style import Style


class IssueAction(StrEnum):
    """What a call did (or, in a dry run, would do) to one issue."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    SKIPPED_OLDER = "skipped-older"  # the issue shows a newer revision than this run's
    WOULD_CREATE = "would-create"
    WOULD_UPDATE = "would-update"
    # Left for a later run: the hour's budget of content-creating requests is spent
    # (issues/plan.py); the issue, if there is one, shows an older revision.
    DEFERRED = "deferred"


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueResult:
    """One dashboard's (or the index's) issue after a call.

    ``number`` and ``url`` are None only for an issue that does not exist yet (a dry run's, or
    one left for a later run).
    ``comment_ids`` are the continuation comments in part order; ``closed_duplicates`` the
    issues of the same dashboard this call closed; ``verified`` is False when the read-back
    still differed after one retry.
    """

    key: str
    action: IssueAction
    number: int | None
    url: str | None
    comment_ids: tuple[int, ...] = ()
    closed_duplicates: tuple[int, ...] = ()
    style: Style | None = None
    verified: bool = True


@dataclass(frozen=True, slots=True)
class Written:
    """An issue a call wrote or kept (None: a dry run's issue not created), and its result."""

    issue: Issue | None
    result: IssueResult


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedWrite:
    """A write a dry run would have made: method, what it targets, and the text it sends."""

    method: str
    target: str
    body: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IssuesReport:
    """What :func:`~ivy_matrix.issues.publish.publish_issues` did, per dashboard key."""

    dashboards: tuple[IssueResult, ...]
    index: IssueResult | None = None
    planned: tuple[PlannedWrite, ...] = ()
    warnings: tuple[str, ...] = ()
    # What the hour's budget left for later runs, in words ("" when nothing waited).
    budget_note: str = ""

    @property
    def index_url(self) -> str | None:
        return self.index.url if self.index else None

    def result(self, key: str) -> IssueResult:
        """The result for one dashboard key (KeyError if it was not part of the call)."""
        for item in self.dashboards:
            if item.key == key:
                return item
        raise KeyError(key)
