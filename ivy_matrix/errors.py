"""The exceptions ivy-matrix raises on purpose.

Pure: no I/O. The hierarchy::

    IvyMatrixError          the user must fix something; exit code 1, one-line message
    ├── InputError          a setting, config file, table or path is wrong
    │   └── ProblemsError   several problems of one input (a table's cells), listed together
    ├── StoreError          the state store cannot be read or written
    └── GitHubAPIError      GitHub refused a request (status, operation, permission hint)
        ├── ReadOnlyTokenError  the token may not write (fork pull requests, Dependabot)
        └── RateLimitError      rate limited for longer than we are willing to wait

Anything else that escapes is a bug in ivy-matrix: exit code 2 with a traceback. Messages say
what failed, why, and what to do, naming settings the way the user wrote them. The exit codes
are :class:`ExitCode`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum


class ExitCode(IntEnum):
    """What a command's exit code says: done, the user must fix something, or a bug."""

    OK = 0  # done, warnings included
    USER = 1  # an IvyMatrixError, or what fail-on asks for: the message says what to fix
    BUG = 2  # anything else: a bug in ivy-matrix (a traceback is printed)


class IvyMatrixError(Exception):
    """A problem the user can fix; the message says how."""


class InputError(IvyMatrixError):
    """A setting, config file, table or path is not usable."""


class StoreError(IvyMatrixError):
    """The state store could not be read or written."""


class GitHubAPIError(IvyMatrixError):
    """GitHub answered a request with an error."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ReadOnlyTokenError(GitHubAPIError):
    """The token may read but not write here (fork or Dependabot pull request, or permissions).

    GitHub answers such writes with 403 "Resource not accessible by integration". Callers
    degrade (step summary only) instead of failing the job.
    """


class RateLimitError(GitHubAPIError):
    """GitHub asked us to wait longer than the configured maximum."""


class ProblemsError(InputError):
    """Several problems in one input (each cell of a table, say), reported together.

    The message says what failed as a whole; ``problems`` holds one line per problem, so the
    user can fix all of them at once.
    """

    def __init__(self, message: str, *, problems: Sequence[str]) -> None:
        super().__init__(message)
        self.problems = tuple(problems)
