"""Writing one dashboard's issue: find ours by marker, write bodies that took, keep one of each.

I/O, through :class:`~ivy_matrix.github_api.IssueAPI` only; the bodies come from
``issue_bodies.py``. Every call needs ``permissions: issues: write``; a read-only token (fork
or Dependabot pull request) raises :class:`~ivy_matrix.errors.ReadOnlyTokenError`, which the
update turns into "step summary only". ``targets/issues.py`` (dashboards published from the
branch store's state) and ``stores/issues.py`` (the issue-body store) both write through the
:class:`IssueWriter` here.

**Finding issues.** A call lists the issues with the label (``ivy-matrix`` by default) once,
``state=all``, all pages of 100, pull requests left out, and matches the hidden marker on each
body's first line. A dashboard with no issue gets one (the label is created first if missing).
Two jobs can both find nothing and both create, and a create POST retried after a 5xx can land
twice (PLATFORM.md 1.3), so after creating, the issues are listed again (:func:`dedupe_created`):
the lowest number is kept, the others are closed with a comment pointing to it and lose the
label, and what was meant for them is written to the one kept.

A create POST is never resent blindly: after a 5xx or a network error (the issue may exist
anyway) the issues are listed and one with the marker is taken before creating again. With the
branch target, creating goes through a git-ref lock per dashboard (``issue_locks.py``), so at
most one job ever creates a given dashboard's issue; the de-duplication stays as a last resort.

**Writing.** A body that did not change is not written. With ``revision`` (the branch store's
revision of the state the bodies were rendered from) the current body is read just before the
write and a newer revision is never replaced by an older one. After every write the body is
read back and compared, because GitHub has been reported to accept large writes silently
without applying them; a mismatch is written once more, then reported as a warning.
Continuation comments (tables too big for the body) are updated in place, created when
missing and deleted when the table shrinks. Requests grow with the number of dashboards (and
of 65,536-character parts), never with the number of tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github_types import Issue, IssueAPI, IssueComment
from ivy_matrix.issue_bodies import IssueBodies, compose_issue
from ivy_matrix.issue_markers import (
    continuation_part,
    dashboard_key,
    is_index,
    issue_title,
    parse_parts,
    parse_revision,
)
from ivy_matrix.model import DashboardState
from ivy_matrix.progress import Progress
from ivy_matrix.render import Style
from ivy_matrix.targets.issue_results import IssueAction, IssueResult, PlannedWrite

LABEL_COLOR = "0e8a16"
LABEL_DESCRIPTION = "Test dashboards kept up to date by ivy-matrix"
INDEX_KEY = "\0index"  # cannot collide with a dashboard key in the maps below
CREATE_TRIES = 4  # create POSTs per issue, each after listing finds it did not land
# GitHub allows about 80 content-creating requests a minute per repository (PLATFORM.md 1.2):
# a writer's first PACE_FROM writes go at once, every later one PACE_SECONDS after the last.
PACE_FROM = 20
PACE_SECONDS = 60 / 80


@dataclass(slots=True)
class Found:
    """Our issues in one listing: per dashboard key (and the index), lowest number first."""

    by_key: dict[str, list[Issue]] = field(default_factory=dict)


@dataclass(slots=True)
class Written:
    """An issue this call wrote or kept, as the next steps need it."""

    issue: Issue | None
    result: IssueResult


class IssueWriter:
    """The write rules shared by :func:`publish_issues` and :class:`IssueStore`."""

    def __init__(
        self,
        client: IssueAPI,
        repo: str,
        *,
        label: str,
        dry_run: bool,
        log: Progress,
        style: Style,
        budget: int,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.sleep = sleep
        self.repo = repo
        self.label = label
        self.dry_run = dry_run
        self.log = log
        self.style = style
        self.budget = budget
        self.planned: list[PlannedWrite] = []
        self.warnings: list[str] = []
        self._label_ready = False
        self.writes = 0  # content-creating requests made (see _pace)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        self.log.warning(message)

    # ----------------------------------------------------------------- reading

    def find(self) -> Found:
        """List the labelled issues once and group ours by marker."""
        found = Found()
        for issue in self.client.list_issues(self.repo, label=self.label):
            key = INDEX_KEY if is_index(issue.body) else dashboard_key(issue.body)
            if key is not None:
                found.by_key.setdefault(key, []).append(issue)
        for issues in found.by_key.values():
            issues.sort(key=lambda i: i.number)
        return found

    # ----------------------------------------------------------------- writing

    def plan(self, method: str, target: str, body: str | None = None) -> None:
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
        issue = self._post_issue(title, body)
        self.log.info(f"created issue #{issue.number} ({title})")
        back = self.client.get_issue(self.repo, issue.number)
        if back.body != body:
            return self.write_body(back, body, revision=None)[0]
        return back

    def _post_issue(self, title: str, body: str) -> Issue:
        """POST the issue; after an answer that leaves it unknown whether it landed, list the
        issues and take ours if it is there, else POST again (at most ``CREATE_TRIES``)."""
        key = INDEX_KEY if is_index(body) else dashboard_key(body)
        tries = 0
        while True:
            self._pace()
            try:
                return self.client.create_issue(
                    self.repo, title=title, body=body, labels=[self.label]
                )
            except GitHubAPIError as error:
                tries += 1
                unsure = error.status is None or 500 <= error.status <= 599  # noqa: PLR2004
                if not unsure or tries >= CREATE_TRIES:
                    raise
                self.log.info(f"creating {title!r}: {error}; looking for it before trying again")
            self.sleep(min(2.0**tries, 30.0))
            landed = self.find().by_key.get(key) if key is not None else None
            if landed:
                self.log.info(f"issue #{landed[0].number} ({title}) was created after all")
                return landed[0]

    def write_body(self, issue: Issue, body: str, *, revision: int | None) -> tuple[Issue, bool]:
        """PATCH the body and check that it took, retry once on a mismatch; (issue, verified).

        The edit's own answer carries the body GitHub stored; only when it differs (a write
        accepted but not applied has been reported) is the issue read again.
        """
        back = issue
        for attempt in range(2):
            self._pace()
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
            self.plan("PATCH", f"issue #{duplicate.number} (close as duplicate of #{keep.number})")
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
                    self.plan("POST", f"new comment on issue #{number} (part {part})", text)
                for comment_id, text in updates:
                    self.plan("PATCH", f"comment {comment_id} on issue #{number}", text)
                for comment_id in deletes:
                    self.plan("DELETE", f"comment {comment_id} on issue #{number}")
                return ids, True
            for _, text in creates:
                self._pace()
                self.client.create_issue_comment(self.repo, number, text)
            for comment_id, text in updates:
                self._pace()
                self.client.update_issue_comment(self.repo, comment_id, text)
            for comment_id in deletes:
                self._pace()
                self.client.delete_issue_comment(self.repo, comment_id)
            wrote = True
            listing = self.client.list_issue_comments(self.repo, number)
        self.warn(
            f"issue #{number}: the continuation comments of {key!r} still differ after a "
            f"second write; they may be out of date"
        )
        return ids, wrote

    def _pace(self) -> None:
        """Count a content-creating write; past the first PACE_FROM, wait before it."""
        if self.writes >= PACE_FROM:
            self.sleep(PACE_SECONDS)
        self.writes += 1

    # ----------------------------------------------------------------- one dashboard

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


def dedupe_created(
    writer: IssueWriter, written: Mapping[str, Written]
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
