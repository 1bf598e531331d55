"""GitHub's budgets for the test doubles: what a token may spend, and what each token spent.

Pure apart from a lock (the doubles serve threads): no I/O. Both doubles, the HTTP fake
(``tests/github/fake_server.py``) and the in-memory model (``tests/github/memory.py``), hold
one :class:`Budget` and ask it to :meth:`Budget.admit` every request before they serve it.
It answers as GitHub does, by the limits GitHub publishes (docs.github.com, "Rate limits for
the REST API", github/docs ``content/rest/using-the-rest-api/rate-limits-for-the-rest-api.md``
and ``data/reusables/rest-api/secondary-rate-limit-rest-graphql.md``; ../shared/design/
PLATFORM.md 1.2):

* **primary**: 1,000 requests an hour for a ``GITHUB_TOKEN``, "per repository", so shared by
  every job of the repository (``Limits.shared``; PATs and apps get 5,000 and more). Every
  answer carries ``x-ratelimit-limit/-remaining/-used/-reset/-resource``; the window starts
  with its first request and resets an hour later. At zero: 403 "API rate limit exceeded for
  installation ID ..." with ``x-ratelimit-remaining: 0`` and no ``retry-after`` (the client
  waits for ``x-ratelimit-reset``);
* **content creation**: "no more than 80 content-generating requests per minute and no more
  than 500 content-generating requests per hour". GitHub does not say which requests count,
  so every POST, PATCH, PUT and DELETE does (issue 14). Over either: 403 "You have exceeded a
  secondary rate limit and have been temporarily blocked from content creation ..." with
  ``retry-after: 60``, the value GitHub sends (scala-steward-org/scala-steward#2540, #2355).
  Both windows slide: a write counts for the 60 s and the 3,600 s after it is admitted;
* **concurrency**: "No more than 100 concurrent requests are allowed". Over it: 403 "You have
  exceeded a secondary rate limit. Please wait a few minutes ..." without ``retry-after``
  (as observed in EnricoMi/publish-unit-test-result-action#419), so the client waits a minute.

GitHub answers "403 or 429" for each; ``Limits.status`` chooses. A refused request counts
against the primary limit (GitHub answered it) but not against the content limits (it created
nothing). Time is the ``clock`` the double is given, so a test that controls it (a
:class:`ManualClock`, or ``tests/concurrency.VirtualClock``) tests an hour's budget in a second.

Whatever the limits, every request is recorded per token (:meth:`Budget.spent`): requests,
content-creating requests, refusals, the busiest minute of content-creating requests and the
bytes sent. ``OPENED`` lists every budget made, so the test session can report what each
test spent (``tests/github/spend_report.py``).
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
MINUTE = 60.0
HOUR = 3600.0
# What GitHub sends with a content-creation refusal (scala-steward-org/scala-steward#2540).
CONTENT_RETRY_AFTER = 60
INSTALLATION_ID = 12345678
DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
PRIMARY_MESSAGE = (
    f"API rate limit exceeded for installation ID {INSTALLATION_ID}. If you reach out to GitHub "
    "Support for help, please include the request ID 0000:FAKE and timestamp 2026-01-01 "
    "00:00:00 UTC."
)
CONTENT_MESSAGE = (
    "You have exceeded a secondary rate limit and have been temporarily blocked from content "
    "creation. Please retry your request again later. If you reach out to GitHub Support for "
    "help, please include the request ID 0000:FAKE."
)
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID 0000:FAKE."
)
Clock = Callable[[], float]


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """What one budget allows; the defaults are GitHub's for a ``GITHUB_TOKEN`` on github.com."""

    requests_per_hour: int = 1_000
    content_per_minute: int = 80
    content_per_hour: int = 500
    concurrent: int = 100
    # GitHub answers a limit with "403 or 429".
    status: int = 403
    # A GITHUB_TOKEN's budget is the repository's: every token of the double pays into one.
    # False: each token has its own (personal access tokens, apps).
    shared: bool = True


