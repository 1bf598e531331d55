"""The transport under every GitHub call: one request, retried by the policy, as our errors.

I/O through an abstract :meth:`Transport._send` (``github.client.GitHubClient`` sends with
PyGithub's requester); this module does not import PyGithub. An answer that is not 2xx comes
back as :class:`HTTPError`; :meth:`Transport._call` retries it as ``github/retry.py`` decides
and turns the last one into a :class:`~ivy_matrix.errors.GitHubAPIError` that names the
permission the call needs. Every request sent is counted (``github/spend.py``): :meth:`Transport.spent`
says what the client spent and how much of the token's hour GitHub says is left. Every
request's body passes the guard (runner/guard.py) on its way out.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.retry import RetryPolicy, Wait, translate_error
from ivy_matrix.github.spend import SpendMeter
from ivy_matrix.github.types import Spend
from ivy_matrix.runner.guard import scrub_json
from ivy_matrix.runner.pacing import paced
from ivy_matrix.runner.reporter import Reporter

_T = TypeVar("_T")

CONTENTS_READ = "contents: read"
CONTENTS_WRITE = "contents: write"
ACTIONS_READ = "actions: read"
ISSUES_WRITE = "issues: write"
PULLS_READ = "pull-requests: read"
STATUSES_WRITE = "statuses: write"
PULLS_WRITE = "pull-requests: write"

_NEXT_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


class HTTPError(Exception):
    """An answer that is not 2xx: its status, its decoded body and its headers."""

    def __init__(self, status: int, data: Any, headers: Mapping[str, Any] | None) -> None:
        super().__init__(status)
        self.status = status
        self.data = data
        self.headers = headers


class OffHostError(Exception):
    """The URL is not on the API's host, so the request was not sent."""


def repo_path(repo: str) -> str:
    """``/repos/OWNER/REPO``, each part quoted; an error for anything else."""
    owner, sep, name = repo.partition("/")
    if not (owner and sep and name) or "/" in name:
        raise GitHubAPIError(f"repository {repo!r} is not of the form OWNER/REPO")
    return f"/repos/{urllib.parse.quote(owner, safe='')}/{urllib.parse.quote(name, safe='')}"


def branch_path(branch: str) -> str:
    """A branch name as a URL path (slashes kept)."""
    return urllib.parse.quote(branch.removeprefix("refs/heads/"), safe="/")


def error_message(data: Any) -> str:
    """GitHub's message in an error answer, with the details of its ``errors`` list."""
    if isinstance(data, dict):
        message = str(data.get("message") or "")
        errors = data.get("errors")
        if isinstance(errors, list):
            details = [
                str(e.get("message") or e.get("code") or "") if isinstance(e, dict) else str(e)
                for e in errors
            ]
            extra = "; ".join(d for d in details if d)
            if extra:
                message = f"{message} ({extra})" if message else extra
        return message
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")[:200]
    return "" if data is None else str(data)[:200]


def lower_headers(headers: Mapping[str, Any] | None) -> dict[str, str]:
    """Headers with lower-case names."""
    return {str(k).lower(): str(v) for k, v in (headers or {}).items()}


def bind(
    function: Callable[..., tuple[dict[str, Any], Any]],
    verb: str,
    url: str,
    parameters: dict[str, Any] | None,
    body: dict[str, Any] | None = None,
) -> Callable[[], tuple[dict[str, Any], Any]]:
    """A request with its arguments fixed, ready to be retried."""

    def request() -> tuple[dict[str, Any], Any]:
        return function(verb, url, parameters=parameters, body=body)

    return request


def _silent(_message: str) -> None:
    pass


class Transport:
    """Sends requests and retries them; the calls (github/git.py, github/issues.py) build on it."""

    def __init__(self, *, retry: RetryPolicy, sleep: Callable[[float], None]) -> None:
        self._retry = retry
        self._sleep = sleep
        self._notify: Callable[[str], None] = _silent
        self._meter = SpendMeter()

    def spent(self) -> Spend:
        """What this client sent so far (every try), and GitHub's last rate-limit figures."""
        return self._meter.spent()

    def report_to(self, log: Reporter) -> None:
        """Say every retry in ``log``, and wait in steps that keep the log talking."""
        self._notify = log.info
        self._sleep = paced(log, self._sleep, announce=False)

    def _send(
        self,
        verb: str,
        url: str,
        *,
        parameters: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], Any]:
        """Send one request; (headers, decoded body), or :class:`HTTPError`/:class:`OSError`."""
        raise NotImplementedError

    @property
    def _graphql_url(self) -> str:
        """The GraphQL endpoint beside the REST API."""
        raise NotImplementedError

    def _call(
        self, what: str, permission: str, request: Callable[[], _T], *, resend: bool = True
    ) -> _T:
        """Run ``request``, retrying transient failures (see the module docstring).

        With ``resend=False`` (creates that must not be repeated blindly) a 5xx answer or a
        network error is raised at once as a :class:`GitHubAPIError` (``status`` None for a
        network error): the write may have landed, so the caller looks before sending again.
        Rate-limit answers are still waited out: GitHub refused those requests.
        """
        waited = 0.0
        attempt = 0
        while True:
            try:
                return request()
            except HTTPError as error:
                message = error_message(error.data)
                headers = lower_headers(error.headers)
                wait = self._retry.wait_for(error.status, headers, message, attempt)
                if wait is None:
                    raise translate_error(what, permission, error.status, message) from None
                status: int | None = error.status
                said = f"{error.status} {message}".strip()
            except OSError as error:  # requests' connection errors and timeouts are OSErrors
                wait = Wait(self._retry.backoff(attempt), rate_limited=False, why="network error")
                status, said = None, str(error) or type(error).__name__
            if not resend and not wait.rate_limited:
                raise GitHubAPIError(
                    f"{what} failed: {said!r}; the write may or may not have landed", status=status
                )
            self._retry.give_up_unless_retryable(
                what, wait, status=status, said=said, attempt=attempt, waited=waited
            )
            self._notify(
                f"GitHub: {what} failed ({wait.why}: {said}); retry {attempt + 1} of "
                f"{self._retry.retries} in {wait.seconds:.0f} s"
            )
            self._sleep(wait.seconds)
            waited += wait.seconds
            attempt += 1

    def _json(
        self,
        verb: str,
        url: str,
        *,
        parameters: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], Any]:
        """Send one request and count it (answered or not; a URL off the API's host is not sent);
        its body holds no secret the guard conceals."""
        if body is not None:
            body = cast("dict[str, Any]", scrub_json(body))
        try:
            headers, data = self._send(verb, url, parameters=parameters, body=body)
        except HTTPError as error:
            self._meter.count(verb, lower_headers(error.headers))
            raise
        except OSError:
            self._meter.count(verb, None)
            raise
        self._meter.count(verb, lower_headers(headers))
        return headers, data

    def _get_all(
        self, what: str, permission: str, url: str, parameters: dict[str, Any]
    ) -> list[Any]:
        """Every page of a ``Link``-paginated GET, one retried request per page."""
        pages: list[Any] = []
        next_url: str | None = url
        params: dict[str, Any] | None = parameters
        while next_url is not None:
            headers, data = self._call(what, permission, bind(self._json, "GET", next_url, params))
            pages.append(data)
            found = _NEXT_LINK.search(lower_headers(headers).get("link", ""))
            next_url = found.group(1) if found else None
            params = None
        return pages
