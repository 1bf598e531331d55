"""Who creates a dashboard's issue: the one job that creates its git-ref lock first.

I/O, through :class:`RefAPI` (``github_api.GitHubClient`` has the calls; they need
``contents: write``, which the branch target has anyway). GitHub has no create-if-absent for
issues, but ``POST /git/refs`` is one (PLATFORM.md 3.2): a ref that exists is refused with
"Reference already exists". So before creating the issue of a dashboard that has none, a job
creates ``refs/ivy-matrix/issues/<slug>-<hash>`` pointing at a small commit whose message names
the job and the time. The job whose ref create succeeds creates the issue and then moves the
ref (a fast-forward) to a commit that records the issue number; every other job waits for the
issue to appear, or reads its number from the ref. The ref stays: it is the record of the
issue, read only when the issue listing does not show it (its label removed, say).

A job that died between lock and create leaves a lock without a number. After
:data:`LOCK_EXPIRY` seconds any job takes it over by a fast-forward from the stale commit
(compare-and-swap: of several jobs taking over at once, one wins), lists the issues once more
(the dead job may have created it) and creates it only if it is still missing.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

LOCK_PREFIX = "refs/ivy-matrix/issues"
LOCK_EXPIRY = 600.0  # seconds: longer than any create with its retries and rate-limit waits
_SLUG = re.compile(r"[^A-Za-z0-9_-]+")
_ISSUE = re.compile(r"^issue: #(?P<n>\d{1,12})$", re.MULTILINE)
_SINCE = re.compile(r"^since: (?P<t>\d{1,14})$", re.MULTILINE)
_HOLDER = re.compile(r"^holder: (?P<h>.*)$", re.MULTILINE)


class RefAPI(Protocol):
    """The git-data calls the lock makes (``github_api.GitHubClient`` has them)."""

    def get_ref(self, repo: str, ref: str) -> str | None: ...

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
    ``number``: the issue the lock records. Neither: another job (``holder``) is creating it.
    """

    ref: str
    commit: str | None = None
    mine: bool = False
    takeover: bool = False
    number: int | None = None
    holder: str = ""


class IssueLocks:
    """Git-ref locks for creating dashboard issues; see the module docstring."""

    def __init__(
        self,
        client: RefAPI,
        repo: str,
        *,
        label: str,
        holder: str,
        clock: Callable[[], float] = time.time,
        expiry: float = LOCK_EXPIRY,
    ) -> None:
        self.client = client
        self.repo = repo
        self.label = label
        self.holder = " ".join(holder.split())
        self.clock = clock
        self.expiry = expiry
        self._tree: str | None = None

    def ref(self, key: str) -> str:
        """The lock ref of one dashboard (``key``) of this label: readable, and unique by hash."""
        digest = hashlib.sha256(f"{self.label}\0{key}".encode()).hexdigest()[:16]
        slug = _SLUG.sub("-", key).strip("-")[:60] or "issue"
        return f"{LOCK_PREFIX}/{slug}-{digest}"

    def _commit(self, key: str, text: str, parents: list[str]) -> str:
        if self._tree is None:
            self._tree = self.client.create_tree(self.repo, None, {"LOCK": "ivy-matrix\n"})
        message = f"ivy-matrix issue lock\n\ndashboard: {key!r}\n{text}\n"
        return self.client.create_commit(self.repo, message, self._tree, parents)

    def _hold_text(self) -> str:
        return f"holder: {self.holder}\nsince: {int(self.clock())}"

    def claim(self, key: str) -> Claim:
        """Try to take the lock of ``key``'s issue, or say who holds it or which issue it is."""
        ref = self.ref(key)
        sha = self.client.get_ref(self.repo, ref)
        mine = None
        if sha is None:
            mine = self._commit(key, self._hold_text(), [])
            if self.client.create_ref(self.repo, ref, mine):
                return Claim(ref, mine, mine=True)
            sha = self.client.get_ref(self.repo, ref)
            if sha is None:  # deleted again at once: leave it to the next try
                return Claim(ref, holder="(unknown)")
        if sha == mine:  # our create landed, and a retry of it was refused
            return Claim(ref, mine, mine=True)
        message = self.client.get_commit_message(self.repo, sha)
        number = _ISSUE.search(message)
        if number:
            return Claim(ref, sha, number=int(number.group("n")))
        holder = _HOLDER.search(message)
        since = _SINCE.search(message)
        if since is None or self.clock() - int(since.group("t")) > self.expiry:
            return self.take_over(key, sha)
        return Claim(ref, sha, holder=holder.group("h") if holder else "(unknown)")

    def take_over(self, key: str, stale: str) -> Claim:
        """Take a lock whose holder is gone (or whose issue is gone) by a fast-forward."""
        ref = self.ref(key)
        commit = self._commit(key, self._hold_text(), [stale])
        if self.client.move_ref(self.repo, ref, commit):
            return Claim(ref, commit, mine=True, takeover=True)
        return Claim(ref, stale, holder="(another job taking it over)")

    def record(self, key: str, claim: Claim, number: int) -> bool:
        """Move the lock held in ``claim`` to a commit that records issue ``number``."""
        if claim.commit is None:
            return False
        commit = self._commit(key, f"issue: #{number}", [claim.commit])
        return self.client.move_ref(self.repo, claim.ref, commit)
