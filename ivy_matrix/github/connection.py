"""The GitHub connection of one command: opened on first use, from a factory that can be swapped.

I/O. :class:`Remote` holds what a command needs to reach GitHub: a client factory (by default
:func:`~ivy_matrix.github.client.make_client`) and the
``sleep`` the stores and targets wait with. Tests pass a factory with short waits; nothing
else changes. The client is opened only when a target needs the API, so
local runs never import PyGithub.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Self

from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import InputError

if TYPE_CHECKING:
    from ivy_matrix.github.client import GitHubClient

# (token, api_url) -> a client.
ClientFactory = Callable[[str, str], "GitHubClient"]

READ_ONLY_ADVICE = (
    "the token is read-only here (a pull request from a fork, or Dependabot), so the "
    "dashboards are in the job summary only. To publish them, upload the result files as an "
    "artifact and run ivy-matrix in a workflow triggered by workflow_run, which gets a token "
    "that can write (see the README, 'Pull requests from forks')"
)


def production_client(token: str, api_url: str) -> GitHubClient:
    """The client a real run uses: our retry policy, no pause between reads (make_client)."""
    from ivy_matrix.github.client import make_client  # noqa: PLC0415  -- PyGithub only when needed

    return make_client(token=token, api_url=api_url)


@dataclass(frozen=True, slots=True, kw_only=True)
class Remote:
    """How a command reaches GitHub: the client factory, and how stores and targets wait."""

    client: ClientFactory = production_client
    sleep: Callable[[float], None] = field(default=time.sleep)


class GitHub:
    """Opens the GitHub client on first use, so runs that need no API never import PyGithub."""

    def __init__(self, settings: Settings, remote: Remote | None = None) -> None:
        self.settings = settings
        self.remote = remote or Remote()
        self._client: GitHubClient | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def available(self) -> bool:
        return bool(self.settings.token and self.settings.repository)

    @property
    def repository(self) -> str:
        if not self.settings.repository:
            raise InputError(
                "no repository: pass --repository OWNER/REPO (on a runner GITHUB_REPOSITORY "
                "sets it)"
            )
        return self.settings.repository

    @property
    def client(self) -> GitHubClient:
        if self._client is None:
            if not self.settings.token:
                raise InputError(
                    "the branch, issue and pr-comment targets need a token: pass --token, or set the "
                    "'token' input (it defaults to github.token) / IVY_MATRIX_TOKEN"
                )
            self._client = self.remote.client(self.settings.token, self.settings.api_url)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def is_read_only_event(settings: Settings) -> bool:
    """A pull request from a fork (or Dependabot's) runs with a read-only token."""
    if settings.actor == "dependabot[bot]":
        return True
    if settings.event_name != "pull_request" or settings.event_path is None:
        return False
    try:
        payload = json.loads(settings.event_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    pull = payload.get("pull_request") if isinstance(payload, dict) else None
    if not isinstance(pull, dict):
        return False
    head = (pull.get("head") or {}).get("repo") or {}
    base = (pull.get("base") or {}).get("repo") or {}
    return bool(head.get("fork")) or (
        bool(head.get("full_name")) and head.get("full_name") != base.get("full_name")
    )
