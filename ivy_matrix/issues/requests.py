"""How an issue writer's requests go out: paced, planned in a dry run, and read back.

I/O, through :class:`~ivy_matrix.github.types.IssueAPI`: ``PATCH`` and ``GET`` of an issue;
list, ``POST``, ``PATCH`` and ``DELETE`` of its comments. Every call needs ``permissions:
issues: write``; a read-only token raises :class:`~ivy_matrix.errors.ReadOnlyTokenError`.
Two small collaborators of :class:`~ivy_matrix.issues.writer.IssueWriter`:

- :class:`Requests`: the client and repository every call goes to, the pace of the
  content-creating writes, and what a call records: ``planned`` (the writes a dry run would
  have made) and ``warnings`` (also logged as they happen). The writer's other collaborators
  share one, so that every write counts towards one pace.
- :class:`ReadBack`: writes of a body or of a set of continuation comments, read back and
  fixed once. A difference that remains after the second round is a warning, never an error.

**Pace.** GitHub allows 80 content-creating requests a minute per repository (PLATFORM.md
1.2): every such write is counted with :meth:`Requests.pace`, which lets the first
:data:`PACE_FROM` writes go at once and waits :data:`PACE_SECONDS` before every later one, so
that no minute holds more than 70 of one writer's.

**Read back.** GitHub has been reported to accept large writes silently without applying
them, so after every write the result is read back and compared; a mismatch is written once
more. With ``revision`` (the branch store's revision the body was rendered from) a newer
revision found when reading back is left alone. Continuation comments (tables too big for the
body) are matched by their part marker, updated in place, created when missing and deleted when
the table shrinks or a part was posted twice. A dry run plans the comment writes instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ivy_matrix.github.types import Issue, IssueAPI, IssueComment
from ivy_matrix.issues.markers import continuation_part, parse_revision, shows_newer
from ivy_matrix.issues.report import PlannedWrite
from ivy_matrix.runner.log import Progress

# GitHub allows 80 content-creating requests a minute per repository (PLATFORM.md 1.2): a
# writer's first PACE_FROM writes go at once, every later one PACE_SECONDS after the last, so
# that no minute holds more than PACE_FROM + 60 / PACE_SECONDS (70) of them, which leaves room
# for the branch's commit and for other jobs.
PACE_FROM = 10
PACE_SECONDS = 1.0


class Requests:
    """Where an issue writer's calls go, how fast it writes, and what it planned and warned."""

    def __init__(
        self,
        client: IssueAPI,
        repo: str,
        *,
        dry_run: bool,
        log: Progress,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.repo = repo
        self.dry_run = dry_run
        self.log = log
        self.sleep = sleep
        self.planned: list[PlannedWrite] = []
        self.warnings: list[str] = []
        self.writes = 0  # content-creating requests made (see pace)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        self.log.warning(message)

    def plan(self, method: str, target: str, body: str | None = None) -> None:
        """Record a write a dry run would have made."""
        self.planned.append(PlannedWrite(method=method, target=target, body=body))

    def pace(self) -> None:
        """Count a content-creating write; past the first PACE_FROM, wait before it."""
        if self.writes >= PACE_FROM:
            self.sleep(PACE_SECONDS)
        self.writes += 1


class ReadBack:
    """Writes of issue bodies and continuation comments that are read back and fixed once."""

    def __init__(self, requests: Requests) -> None:
        self.requests = requests

    def write_body(self, issue: Issue, body: str, *, revision: int | None) -> tuple[Issue, bool]:
        """PATCH the body and check that it took, retry once on a mismatch; (issue, verified).

        The edit's own answer carries the body GitHub stored; only when it differs (a write
        accepted but not applied has been reported) is the issue read again.
        """
        calls = self.requests
        back = issue
        for attempt in range(2):
            calls.pace()
            back = calls.client.update_issue(calls.repo, issue.number, body=body)
            if back.body == body:
                return back, True  # the answer to the edit shows it applied
            back = calls.client.get_issue(calls.repo, issue.number)
            if back.body == body:
                return back, True
            if shows_newer(back.body, revision):
                calls.log.info(
                    f"issue #{issue.number}: another job wrote revision "
                    f"{parse_revision(back.body)} meanwhile, "
                    f"newer than this run's {revision}; leaving it"
                )
                return back, True
            if attempt == 0:
                calls.log.info(f"issue #{issue.number}: the body read back differs; writing again")
        calls.warn(
            f"issue #{issue.number}: GitHub accepted the new body but still shows another one "
            f"after a second write (another job may be writing it too); it may be out of date"
        )
        return back, False

    def sync_comments(
        self,
        number: int,
        key: str,
        texts: Sequence[str],
        listing: list[IssueComment] | None,
        *,
        author: str,
    ) -> tuple[tuple[int, ...], bool]:
        """Make the continuation comments of ``key`` on issue ``number`` equal ``texts``.

        ``listing`` is the issue's comments when the caller knows them (None: list them).
        Only comments by ``author``, the login that opened the issue (this tool's token: it
        creates every dashboard issue), are continuation comments: anyone may write a comment
        that starts like one, and such a comment is never edited or deleted.
        Returns the comment ids in part order and whether any write was made (or planned).
        """
        calls = self.requests
        if listing is None:
            listing = calls.client.list_issue_comments(calls.repo, number)
        wrote = False
        for attempt in range(3):
            ids, creates, updates, deletes = _comment_plan(listing, key, texts, author)
            if not (creates or updates or deletes):
                return ids, wrote
            if attempt == 2:  # noqa: PLR2004  -- the writes were repeated once already
                break
            if calls.dry_run:
                for part, text in creates:
                    calls.plan("POST", f"new comment on issue #{number} (part {part})", text)
                for comment_id, text in updates:
                    calls.plan("PATCH", f"comment {comment_id} on issue #{number}", text)
                for comment_id in deletes:
                    calls.plan("DELETE", f"comment {comment_id} on issue #{number}")
                return ids, True
            for _, text in creates:
                calls.pace()
                calls.client.create_issue_comment(calls.repo, number, text)
            for comment_id, text in updates:
                calls.pace()
                calls.client.update_issue_comment(calls.repo, comment_id, text)
            for comment_id in deletes:
                calls.pace()
                calls.client.delete_issue_comment(calls.repo, comment_id)
            wrote = True
            listing = calls.client.list_issue_comments(calls.repo, number)
        calls.warn(
            f"issue #{number}: the continuation comments of {key!r} still differ after a "
            f"second write; they may be out of date"
        )
        return ids, wrote


def _comment_plan(
    listing: Sequence[IssueComment], key: str, texts: Sequence[str], author: str
) -> tuple[tuple[int, ...], list[tuple[int, str]], list[tuple[int, str]], list[int]]:
    """Ids in part order, and the creates (part, text), updates (id, text) and deletes (id)."""
    parts: dict[int, list[IssueComment]] = {}
    for comment in sorted(listing, key=lambda c: c.id):
        if comment.author.lower() != author.lower():
            continue  # not written by this tool's login: never ours to edit or delete
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
