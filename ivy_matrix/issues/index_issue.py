"""The index issue: every dashboard x backend as passing/total, linking each dashboard's issue.

I/O, through an :class:`~ivy_matrix.issues.writer.IssueWriter`; the body comes from
``issues.bodies.compose_index``. Created when missing (a second copy from a racing run is
closed), rewritten only when its body changed, and pinned (best effort) when asked to (through
the options' ``graphql_url``). Its managed region also keeps the record of the runs' writes
that the next run's budget reads (``issues/plan.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.types import Issue
from ivy_matrix.issues.bodies import compose_index
from ivy_matrix.issues.finding import INDEX_KEY, Found
from ivy_matrix.issues.markers import INDEX_TITLE
from ivy_matrix.issues.report import IssueAction, IssueResult, Written
from ivy_matrix.issues.writer import IssueWriter
from ivy_matrix.model import DashboardState


def publish_index(
    writer: IssueWriter,
    states: Sequence[DashboardState],
    links: Mapping[str, str],
    found: Found,
    *,
    writes: str = "",
) -> IssueResult:
    """Create or update the index issue linking ``links`` (key -> URL), with ``writes`` (the
    record of the runs' writes), and pin it when the options say so."""
    candidates = found.by_key.get(INDEX_KEY, [])
    pin = writer.options.pin_index
    done = _write_index(writer, states, links, candidates, pin=pin, writes=writes)
    if done.result.action is IssueAction.CREATED:
        lost = writer.finder.lost_races({INDEX_KEY: done})
        if INDEX_KEY in lost:
            keep, mine = lost[INDEX_KEY]
            done = _write_index(writer, states, links, [keep, mine], pin=False, writes=writes)
    return done.result


def _write_index(
    writer: IssueWriter,
    states: Sequence[DashboardState],
    links: Mapping[str, str],
    candidates: Sequence[Issue],
    *,
    pin: bool,
    writes: str,
) -> Written:
    """Create or update the index issue, and pin it (best effort) when it was written."""
    keep = candidates[0] if candidates else None
    closed = tuple(
        dup.number for dup in candidates[1:] if keep and writer.finder.close_duplicate(dup, keep)
    )
    body = compose_index(
        states,
        links,
        existing_body=keep.body if keep else None,
        budget=writer.options.budget,
        charts=writer.options.index_charts,
        writes=writes,
        site_url=writer.options.site_url,
    )
    if keep is not None and keep.body == body:
        return Written(keep, _result(keep, IssueAction.UNCHANGED, closed=closed))
    if writer.requests.dry_run:
        return _plan_index(writer, keep, body)
    verified = True
    if keep is None:
        issue, action = writer.finder.create(INDEX_TITLE, body), IssueAction.CREATED
        verified = issue.body == body
    else:
        (issue, verified), action = (
            writer.readback.write_body(keep, body, revision=None),
            IssueAction.UPDATED,
        )
    if pin:
        _pin(writer, issue)
    return Written(issue, _result(issue, action, closed=closed, verified=verified))


def _plan_index(writer: IssueWriter, keep: Issue | None, body: str) -> Written:
    """A dry run: say which write the index would get, and write nothing."""
    writer.requests.plan(
        "PATCH" if keep else "POST",
        f"issue #{keep.number}" if keep else "new index issue",
        body,
    )
    action = IssueAction.WOULD_UPDATE if keep else IssueAction.WOULD_CREATE
    return Written(keep, _result(keep, action))


def _result(
    issue: Issue | None,
    action: IssueAction,
    *,
    closed: tuple[int, ...] = (),
    verified: bool = True,
) -> IssueResult:
    """The index's line of the issues report."""
    return IssueResult(
        key=INDEX_KEY,
        action=action,
        number=issue.number if issue else None,
        url=issue.html_url if issue else None,
        closed_duplicates=closed,
        verified=verified,
    )


def _pin(writer: IssueWriter, issue: Issue) -> None:
    writer.requests.pace()  # a GraphQL mutation creates content too
    try:
        writer.requests.client.pin_issue(issue.node_id, graphql_url=writer.options.graphql_url)
    except GitHubAPIError as error:
        writer.requests.warn(
            f"could not pin the index issue #{issue.number} (not needed to publish): {error}"
        )
