"""The GitHub REST calls ivy-matrix makes, behind our own types and our own retry policy.

I/O. The only module that imports PyGithub: :class:`GitHubClient` sends the requests of
github/git.py (Actions and git data), github/issues.py (issues) and github/statuses.py (commit
statuses) with PyGithub's requester, over the transport of github/http.py. These modules of
``github/`` are the only ones that handle untyped JSON (``Any``). Every call returns our own
frozen dataclasses or plain values, never PyGithub objects, and raises
:class:`~ivy_matrix.errors.GitHubAPIError` (or :class:`ReadOnlyTokenError`) with a message that
says what failed, why, and what to do.

**Retries are ours** (PLATFORM.md section 1.3). PyGithub's own retry is switched off
(``retry=None``): its default retries POST after a 5xx, which duplicates creates, and never
retries PATCH. Instead :meth:`GitHubClient._call` retries every request of this module, as
``github/retry.py`` decides (5xx, network errors and rate limits; bounded in tries and in
time, with a clear error when GitHub asks for longer). Retrying is safe because every
request here is idempotent at our level: reads; blobs, trees and commits (content-addressed:
a duplicate is the same object, or an unreferenced one); creating a ref (a second attempt that
finds "Reference already exists" reports a conflict and the caller re-reads); moving a ref
with ``force=false`` to the same commit again (a fast-forward to itself succeeds); and setting
a commit status (a second copy of a status is the same status).

The ``sleep`` and ``clock`` functions are parameters so tests never wait for real.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Self, cast

from github import Auth, Github, GithubException
from github.Requester import Requester

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.git import GitCalls
from ivy_matrix.github.http import HTTPError, OffHostError
from ivy_matrix.github.issues import IssueCalls
from ivy_matrix.github.retry import DEFAULT_MAX_WAIT, DEFAULT_RETRIES, SECONDARY_WAIT, RetryPolicy
from ivy_matrix.github.statuses import StatusCalls
from ivy_matrix.github.token import token_problem
from ivy_matrix.results.jobs import Job

# Blob reads sent at once by get_blob_texts: well under GitHub's 100 concurrent requests, even
# with a few legs reading at the same moment.
PARALLEL_READS = 8


class GitHubClient(GitCalls, IssueCalls, StatusCalls):
    """The GitHub calls ivy-matrix makes; build it with :func:`make_client`.

    One client per process (or thread): it holds one HTTP session and a cache of job
    listings, one per (repository, run, attempt). The calls are in github/git.py,
    github/issues.py and github/statuses.py; here they are sent with PyGithub's requester.
    """

    def __init__(
        self,
        github: Github,
        *,
        more: Callable[[], Github] | None = None,
        retries: int = DEFAULT_RETRIES,
        max_wait: float = DEFAULT_MAX_WAIT,
        secondary_wait: float = SECONDARY_WAIT,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        retry = RetryPolicy(
            retries=retries, max_wait=max_wait, secondary_wait=secondary_wait, clock=clock, rng=rng
        )
        super().__init__(retry=retry, sleep=sleep)
        self._github = github
        self._main_requester = github.requester
        self._jobs: dict[tuple[str, int, int], list[Job]] = {}
        self._lock = threading.Lock()
        # PyGithub's requester is not safe across threads (one connection object holds the
        # request being sent): parallel reads (get_blob_texts) get one Github per thread.
        self._more = more
        self._local = threading.local()
        self._others: list[Github] = []
        self._owner = threading.get_ident()

    @property
    def _requester(self) -> Requester:
        if threading.get_ident() == self._owner or self._more is None:
            return self._main_requester
        requester = getattr(self._local, "requester", None)
        if requester is None:
            github = self._more()
            with self._lock:
                self._others.append(github)
            requester = self._local.requester = github.requester
        return cast("Requester", requester)

    @property
    def parallel_reads(self) -> int:
        """How many reads :meth:`get_blob_texts` sends at once (1: one after another)."""
        return PARALLEL_READS if self._more is not None else 1

    def close(self) -> None:
        """Close the HTTP connections."""
        self._github.close()
        with self._lock:
            others, self._others = self._others, []
        for github in others:
            github.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(
        self,
        verb: str,
        url: str,
        *,
        parameters: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], Any]:
        try:
            return self._requester.requestJsonAndCheck(verb, url, parameters=parameters, input=body)
        except GithubException as error:
            raise HTTPError(error.status, error.data, error.headers) from None
        except AssertionError as error:  # PyGithub refuses URLs off the API's host
            raise OffHostError(str(error)) from None

    @property
    def _graphql_url(self) -> str:
        return str(self._requester.graphql_url)


def make_client(
    *,
    token: str,
    api_url: str,
    retries: int = DEFAULT_RETRIES,
    write_pause: float | None = None,
    timeout: float = 15,
    max_wait: float = DEFAULT_MAX_WAIT,
    secondary_wait: float = SECONDARY_WAIT,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
) -> GitHubClient:
    """A client for the API at ``api_url`` (``GITHUB_API_URL``; GHES: ``https://host/api/v3``).

    Reads are never paced: an update's reads are few (a tree listing and the blobs it needs),
    and PyGithub's 0.25 s between requests was most of its time. ``write_pause`` (seconds between
    writes, PyGithub's) is off by default: it would stretch the window between reading the
    branch tip and moving it, where other runs' commits make this one retry; GitHub's
    content-creation limits are met with our retries, which honour ``retry-after``, and the
    branch store's backoff between commit tries. ``retries`` and ``max_wait`` bound our own
    retries (see the module docstring).
    """
    if not token.strip():
        raise GitHubAPIError(
            "no GitHub token: pass --token or set IVY_MATRIX_TOKEN, GITHUB_TOKEN or GH_TOKEN "
            "(the action's 'token' input defaults to github.token)"
        )
    problem = token_problem(token)
    if problem is not None:
        raise GitHubAPIError(f"the GitHub token contains {problem}; it is not sent (nor shown)")

    def github() -> Github:
        return Github(
            auth=Auth.Token(token),
            base_url=api_url.rstrip("/"),
            timeout=max(math.ceil(timeout), 1),
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=write_pause,
            per_page=100,
        )

    return GitHubClient(
        github(),
        more=github,
        retries=retries,
        max_wait=max_wait,
        secondary_wait=secondary_wait,
        sleep=sleep,
        clock=clock,
        rng=rng,
    )
