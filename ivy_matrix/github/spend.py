"""What one run spent of GitHub's budgets: requests, content-creating requests, what is left.

No I/O, but a lock (the client's threads share one meter): :class:`SpendMeter` counts each
request the transport sends (every try, answered or not) and keeps the last
``x-ratelimit-remaining`` and ``x-ratelimit-limit`` GitHub sent; the
:class:`~ivy_matrix.github.types.Spend` it reads out is a plain value. :func:`over_budget`
says which of GitHub's hourly budgets a run used more than a share of.

GitHub's budgets (docs.github.com, "Rate limits for the REST API"; ../shared/design/
PLATFORM.md 1.2): a ``GITHUB_TOKEN`` may send 1,000 requests an hour per repository (the
``x-ratelimit-limit`` header says the token's own), and every token at most 80
content-generating requests a minute and 500 an hour. GitHub does not say which requests
are content-generating, so every POST, PATCH, PUT and DELETE counts here.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ivy_matrix.github.types import Spend

CONTENT_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
CONTENT_PER_HOUR = 500  # GitHub's content-creation limit: no header reports it


class SpendMeter:
    """Counts the requests of one client (its threads share it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests = 0
        self._content = 0
        self._remaining: int | None = None
        self._limit: int | None = None

    def count(self, verb: str, headers: Mapping[str, str] | None) -> None:
        """One request sent; ``headers`` (lower-case names) of its answer, None without one."""
        remaining = _integer((headers or {}).get("x-ratelimit-remaining"))
        limit = _integer((headers or {}).get("x-ratelimit-limit"))
        with self._lock:
            self._requests += 1
            self._content += verb.upper() in CONTENT_METHODS
            if remaining is not None:
                self._remaining = remaining
            if limit is not None:
                self._limit = limit

    def spent(self) -> Spend:
        """What was counted so far."""
        with self._lock:
            return Spend(
                requests=self._requests,
                content_requests=self._content,
                rate_limit_remaining=self._remaining,
                rate_limit=self._limit,
            )


def _integer(value: str | None) -> int | None:
    try:
        return None if value is None else int(value.strip())
    except ValueError:
        return None


def over_budget(spend: Spend, percent: int) -> list[str]:
    """Each hourly budget this run used more than ``percent`` of, as a sentence part (0: none).

    The requests are measured against the token's ``x-ratelimit-limit`` (unknown without
    one); content-creating requests against GitHub's 500 an hour.
    """
    if percent <= 0:
        return []
    found = []
    if spend.rate_limit and spend.requests * 100 > spend.rate_limit * percent:
        share = spend.requests * 100 / spend.rate_limit
        found.append(
            f"{spend.requests:,} of the token's {spend.rate_limit:,} requests an hour "
            f"({share:.0f}%)"
        )
    if spend.content_requests * 100 > CONTENT_PER_HOUR * percent:
        share = spend.content_requests * 100 / CONTENT_PER_HOUR
        found.append(
            f"{spend.content_requests:,} of GitHub's {CONTENT_PER_HOUR} content-creating "
            f"requests an hour ({share:.0f}%)"
        )
    return found
