"""The issue-body store's writers take turns: a lock made of comments on the index issue.

I/O, through :class:`~ivy_matrix.github.types.IssueAPI`. Issue edits have no compare-and-swap
(PLATFORM.md 3.3), so jobs that write the issue-body store at once would overwrite each other.
Comments give what edits lack: a new comment is appended atomically and comment ids grow, so
the comments on one issue are a queue every job reads in the same order. A job that wants to
write posts a claim comment (``<!-- ivy-matrix:lock nonce=... since=... -->``) on the index
issue and holds the lock once its claim is the oldest live one in two listings a moment apart
(a claim whose create had not yet become visible shows up in the second). It deletes its claim
when done. Claims older than :data:`STORE_LOCK_EXPIRY` (a job that died holding the lock) are
ignored and deleted by whoever sees them. Only ``issues: write`` is needed. (Not to be confused
with ``issues/creation_locks.py``: git refs that let one job create a dashboard's issue.)

**Whose claims count.** Anyone who can comment on the index issue can write a claim's text, so
a claim counts only when its author is the login this job's token writes as, and only when it
is dated in the past. That login is learned from the answer to the job's own claim (GitHub
names the comment's author there), so it costs no request and holds for every kind of token:
``GET /user`` would name it for a personal token, but GitHub refuses it to the installation
tokens GITHUB_TOKEN and GitHub Apps use ("Resource not accessible by integration"; reported in
actions/create-github-app-token#258 and zerocracy/judges-action#637), whose comments are
written as the app's bot (``github-actions[bot]`` for GITHUB_TOKEN, GitHub's community
discussion 25853 and the ``pr-comment-author`` default). A claim by anyone else is never
counted, edited or deleted; it is named (comment URL and author, never its text) in one
warning. A claim of ours dated more than :data:`STORE_LOCK_SKEW` seconds ahead of this job's
clock (no job of ours writes one; it would hold for ever) is void, and removed like an
expired one.

A job that waits longer than :attr:`Turns.wait` seconds gives up with a
:class:`ConcurrentWritersError` that says to use the branch target: it never writes without the
lock, so nothing is lost.
"""

from __future__ import annotations

import random
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from ivy_matrix.errors import GitHubAPIError, StoreError
from ivy_matrix.github.types import IssueAPI, IssueComment
from ivy_matrix.runner.log import Progress

STORE_LOCK_WAIT = 180.0  # seconds a job waits for its turn before it refuses to write
STORE_LOCK_EXPIRY = 600.0  # a claim older than this is a job that died holding the lock
STORE_LOCK_POLL = (1.0, 3.0)  # seconds between listings while waiting, per job ahead (jittered)
STORE_LOCK_POLL_AHEAD = 8  # ... counting at most this many jobs ahead
STORE_LOCK_SETTLE = (0.2, 0.4)  # between the two listings that confirm a hold
# Seconds a claim of ours may be dated ahead of this job's clock (runners' clocks differ a
# little); beyond that it is void.
STORE_LOCK_SKEW = 60.0
# Digits bounded, so that no comment can make int() refuse a 5,000-digit number.
_CLAIM = re.compile(
    r"\A<!-- ivy-matrix:lock nonce=(?P<nonce>[0-9a-f]{1,64}) since=(?P<since>\d{1,12}) -->"
)
_CLAIM_MARK = "<!-- ivy-matrix:lock"
_HOLDER_SHOWN = 200  # characters of a holder's name shown in a refusal


