"""The issue target: one GitHub issue per dashboard, an index issue, and the issue-body store.

I/O, through :class:`~ivy_matrix.github_api.GitHubClient` only; the bodies come from
``issue_bodies.py``. Every call needs ``permissions: issues: write``; a read-only token (fork or
Dependabot pull request) raises :class:`~ivy_matrix.errors.ReadOnlyTokenError`, which the
CLI turns into "step summary only".

**Finding issues.** A call lists the issues with the label (``ivy-matrix`` by default) once,
``state=all``, all pages of 100, pull requests left out, and matches the hidden marker on each
body's first line. A dashboard with no issue gets one (the label is created first if missing).
Two jobs can both find nothing and both create, and a create POST retried after a 5xx can land
twice (PLATFORM.md 1.3), so after creating, the issues are listed again: the lowest number is
kept, the others are closed with a comment pointing to it and lose the label, and what was
meant for them is written to the one kept.

**Writing.** A body that did not change is not written. With ``revision`` (the branch store's
revision of the state the bodies were rendered from) the current body is read just before the
write and a newer revision is never replaced by an older one. After every write the body is
read back and compared, because GitHub has been reported to accept large writes silently
without applying them; a mismatch is written once more, then reported as a warning.
Continuation comments (tables too big for the body) are updated in place, created when
missing and deleted when the table shrinks. Requests grow with the number of dashboards (and
of 65,536-character parts), never with the number of tests.

**The issue-body store** (:class:`IssueStore`, for jobs without ``contents: write``) keeps each
dashboard's state in a hidden block of its issue. What it can and cannot promise: GitHub has
no conditional write for issues (PLATFORM.md 3.3), so a body edit is last-writer-wins and two
jobs writing the same issue at once can drop each other's cells. The store makes that unlikely,
not impossible: after writing it waits a jittered moment, reads the body back, and if another
writer's body replaced its own without its cells, it merges again and rewrites, for a bounded
number of rounds. A writer that finishes can still be overwritten later by a slower one that
read before it wrote; the next run that touches the same cells repairs the table, but nothing
guarantees it in between. When matrix legs run concurrently, use the branch target (git
compare-and-swap, no lost cells) or publish from one fan-in job after the matrix.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github_api import GitHubClient, Issue, IssueComment
from ivy_matrix.issue_bodies import (
    DEFAULT_BUDGET,
    INDEX_TITLE,
    IssueBodies,
    compose_index,
    compose_issue,
    continuation_part,
    dashboard_key,
    extract_state,
    is_index,
    issue_title,
    parse_parts,
    parse_revision,
    union_states,
)
from ivy_matrix.merge import DEFAULT_HISTORY
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.render import Style

DEFAULT_LABEL = "ivy-matrix"
# After writing with a revision: wait this long (seconds, jittered), then check once more.
SETTLE_DELAY = (1.0, 3.0)
SETTLE_ROUNDS = 2
LABEL_COLOR = "0e8a16"
LABEL_DESCRIPTION = "Test dashboards kept up to date by ivy-matrix"
_INDEX_KEY = "\0index"  # cannot collide with a dashboard key in the maps below


class IssueLog(Protocol):
    """Where progress lines and warnings go (``workflow_commands.Log`` is one)."""

    def info(self, message: str) -> None: ...

    def warning(self, message: str) -> None: ...


class _Quiet:
    def info(self, message: str) -> None:
        pass

    def warning(self, message: str) -> None:
        pass


class IssueAction(StrEnum):
    """What a call did (or, in a dry run, would do) to one issue."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    SKIPPED_OLDER = "skipped-older"  # the issue shows a newer revision than this run's
    WOULD_CREATE = "would-create"
    WOULD_UPDATE = "would-update"


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueResult:
    """One dashboard's (or the index's) issue after a call.

    ``number`` and ``url`` are None only for a dry run's issue that does not exist yet.
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


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedWrite:
    """A write a dry run would have made: method, what it targets, and the text it sends."""

    method: str
    target: str
    body: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IssuesReport:
    """What :func:`publish_issues` (or :meth:`IssueStore.update`) did, per dashboard key."""

    dashboards: tuple[IssueResult, ...]
    index: IssueResult | None = None
    planned: tuple[PlannedWrite, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def index_url(self) -> str | None:
        return self.index.url if self.index else None

    def result(self, key: str) -> IssueResult:
        """The result for one dashboard key (KeyError if it was not part of the call)."""
        for item in self.dashboards:
            if item.key == key:
                return item
        raise KeyError(key)


@dataclass(slots=True)
class _Found:
    """Our issues in one listing: per dashboard key (and the index), lowest number first."""

    by_key: dict[str, list[Issue]] = field(default_factory=dict)


@dataclass(slots=True)
class _Written:
    """An issue this call wrote or kept, as the next steps need it."""

    issue: Issue | None
    result: IssueResult


class _Writer:
    """The write rules shared by :func:`publish_issues` and :class:`IssueStore`."""

    def __init__(
        self,
        client: GitHubClient,
        repo: str,
        *,
        label: str,
        dry_run: bool,
        log: IssueLog,
        style: Style,
        budget: int,
    ) -> None:
        self.client = client
        self.repo = repo
        self.label = label
        self.dry_run = dry_run
        self.log = log
        self.style = style
        self.budget = budget
        self.planned: list[PlannedWrite] = []
        self.warnings: list[str] = []
        self._label_ready = False

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        self.log.warning(message)

    # ----------------------------------------------------------------- reading

    def find(self) -> _Found:
        """List the labelled issues once and group ours by marker."""
        found = _Found()
        for issue in self.client.list_issues(self.repo, label=self.label):
            key = _INDEX_KEY if is_index(issue.body) else dashboard_key(issue.body)
            if key is not None:
                found.by_key.setdefault(key, []).append(issue)
        for issues in found.by_key.values():
            issues.sort(key=lambda i: i.number)
        return found

    # ----------------------------------------------------------------- writing

    def _plan(self, method: str, target: str, body: str | None = None) -> None:
        self.planned.append(PlannedWrite(method=method, target=target, body=body))

    def _ensure_label(self) -> None:
        if not self._label_ready:
            self.client.ensure_label(
                self.repo, self.label, color=LABEL_COLOR, description=LABEL_DESCRIPTION
            )
            self._label_ready = True

    def create(self, title: str, body: str) -> Issue:
        """A new issue with our label, its body read back and rewritten once if it differs."""
        self._ensure_label()
        issue = self.client.create_issue(self.repo, title=title, body=body, labels=[self.label])
        self.log.info(f"created issue #{issue.number} ({title})")
        back = self.client.get_issue(self.repo, issue.number)
        if back.body != body:
            return self.write_body(back, body, revision=None)[0]
        return back

    def write_body(self, issue: Issue, body: str, *, revision: int | None) -> tuple[Issue, bool]:
        """PATCH the body and check that it took, retry once on a mismatch; (issue, verified).

        The edit's own answer carries the body GitHub stored; only when it differs (a write
        accepted but not applied has been reported) is the issue read again.
        """
        back = issue
        for attempt in range(2):
            back = self.client.update_issue(self.repo, issue.number, body=body)
            if back.body == body:
                return back, True  # the answer to the edit shows it applied
            back = self.client.get_issue(self.repo, issue.number)
            if back.body == body:
                return back, True
            theirs = parse_revision(back.body)
            if revision is not None and theirs is not None and theirs > revision:
                self.log.info(
                    f"issue #{issue.number}: another job wrote revision {theirs} meanwhile, "
                    f"newer than this run's {revision}; leaving it"
                )
                return back, True
            if attempt == 0:
                self.log.info(f"issue #{issue.number}: the body read back differs; writing again")
        self.warn(
            f"issue #{issue.number}: GitHub accepted the new body but still shows another one "
            f"after a second write (another job may be writing it too); it may be out of date"
        )
        return back, False

    def close_duplicate(self, duplicate: Issue, keep: Issue) -> bool:
        """Close a second issue of one dashboard, pointing to the kept one; True if written."""
        has_label = self.label.lower() in (name.lower() for name in duplicate.labels)
        if duplicate.state == "closed" and not has_label:
            return False
        labels = [name for name in duplicate.labels if name.lower() != self.label.lower()]
        if self.dry_run:
            self._plan("PATCH", f"issue #{duplicate.number} (close as duplicate of #{keep.number})")
            return True
        if duplicate.state != "closed":
            self.client.create_issue_comment(
                self.repo,
                duplicate.number,
                f"Duplicate of #{keep.number}: ivy-matrix keeps one issue per dashboard "
                f"(two jobs created one at the same time) and closed this one.",
            )
        self.client.update_issue(
            self.repo, duplicate.number, state="closed", state_reason="not_planned", labels=labels
        )
        self.log.info(f"closed issue #{duplicate.number}, a duplicate of #{keep.number}")
        return True

    def sync_comments(
        self, number: int, key: str, texts: Sequence[str], listing: list[IssueComment] | None
    ) -> tuple[tuple[int, ...], bool]:
        """Make the continuation comments of ``key`` on issue ``number`` equal ``texts``.

        Comments are matched by their part marker, updated in place, created when missing;
        extra parts and duplicate copies of a part are deleted. The result is read back and
        fixed once more if needed. Returns the comment ids in part order and whether any
        write was made.
        """
        if listing is None:
            listing = self.client.list_issue_comments(self.repo, number)
        wrote = False
        for attempt in range(3):
            ids, creates, updates, deletes = _comment_plan(listing, key, texts)
            if not (creates or updates or deletes):
                return ids, wrote
            if attempt == 2:  # noqa: PLR2004  -- the writes were repeated once already
                break
            if self.dry_run:
                for part, text in creates:
                    self._plan("POST", f"new comment on issue #{number} (part {part})", text)
                for comment_id, text in updates:
                    self._plan("PATCH", f"comment {comment_id} on issue #{number}", text)
                for comment_id in deletes:
                    self._plan("DELETE", f"comment {comment_id} on issue #{number}")
                return ids, True
            for _, text in creates:
                self.client.create_issue_comment(self.repo, number, text)
            for comment_id, text in updates:
                self.client.update_issue_comment(self.repo, comment_id, text)
            for comment_id in deletes:
                self.client.delete_issue_comment(self.repo, comment_id)
            wrote = True
            listing = self.client.list_issue_comments(self.repo, number)
        self.warn(
            f"issue #{number}: the continuation comments of {key!r} still differ after a "
            f"second write; they may be out of date"
        )
        return ids, wrote

    # ----------------------------------------------------------------- one dashboard

    def publish(
        self,
        state: DashboardState,
        candidates: Sequence[Issue],
        *,
        revision: int | None,
        with_state: bool = False,
        verify: bool = True,
    ) -> _Written:
        """Create or update one dashboard's issue (the lowest of ``candidates``)."""
        closed = tuple(
            dup.number for dup in candidates[1:] if self.close_duplicate(dup, candidates[0])
        )
        if not candidates:
            return self._create_dashboard(state, revision=revision, with_state=with_state)
        current = candidates[0]
        theirs = parse_revision(current.body)
        if revision is not None and (theirs is None or theirs < revision):
            # This run will write: read the body once more just before, so that a newer
            # revision written since the listing is not replaced. (A listed body at this
            # revision or newer needs no request: it is left as it is, or is unchanged.)
            current = self.client.get_issue(self.repo, current.number)
            theirs = parse_revision(current.body)
        if revision is not None and theirs is not None and theirs > revision:
            self.log.info(
                f"dashboard {state.key}: issue #{current.number} shows revision {theirs}, newer "
                f"than this run's {revision}; leaving it as it is"
            )
            result = IssueResult(
                key=state.key,
                action=IssueAction.SKIPPED_OLDER,
                number=current.number,
                url=current.html_url,
                closed_duplicates=closed,
            )
            return _Written(current, result)
        bodies = self._compose(state, current.body, revision, with_state=with_state)
        listing: list[IssueComment] | None = []
        if bodies.continuations or parse_parts(current.body):
            listing = None  # read them: there are (or were) continuation comments
        ids, comments_written = self.sync_comments(
            current.number, state.key, bodies.continuations, listing
        )
        verified = True
        body_written = bodies.body != current.body
        if body_written:
            if self.dry_run:
                self._plan("PATCH", f"issue #{current.number}", bodies.body)
            elif verify:
                current, verified = self.write_body(current, bodies.body, revision=revision)
            else:
                current = self.client.update_issue(self.repo, current.number, body=bodies.body)
        changed = body_written or comments_written
        action = IssueAction.UNCHANGED
        if changed:
            action = IssueAction.WOULD_UPDATE if self.dry_run else IssueAction.UPDATED
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
        return _Written(current, result)

    def _compose(
        self,
        state: DashboardState,
        existing: str | None,
        revision: int | None,
        *,
        with_state: bool,
    ) -> IssueBodies:
        return compose_issue(
            state,
            existing_body=existing,
            revision=revision,
            budget=self.budget,
            style=self.style,
            with_state=with_state,
        )

    def _create_dashboard(
        self, state: DashboardState, *, revision: int | None, with_state: bool
    ) -> _Written:
        bodies = self._compose(state, None, revision, with_state=with_state)
        title = issue_title(state.key)
        if self.dry_run:
            self._plan("POST", f"new issue {title!r}", bodies.body)
            for part, text in enumerate(bodies.continuations, start=1):
                self._plan("POST", f"new comment on the new issue (part {part})", text)
            result = IssueResult(
                key=state.key,
                action=IssueAction.WOULD_CREATE,
                number=None,
                url=None,
                style=bodies.style,
            )
            return _Written(None, result)
        issue = self.create(title, bodies.body)
        ids, _ = self.sync_comments(issue.number, state.key, bodies.continuations, [])
        result = IssueResult(
            key=state.key,
            action=IssueAction.CREATED,
            number=issue.number,
            url=issue.html_url,
            comment_ids=ids,
            style=bodies.style,
            verified=issue.body == bodies.body,
        )
        return _Written(issue, result)

    # ----------------------------------------------------------------- the index

    def publish_index(
        self,
        states: Sequence[DashboardState],
        links: Mapping[str, str],
        candidates: Sequence[Issue],
        *,
        pin: bool,
        graphql_url: str | None,
    ) -> _Written:
        """Create or update the index issue, and pin it (best effort) when it was written."""
        keep = candidates[0] if candidates else None
        closed = tuple(
            dup.number for dup in candidates[1:] if keep and self.close_duplicate(dup, keep)
        )
        body = compose_index(
            states, links, existing_body=keep.body if keep else None, budget=self.budget
        )
        if keep is not None and keep.body == body:
            result = IssueResult(
                key=_INDEX_KEY,
                action=IssueAction.UNCHANGED,
                number=keep.number,
                url=keep.html_url,
                closed_duplicates=closed,
            )
            return _Written(keep, result)
        if self.dry_run:
            self._plan(
                "PATCH" if keep else "POST",
                f"issue #{keep.number}" if keep else "new index issue",
                body,
            )
            action = IssueAction.WOULD_UPDATE if keep else IssueAction.WOULD_CREATE
            result = IssueResult(
                key=_INDEX_KEY,
                action=action,
                number=keep.number if keep else None,
                url=keep.html_url if keep else None,
            )
            return _Written(keep, result)
        verified = True
        if keep is None:
            issue, action = self.create(INDEX_TITLE, body), IssueAction.CREATED
            verified = issue.body == body
        else:
            (issue, verified), action = (
                self.write_body(keep, body, revision=None),
                IssueAction.UPDATED,
            )
        if pin:
            self._pin(issue, graphql_url)
        result = IssueResult(
            key=_INDEX_KEY,
            action=action,
            number=issue.number,
            url=issue.html_url,
            closed_duplicates=closed,
            verified=verified,
        )
        return _Written(issue, result)

    def _pin(self, issue: Issue, graphql_url: str | None) -> None:
        try:
            self.client.pin_issue(issue.node_id, graphql_url=graphql_url)
        except GitHubAPIError as error:
            self.warn(
                f"could not pin the index issue #{issue.number} (not needed to publish): {error}"
            )


