"""The pr-comment target: one sticky comment per pull request with its verdicts.

I/O through :class:`CommentAPI` (the issue-comment calls of ``github.client.GitHubClient``; a pull
request is an issue for comments). The body and the merge of writers' cells are pure
(``pr/body.py``, ``pr/state.py``); this module finds the comment and writes it:

- **Ours**: a comment whose first line is ``comment_marker(pr)`` *and* whose author's login is
  the expected one (``pr-comment-author``, default ``github-actions[bot]``, the login
  GITHUB_TOKEN comments as). A copy of the marker by anyone else is never read, edited or
  deleted. ``GET /user`` is not used (installation tokens cannot call it); bot logins end in
  ``[bot]``, which no user login can, so the login alone names the app.
- **Compare and swap by re-reading**: GitHub has no conditional comment edit, so a writer
  lists the comments, merges its cells into the oldest of ours (``comment_update``: ``None``
  means nothing would change, and nothing is written; a comment about a newer head commit or
  run is never replaced), PATCHes it, lists again and checks that its cells are still there;
  if a concurrent writer's PATCH replaced them, it tries again after a random wait. The PATCH
  is sent once (never repeated by the client after an error: a late repeat of a stale body
  would drop the cells written meanwhile), and a writer is done only when it has seen its
  cells twice, ``SETTLE`` seconds apart, so that a writer which read the comment before they
  were added and wrote after the first look is caught.
- **No duplicates**: with no comment of ours yet, it POSTs one, then lists again. A POST that
  answered an error may have landed (and the client retries POSTs), so it never POSTs again
  without listing first; when two or more of ours exist, the oldest is kept, the others'
  cells are merged into it, and then they are deleted.
- **All green**: with ``pr-comment-when-green: nothing``, a pull request with no failing cell
  gets no new comment (an existing one is still brought up to date, so it does not keep
  saying that tests fail).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError
from ivy_matrix.github.types import IssueComment
from ivy_matrix.pr.body import comment_marker, comment_update, parse_comment, render_comment
from ivy_matrix.pr.state import CommentState, WhenGreen, has_failures, merge_states
from ivy_matrix.runner.log import Log

ROUNDS = 16
# Seconds: the random wait before round n is uniform in [0, min(WAIT_CAP, WAIT_BASE * 2**n)].
WAIT_BASE = 0.25
WAIT_CAP = 4.0
# A writer is done when it has seen its cells in the comment this many times in a row, SETTLE
# seconds apart: a concurrent writer that read the comment before they were added, and
# writes after one look, is caught by the next (its read-to-write time is far shorter).
CONFIRMATIONS = 2
SETTLE = 2.0


# Answers to a listing that another try will not change (404: no such pull request; 401: a bad
# token; 410: gone; 400, 422: invalid). Rate limits and 5xx are retried.
_FOR_GOOD = frozenset({400, 401, 404, 410, 422})


class UnlistableError(GitHubAPIError):
    """The pull request's comments cannot be listed for good (it does not exist, no access)."""


class CommentAPI(Protocol):
    """The issue-comment calls the target makes."""

    def list_issue_comments(self, repo: str, number: int) -> list[IssueComment]: ...

    def create_issue_comment(self, repo: str, number: int, body: str) -> IssueComment: ...

    def update_issue_comment(
        self, repo: str, comment_id: int, body: str, *, retry: bool = True
    ) -> IssueComment: ...

    def delete_issue_comment(self, repo: str, comment_id: int) -> bool: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class CommentResult:
    """What the target did: the comment's URL (None when there is none), and whether it wrote
    (``written``), found it already up to date, or left it alone (all green, ``nothing``)."""

    url: str | None
    written: bool
    rounds: int


def is_ours(comment: IssueComment, pr: int, author: str) -> bool:
    """Whether ``comment`` is this pull request's sticky comment by the expected author."""
    first = comment.body.split("\n", 1)[0].rstrip("\r")
    return first == comment_marker(pr) and comment.author.lower() == author.lower()


