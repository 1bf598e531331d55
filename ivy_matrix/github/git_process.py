"""Running the ``git`` program against the repository's smart-HTTP remote, token kept secret.

I/O: starts ``git`` processes (no PyGithub, no REST). :class:`GitProcess` runs one git command
in a private bare repository with the token in an HTTP header that only git's environment
holds: never in argv (visible to every user of the machine), never in the URL, never in a log.
The remote is derived as actions/checkout derives it: ``{server-url}/{owner}/{repo}``
(``src/url-helper.ts`` ``getFetchUrl``), and the header is the one checkout configures,
``http.<origin>/.extraheader`` = ``AUTHORIZATION: basic base64(x-access-token:<token>)``
(``src/git-auth-helper.ts``), here passed as ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/
``GIT_CONFIG_VALUE_n`` (git 2.31 or newer), so any GitHub-compatible server serves it.

A failed command is classified by what git says (``LC_ALL=C``; git reports an HTTP error as
``The requested URL returned error: 403``, and shows a plain-text body of the first request as
``remote: ...`` lines) and by the status and headers of the last HTTP answer, which a command
that talks to the remote traces (``GIT_TRACE_CURL`` to a file in the private repository,
headers only; git writes the ``Authorization`` header there as ``<redacted>``, and the file is
deleted once read): the token refused (401); a 403 that says the permission is missing
("Permission to ... denied", "Write access to repository not granted", "Resource not
accessible by integration": :class:`~ivy_matrix.errors.ReadOnlyTokenError`); throttled (a 429,
or a 403 that says nothing else: GitHub's rate limits answer either, with ``retry-after`` or
``x-ratelimit-remaining: 0``), which the caller waits out and retries; no git repository there
(404, or not a smart-HTTP server: :class:`GitUnavailableError`, on which the ``auto`` transport
falls back to the REST API); or transient (5xx, a dropped connection), which the caller may
retry.
"""

from __future__ import annotations

import base64
import itertools
import os
import re
import shutil
import subprocess
import urllib.parse
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError, UsageError
from ivy_matrix.github.http import CONTENTS_READ

# GIT_CONFIG_COUNT (config through the environment) came with git 2.31.
MIN_GIT = (2, 31)
# No git command of ours legitimately runs longer: a hung transfer is killed and retried.
COMMAND_TIMEOUT = 300.0
# A token is printable ASCII without spaces; anything else could split the header line.
_TOKEN = re.compile(r"[\x21-\x7e]+")
# Variables of the caller's environment that configure git are not passed on (they could
# point git at another repository, add headers or trace the traffic); these are kept, so that
# proxies and certificates set up for the runner still apply.
_KEPT_GIT_VARIABLES = re.compile(r"GIT_(SSL|PROXY|HTTP_PROXY)_[A-Z_]+")
# Settings every command runs with (nothing secret: these are in argv).
_OPTIONS = (
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "protocol.version=2",
    "-c", "credential.helper=",
    "-c", "core.askPass=",
    "-c", "http.lowSpeedLimit=1000",
    "-c", "http.lowSpeedTime=60",
    "-c", "fetch.writeCommitGraph=false",
    "-c", "advice.pushUpdateRejected=false",
    # A push packs what it sends: each page tries one delta base, which git's order (by path,
    # then size) makes the same page's version the remote has. Comparing every page with its
    # ten neighbours (git's default) found little more and cost most of the push (fan-in of
    # 1M cells: 21 -> 8 git CPU-s, the pushed bytes within 3%; bench/README.md, issue 26).
    "-c", "pack.window=1",
)  # fmt: skip
# Who the commits are by: the Actions bot's public identity (what the REST API writes too).
AUTHOR = ("github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com")


class Failure(StrEnum):
    """Why a git command failed."""

    REFUSED = "refused"  # 401: the token was not accepted
    FORBIDDEN = "forbidden"  # a 403 that says the token may not do this
    THROTTLED = "throttled"  # a 429, or a 403 that does not say why: perhaps a rate limit
    MISSING = "missing"  # 404, or not a git server: the transport cannot be used here
    UNREACHABLE = "unreachable"  # no connection at all (name, refused, no route)
    TRANSIENT = "transient"  # 5xx, a dropped or timed-out transfer: worth retrying
    OTHER = "other"


class GitUnavailableError(GitHubAPIError):
    """git cannot reach the repository over smart HTTP here (not installed, too old, no such
    remote, no connection): the ``auto`` branch transport uses the REST API instead."""