def _comment_plan(
    listing: Sequence[IssueComment], key: str, texts: Sequence[str]
) -> tuple[tuple[int, ...], list[tuple[int, str]], list[tuple[int, str]], list[int]]:
    """Ids in part order, and the creates (part, text), updates (id, text) and deletes (id)."""
    parts: dict[int, list[IssueComment]] = {}
    for comment in sorted(listing, key=lambda c: c.id):
        part = continuation_part(comment.body, key)
        if part is not None:
            parts.setdefault(part, []).append(comment)
    ids: list[int] = []
    creates: list[tuple[int, str]] = []
    updates: list[tuple[int, str]] = []
    deletes: list[int] = []
    for part, text in enumerate(texts, start=1):
        have = parts.pop(part, [])
        if not have:
            creates.append((part, text))
            continue
        ids.append(have[0].id)
        if have[0].body != text:
            updates.append((have[0].id, text))
        deletes.extend(c.id for c in have[1:])
    deletes.extend(c.id for extra in parts.values() for c in extra)
    return tuple(ids), creates, updates, deletes


def _dedupe_created(
    writer: _Writer, written: Mapping[str, _Written]
) -> dict[str, tuple[Issue, Issue]]:
    """List again after creating; per created key whose new issue is not the lowest numbered
    one of its dashboard: (the lowest, ours as listed now).

    Each job closes only the issue it created itself (the other creators close theirs); a
    create that GitHub applied twice (a POST retried after a 5xx) leaves the second, returned
    copy as "ours", so it is the one closed.
    """
    created = {
        key: w.issue
        for key, w in written.items()
        if w.result.action is IssueAction.CREATED and w.issue is not None
    }
    if not created:
        return {}
    again = writer.find()
    lost: dict[str, tuple[Issue, Issue]] = {}
    for key, mine in created.items():
        issues = again.by_key.get(key, [])
        listed = next((i for i in issues if i.number == mine.number), mine)
        if issues and issues[0].number != mine.number:
            lost[key] = (issues[0], listed)
    return lost