class PullRequestComment:
    """Writes one writer's :class:`CommentState` into the pull request's sticky comment."""

    def __init__(
        self,
        api: CommentAPI,
        repo: str,
        *,
        author: str,
        when_green: WhenGreen,
        log: Log,
        sleep: Callable[[float], None],
        rng: random.Random | None = None,
    ) -> None:
        self.api = api
        self.repo = repo
        self.author = author
        self.when_green = when_green
        self.log = log
        self.sleep = sleep
        self.rng = rng or random.Random()  # noqa: S311  -- jitter, not cryptography

    def _ours(self, pr: int) -> list[IssueComment]:
        try:
            listed = self.api.list_issue_comments(self.repo, pr)
        except ReadOnlyTokenError:
            raise
        except GitHubAPIError as error:
            if error.status in _FOR_GOOD:
                raise UnlistableError(str(error), status=error.status) from None
            raise
        found = [c for c in listed if is_ours(c, pr, self.author)]
        return sorted(found, key=lambda c: c.id)

    def _wait(self, attempt: int) -> None:
        self.sleep(self.rng.uniform(0, min(WAIT_CAP, WAIT_BASE * 2**attempt)))

    def publish(self, state: CommentState) -> CommentResult:
        """Merge ``state`` into the comment (see the module docstring); raises
        :class:`~ivy_matrix.errors.ReadOnlyTokenError` when the token cannot write.

        Any other error of GitHub's (what the client's own retries did not get past) ends the
        round, and the next round starts again from a fresh listing.
        """
        written: list[bool] = []
        seen = 0
        for attempt in range(ROUNDS):
            if seen:
                self.sleep(self.rng.uniform(SETTLE, 1.5 * SETTLE))
            elif attempt:
                self._wait(attempt)
            try:
                before = len(written)
                done = self._round(state, written)
            except ReadOnlyTokenError:
                raise
            except UnlistableError as error:
                self.log.warning(f"cannot write the comment on pull request #{state.pr}: {error}")
                return CommentResult(url=None, written=bool(written), rounds=attempt + 1)
            except GitHubAPIError as error:
                self.log.warning(f"the comment on pull request #{state.pr}: {error}; retrying")
                seen = 0
                continue
            seen = seen + 1 if done is not None and len(written) == before else 0
            if done == "" or seen >= CONFIRMATIONS:
                return CommentResult(url=done or None, written=bool(written), rounds=attempt + 1)
        self.log.warning(
            f"the comment on pull request #{state.pr} did not settle after {ROUNDS} rounds of "
            f"concurrent writes or errors; a later run will bring it up to date"
        )
        return CommentResult(url=None, written=bool(written), rounds=ROUNDS)

    def _round(self, state: CommentState, written: list[bool]) -> str | None:
        """One read-merge-write; the comment's URL ("" for none) when it needs no more."""
        pr = state.pr
        ours = self._ours(pr)
        if not ours:
            if self.when_green is WhenGreen.NOTHING and not has_failures(state):
                self.log.info(f"pull request #{pr}: no failing test, so no comment")
                return ""
            written.append(True)
            self._create(state)
            return None
        keep, extras = ours[0], ours[1:]
        combined = self._with_extras(state, extras)
        body = comment_update(keep.body, combined)
        if body is None and not extras:
            return keep.html_url
        if body is not None:
            written.append(True)
            # Sent once: a repeat after a wait could land over a newer writer's cells.
            self.api.update_issue_comment(self.repo, keep.id, body, retry=False)
        for extra in extras:
            written.append(True)
            self.api.delete_issue_comment(self.repo, extra.id)
        return None

    def _create(self, state: CommentState) -> None:
        """POST a new comment; an error is only logged, since the comment may have landed
        (the caller lists again before any retry)."""
        try:
            self.api.create_issue_comment(self.repo, state.pr, render_comment(state))
        except ReadOnlyTokenError:
            raise
        except GitHubAPIError as error:
            self.log.warning(f"commenting on pull request #{state.pr}: {error}; retrying")

    @staticmethod
    def _with_extras(state: CommentState, extras: Sequence[IssueComment]) -> CommentState:
        """``state`` with the cells of duplicate comments merged in (they are about to go)."""
        for extra in extras:
            found = parse_comment(extra.body)
            if found is not None and found.pr == state.pr:
                state = merge_states(state, found)
        return state
