"""One job creates a dashboard's issue: the one that creates its git-ref lock first.

I/O, through :class:`RefAPI` (``github.client.GitHubClient`` has the calls; they need
``contents: write``, which the branch target has anyway) and, for :class:`Creator`, the
writer's :class:`~ivy_matrix.issues.finding.Finder`. (Not to be confused with
``issues/store_lock.py``, where the issue-body store's writers take turns.)

GitHub has no create-if-absent for issues, but ``POST /git/refs`` is one (PLATFORM.md 3.2): a
ref that exists is refused with "Reference already exists". So before creating the issue of a
dashboard that has none, a job creates ``refs/ivy-matrix/issues/<slug>-<hash>`` pointing at a
small commit whose message names the job and the time (one such commit per job, renewed every
quarter of the expiry, so a lock costs one write besides the issue). The job whose ref create
succeeds creates the issue; every other job waits for the issue to appear in the listing.

**A lock goes once its issue exists.** The job that holds it deletes the ref right after
creating the issue (or when the listing it makes after taking the lock shows the issue), so
no ref is left behind per dashboard. That is safe because every job that takes a lock lists
the issues once more before creating (one listing for all the locks it took at once): a job
whose first listing predates the issue, and which takes the lock after its deletion, finds the
issue there instead of creating a second one.

A job that died between lock and create leaves a lock whose issue never appears. After
:data:`CREATION_LOCK_EXPIRY` seconds any job takes it over by a fast-forward from the stale
commit (compare-and-swap: of several jobs taking over at once, one wins), lists the issues once
more (the dead job may have created it) and creates it only if it is still missing. An issue
whose label was removed is, after the expiry, created again (as before the locks).

:class:`Creator` is how the issue target uses the locks: it claims the locks of the missing
issues, and waits (one listing a poll for all of them) for the issues other jobs are creating,
taking over the lock of a job that died; it deletes each lock it holds once its issue exists.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.types import Issue
from ivy_matrix.issues.finding import INDEX_KEY, Finder

CREATION_LOCK_REFS = "refs/ivy-matrix/issues"
# Seconds: longer than any create with its retries and rate-limit waits.
CREATION_LOCK_EXPIRY = 600.0
# While another job holds the lock of an issue it is creating: look again this often (seconds,
# jittered), this many times (about a minute), then leave that issue to that job.
CREATOR_POLL = (1.0, 3.0)
CREATOR_POLLS = 30
CREATOR_CHECK_EVERY = 10  # polls between reads of the locks' holders (to take over a dead one)
_SLUG = re.compile(r"[^A-Za-z0-9_-]+")
_SINCE = re.compile(r"^since: (?P<t>\d{1,14})$", re.MULTILINE)
_HOLDER = re.compile(r"^holder: (?P<h>.*)$", re.MULTILINE)


class RefAPI(Protocol):
    """The git-data calls the lock makes (``github.client.GitHubClient`` has them)."""

    def get_ref(self, repo: str, ref: str) -> str | None: ...

    def delete_ref(self, repo: str, ref: str) -> bool: ...

    def create_ref(self, repo: str, ref: str, sha: str) -> bool: ...

    def move_ref(self, repo: str, ref: str, sha: str) -> bool: ...

    def get_commit_message(self, repo: str, sha: str) -> str: ...

    def create_tree(
        self, repo: str, base_tree: str | None, files: Mapping[str, str | None]
    ) -> str: ...

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str: ...


@dataclass(frozen=True, slots=True)
class Claim:
    """What the lock says about one dashboard's issue.

    ``mine``: this job holds the lock (``commit`` is its lock commit) and may create the
    issue; ``takeover`` when it took a stale lock over (list again before creating).
    Otherwise another job (``holder``) holds it.
    """

    ref: str
    commit: str | None = None
    mine: bool = False
    takeover: bool = False
    holder: str = ""


class CreationLocks:
    """Git-ref locks for creating dashboard issues; see the module docstring."""

    def __init__(
        self,
        client: RefAPI,
        repo: str,
        *,
        label: str,
        holder: str,
        clock: Callable[[], float] = time.time,
        expiry: float = CREATION_LOCK_EXPIRY,
    ) -> None:
        self.client = client
        self.repo = repo
        self.label = label
        self.holder = " ".join(holder.split())
        self.clock = clock
        self.expiry = expiry
        self._tree: str | None = None
        self._commit_at: tuple[str, float] | None = None  # this job's lock commit, made when

    def ref(self, key: str) -> str:
        """The lock ref of one dashboard (``key``) of this label: readable, and unique by hash."""
        digest = hashlib.sha256(f"{self.label}\0{key}".encode()).hexdigest()[:16]
        slug = _SLUG.sub("-", key).strip("-")[:60] or "issue"
        return f"{CREATION_LOCK_REFS}/{slug}-{digest}"

    def _commit(self, parents: list[str]) -> str:
        """A lock commit naming this job and the time; without parents, one per job (renewed)."""
        now = self.clock()
        if not parents and self._commit_at and now - self._commit_at[1] < self.expiry / 4:
            return self._commit_at[0]
        if self._tree is None:
            self._tree = self.client.create_tree(self.repo, None, {"LOCK": "ivy-matrix\n"})
        message = f"ivy-matrix issue lock\n\nholder: {self.holder}\nsince: {int(now)}\n"
        commit = self.client.create_commit(self.repo, message, self._tree, parents)
        if not parents:
            self._commit_at = (commit, now)
        return commit

    def claim(self, key: str, *, check: bool = True) -> Claim:
        """Try to take the lock of ``key``'s issue, or say who holds it.

        Without ``check`` a lock held by another job is not read (its holder is not named
        and a stale one is not taken over): one request less for the common case.
        """
        ref = self.ref(key)
        sha = self.client.get_ref(self.repo, ref)
        mine = None
        if sha is None:
            mine = self._commit([])
            if self.client.create_ref(self.repo, ref, mine):
                return Claim(ref, mine, mine=True)
            sha = self.client.get_ref(self.repo, ref)
            if sha is None:  # deleted again at once: leave it to the next try
                return Claim(ref, holder="(unknown)")
        if sha == mine or (self._commit_at and sha == self._commit_at[0]):
            # Ours: taken earlier by this job, or our create landed and its retry was refused.
            return Claim(ref, sha, mine=True)
        if not check:
            return Claim(ref, sha, holder="")
        message = self.client.get_commit_message(self.repo, sha)
        holder = _HOLDER.search(message)
        since = _SINCE.search(message)
        if since is None or self.clock() - int(since.group("t")) > self.expiry:
            return self.take_over(key, sha)
        return Claim(ref, sha, holder=holder.group("h") if holder else "(unknown)")

    def release(self, key: str) -> None:
        """Delete the lock of ``key``'s issue: the issue exists (see the module docstring).

        Unconditional: once the issue exists, whoever holds the lock lists before creating and
        finds it. A failure only leaves the ref, as before.
        """
        with contextlib.suppress(GitHubAPIError):
            self.client.delete_ref(self.repo, self.ref(key))

    def take_over(self, key: str, stale: str) -> Claim:
        """Take a lock whose holder is gone by a fast-forward from its commit."""
        ref = self.ref(key)
        commit = self._commit([stale])
        if self.client.move_ref(self.repo, ref, commit):
            return Claim(ref, commit, mine=True, takeover=True)
        return Claim(ref, stale, holder="(another job taking it over)")


class Creator:
    """Decides, with the git-ref locks, whether this job creates a missing issue."""

    def __init__(self, finder: Finder, locks: CreationLocks, rng: random.Random) -> None:
        self.finder = finder
        self.locks = locks
        self.rng = rng
        self.holders: dict[str, str] = {}  # who holds each lock this job found taken

    def claim(self, keys: Sequence[str], *, check: bool = False) -> dict[str, list[Issue] | None]:
        """For each of ``keys``: no issue when this job now holds its lock (create it then),
        the issue(s) when the listing made after taking the locks shows it exists (its lock is
        deleted), None when another job holds the lock.

        Only with ``check`` is a holder's lock read (one more request), to take it over when
        its job died. One listing for all the locks taken (module docstring: a lock goes once
        its issue exists, so a lock taken is no proof that the issue is missing).
        """
        claimed: dict[str, list[Issue] | None] = {}
        for key in keys:
            claim = self.locks.claim(key, check=check)
            self.holders[key] = claim.holder
            claimed[key] = [] if claim.mine else None
        if any(issues is not None for issues in claimed.values()):
            found = self.finder.find()
            for key, issues in claimed.items():
                landed = found.by_key.get(key) if issues is not None else None
                if landed:
                    self.locks.release(key)
                    claimed[key] = landed
        return claimed

    def created(self, key: str) -> None:
        """This job created the issue of ``key``: its lock goes."""
        self.locks.release(key)

    def wait_for(self, keys: Sequence[str]) -> dict[str, list[Issue]]:
        """Wait until the issues of ``keys`` (locked by other jobs) appear; list them for all
        keys at once. A lock whose job died is taken over, and this job creates that issue
        (an empty list). What never appears is left to its holder, with a warning."""
        calls = self.finder.requests
        done: dict[str, list[Issue]] = {}
        waiting = list(keys)
        for poll in range(1, CREATOR_POLLS + 1):
            calls.sleep(self.rng.uniform(*CREATOR_POLL))
            found = self.finder.find()
            for key in list(waiting):
                if found.by_key.get(key):
                    done[key] = found.by_key[key]
                    waiting.remove(key)
            if waiting and poll % CREATOR_CHECK_EVERY == 0:  # now and then: has a holder died?
                for key, claimed in self.claim(waiting, check=True).items():
                    if claimed is not None:
                        done[key] = claimed
                        waiting.remove(key)
            if not waiting:
                break
        for key in waiting:
            name = "the index" if key == INDEX_KEY else f"dashboard {key}"
            calls.warn(
                f"the issue of {name} is being created by another job "
                f"({self.holders.get(key) or 'unknown'}), which has not finished; this job "
                f"leaves it to that job"
            )
        return done
