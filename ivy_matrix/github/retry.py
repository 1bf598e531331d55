"""When to retry a GitHub request, how long to wait, and what to say when it fails.

Pure: the policy of ``github.client.GitHubClient._call`` (PLATFORM.md section 1.3), with its
clock, random source and limits as parameters. It decides from an answer's status, headers
and message:

- 5xx answers and network errors: exponential backoff with jitter, from about 1 s;
- rate limits (403/429): ``retry-after`` seconds if given; else, when
  ``x-ratelimit-remaining`` is 0, until ``x-ratelimit-reset``; else (a secondary limit without
  ``retry-after``) at least a minute, as GitHub asks;

at most ``retries`` times and never waiting more than ``max_wait`` seconds in all for one call,
after which a clear error says how long GitHub asked to wait.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ivy_matrix.errors import (
    GitHubAPIError,
    PushRefusedError,
    RateLimitError,
    ReadOnlyTokenError,
)

# Eight retries with backoff from 1 s (capped at 60 s) ride out about three minutes of
# transient errors, inside DEFAULT_MAX_WAIT, before the step gives up with a clear message.
DEFAULT_RETRIES = 8
DEFAULT_MAX_WAIT = 300.0
# Without retry-after and with budget left, GitHub says: wait at least one minute.
SECONDARY_WAIT = 60.0
BACKOFF_START = 1.0
BACKOFF_CAP = 60.0
_READ_ONLY = "resource not accessible by integration"
# How GitHub refuses an update of a protected branch: branch protection (GH006) or a ruleset
# (GH013, "Repository rule violations found").
_PROTECTED = re.compile(r"protected branch|rule violation|\bGH0(06|13)\b", re.IGNORECASE)


def advice(status: int, permission: str) -> str:
    """What to do about an answer with this status (for the error message)."""
    if status == 401:  # noqa: PLR2004  -- HTTP status
        return "the token was refused; check the 'token' input (it defaults to github.token)"
    if status == 403:  # noqa: PLR2004
        return (
            f"the token may not do this; give the job 'permissions: {permission}' "
            f"(and note that a pull request from a fork only gets a read-only token)"
        )
    if status == 404:  # noqa: PLR2004
        return (
            f"it does not exist or the token cannot see it; check the repository name, and "
            f"give the job 'permissions: {permission}'"
        )
    if status == 422:  # noqa: PLR2004
        return "GitHub refused the request as invalid; please report this to ivy-matrix"
    return "re-run the job; if it keeps failing, check https://www.githubstatus.com"


def translate_error(what: str, permission: str, status: int, message: str) -> GitHubAPIError:
    """The error to raise for an answer that retrying cannot help."""
    said = f"{status} {message}".strip()
    if status == 403 and _READ_ONLY in message.lower():  # noqa: PLR2004
        return ReadOnlyTokenError(
            f"{what} failed: GitHub answered {said!r}: the token may not do this; give the job "
            f"'permissions: {permission}' (a pull request from a fork or from Dependabot gets "
            f"a read-only token, which ivy-matrix tells from the event and does not write with)",
            status=status,
        )
    if status in {403, 422} and _PROTECTED.search(message):
        return PushRefusedError(
            f"{what} failed: GitHub answered {said!r}: the branch is protected (branch "
            f"protection or a ruleset), and retrying cannot help. Exclude the dashboard branch "
            f"from branch protection rules and rulesets (Settings > Branches, Settings > "
            f"Rules), or let GitHub Actions bypass them; or keep the dashboards on another "
            f"branch (the 'branch' input)",
            status=status,
        )
    return GitHubAPIError(
        f"{what} failed: GitHub answered {said!r}; {advice(status, permission)}", status=status
    )


@dataclass(frozen=True, slots=True)
class Wait:
    """How long to wait before the next try, and why."""

    seconds: float
    rate_limited: bool
    why: str


class RetryPolicy:
    """How one client retries: its limits, and the clock and random source it waits by."""

    def __init__(
        self,
        *,
        retries: int = DEFAULT_RETRIES,
        max_wait: float = DEFAULT_MAX_WAIT,
        secondary_wait: float = SECONDARY_WAIT,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.retries = max(retries, 0)
        self.max_wait = max_wait
        self.secondary_wait = secondary_wait
        self._clock = clock
        self._rng = rng or random.Random()  # noqa: S311  -- jitter, not cryptography

    def backoff(self, attempt: int) -> float:
        return min(BACKOFF_CAP, BACKOFF_START * 2.0**attempt) * self._rng.uniform(0.5, 1.5)

    def wait_for(
        self, status: int, headers: Mapping[str, str], message: str, attempt: int
    ) -> Wait | None:
        """How long to wait before retrying this answer, or None if retrying cannot help."""
        lowered = message.lower()
        if status in {403, 429}:
            retry_after = headers.get("retry-after", "").strip()
            if retry_after:
                try:
                    seconds = max(float(retry_after), 0.0)
                except ValueError:
                    seconds = self.secondary_wait
                return Wait(seconds, rate_limited=True, why=f"retry-after {retry_after} s")
            if headers.get("x-ratelimit-remaining") == "0":
                try:
                    reset = float(headers.get("x-ratelimit-reset", ""))
                except ValueError:
                    reset = self._clock() + self.secondary_wait
                seconds = max(reset - self._clock(), 0.0) + 1
                return Wait(seconds, rate_limited=True, why="the rate limit resets")
            if status == 429 or "rate limit" in lowered:  # noqa: PLR2004
                seconds = max(self.secondary_wait, self.backoff(attempt))
                return Wait(seconds, rate_limited=True, why="secondary rate limit")
            return None
        if 500 <= status <= 599 and status != 501:  # noqa: PLR2004
            return Wait(self.backoff(attempt), rate_limited=False, why="server error")
        return None

    def give_up_unless_retryable(
        self, what: str, wait: Wait, *, status: int | None, said: str, attempt: int, waited: float
    ) -> None:
        """Raise when another try would exceed ``retries`` or ``max_wait``."""
        tries = attempt + 1
        if wait.rate_limited and waited + wait.seconds > self.max_wait:
            raise RateLimitError(
                f"{what} failed: GitHub rate limited the token ({said!r}) and asks to wait "
                f"{math.ceil(wait.seconds)} s ({wait.why}); ivy-matrix waits at most "
                f"{math.ceil(self.max_wait)} s in all. Re-run later, or make fewer requests "
                f"(for example one fan-in job instead of a write from every matrix leg)",
                status=status,
            )
        if attempt >= self.retries or waited + wait.seconds > self.max_wait:
            kind = "rate limited" if wait.rate_limited else wait.why
            raise (RateLimitError if wait.rate_limited else GitHubAPIError)(
                f"{what} failed: {kind} ({said!r}) {tries} time(s) in a row over "
                f"{math.ceil(waited)} s; re-run the job later, and if it keeps failing check "
                f"https://www.githubstatus.com",
                status=status,
            )