GITHUB_TOKEN = Limits()
# Races of many legs at once test that no result is lost, not what the run costs: the designs
# they race spend more than GitHub allows one repository (issue 14 works on that, and
# bench/github_scale.py reports the figures). A test that takes these limits says so.
RACING = Limits(requests_per_hour=10_000, content_per_minute=2_000, content_per_hour=2_000)
# For tests and benchmarks that measure without being refused (they still record the spend).
UNLIMITED = Limits(
    requests_per_hour=10**12, content_per_minute=10**12, content_per_hour=10**12, concurrent=10**6
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """A request GitHub refuses for a rate limit: its status, message and extra headers."""

    status: int
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    primary: bool = False

    @property
    def body(self) -> dict[str, str]:
        """GitHub's JSON error body."""
        return {"message": self.message, "documentation_url": DOCS, "status": str(self.status)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Admission:
    """The budget's answer to one request: the ``x-ratelimit-*`` headers, and a refusal or None."""

    headers: dict[str, str]
    refusal: Refusal | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Spend:
    """What one token (or all of them) sent to a double.

    ``requests`` and ``content_requests`` count every request sent, refused ones included;
    ``peak_content_per_minute`` is the most content-creating requests sent in any 60 s.
    """

    requests: int = 0
    content_requests: int = 0
    refused: int = 0
    peak_content_per_minute: int = 0
    bytes_sent: int = 0

    def __add__(self, other: Spend) -> Spend:
        """Two spends side by side (the peak is the larger one's, not a merged window)."""
        return Spend(
            requests=self.requests + other.requests,
            content_requests=self.content_requests + other.content_requests,
            refused=self.refused + other.refused,
            peak_content_per_minute=max(
                self.peak_content_per_minute, other.peak_content_per_minute
            ),
            bytes_sent=self.bytes_sent + other.bytes_sent,
        )


class ManualClock:
    """A clock that moves only when told to: ``advance`` is also a ``sleep`` for clients."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move time on by ``seconds`` (negative values are ignored)."""
        with self._lock:
            self._now += max(seconds, 0.0)


@dataclass
class _Payer:
    """The budget of one payer (the repository, or one token): the windows being counted."""

    window_start: float | None = None
    used: int = 0
    in_flight: int = 0
    writes: deque[float] = field(default_factory=deque)  # admitted, within the last hour


@dataclass
class _Ledger:
    """What one token sent."""

    requests: int = 0
    refused: int = 0
    bytes_sent: int = 0
    writes: list[float] = field(default_factory=list)  # every write sent, in time order


def peak_per_minute(times: Iterable[float]) -> int:
    """The most of these moments within any 60 s (a moment counts for (t - 60, t])."""
    ordered = sorted(times)
    return max(
        (i + 1 - bisect.bisect_right(ordered, t - MINUTE) for i, t in enumerate(ordered)),
        default=0,
    )


class Budget:
    """The rate limits of one double, and every token's spend; see the module docstring."""

    def __init__(self, limits: Limits = GITHUB_TOKEN, *, clock: Clock = time.time) -> None:
        self.limits = limits
        self.clock = clock
        self._lock = threading.Lock()
        self._payers: dict[str, _Payer] = {}
        self._ledgers: dict[str, _Ledger] = {}
        OPENED.append(self)

    def configure(self, limits: Limits) -> None:
        """New limits; every window starts afresh (a new token, or a new hour)."""
        with self._lock:
            self.limits = limits
            for payer in self._payers.values():
                payer.window_start, payer.used = None, 0
                payer.writes.clear()

    def _payer(self, token: str) -> _Payer:
        return self._payers.setdefault("" if self.limits.shared else token, _Payer())

    def admit(self, token: str, method: str, *, size: int = 0) -> Admission:
        """Count one request of ``token`` (``size``: bytes sent) and say whether GitHub serves it.

        Every admission is in flight until :meth:`release` (call it in ``finally``).
        """
        write = method.upper() in WRITE_METHODS
        with self._lock:
            now = self.clock()
            payer = self._payer(token)
            ledger = self._ledgers.setdefault(token, _Ledger())
            ledger.requests += 1
            ledger.bytes_sent += size
            if write:
                ledger.writes.append(now)
            if payer.window_start is None or now >= payer.window_start + HOUR:
                payer.window_start, payer.used = now, 0
            payer.in_flight += 1
            refusal = self._refusal(payer, now, write=write)
            if refusal is None or not refusal.primary:
                payer.used += 1
            if refusal is not None:
                ledger.refused += 1
            elif write:
                payer.writes.append(now)
            headers = self._headers(payer, now)
        return Admission(headers=headers | (refusal.headers if refusal else {}), refusal=refusal)

    def release(self, token: str) -> None:
        """The request :meth:`admit` counted is answered: it is no longer in flight."""
        with self._lock:
            payer = self._payer(token)
            payer.in_flight = max(payer.in_flight - 1, 0)

    def _refusal(self, payer: _Payer, now: float, *, write: bool) -> Refusal | None:
        limits = self.limits
        if payer.used >= limits.requests_per_hour:
            return Refusal(status=limits.status, message=PRIMARY_MESSAGE, primary=True)
        if payer.in_flight > limits.concurrent:
            return Refusal(status=limits.status, message=SECONDARY_MESSAGE)
        if write:
            while payer.writes and payer.writes[0] <= now - HOUR:
                payer.writes.popleft()
            last_minute = len(payer.writes) - bisect.bisect_right(payer.writes, now - MINUTE)
            if last_minute >= limits.content_per_minute or (
                len(payer.writes) >= limits.content_per_hour
            ):
                retry = {"Retry-After": str(CONTENT_RETRY_AFTER)}
                return Refusal(status=limits.status, message=CONTENT_MESSAGE, headers=retry)
        return None

    def _headers(self, payer: _Payer, now: float) -> dict[str, str]:
        limit = self.limits.requests_per_hour
        start = now if payer.window_start is None else payer.window_start
        return {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(max(limit - payer.used, 0)),
            "X-RateLimit-Used": str(min(payer.used, limit)),
            "X-RateLimit-Reset": str(math.ceil(start + HOUR)),
            "X-RateLimit-Resource": "core",
        }

    def headers(self, token: str = "") -> dict[str, str]:
        """The ``x-ratelimit-*`` headers ``token`` would see now (nothing is counted)."""
        with self._lock:
            return self._headers(self._payer(token), self.clock())

    def remaining(self, token: str = "") -> int:
        """Requests left in ``token``'s primary budget (its payer's)."""
        return int(self.headers(token)["X-RateLimit-Remaining"])

    def reset(self, token: str = "") -> int:
        """When ``token``'s primary window resets (epoch seconds on the budget's clock)."""
        return int(self.headers(token)["X-RateLimit-Reset"])

    def tokens(self) -> list[str]:
        """Every token that sent a request, in order of its first request."""
        with self._lock:
            return list(self._ledgers)

    def spent(self, token: str | None = None) -> Spend:
        """What ``token`` sent (None: every token, with the busiest minute across them all)."""
        with self._lock:
            ledgers = (
                list(self._ledgers.values())
                if token is None
                else [self._ledgers.get(token, _Ledger())]
            )
            writes = [t for ledger in ledgers for t in ledger.writes]
            return Spend(
                requests=sum(ledger.requests for ledger in ledgers),
                content_requests=len(writes),
                refused=sum(ledger.refused for ledger in ledgers),
                peak_content_per_minute=peak_per_minute(writes),
                bytes_sent=sum(ledger.bytes_sent for ledger in ledgers),
            )


# Every budget made in this process, oldest first; the session's spend report reads and
# empties it after each test.
OPENED: list[Budget] = []
