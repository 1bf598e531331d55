"""The read-back rounds: a body or a set of continuation comments written, read back, fixed once.

I/O, through :class:`~ivy_matrix.github.types.IssueAPI`: ``PATCH`` and ``GET`` of an issue;
list, ``POST``, ``PATCH`` and ``DELETE`` of its comments. Every call needs ``permissions:
issues: write``; a read-only token raises :class:`~ivy_matrix.errors.ReadOnlyTokenError`. In:
the issue (or its number and current comments) and the text it should hold; out: what GitHub
shows afterwards and whether it matched. A difference that remains after the second round is a
warning (on the writer's ``warnings``), never an error.

GitHub has been reported to accept large writes silently without applying them, so after every
write the result is read back and compared; a mismatch is written once more. With
``revision`` (the branch store's revision the body was rendered from) a newer revision found
when reading back is left alone. Continuation comments (tables too big for the body) are
matched by their part marker, updated in place, created when missing and deleted when the table
shrinks or a part was posted twice. A dry run plans the comment writes instead of making them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ivy_matrix.github.types import Issue, IssueComment
from ivy_matrix.issues.markers import continuation_part, parse_revision
from ivy_matrix.issues.requests import IssueRequests


class VerifiedWrites(IssueRequests):
    """Writes of issue bodies and continuation comments that are read back and fixed once."""

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