@dataclass(frozen=True, slots=True)
class Answer:
    """The last HTTP answer a command got: its status (None: none traced) and headers (names
    in lower case)."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)


NO_ANSWER = Answer()


class GitCommandError(GitHubAPIError):
    """A git command failed; ``failure`` says why (see :class:`Failure`), ``answer`` is the
    last HTTP answer it got, ``said`` what git said (its last lines)."""

    def __init__(
        self,
        message: str,
        *,
        failure: Failure,
        status: int | None = None,
        answer: Answer = NO_ANSWER,
        said: str = "",
    ) -> None:
        super().__init__(message, status=status if status is not None else answer.status)
        self.failure = failure
        self.answer = answer
        self.said = said


# What GitHub says when the token lacks the permission (never worth a retry).
_DENIED = re.compile(
    r"permission to .* denied|write access .* not granted|resource not accessible by integration"
)
_PATTERNS: tuple[tuple[Failure, re.Pattern[str]], ...] = (
    (Failure.REFUSED, re.compile(r"error: 401|authentication failed|could not read username")),
    (Failure.FORBIDDEN, _DENIED),
    (Failure.THROTTLED, re.compile(r"error: 403|error: 429|rate limit")),
    (
        Failure.MISSING,
        re.compile(
            r"error: 404|not found|does not appear to be a git repository|"
            r"is this a git repository|not a git repository|dumb http"
        ),
    ),
    (
        Failure.UNREACHABLE,
        re.compile(r"could not resolve (host|proxy)|failed to connect|connection refused"),
    ),
    (
        Failure.TRANSIENT,
        re.compile(
            r"error: 5\d\d|rpc failed|early eof|unexpected disconnect|timed out|"
            r"empty reply|transfer closed|connection reset|the remote end hung up|"
            r"operation too slow|remote error|recv failure|send failure|ssl"
        ),
    ),
)


def classify(stderr: str, answer: Answer = NO_ANSWER) -> Failure:
    """What a failed command's message says went wrong (the first rule that matches), the
    last answer's status telling a throttled request where git's words do not."""
    said = stderr.lower()
    for failure, pattern in _PATTERNS:
        if pattern.search(said):
            return failure
    if answer.status in {403, 429}:
        return Failure.THROTTLED
    return Failure.OTHER


# "<= Recv header: HTTP/1.1 429 Too Many Requests", then "<= Recv header: Retry-After: 7".
_RECEIVED = "<= Recv header: "
_STATUS_LINE = re.compile(r"HTTP/[\d.]+ (\d{3})")
# The answer headers that say how long to wait; no other header is kept.
_WAIT_HEADERS = frozenset({"retry-after", "x-ratelimit-remaining", "x-ratelimit-reset"})


def last_answer(trace: str) -> Answer:
    """The status and waiting headers of the last answer in a ``GIT_TRACE_CURL`` trace."""
    status: int | None = None
    headers: dict[str, str] = {}
    for line in trace.splitlines():
        at = line.find(_RECEIVED)
        if at < 0:
            continue
        header = line[at + len(_RECEIVED) :].strip()
        found = _STATUS_LINE.match(header)
        if found:
            status, headers = int(found.group(1)), {}
            continue
        name, colon, value = header.partition(":")
        if colon and name.strip().lower() in _WAIT_HEADERS:
            headers[name.strip().lower()] = value.strip()[:40]
    return Answer(status=status, headers=headers)


def remote_url(server_url: str, repository: str) -> str:
    """``{server}/{owner}/{repo}``, as actions/checkout builds it (query and trailing slashes
    of the server URL dropped, owner and name quoted)."""
    base = server_url.split("?", 1)[0].rstrip("/")
    owner, sep, name = repository.partition("/")
    if not (owner and sep and name) or "/" in name:
        raise UsageError(f"repository {repository!r} is not of the form OWNER/REPO")
    parsed = urllib.parse.urlsplit(base)
    if parsed.scheme not in {"http", "https"} or not parsed.netloc:
        raise UsageError(f"server URL {server_url!r} is not an http(s) address")
    quote = urllib.parse.quote
    return f"{base}/{quote(owner, safe='')}/{quote(name, safe='')}"


def git_version(program: str = "git") -> tuple[int, int] | None:
    """(major, minor) of the installed git, or None when there is none."""
    path = shutil.which(program)
    if path is None:
        return None
    try:
        done = subprocess.run(  # noqa: S603  -- our own fixed arguments
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"(\d+)\.(\d+)", done.stdout)
    return (int(found.group(1)), int(found.group(2))) if found else None


@dataclass(frozen=True, slots=True, kw_only=True)
class GitAuth:
    """The header git sends to the remote's origin. ``repr`` never shows the token."""

    origin: str
    token: str = field(repr=False)

    def __post_init__(self) -> None:
        if not _TOKEN.fullmatch(self.token):
            raise UsageError(
                "the token has spaces, line breaks or other characters no token has; check "
                "the 'token' input (it defaults to github.token)"
            )

    def environment(self) -> dict[str, str]:
        """The git configuration of the header, as environment variables: the lists of extra
        headers are reset first (an empty value), so no header configured elsewhere is sent."""
        credential = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        key = f"http.{self.origin}/.extraheader"
        pairs = (("http.extraheader", ""), (key, ""), (key, f"AUTHORIZATION: basic {credential}"))
        variables = {"GIT_CONFIG_COUNT": str(len(pairs))}
        for number, (name, value) in enumerate(pairs):
            variables[f"GIT_CONFIG_KEY_{number}"] = name
            variables[f"GIT_CONFIG_VALUE_{number}"] = value
        return variables


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class GitProcess:
    """Runs git commands in the bare repository ``directory`` with ``auth`` for the remote."""

    def __init__(self, directory: str, auth: GitAuth, *, program: str = "git") -> None:
        self.directory = directory
        self.program = shutil.which(program) or program
        # The caller's environment, less what configures git, plus ours (see _KEPT_GIT_VARIABLES).
        base = {
            name: value
            for name, value in os.environ.items()  # noqa: TID251  -- passed on to git, not read
            if not name.startswith("GIT_") or _KEPT_GIT_VARIABLES.fullmatch(name)
        }
        self._environment = {
            **base,
            **auth.environment(),
            "GIT_TRACE_REDACT": "1",
            "GIT_DIR": directory,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": AUTHOR[0],
            "GIT_AUTHOR_EMAIL": AUTHOR[1],
            "GIT_COMMITTER_NAME": AUTHOR[0],
            "GIT_COMMITTER_EMAIL": AUTHOR[1],
            "LC_ALL": "C",
        }
        # The last HTTP answer of the last command run with ``remote`` (see run).
        self.answer = NO_ANSWER

    def command(self, *args: str) -> list[str]:
        """The argv of ``git <args>`` (what every user of the machine can see: no token)."""
        return [self.program, *_OPTIONS, *args]

    def run(
        self,
        *args: str,
        what: str,
        stdin: bytes | None = None,
        index: str | None = None,
        check: bool = True,
        remote: bool = False,
        permission: str = CONTENTS_READ,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git <args>``; :class:`GitCommandError` saying ``what`` failed unless ``check``
        is False. ``index`` is the index file of commands that build trees. ``remote``: the
        command talks to the remote, so its last HTTP answer is traced (:attr:`answer`; see
        the module docstring); ``permission`` is what a refusal names."""
        environment = self._environment
        if index is not None:
            environment = {**environment, "GIT_INDEX_FILE": index}
        trace = None
        if remote:
            trace = Path(self.directory, f"trace-{os.getpid()}-{next(_TRACES)}")
            environment = {
                **environment,
                "GIT_TRACE_CURL": str(trace),
                "GIT_TRACE_CURL_NO_DATA": "1",
            }
        try:
            done = subprocess.run(  # noqa: S603  -- git with our own arguments; no shell
                self.command(*args),
                input=stdin,
                env=environment,
                capture_output=True,
                timeout=COMMAND_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitCommandError(
                f"{what} failed: git did not finish within {COMMAND_TIMEOUT:.0f} s",
                failure=Failure.TRANSIENT,
            ) from None
        except OSError as error:
            raise GitUnavailableError(f"{what} failed: cannot run git ({error})") from None
        finally:
            self.answer = _read_trace(trace) if trace is not None else NO_ANSWER
        if check and done.returncode != 0:
            raise failed(
                what, done.stderr.decode("utf-8", errors="replace"), self.answer, permission
            )
        return done


_TRACES = itertools.count()


def _read_trace(path: Path) -> Answer:
    """The last answer in a trace file, which is then deleted."""
    try:
        return last_answer(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return NO_ANSWER
    finally:
        path.unlink(missing_ok=True)


def failed(
    what: str, stderr: str, answer: Answer = NO_ANSWER, permission: str = CONTENTS_READ
) -> GitHubAPIError:
    """The error for a command that failed saying ``stderr`` (its last lines, quoted), its
    last HTTP answer ``answer``; a refusal names ``permission``."""
    failure = classify(stderr, answer)
    said = " / ".join(line.strip() for line in stderr.strip().splitlines()[-3:] if line.strip())
    if failure is Failure.REFUSED:
        message = "the token was refused; check the 'token' input (it defaults to github.token)"
        return GitCommandError(f"{what} failed: {message} ({said})", failure=failure, status=401)
    if failure is Failure.FORBIDDEN:
        return denied(what, said, permission)
    return GitCommandError(
        f"{what} failed: {said or 'git gave no reason'}", failure=failure, answer=answer, said=said
    )


def denied(what: str, said: str, permission: str) -> ReadOnlyTokenError:
    """The error for a remote that does not let the token do ``what``."""
    return ReadOnlyTokenError(
        f"{what} failed: the token may not do this ({said}); give the job 'permissions: "
        f"{permission}' (a pull request from a fork gets a read-only token, which ivy-matrix "
        f"tells from the event and does not write with)",
        status=403,
    )
