"""The index issue: every dashboard x backend as passing/total, linking each dashboard's issue.

I/O, through an :class:`~ivy_matrix.issues.writer.IssueWriter`; the body comes from
``issues.bodies.compose_index``. Created when missing (a second copy from a racing run is
closed), rewritten only when its body changed, and pinned (best effort) when asked to (through
the options' ``graphql_url``). Its managed region also keeps the record of the runs' writes
that the next run's budget reads (``issues/plan.py``).

**Newest run wins, and no run's writes are lost.** With the branch store's revision the body
records the revision it shows, as a dashboard's does. Issue edits have no compare-and-swap, so
the body is read just before it is replaced (one request): a body that shows a newer
revision keeps what it shows, and this run's writes join its record (only the record is
written, and nothing when it holds them already). The newest writer checks the index once
more with its dashboards (``issues/publish.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.types import Issue
from ivy_matrix.issues.bodies import compose_index
from ivy_matrix.issues.finding import INDEX_KEY
from ivy_matrix.issues.markers import (
    INDEX_TITLE,
    Write,
    parse_revision,
    parse_writes,
    shows_newer,
    with_writes,
    writes_marker,
)
from ivy_matrix.issues.plan import OwnWrites
from ivy_matrix.issues.report import IssueAction, IssueResult, Written
from ivy_matrix.issues.writer import IssueWriter
from ivy_matrix.model import DashboardState


@dataclass(frozen=True, slots=True, kw_only=True)
class Index:
    """What a run shows in the index issue: ``states`` (every dashboard), ``links`` (key ->
    the issue's or the page's URL), ``revision`` (the branch store's, of ``states``; None:
    none), ``own`` (this run's entry in the record of writes) and ``clock`` (seconds since the
    epoch: the record keeps the last hour)."""

    states: Sequence[DashboardState]
    links: Mapping[str, str]
    revision: int | None
    own: OwnWrites
    clock: Callable[[], float] = time.time


def publish_index(
    writer: IssueWriter, index: Index, *, pin: bool, room: int | None = None
) -> IssueResult:
    """Create or update the index issue found in the writer's last listing, and pin it when
    ``pin`` and it was written. ``room``: the content-creating requests this run's issues may
    make in all (None: the index's write is kept for it in the budget)."""
    candidates = writer.finder.listed.by_key.get(INDEX_KEY, [])
    done = _write_index(writer, index, candidates, pin=pin, room=room)
    if done.result.action is IssueAction.CREATED:
        lost = writer.finder.lost_races({INDEX_KEY: done})
        if INDEX_KEY in lost:
            keep, mine = lost[INDEX_KEY]
            done = _write_index(writer, index, [keep, mine], pin=False, room=None)
    return done.result


def _write_index(
    writer: IssueWriter,
    index: Index,
    candidates: Sequence[Issue],
    *,
    pin: bool,
    room: int | None,
) -> Written:
    """Create or update the index issue, and pin it (best effort) when it was written."""
    calls = writer.requests
    keep = candidates[0] if candidates else None
    closed = tuple(
        dup.number for dup in candidates[1:] if keep and writer.finder.close_duplicate(dup, keep)
    )
    body = _body(writer, index, keep.body if keep else None, pin=pin)
    if keep is not None and keep.body == body:
        return Written(keep, _result(keep, IssueAction.UNCHANGED, closed=closed))
    if calls.dry_run:
        if keep is not None and shows_newer(keep.body, index.revision):
            return Written(keep, _result(keep, IssueAction.SKIPPED_OLDER, closed=closed))
        return _plan_index(writer, keep, body)
    if room is not None and calls.writes >= room:
        calls.log.info("index issue: no write left in this run's budget; a later run writes it")
        return Written(keep, _result(keep, IssueAction.DEFERRED, closed=closed))
    if keep is None:
        return _create(writer, index, body, pin=pin)
    return _replace(writer, index, keep, body, closed, pin=pin)


def _create(writer: IssueWriter, index: Index, body: str, *, pin: bool) -> Written:
    """A new index issue (one found after a create answered 5xx that shows a newer revision
    keeps what it shows)."""
    issue = writer.finder.create(INDEX_TITLE, body, revision=index.revision)
    if shows_newer(issue.body, index.revision):
        return _leave_newer(writer, index, issue, ())
    if pin:
        _pin(writer, issue)
    return Written(issue, _result(issue, IssueAction.CREATED, verified=issue.body == body))


def _replace(
    writer: IssueWriter,
    index: Index,
    keep: Issue,
    body: str,
    closed: tuple[int, ...],
    *,
    pin: bool,
) -> Written:
    """The index issue ``keep`` (as listed) with ``body``. With a revision the body is read
    just before (issue edits have no compare-and-swap), and one that shows a newer revision
    keeps what it shows."""
    calls = writer.requests
    if index.revision is not None:
        current = calls.client.get_issue(calls.repo, keep.number)
        if shows_newer(current.body, index.revision):
            return _leave_newer(writer, index, current, closed)
        if current.body != keep.body:
            keep, body = current, _body(writer, index, current.body, pin=pin)
            if keep.body == body:
                return Written(keep, _result(keep, IssueAction.UNCHANGED, closed=closed))
    issue, verified = writer.readback.write_body(keep, body, revision=index.revision)
    if pin:
        _pin(writer, issue)
    return Written(issue, _result(issue, IssueAction.UPDATED, closed=closed, verified=verified))


def _body(writer: IssueWriter, index: Index, existing: str | None, *, pin: bool) -> str:
    """The index body over ``existing``, its record holding this run's writes (and, with
    ``pin``, the pin that follows the index's write).

    A run that wrote nothing leaves the record as it is (so an index that shows its states
    already stays unchanged), unless it writes the index anyway: that write is recorded.
    """
    record = parse_writes(existing)
    writes = writer.requests.writes + pin
    now = int(index.clock())

    def compose(entries: Sequence[Write]) -> str:
        return compose_index(
            index.states,
            index.links,
            existing_body=existing,
            budget=writer.options.budget,
            charts=writer.options.index_charts,
            writes=writes_marker(entries),
            site_url=writer.options.site_url,
            revision=index.revision,
        )

    if writer.requests.writes:
        return compose(index.own.added(record, writes, now) or record)
    body = compose(record)
    if body == existing:
        return body
    return compose(index.own.added(record, writes, now) or record)


def _leave_newer(
    writer: IssueWriter, index: Index, current: Issue, closed: tuple[int, ...]
) -> Written:
    """An index that shows a newer revision than this run's keeps what it shows; this run's
    writes join its record (only the record is written, and only when it lacks them)."""
    calls = writer.requests
    added = None
    if calls.writes:
        added = index.own.added(parse_writes(current.body), calls.writes, int(index.clock()))
    said = (
        f"index issue #{current.number} shows revision {parse_revision(current.body)}, newer "
        f"than this run's {index.revision}; leaving what it shows"
    )
    if added is None:
        calls.log.info(said)
        return Written(current, _result(current, IssueAction.SKIPPED_OLDER, closed=closed))
    calls.log.info(f"{said}, adding this run's writes to its record")
    body = with_writes(current.body, writes_marker(added))
    issue, verified = writer.readback.write_body(current, body, revision=index.revision)
    return Written(
        issue, _result(issue, IssueAction.SKIPPED_OLDER, closed=closed, verified=verified)
    )


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
