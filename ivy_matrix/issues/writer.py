"""Writing one dashboard's issue: create it or bring it (and its continuation comments) up to date.

I/O, through :class:`~ivy_matrix.github.types.IssueAPI` only. Every call needs ``permissions:
issues: write``; a read-only token (fork or Dependabot pull request) raises
:class:`~ivy_matrix.errors.ReadOnlyTokenError`, which the update turns into "step summary
only". ``issues/publish.py`` (dashboards published from the branch store's state) and
``issues/index_issue.py`` (the index issue) write through the :class:`IssueWriter` here. In: a dashboard's state and the issues its
:class:`~ivy_matrix.issues.finding.Finder` listed for it; out:
:class:`~ivy_matrix.issues.report.Written` (the issue and its result).

The writer holds three small collaborators, one per seam, and is built from an
:class:`IssueOptions` value (what to write and how):

- ``requests`` (``issues/requests.py``): the client and repository, the pace of writes, the
  dry-run plan and the warnings, shared by the other two;
- ``readback`` (``issues/requests.py``): body and comment writes, read back and fixed once;
- ``finder`` (``issues/finding.py``): listing, creating and closing whole issues.

**Writing.** The bodies come from ``issues.bodies.compose_issue``. A body that did not change is
not written. With ``revision`` (the branch store's revision of the state the bodies were
rendered from) a newer revision is never replaced by an older one: the body's revision is
checked in a listing at most ``finding.RELIST_EVERY`` writes old (else it is read just before
the write). Continuation comments are kept equal to the composed ones. Requests
grow with the number of dashboards (and of 65,536-character parts), never with the number of
tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ivy_matrix.github.types import Issue, IssueAPI, IssueComment
from ivy_matrix.issues.bodies import IssueBodies, compose_issue
from ivy_matrix.issues.defaults import DEFAULT_LABEL, DEFAULT_WRITES_PER_HOUR
from ivy_matrix.issues.finding import Finder
from ivy_matrix.issues.markers import (
    DEFAULT_BUDGET,
    issue_title,
    parse_parts,
    parse_revision,
    shows_newer,
)
from ivy_matrix.issues.report import IssueAction, IssueResult, Written
from ivy_matrix.issues.requests import ReadBack, Requests
from ivy_matrix.model import DashboardState
from ivy_matrix.runner.log import Progress
from ivy_matrix.views.style import Style


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueOptions:
    """What the dashboard issues look like, and whether they are written.

    ``label`` marks our issues; ``style`` is the table style (compact when it must shrink);
    ``budget`` the size a body may have (UTF-16 units, ``issues/markers.py``); ``index``
    whether the index issue is kept, ``pin_index`` whether it is pinned (the issue target
    only; through ``graphql_url``, None for GitHub's); ``dry_run`` plans instead of writing.
    ``index_charts`` is the trend's markdown for the index issue (charts.trend_section, its
    pictures pinned to the branch commit that holds them; "" for none). ``writes_per_hour``
    is the content-creating requests the runs of an hour may make (``issues/plan.py``).
    ``site_url`` is where the HTML site is served ("": no site to link).
    """

    label: str = DEFAULT_LABEL
    style: Style = Style.IVY
    budget: int = DEFAULT_BUDGET
    index: bool = True
    pin_index: bool = False
    graphql_url: str | None = None
    dry_run: bool = False
    index_charts: str = ""
    writes_per_hour: int = DEFAULT_WRITES_PER_HOUR
    site_url: str = ""


class IssueWriter:
    """The write rules of the dashboard issues and the index issue."""

    def __init__(
        self,
        client: IssueAPI,
        repo: str,
        options: IssueOptions,
        *,
        log: Progress,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.options = options
        self.requests = Requests(client, repo, dry_run=options.dry_run, log=log, sleep=sleep)
        self.readback = ReadBack(self.requests)
        self.finder = Finder(self.requests, self.readback, label=options.label)
        # The last bodies composed (for cost, then publish): (key, existing body, revision).
        self._composed: tuple[tuple[str, str | None, int | None], IssueBodies] | None = None

    def cost(
        self, state: DashboardState, candidates: Sequence[Issue], *, revision: int | None
    ) -> int:
        """The content-creating requests :meth:`publish` would make at most (0: its issue
        shows a newer revision, or is up to date with no continuation comments). The bodies are
        composed here once, and kept for the publish that follows."""
        current = candidates[0] if candidates else None
        if current is not None and shows_newer(current.body, revision):
            return 0
        bodies = self._compose(state, current.body if current else None, revision)
        if current is None:  # and the label, the first time
            return 1 + len(bodies.continuations) + (not self.finder.label_ready)
        closes = 2 * (len(candidates) - 1)  # a comment and an edit per duplicate
        comments = max(len(bodies.continuations), parse_parts(current.body))
        return closes + (bodies.body != current.body) + comments

    def publish(
        self,
        state: DashboardState,
        candidates: Sequence[Issue],
        *,
        revision: int | None,
    ) -> Written:
        """Create or update one dashboard's issue (the lowest of ``candidates``)."""
        closed = tuple(
            dup.number for dup in candidates[1:] if self.finder.close_duplicate(dup, candidates[0])
        )
        if not candidates:
            return self._create(state, revision=revision)
        calls = self.requests
        current = candidates[0]
        theirs = parse_revision(current.body)
        if revision is not None and (theirs is None or theirs < revision) and self.finder.stale:
            # This run will write and its listing is old: read the body once more just before,
            # so that a newer revision written since is not replaced. (A recent listing is
            # trusted: publish.py lists again every RELIST_EVERY writes, and the newest writer
            # checks its bodies once more at the end. A listed body at this revision or newer
            # needs no request: it is left as it is, or is unchanged.)
            current = calls.client.get_issue(calls.repo, current.number)
        if revision is not None and shows_newer(current.body, revision):
            return self._leave_newer(state, current, closed, revision=revision)
        return self._update(state, current, closed, revision=revision)

    def _leave_newer(
        self, state: DashboardState, current: Issue, closed: tuple[int, ...], *, revision: int
    ) -> Written:
        """An issue that shows a newer revision than this run's is left as it is."""
        self.requests.log.info(
            f"dashboard {state.key}: issue #{current.number} shows revision "
            f"{parse_revision(current.body)}, newer than this run's {revision}; leaving it as it is"
        )
        result = IssueResult(
            key=state.key,
            action=IssueAction.SKIPPED_OLDER,
            number=current.number,
            url=current.html_url,
            closed_duplicates=closed,
        )
        return Written(current, result)

    def _update(
        self,
        state: DashboardState,
        current: Issue,
        closed: tuple[int, ...],
        *,
        revision: int | None,
    ) -> Written:
        """Bring an existing issue (and its continuation comments) to the new bodies."""
        calls = self.requests
        bodies = self._compose(state, current.body, revision)
        listing: list[IssueComment] | None = []
        if bodies.continuations or parse_parts(current.body):
            listing = None  # read them: there are (or were) continuation comments
        ids, comments_written = self.readback.sync_comments(
            current.number, state.key, bodies.continuations, listing, author=current.author
        )
        verified = True
        body_written = bodies.body != current.body
        if body_written:
            if calls.dry_run:
                calls.plan("PATCH", f"issue #{current.number}", bodies.body)
            else:
                current, verified = self.readback.write_body(
                    current, bodies.body, revision=revision
                )
        action = IssueAction.UNCHANGED
        if body_written or comments_written:
            action = IssueAction.WOULD_UPDATE if calls.dry_run else IssueAction.UPDATED
        result = IssueResult(
            key=state.key,
            action=action,
            number=current.number,
            url=current.html_url,
            comment_ids=ids,
            closed_duplicates=closed,
            style=bodies.style,
            verified=verified,
        )
        return Written(current, result)

    def _compose(
        self, state: DashboardState, existing: str | None, revision: int | None
    ) -> IssueBodies:
        key = (state.key, existing, revision)
        if self._composed is not None and self._composed[0] == key:
            return self._composed[1]
        bodies = compose_issue(
            state,
            existing_body=existing,
            revision=revision,
            budget=self.options.budget,
            style=self.options.style,
            site_url=self.options.site_url,
        )
        self._composed = (key, bodies)
        return bodies

    def _create(self, state: DashboardState, *, revision: int | None) -> Written:
        """A new issue for a dashboard that has none (planned only, in a dry run)."""
        calls = self.requests
        bodies = self._compose(state, None, revision)
        title = issue_title(state.key)
        if calls.dry_run:
            calls.plan("POST", f"new issue {title!r}", bodies.body)
            for part, text in enumerate(bodies.continuations, start=1):
                calls.plan("POST", f"new comment on the new issue (part {part})", text)
            result = IssueResult(
                key=state.key,
                action=IssueAction.WOULD_CREATE,
                number=None,
                url=None,
                style=bodies.style,
            )
            return Written(None, result)
        issue = self.finder.create(title, bodies.body, revision=revision)
        if revision is not None and shows_newer(issue.body, revision):
            # Found by listing after a create answered 5xx, a newer job's revision already on it.
            return self._leave_newer(state, issue, (), revision=revision)
        ids, _ = self.readback.sync_comments(
            issue.number, state.key, bodies.continuations, [], author=issue.author
        )
        result = IssueResult(
            key=state.key,
            action=IssueAction.CREATED,
            number=issue.number,
            url=issue.html_url,
            comment_ids=ids,
            style=bodies.style,
            verified=issue.body == bodies.body,
        )
        return Written(issue, result)