def publish_issues(
    client: GitHubClient,
    repo: str,
    states: Sequence[DashboardState],
    *,
    touched: Collection[str],
    revision: int | None,
    label: str = DEFAULT_LABEL,
    index: bool = True,
    pin_index: bool = False,
    dry_run: bool = False,
    log: IssueLog | None = None,
    style: Style = Style.IVY,
    graphql_url: str | None = None,
    budget: int = DEFAULT_BUDGET,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    settle: tuple[float, float] = SETTLE_DELAY,
) -> IssuesReport:
    """Publish each dashboard as an issue, and the index issue; see the module docstring.

    Dashboards whose keys are in ``touched`` are (re)written; the others only get an issue if
    they have none yet. ``states`` are every dashboard (the index counts them all). With
    ``dry_run`` nothing is written: the report lists the writes in ``planned``.

    With ``revision``, after writing it waits a jittered moment (``settle`` seconds), lists
    the issues again and rewrites any that a slower job meanwhile replaced with an older
    revision: issue edits have no compare-and-swap, so the newest writer checks its work.
    """
    writer = _Writer(
        client, repo, label=label, dry_run=dry_run, log=log or _Quiet(), style=style, budget=budget
    )
    found = writer.find()
    written: dict[str, _Written] = {}
    for state in sorted(states, key=lambda s: s.key):
        candidates = found.by_key.get(state.key, [])
        if candidates and state.key not in touched:
            keep = candidates[0]
            result = IssueResult(
                key=state.key, action=IssueAction.UNCHANGED, number=keep.number, url=keep.html_url
            )
            written[state.key] = _Written(keep, result)
            continue
        written[state.key] = writer.publish(state, candidates, revision=revision)
    by_key = {s.key: s for s in states}
    for key, (keep, mine) in _dedupe_created(writer, written).items():
        # Another job created this dashboard's issue first: ours is closed, theirs is written.
        writer.log.info(f"dashboard {key}: issue #{keep.number} came first; closing #{mine.number}")
        written[key] = writer.publish(by_key[key], [keep, mine], revision=revision)
    if revision is not None and not dry_run:
        _settle(
            writer,
            by_key,
            written,
            revision=revision,
            sleep=sleep,
            rng=rng or random.Random(),  # noqa: S311  -- jitter, not cryptography
            delay=settle,
        )
    index_result = None
    if index:
        index_result = _publish_index(
            writer, states, written, found, pin=pin_index, graphql_url=graphql_url
        )
    return IssuesReport(
        dashboards=tuple(w.result for w in written.values()),
        index=index_result,
        planned=tuple(writer.planned),
        warnings=tuple(writer.warnings),
    )