class ConcurrentWritersError(StoreError):
    """Other jobs kept the issue-body store locked for longer than this job may wait."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Turns:
    """How a job takes its turn at the issue store: the name its claim shows the others
    (``holder``), how long it waits for its turn (``wait`` seconds) and how often it looks
    (``poll``, seconds per job ahead, jittered)."""

    holder: str = "another job"
    wait: float = STORE_LOCK_WAIT
    poll: tuple[float, float] = STORE_LOCK_POLL


class StoreLock:
    """A lock held by the oldest live claim comment on one issue; see the module docstring."""

    def __init__(
        self,
        client: IssueAPI,
        repo: str,
        turns: Turns,
        *,
        log: Progress,
        sleep: Callable[[float], None],
        rng: random.Random,
        clock: Callable[[], float] = time.time,
        settle: tuple[float, float] = STORE_LOCK_SETTLE,
        expiry: float = STORE_LOCK_EXPIRY,
    ) -> None:
        self.client = client
        self.repo = repo
        self.holder = " ".join(turns.holder.split())
        self.log = log
        self._sleep = sleep
        self._rng = rng
        self._clock = clock
        self.wait = turns.wait
        self.poll = turns.poll
        self.settle = settle
        self.expiry = expiry
        self._host: int | None = None
        self._nonce = ""
        # The login this job's token writes as: the author of its own claim (module docstring).
        self._login: str | None = None
        self._named: set[int] = set()  # others' look-alike claims already warned about
        self.waited = 0.0

    def _claim_text(self) -> str:
        return (
            f"<!-- ivy-matrix:lock nonce={self._nonce} since={int(self._clock())} -->\n"
            f"ivy-matrix is updating the dashboards ({self.holder}); this comment goes away "
            f"when it is done."
        )

    def _post_claim(self, host: int) -> None:
        posted = self.client.create_issue_comment(self.repo, host, self._claim_text())
        self._login = posted.author

    def _learn_login(self, comments: list[IssueComment]) -> None:
        """When the answer to our claim was lost: the oldest comment carrying our fresh nonce
        is ours (nobody could copy the nonce before it existed), so its author is our login."""
        if self._login is not None:
            return
        for comment in sorted(comments, key=lambda c: c.id):
            found = _CLAIM.match(comment.body)
            if found is not None and found.group("nonce") == self._nonce:
                self._login = comment.author
                return

    def _by_us(self, comment: IssueComment) -> bool:
        """Whether ``comment`` was written by the login this job's token writes as."""
        return self._login is not None and comment.author.lower() == self._login.lower()

    def _claims(self, host: int) -> list[tuple[IssueComment, str]]:
        """Live claims on the host, oldest first, as (comment, nonce): ours only, dated in the
        past; our expired or future-dated ones deleted, others' named once and left alone."""
        listed = sorted(self.client.list_issue_comments(self.repo, host), key=lambda c: c.id)
        self._learn_login(listed)
        live: list[tuple[IssueComment, str]] = []
        for comment in listed:
            if not comment.body.startswith(_CLAIM_MARK):
                continue
            if not self._by_us(comment):
                self._name_foreign(comment, host)
                continue
            found = _CLAIM.match(comment.body)
            if found is None:
                continue
            age = self._clock() - int(found.group("since"))
            if age > self.expiry or age < -STORE_LOCK_SKEW:
                self._delete(comment.id)  # a job that died, or a date no job of ours writes
                continue
            live.append((comment, found.group("nonce")))
        return live

    def _name_foreign(self, comment: IssueComment, host: int) -> None:
        if comment.id in self._named:
            return
        self._named.add(comment.id)
        where = comment.html_url or f"comment {comment.id}"
        self.log.warning(
            f"{where} on issue #{host} looks like an ivy-matrix lock claim, but its author "
            f"({comment.author or 'unknown'}) is not the login this job's token writes as "
            f"({self._login or 'unknown'}); it does not hold the lock and is left as it is"
        )

    def _delete(self, comment_id: int) -> None:
        try:
            self.client.delete_issue_comment(self.repo, comment_id)
        except GitHubAPIError as error:
            self.log.info(f"could not remove lock comment {comment_id}: {error}")

    def acquire(self, host: int) -> None:
        """Wait until this job holds the lock on issue ``host``, or raise after ``wait`` s.

        Whatever goes wrong while waiting, this job's claim is removed before the error
        propagates, so that the others need not wait for it to expire.
        """
        self._host, self._nonce, self._login = host, secrets.token_hex(8), None
        try:
            self._queue(host)
        except BaseException:
            self.release()
            raise

    def _queue(self, host: int) -> None:
        self._post_claim(host)
        confirmed = False
        while True:
            claims = self._claims(host)
            if not any(nonce == self._nonce for _, nonce in claims):
                # Ours was taken for stale (a clock far off) or removed: queue again.
                self._post_claim(host)
                confirmed = False
                continue
            first, nonce = claims[0]
            ahead = next(n for n, (_, mine) in enumerate(claims) if mine == self._nonce)
            if nonce == self._nonce:
                if confirmed:
                    return
                confirmed = True
                self._sleep(self._rng.uniform(*self.settle))
                continue
            confirmed = False
            if self.waited >= self.wait:
                raise ConcurrentWritersError(_refusal(first.body, self.waited))
            # Jobs ahead take a turn each: wait longer the further back, so that a long
            # queue does not spend the repository's request budget on listings.
            delay = self._rng.uniform(*self.poll) * min(ahead, STORE_LOCK_POLL_AHEAD)
            self._sleep(delay)
            self.waited += delay

    def release(self) -> None:
        """Delete this job's claim comment(s) (a retried create can have made two)."""
        if self._host is None:
            return
        host, self._host = self._host, None
        try:
            comments = self.client.list_issue_comments(self.repo, host)
        except GitHubAPIError as error:
            self.log.info(f"could not list the lock comments to remove ours: {error}")
            return
        self._learn_login(comments)
        for comment in comments:
            found = _CLAIM.match(comment.body)
            if found is not None and found.group("nonce") == self._nonce and self._by_us(comment):
                self._delete(comment.id)


def _refusal(claim: str, waited: float) -> str:
    holder = claim.split("(", 1)[-1].split(")", 1)[0] if "(" in claim else "another job"
    holder = " ".join(holder.split())[:_HOLDER_SHOWN]
    return (
        f"cannot update the dashboard issues: another job ({holder}) kept them locked for the "
        f"{waited:.0f} s this job waited. The issue target alone keeps the state in issue "
        f"bodies, which concurrent jobs cannot write at once without losing results; give the "
        f"job 'permissions: contents: write' and add 'branch' to the 'targets' input, or "
        f"publish from one fan-in job after the matrix"
    )
