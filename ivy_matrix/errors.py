"""The exceptions ivy-matrix raises on purpose, and the exit codes they end a command with.

Pure: no I/O. The hierarchy, with each class's exit code (:class:`ExitCode`)::

    IvyMatrixError          the user must fix something; a one-line message         3
    ├── InputError          an input is not usable: result files, a table, a path    3
    │   ├── UsageError      the command line or a setting is wrong                  2
    │   └── ProblemsError   several problems of one input (a table's cells)          3
    ├── StoreError          the state store cannot be read, written or locked        4
    └── GitHubAPIError      GitHub refused a request or could not be reached         5
        ├── ReadOnlyTokenError  the token may not do this (it lacks a permission)
        ├── PushRefusedError    the server refused a ref update (branch protection, a hook)
        └── RateLimitError      rate limited for longer than we are willing to wait

Anything else that escapes is a bug in ivy-matrix: exit code 70 with a traceback. Messages say
what failed, why, and what to do, naming settings the way the user wrote them.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum


class ExitCode(IntEnum):
    """What a command's exit code says. The one table: docs/commands.md lists it too."""

    OK = 0  # done, warnings included
    FAILING = 1  # the results fail the --fail-on rule (failed tests, or a new failure)
    USAGE = 2  # the command line or a setting is wrong (argparse's code for usage errors)
    INPUT = 3  # an input is not usable: no result file, none readable, no backend matched
    STORE = 4  # the state store cannot be read, written or locked, or holds no baseline
    GITHUB = 5  # GitHub refused a request or could not be reached
    BUG = 70  # anything else: a bug in ivy-matrix (a traceback is printed); EX_SOFTWARE


class IvyMatrixError(Exception):
    """A problem the user can fix; the message says how."""

    exit_code = ExitCode.INPUT


class InputError(IvyMatrixError):
    """An input is not usable: result files, a table, a path or a setting's value."""


class UsageError(InputError):
    """The command line or a setting is wrong: an unknown option, a bad value, options that
    do not go together, a bad config file."""

    exit_code = ExitCode.USAGE


class StoreError(IvyMatrixError):
    """The state store could not be read, written or locked."""

    exit_code = ExitCode.STORE


class GitHubAPIError(IvyMatrixError):
    """GitHub answered a request with an error, or could not be reached."""

    exit_code = ExitCode.GITHUB

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ReadOnlyTokenError(GitHubAPIError):
    """The token may not do this: it lacks a permission (GitHub said so: 403 "Resource not
    accessible by integration", "Permission to ... denied", or a 403 that persists).

    The update fails on it, naming the permission: the read-only token of a fork's or
    Dependabot's pull request is told from the event, before any write is tried
    (``config/event.py``), never from an answer. The pull-request comment, which is
    best-effort, degrades to the job summary.
    """


class PushRefusedError(GitHubAPIError):
    """The server refused a ref update that no other writer raced: branch protection, a
    ruleset or a pre-receive hook. Retrying cannot help; the message quotes the server."""


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