def _settle(
    writer: _Writer,
    by_key: Mapping[str, DashboardState],
    written: dict[str, _Written],
    *,
    revision: int,
    sleep: Callable[[float], None],
    rng: random.Random,
    delay: tuple[float, float],
) -> None:
    """Rewrite issues that a slower job replaced with an older revision after we wrote them.

    A job that read revision 14, then wrote 15 after this job wrote 16, leaves revision 15
    showing. The newest writer notices on one more listing and writes again.
    """
    ours = {
        key
        for key, w in written.items()
        if w.result.action in {IssueAction.CREATED, IssueAction.UPDATED}
    }
    for _ in range(SETTLE_ROUNDS):
        if not ours:
            return
        sleep(rng.uniform(*delay))
        found = writer.find()
        stale = [
            key
            for key in sorted(ours)
            if found.by_key.get(key) and (parse_revision(found.by_key[key][0].body) or 0) < revision
        ]
        if not stale:
            return
        for key in stale:
            writer.log.info(f"dashboard {key}: an older revision replaced ours; writing again")
            written[key] = writer.publish(by_key[key], found.by_key[key], revision=revision)


def _publish_index(
    writer: _Writer,
    states: Sequence[DashboardState],
    written: Mapping[str, _Written],
    found: _Found,
    *,
    pin: bool,
    graphql_url: str | None,
) -> IssueResult:
    links = {key: w.result.url for key, w in written.items() if w.result.url}
    candidates = found.by_key.get(_INDEX_KEY, [])
    done = writer.publish_index(states, links, candidates, pin=pin, graphql_url=graphql_url)
    if done.result.action is IssueAction.CREATED:
        lost = _dedupe_created(writer, {_INDEX_KEY: done})
        if _INDEX_KEY in lost:
            keep, mine = lost[_INDEX_KEY]
            done = writer.publish_index(
                states, links, [keep, mine], pin=False, graphql_url=graphql_url
            )
    return done.result


