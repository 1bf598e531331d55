"""Writing one dashboard's issue: create it or bring it (and its continuation comments) up to date.

I/O, through :class:`~ivy_matrix.github.types.IssueAPI` only, in the layers below
:class:`IssueWriter`: ``issues/requests.py`` (shared state, pace, dry-run plan),
``issues/verify.py`` (writes read back: issue ``PATCH``/``GET``, comment list, ``POST``,
``PATCH``, ``DELETE``) and ``issues/finding.py`` (listing, creating and closing issues). Every
call needs ``permissions: issues: write``; a read-only token (fork or Dependabot pull request)
raises :class:`~ivy_matrix.errors.ReadOnlyTokenError`, which the update turns into "step
summary only". ``issues/publish.py`` (dashboards published from the branch store's state) and
``issues/store.py`` (the issue-body store) both write through the :class:`IssueWriter` here.
In: a dashboard's state and the issues ``find`` listed for it; out: :class:`Written` (the issue
and its :class:`~ivy_matrix.issues.report.IssueResult`).

**Writing.** The bodies come from ``issues.bodies.compose_issue``. A body that did not change is
not written. With ``revision`` (the branch store's revision of the state the bodies were
rendered from) the current body is read just before the write and a newer revision is never
replaced by an older one. Continuation comments are kept equal to the composed ones. Requests
grow with the number of dashboards (and of 65,536-character parts), never with the number of
tests.

**After creating.** Two jobs can both find nothing and both create, so after creating, the
issues are listed again (:func:`dedupe_created`): the lowest number is kept, the others are
closed (``IssueFinder.close_duplicate``), and what was meant for them is written to the one
kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ivy_matrix.github.types import Issue, IssueComment
from ivy_matrix.issues.bodies import IssueBodies, compose_issue
from ivy_matrix.issues.finding import IssueFinder
from ivy_matrix.issues.markers import issue_title, parse_parts, parse_revision
from ivy_matrix.issues.report import IssueAction, IssueResult
from ivy_matrix.model import DashboardState


@dataclass(slots=True)
class Written:
    """An issue this call wrote or kept, as the next steps need it."""

    issue: Issue | None
    result: IssueResult


class IssueWriter(IssueFinder):
    """The write rules shared by :func:`publish_issues` and :class:`IssueStore`."""

    def publish(
        self,
        state: DashboardState,
        candidates: Sequence[Issue],
        *,
        revision: int | None,
        with_state: bool = False,
        verify: bool = True,
    ) -> Written:
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
            return Written(current, result)
        return self._update(
            state, current, closed, revision=revision, with_state=with_state, verify=verify
        )

    def _update(
        self,
        state: DashboardState,
        current: Issue,
        closed: tuple[int, ...],
        *,
        revision: int | None,
        with_state: bool,
        verify: bool,
    ) -> Written:
        """Bring an existing issue (and its continuation comments) to the new bodies."""
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
                self.plan("PATCH", f"issue #{current.number}", bodies.body)
            elif verify:
                current, verified = self.write_body(current, bodies.body, revision=revision)
            else:
                self._pace()
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
        return Written(current, result)

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
    ) -> Written:
        bodies = self._compose(state, None, revision, with_state=with_state)
        title = issue_title(state.key)
        if self.dry_run:
            self.plan("POST", f"new issue {title!r}", bodies.body)
            for part, text in enumerate(bodies.continuations, start=1):
                self.plan("POST", f"new comment on the new issue (part {part})", text)
            result = IssueResult(
                key=state.key,
                action=IssueAction.WOULD_CREATE,
                number=None,
                url=None,
                style=bodies.style,
            )
            return Written(None, result)
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
        return Written(issue, result)


def dedupe_created(
    writer: IssueFinder, written: Mapping[str, Written]
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
