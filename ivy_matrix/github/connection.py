"""The GitHub connection of one command: opened on first use, from a factory that can be swapped.

I/O. :class:`Remote` holds what a command needs to reach GitHub: a client factory (by default
:func:`~ivy_matrix.github.client.make_client`), a factory of the git transport of the
dashboard branch (``github/git_transport.py``; None: no git, the REST API only) and the
``sleep`` the stores and targets wait with. Tests pass a factory with short waits, or one that
returns the in-memory model: the client is typed as :class:`~ivy_matrix.github.types.GitHubAPI`;
nothing else changes. :class:`Connection` takes plain values (the token, the API and server
URLs and the repository) and opens the client, or the git transport, only when a target needs
it, so local runs never import PyGithub; it closes both.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Self

from ivy_matrix.errors import UsageError
from ivy_matrix.github.types import GitHubAPI, Spend
from ivy_matrix.results.jobs import DEFAULT_SERVER_URL
from ivy_matrix.runner.log import Log
from ivy_matrix.runner.pacing import paced

if TYPE_CHECKING:
    from ivy_matrix.github.client import GitHubClient
    from ivy_matrix.github.git_transport import GitTransport

# (token, api_url) -> a client.
ClientFactory = Callable[[str, str], GitHubAPI]
# (server_url, repository, token) -> the git transport of the repository's branches.
GitFactory = Callable[[str, str, str], "GitTransport"]


def production_git(server_url: str, repository: str, token: str) -> GitTransport:
    """The git transport a real run uses (``git`` on the PATH, 2.31 or newer)."""
    # Imported here, as PyGithub is below: git_transport.py starts processes (subprocess and
    # what it imports), which only a run that reaches the branch over git needs.
    from ivy_matrix.github.git_transport import GitTransport  # noqa: PLC0415

    return GitTransport(server_url=server_url, repository=repository, token=token)


def production_client(token: str, api_url: str) -> GitHubClient:
    """The client a real run uses: our retry policy, no pause between reads (make_client)."""
    from ivy_matrix.github.client import make_client  # noqa: PLC0415  -- PyGithub only when needed

    return make_client(token=token, api_url=api_url)


@dataclass(frozen=True, slots=True, kw_only=True)
class Remote:
    """How a command reaches GitHub: the client factory, and how stores and targets wait."""

    client: ClientFactory = production_client
    sleep: Callable[[float], None] = field(default=time.sleep)
    git: GitFactory | None = production_git


class Connection:
    """The client for one repository, opened on first use (runs that need no API never
    import PyGithub), and closed with the ``with`` block."""

    def __init__(
        self,
        *,
        token: str | None,
        api_url: str,
        repository: str | None,
        remote: Remote | None = None,
        server_url: str = DEFAULT_SERVER_URL,
        log: Log | None = None,
    ) -> None:
        self.token = token
        self.api_url = api_url
        self.server_url = server_url
        self._repository = repository
        remote = remote or Remote()
        if log is not None:
            # The stores and targets wait with remote.sleep: long waits say so in the log.
            remote = replace(remote, sleep=paced(log, remote.sleep))
        self.remote = remote
        self._log = log
        self._client: GitHubAPI | None = None
        self._git: GitTransport | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def available(self) -> bool:
        """Whether the API can be used at all: a token and a repository are given."""
        return bool(self.token and self._repository)

    @property
    def repository(self) -> str:
        if not self._repository:
            raise UsageError(
                "no repository: pass --repository OWNER/REPO (on a runner GITHUB_REPOSITORY "
                "sets it)"
            )
        return self._repository

    @property
    def client(self) -> GitHubAPI:
        if self._client is None:
            if not self.token:
                raise UsageError(
                    "the branch, issue, pr-comment and status targets need a token: pass --token or set "
                    "IVY_MATRIX_TOKEN, GITHUB_TOKEN or GH_TOKEN (the action's 'token' input "
                    "defaults to github.token)"
                )
            self._client = self.remote.client(self.token, self.api_url)
            if self._log is not None:
                self._client.report_to(self._log)
        return self._client

    @property
    def has_git(self) -> bool:
        """Whether the git transport may be tried (the remote has a factory for it)."""
        return self.remote.git is not None

    def git(self) -> GitTransport:
        """The git transport of the repository (made on first use)."""
        if self._git is None:
            if self.remote.git is None:
                raise UsageError("the git branch transport is not available here")
            if not self.token:
                raise UsageError(
                    "the branch target needs a token: pass --token or set IVY_MATRIX_TOKEN, "
                    "GITHUB_TOKEN or GH_TOKEN (the action's 'token' input defaults to "
                    "github.token)"
                )
            self._git = self.remote.git(self.server_url, self.repository, self.token)
            if self._log is not None:
                self._git.report_to(self._log)
        return self._git

    def spent(self) -> Spend | None:
        """What the client spent of GitHub's budgets (None: it was never opened)."""
        return None if self._client is None else self._client.spent()

    def close(self) -> None:
        if self._git is not None:
            git = self._git
            if self._log is not None and (git.fetches or git.listings or git.pushes):
                self._log.info(
                    f"git over HTTPS: {git.fetches} fetch(es), {git.listings} listing(s), "
                    f"{git.pushes} push(es) to {git.url} (not REST API requests)"
                )
            git.close()
        if self._client is not None:
            self._client.close()
