"""The pr-comment target: one sticky comment per pull request, showing every writer's verdicts.

I/O through :class:`CommentAPI` (the issue-comment calls of ``github.client.GitHubClient``; a pull
request is an issue for comments) and the verdict ref (``pr/verdict_ref.py``). GitHub has no
conditional comment edit, so writers that edit one comment at once overwrite each other. The
verdicts therefore live in the verdict ref, which has compare and swap, and the comment is a
projection of them written by one writer at a time:

1. **Record.** A writer merges its verdicts into the ref's record (``pr/state.py``
   ``merge_states``), one compare-and-swap commit; a change raises the record's ``version``.
   In the same commit it takes the **lease** (the right to write the comment) when nobody holds
   it and the comment is behind (``shown`` < ``version``). A writer that finds the lease held
   is done: the holder shows its verdicts (below). Nothing changed and the comment current:
   nothing is written at all.
2. **Show** (the lease holder only). It renders the record and writes the comment, then
   records ``shown`` and gives the lease back in one compare-and-swap commit; if the record
   moved meanwhile (other writers recorded theirs), that commit fails, and it shows the newer
   record after a short wait (so writers finishing together cost one more edit, not one each).
   So the last version recorded is always the one shown, and the comment is written by one
   writer at a time: no edit is lost, and there is no need to read the comment back.
3. **Which comment.** Its id is kept in the record. Without one, the holder lists the pull
   request's comments: ours is the oldest whose first line is ``comment_marker(pr)`` *and*
   whose author's login is the expected one (``pr-comment-author``, default
   ``github-actions[bot]``); a copy of the marker by anyone else is never read, edited or
   deleted. With none of ours it POSTs one and lists again: a POST that landed twice (the client
   retries POSTs) leaves duplicates of ours, and all but the oldest are deleted. Only the lease
   holder creates, so writers finishing together do not each post a comment.
4. **All green.** With ``pr-comment-when-green: nothing``, a pull request with no failing cell
   gets no new comment (an existing one is still brought up to date).

A holder that cannot write the comment (GitHub errors that the client's retries did not get
past) tries again for a few rounds, then gives the lease back with the comment behind: the next
writer takes over. A lease whose holder has not written the record for ``LEASE_TTL`` seconds
(a job killed while it held it) is taken over the same way. The comment's text is never parsed:
only its first line is compared with the marker, so no hand edit can slow a writer down, and a
hand edit loses nothing, since the next holder writes the comment from the record.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError
from ivy_matrix.github.types import IssueComment
from ivy_matrix.pr.body import comment_marker, render_comment
from ivy_matrix.pr.comment_state import (
    CommentState,
    Lease,
    RefState,
    has_failures,
    merge_states,
)
from ivy_matrix.pr.verdict_ref import NewerRecordError, Read, RecordTooLargeError, VerdictRef
from ivy_matrix.pr.verdicts import CellKey
from ivy_matrix.pr.when_green import WhenGreen
from ivy_matrix.runner.log import Log

ROUNDS = 12  # rounds of writing the comment by one lease holder
FAILED_ROUNDS = 8  # and rounds that failed (GitHub errors past the client's own retries)
TRIES = 30  # compare-and-swap tries on the verdict ref
# Seconds: a lease whose holder has not written the record for this long is taken over.
LEASE_TTL = 600.0
# Seconds: the holder waits SETTLE * 2**(n-1), at most SETTLE_CAP, before showing round n.
SETTLE = 1.0
SETTLE_CAP = 30.0
# Seconds: the random wait before compare-and-swap try n is uniform in
# [0, min(BACKOFF_CAP, BACKOFF_BASE * 2**n)].
BACKOFF_BASE = 0.25
BACKOFF_CAP = 4.0


# Answers to a listing that another try will not change (404: no such pull request; 401: a bad
# token; 410: gone; 400, 422: invalid). Rate limits and 5xx are retried.
_FOR_GOOD = frozenset({400, 401, 404, 410, 422})
_GONE = frozenset({404, 410})


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
    """What the target did: the comment's URL (None when this writer did not show it), whether
    it wrote the comment, and how many rounds of showing it took (0: another writer shows);
    ``comment_id``: the comment the record names (None: none yet), shown by this writer or
    another."""

    url: str | None
    written: bool
    rounds: int
    comment_id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Shown:
    """The comment after one round of showing: its id and URL (None: there is none) and body."""

    comment_id: int | None
    url: str | None
    body: str
    wrote: bool


def is_ours(comment: IssueComment, pr: int, author: str) -> bool:
    """Whether ``comment`` is this pull request's sticky comment by the expected author: its
    first line is the marker. Only a bounded prefix of the body is looked at, whatever its size.
    """
    marker = comment_marker(pr)
    body = comment.body
    if comment.author.lower() != author.lower() or not body.startswith(marker):
        return False
    rest = body[len(marker) : len(marker) + 2]
    return rest in {"", "\r", "\r\n"} or rest.startswith("\n")


def _nothing_to_do(old: RefState | None, mine: CommentState) -> str:
    """Why a writer whose record changes nothing writes nothing (for the log)."""
    if old is not None and (old.verdicts.run.run_id, old.verdicts.head) > (
        mine.run.run_id,
        mine.head,
    ):
        return "the comment is about a newer run or head; these verdicts are not shown"
    if old is not None and old.lease is not None and old.shown < old.version:
        return "these verdicts are recorded, and another job is writing the comment"
    return "these verdicts are recorded and shown"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommentLook:
    """Whose comment is ours (``author``'s login), what an all-green pull request gets, and
    where the HTML site is served ("" for no link)."""

    author: str
    when_green: WhenGreen
    site_url: str = ""


class PullRequestComment:
    """Records one writer's verdicts and keeps the sticky comment showing every writer's."""

    def __init__(
        self,
        api: CommentAPI,
        ref: VerdictRef,
        repo: str,
        *,
        look: CommentLook,
        log: Log,
        sleep: Callable[[float], None],
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        writer: str = "",
    ) -> None:
        self.api = api
        self.ref = ref
        self.repo = repo
        self.look = look
        self.log = log
        self.sleep = sleep
        self.clock = clock
        self.rng = rng or random.Random()  # noqa: S311  -- jitter, not cryptography
        # Who holds a lease: the job, and a random part so that two processes never match.
        self.me = f"{writer or 'writer'}-{self.rng.getrandbits(48):012x}"

    # ------------------------------------------------------------------------------ record

    def publish(self, mine: CommentState, ran: Mapping[CellKey, int]) -> CommentResult:
        """Record ``mine`` (``ran``: every cell its writer ran) and, holding the lease, show
        the record; :class:`~ivy_matrix.errors.ReadOnlyTokenError` when the token cannot write.
        """
        nothing = CommentResult(url=None, written=False, rounds=0)
        try:
            recorded = self._record(mine, ran)
        except NewerRecordError as error:
            self.log.warning(f"pull request #{mine.pr}: {error}")
            return nothing
        except RecordTooLargeError as error:
            self.log.warning(
                f"pull request #{mine.pr}: {error}; these verdicts are not recorded and the "
                f"comment is not updated (fail-on: new still counts them)"
            )
            return nothing
        if recorded is None:
            return nothing
        state, holder = recorded
        if not holder:
            return replace(nothing, comment_id=state.comment_id)
        return self._show_until_current(state)

    def _read(self) -> Read:
        found = self.ref.read()
        if found.damage:
            self.log.warning(f"{self.ref.ref}: {found.damage}; starting the record afresh")
        return found

    def _backoff(self, attempt: int) -> None:
        self.sleep(self.rng.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt)))

    def _is_free(self, lease: Lease | None) -> bool:
        return lease is None or lease.holder == self.me or self.clock() - lease.at > LEASE_TTL

    def _record(
        self, mine: CommentState, ran: Mapping[CellKey, int]
    ) -> tuple[RefState, bool] | None:
        """Merge ``mine`` into the record: the record as written (or found, when nothing was
        written) and whether this writer holds the lease; None when it could not be written."""
        message = f"ivy-matrix: verdicts of run {mine.run.run_id} attempt {mine.run.run_attempt}"
        for attempt in range(TRIES):
            if attempt:
                self._backoff(attempt)
            found = self._read()
            old = found.state
            verdicts = merge_states(None if old is None else old.verdicts, mine, ran)
            # A new run's or head's verdicts (or none readable before): the ref keeps no history.
            afresh = old is None or (old.verdicts.run.run_id, old.verdicts.head) != (
                verdicts.run.run_id,
                verdicts.head,
            )
            changed = old is None or verdicts != old.verdicts
            version = (0 if old is None else old.version) + changed
            shown = 0 if old is None else old.shown
            take = shown < version and self._is_free(None if old is None else old.lease)
            if not (changed or take):
                self.log.info(f"pull request #{mine.pr}: {_nothing_to_do(old, mine)}")
                return None if old is None else (old, False)
            state = RefState(
                verdicts=verdicts,
                version=version,
                shown=shown,
                comment_id=None if old is None else old.comment_id,
                lease=Lease(holder=self.me, at=self.clock())
                if take
                else (None if old is None else old.lease),
            )
            if self.ref.write(found.tip, state, message, afresh=afresh) is not None:
                return state, take
        self.log.warning(
            f"pull request #{mine.pr}: could not record the verdicts in {self.ref.ref} after "
            f"{TRIES} tries (other writers kept moving it); a later run will bring the comment "
            f"up to date"
        )
        return None

    # -------------------------------------------------------------------------------- show

    def _show_until_current(self, state: RefState) -> CommentResult:
        """Show the record until the version shown is the newest recorded (module docstring)."""
        pr = state.verdicts.pr
        comment_id, written, rounds, failed = state.comment_id, False, 0, 0
        last: _Shown | None = None
        while rounds < ROUNDS and failed < FAILED_ROUNDS:
            if rounds or failed:
                self.sleep(min(SETTLE_CAP, SETTLE * 2 ** (rounds + failed - 1)))
            try:
                shown = self._show(state, comment_id, last)
            except ReadOnlyTokenError:
                self._hand_back(state.version, comment_id, shown_now=False)
                raise
            except UnlistableError as error:
                self.log.warning(f"cannot write the comment on pull request #{pr}: {error}")
                self._hand_back(state.version, comment_id, shown_now=False)
                return CommentResult(
                    url=None, written=written, rounds=rounds + 1, comment_id=comment_id
                )
            except GitHubAPIError as error:
                self.log.warning(f"the comment on pull request #{pr}: {error}; retrying")
                failed += 1
                continue
            rounds += 1
            comment_id, last = shown.comment_id, shown
            written = written or shown.wrote
            newer = self._hand_back(state.version, comment_id, shown_now=True)
            if newer is None:
                return CommentResult(
                    url=shown.url, written=written, rounds=rounds, comment_id=comment_id
                )
            state = newer
        self._hand_back(state.version, comment_id, shown_now=False)
        self.log.warning(
            f"the comment on pull request #{pr} is not up to date after {rounds + failed} rounds "
            f"of writing it; the next job that records verdicts will bring it up to date"
        )
        return CommentResult(
            url=None if last is None else last.url,
            written=written,
            rounds=rounds,
            comment_id=comment_id,
        )

    def _hand_back(
        self, version: int, comment_id: int | None, *, shown_now: bool
    ) -> RefState | None:
        """Record that ``version`` is shown (with ``shown_now``) and give the lease back; the
        newer record to show instead when other writers recorded theirs meanwhile. None: done
        (or the lease was taken over, and its new holder shows the rest)."""
        for attempt in range(TRIES):
            if attempt:
                self._backoff(attempt)
            try:
                found = self._read()
                latest = found.state
                if latest is None or latest.lease is None or latest.lease.holder != self.me:
                    return None
                if latest.version > version and shown_now:
                    lease = Lease(holder=self.me, at=self.clock())
                    newer = replace(latest, comment_id=comment_id, lease=lease)
                    if self.ref.write(found.tip, newer, "ivy-matrix: comment shown") is not None:
                        return newer
                    continue
                shown = max(latest.shown, version) if shown_now else latest.shown
                done = replace(latest, shown=shown, comment_id=comment_id, lease=None)
                if self.ref.write(found.tip, done, "ivy-matrix: comment shown") is not None:
                    return None
            except ReadOnlyTokenError:
                raise
            except RecordTooLargeError as error:  # a record an older ivy-matrix wrote
                self.log.warning(f"recording the comment in {self.ref.ref}: {error}")
                return None
            except GitHubAPIError as error:
                self.log.warning(f"recording the comment in {self.ref.ref}: {error}; retrying")
        self.log.warning(
            f"could not give the comment's turn back in {self.ref.ref}; another job takes it "
            f"over after {LEASE_TTL:.0f} s"
        )
        return None

    def _show(self, state: RefState, comment_id: int | None, last: _Shown | None) -> _Shown:
        """Write the comment with the record's verdicts (no write when this writer's last one
        already says the same)."""
        body = render_comment(state.verdicts, site_url=self.look.site_url)
        if comment_id is not None:
            if last is not None and last.comment_id == comment_id and last.body == body:
                return replace(last, wrote=False)
            try:
                edited = self.api.update_issue_comment(self.repo, comment_id, body)
            except GitHubAPIError as error:
                if error.status not in _GONE:
                    raise
                # Deleted (by hand): find ours again, or post a new one.
            else:
                return _Shown(comment_id=edited.id, url=edited.html_url, body=body, wrote=True)
        return self._find_or_create(state.verdicts, body)

    def _ours(self, pr: int) -> list[IssueComment]:
        """Our comments on the pull request, oldest first."""
        try:
            listed = self.api.list_issue_comments(self.repo, pr)
        except ReadOnlyTokenError:
            raise
        except GitHubAPIError as error:
            if error.status in _FOR_GOOD:
                raise UnlistableError(str(error), status=error.status) from None
            raise
        found = [c for c in listed if is_ours(c, pr, self.look.author)]
        return sorted(found, key=lambda c: c.id)

    def _find_or_create(self, verdicts: CommentState, body: str) -> _Shown:
        pr = verdicts.pr
        ours = self._ours(pr)
        wrote = False
        if not ours:
            if self.look.when_green is WhenGreen.NOTHING and not has_failures(verdicts):
                self.log.info(f"pull request #{pr}: no failing test, so no comment")
                return _Shown(comment_id=None, url=None, body=body, wrote=False)
            self._create(pr, body)
            wrote = True
            ours = self._ours(pr)
            if not ours:
                raise GitHubAPIError(f"the new comment on pull request #{pr} is not listed yet")
        keep, extras = ours[0], ours[1:]
        for extra in extras:  # a POST that landed twice: ours, so ours to delete
            self.api.delete_issue_comment(self.repo, extra.id)
        if keep.body != body:
            keep = self.api.update_issue_comment(self.repo, keep.id, body)
            wrote = True
        return _Shown(comment_id=keep.id, url=keep.html_url, body=body, wrote=wrote)

    def _create(self, pr: int, body: str) -> None:
        """POST a new comment; an error is only logged, since the comment may have landed (the
        caller lists again before anything else)."""
        try:
            self.api.create_issue_comment(self.repo, pr, body)
        except ReadOnlyTokenError:
            raise
        except GitHubAPIError as error:
            self.log.warning(f"commenting on pull request #{pr}: {error}; looking again")