# ----------------------------------------------------------------------------- issue-body store

StoreChange = Callable[[Mapping[DashboardId, DashboardState]], Mapping[DashboardId, DashboardState]]


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueStoreOutcome:
    """What :meth:`IssueStore.update` ended with.

    ``states`` are the states last read back (or written); ``converged`` is False when other
    writers still replaced this job's cells after ``max_rounds`` rounds (a warning was logged).
    """

    states: Mapping[DashboardId, DashboardState]
    report: IssuesReport
    rounds: int
    converged: bool


class IssueStore:
    """Dashboard state kept in hidden blocks of the dashboard issues (no ``contents: write``).

    Best effort under concurrent writers; read the module docstring before relying on it.
    ``change`` is called once per round and must depend only on the states it is given
    (merging is idempotent, so calling it again on a state that has its cells changes nothing).
    """

    def __init__(
        self,
        client: GitHubClient,
        repo: str,
        *,
        label: str = DEFAULT_LABEL,
        style: Style = Style.IVY,
        index: bool = True,
        history: int = DEFAULT_HISTORY,
        log: IssueLog | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        max_rounds: int = 6,
        verify_rounds: int = 2,
        min_delay: float = 0.5,
        max_delay: float = 3.0,
        budget: int = DEFAULT_BUDGET,
    ) -> None:
        self.client = client
        self.repo = repo
        self.label = label
        self.style = style
        self.index = index
        self.history = history
        self.log: IssueLog = log or _Quiet()
        self._sleep = sleep
        self._rng = rng or random.Random()  # noqa: S311  -- jitter, not cryptography
        self.max_rounds = max(max_rounds, 1)
        self.verify_rounds = max(verify_rounds, 1)
        self.min_delay = min_delay
        self.max_delay = max(max_delay, min_delay)
        self.budget = budget

    def _writer(self) -> _Writer:
        return _Writer(
            self.client,
            self.repo,
            label=self.label,
            dry_run=False,
            log=self.log,
            style=self.style,
            budget=self.budget,
        )

    def _state_of(self, issues: Sequence[Issue]) -> DashboardState | None:
        """The union of the states in one dashboard's issues (several only after a race)."""
        merged = None
        for issue in issues:
            state = extract_state(issue.body, where=f"issue #{issue.number} of {self.repo}")
            if state is not None:
                merged = (
                    state if merged is None else union_states(merged, state, history=self.history)
                )
        return merged

    def load(self) -> dict[DashboardId, DashboardState]:
        """Every dashboard's state, read from the labelled issues (one listing)."""
        found = self._writer().find()
        states = {}
        for key, issues in found.by_key.items():
            if key == _INDEX_KEY:
                continue
            state = self._state_of(issues)
            if state is not None:
                states[state.id] = state
        return states

    def update(self, change: StoreChange) -> IssueStoreOutcome:
        """Load, ``change``, write the bodies, then verify and re-merge (see the module docs)."""
        writer = self._writer()
        found = writer.find()
        current: dict[DashboardId, DashboardState] = {}
        # By key: an issue without a state block (made by the branch mode) is still the one.
        issues = {key: listed for key, listed in found.by_key.items() if key != _INDEX_KEY}
        for listed in issues.values():
            state = self._state_of(listed)
            if state is not None:
                current[state.id] = state
        wanted = dict(change(current))
        pending = {d for d, s in wanted.items() if s != current.get(d) or d.key not in issues}
        ours = set(pending)
        written: dict[str, _Written] = {}
        confirmations = rounds = 0
        while True:
            rounds += 1
            for dashboard in sorted(pending, key=lambda d: d.key):
                done = writer.publish(
                    wanted[dashboard],
                    issues.get(dashboard.key, []),
                    revision=None,
                    with_state=True,
                    verify=False,
                )
                written[dashboard.key] = done
                if done.issue is not None:
                    issues[dashboard.key] = [done.issue]
            self._adopt_winners(writer, written, issues)
            self._sleep(self._rng.uniform(self.min_delay, self.max_delay))
            pending, wanted = self._verify(ours, issues, current, change)
            confirmations = 0 if pending else confirmations + 1
            if confirmations >= self.verify_rounds:
                converged = True
                break
            if rounds >= self.max_rounds:
                converged = not pending
                if pending:
                    writer.warn(
                        f"the dashboard issue(s) {', '.join(sorted(d.key for d in pending))} "
                        f"kept losing this job's results to other jobs writing at the same time "
                        f"({rounds} rounds); the next run will fill them in. Use the branch "
                        f"target or a fan-in job when matrix legs publish concurrently"
                    )
                break
        for key, listed in issues.items():
            if key not in written and listed:
                result = IssueResult(
                    key=key,
                    action=IssueAction.UNCHANGED,
                    number=listed[0].number,
                    url=listed[0].html_url,
                )
                written[key] = _Written(listed[0], result)
        index_result = None
        if self.index:
            states = sorted(current.values(), key=lambda s: s.key)
            index_result = _publish_index(
                writer, states, written, found, pin=False, graphql_url=None
            )
        report = IssuesReport(
            dashboards=tuple(w.result for _, w in sorted(written.items())),
            index=index_result,
            warnings=tuple(writer.warnings),
        )
        return IssueStoreOutcome(states=current, report=report, rounds=rounds, converged=converged)

    def _adopt_winners(
        self, writer: _Writer, written: dict[str, _Written], issues: dict[str, list[Issue]]
    ) -> None:
        """After creating: where another job's issue for the same dashboard came first, close
        ours and use theirs; the verify step that follows finds our cells missing there and
        writes them in the next round."""
        for key, (keep, mine) in _dedupe_created(writer, written).items():
            closed = writer.close_duplicate(mine, keep)
            issues[key] = [keep]
            written[key] = _Written(
                keep,
                IssueResult(
                    key=key,
                    action=IssueAction.UPDATED,
                    number=keep.number,
                    url=keep.html_url,
                    closed_duplicates=(mine.number,) if closed else (),
                ),
            )

    def _verify(
        self,
        ours: Collection[DashboardId],
        issues: dict[str, list[Issue]],
        current: dict[DashboardId, DashboardState],
        change: StoreChange,
    ) -> tuple[set[DashboardId], dict[DashboardId, DashboardState]]:
        """Read back every dashboard this job changed; return those still lacking its cells."""
        for dashboard in ours:
            listed = issues.get(dashboard.key)
            if not listed:
                continue
            back = self.client.get_issue(self.repo, listed[0].number)
            issues[dashboard.key] = [back]
            state = extract_state(back.body, where=f"issue #{back.number} of {self.repo}")
            if state is not None:
                current[dashboard] = state
            else:
                current.pop(dashboard, None)
        wanted = dict(change(current))
        pending = {d for d in ours if d not in current or wanted.get(d, current[d]) != current[d]}
        return pending, wanted
