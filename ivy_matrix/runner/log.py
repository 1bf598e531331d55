"""The log: plain lines in a terminal, workflow commands on a GitHub runner.

I/O: writes to the streams it is given and to the files the runner names (``$GITHUB_OUTPUT``,
``$GITHUB_STEP_SUMMARY``). Diagnostics (progress, phases, warnings, errors, a crash's
traceback) go to the diagnostics stream, by default stderr; data a command is asked for
(``--json -``, ``--summary-json -``) goes to the data stream, by default stdout, so that
``ivy-matrix compare --json - | jq`` gets only JSON. The runner reads both streams for workflow
commands. On a runner, warnings and errors become ``::warning::`` and ``::error::`` commands
(annotations on the run page, with the file when one is named) and long listings are folded
into ``::group::`` sections. Phases, waits and progress are runner/pacing.py's.

Every line goes through :class:`Log`, which neutralises what it prints, so that no test name,
file name or message can write a workflow command of its own (the runner reads stdout and stderr
line by line, and runs ``::command::`` at the start of a line, after spaces, and the older
``##[command]`` anywhere in a line):

- each message becomes one line: in workflow commands CR, LF and ``%`` are escaped as the runner
  expects (``%0D``, ``%0A``, ``%25``; properties also ``:`` and ``,``), in plain lines they show
  as ``\\r`` and ``\\n``; other control characters (ESC included), Unicode line and paragraph
  separators, bidi controls (U+202E and the rest, which reorder what a reader sees) and
  zero-width characters show as ``\\xNN``/``\\uNNNN``, in annotations and every message alike;
- ``##[`` becomes ``##\\[`` everywhere;
- a plain line that would start with ``::`` (after blanks) gets a ``\\`` in front.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, TextIO

from ivy_matrix.redaction import SECRET_MIN
from ivy_matrix.runner.guard import scrub

# Control characters other than tab, the characters some readers take as line breaks, and
# the invisible ones that reorder or hide text around them: bidi marks, embeddings, overrides
# and isolates (a name holding U+202E shows its end reversed: "Trojan Source"), zero-width
# characters and the byte order mark.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)
# The runner's older command syntax, recognised anywhere in a line.
_OLD_COMMAND = "##["
# A line the runner takes for a command: "::" after Unicode white space (which it trims); format
# characters such as U+FEFF are skipped too, in case a reader drops them.
_COMMAND_START = re.compile(r"[\s\u180e\u200b-\u200f\u2060-\u2064\ufeff]*::")


class Progress(Protocol):
    """Progress lines and warnings (``runner.log.Log`` is one)."""

    def info(self, message: str) -> None: ...

    def warning(self, message: str) -> None: ...


class Quiet:
    """Progress that goes nowhere."""

    def info(self, message: str) -> None:
        pass

    def warning(self, message: str) -> None:
        pass


def _visible(match: re.Match[str]) -> str:
    # "\x1b" for a one-byte code, "\u2028" beyond: as Python's repr shows them.
    return repr(match.group(0))[1:-1]


def _defuse(text: str) -> str:
    """Show control characters as escapes and break every ``##[``."""
    text = _UNSAFE.sub(_visible, text)
    while _OLD_COMMAND in text:
        text = text.replace(_OLD_COMMAND, "##\\[")
    return text


def _escape_data(text: str) -> str:
    # https://github.com/actions/toolkit/blob/main/packages/core/src/command.ts
    return _defuse(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


class _Output:
    """A stream where a write error (a closed pipe, a full disk) ends the output quietly.

    ``ivy-matrix update 2>&1 | head -1`` closes the stream early; the update must still finish
    and save, so the first failed write stops all further output instead of failing the
    command. Without a stream, the process's ``fallback`` stream as it is when written to (so
    pytest's capture and ``contextlib.redirect_stdout`` see it).
    """

    def __init__(self, stream: TextIO | None, fallback: Callable[[], TextIO]) -> None:
        self._stream = stream
        self._fallback = fallback
        self.lost = False
        self.secrets: list[str] = []

    @property
    def target(self) -> TextIO:
        return self._stream if self._stream is not None else self._fallback()

    def isatty(self) -> bool:
        try:
            return not self.lost and self.target.isatty()
        except (OSError, ValueError, AttributeError):
            return False

    def hide(self, text: str) -> str:
        """``text`` with every secret (the token, as the lines show it) replaced by ``***``,
        and what the guard hides (runner/guard.py: well-known key shapes too)."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return scrub(text)

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                self.target.write(self.hide(text))
            except OSError:
                self._lose()
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self.target.flush()
            except OSError:
                self._lose()

    def _lose(self) -> None:
        self.lost = True
        if self._stream is None:
            # What is still buffered would fail again when Python exits and print
            # "Exception ignored ... BrokenPipeError": send it to the null device instead.
            with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, self._fallback().fileno())
                os.close(null)


def plain_line(text: str) -> str:
    """One line that the runner shows as it is: never a workflow command, never two lines."""
    text = _defuse(text.replace("\r", "\\r").replace("\n", "\\n"))
    return "\\" + text if _COMMAND_START.match(text) else text


class Log:
    """Where every user-facing line goes: diagnostics to ``stream`` (default stderr), data to
    ``data`` (default stdout); both looked up when written to. ``clock`` (seconds, monotonic)
    times the phases and paces progress lines; tests pass a virtual one.

    Safe to use from two threads (runner/pacing.py's heartbeat writes too): each line is
    written whole under a lock. ``last_line`` is when the last line was written.
    """

    def __init__(
        self,
        *,
        github_actions: bool,
        stream: TextIO | None = None,
        data: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.github_actions = github_actions
        self._output = _Output(stream, lambda: sys.stderr)
        self._data = _Output(data, lambda: sys.stdout)
        self.clock = clock
        self.last_line = clock()
        self._lock = threading.RLock()
        # A terminal's progress bar: drawn with "\r" on the diagnostics stream and erased
        # before any line, so it never reaches a log file or a pipe (runner/pacing.py).
        self._bar = ""
        self.phase: str | None = None

    @property
    def stream(self) -> _Output:
        return self._output

    def conceal(self, secret: str) -> None:
        """Never print ``secret`` (the token): every line shows ``***`` in its place.

        The runner masks the secrets it knows too, but not a token given another way. A
        token that holds a line break or a control character (refused by
        ``config.settings`` before any request, but an option parsing error can quote it) is
        concealed as the lines show it too: escaped for a workflow command, a plain line, or
        Python's ``repr``. A "secret" shorter than any GitHub token (tests pass ``t``) is not
        one, and would mangle every line, so it is left alone.
        """
        if len(secret) < SECRET_MIN:
            return
        shown = {secret, _escape_data(secret), plain_line(secret), repr(secret)[1:-1]}
        for output in (self._output, self._data):
            # Longest first, so that no shorter form leaves part of a longer one in sight.
            output.secrets = sorted(set(output.secrets) | shown, key=len, reverse=True)

    @property
    def terminal(self) -> bool:
        """Whether diagnostics go to a terminal a person watches (not a runner, log or pipe)."""
        return not self.github_actions and self._output.isatty()

    def _line(self, text: str) -> None:
        with self._lock:
            if self._bar:
                self._output.write("\r" + " " * len(self._bar) + "\r")
                self._bar = ""
            print(text, file=self._output, flush=True)
            self.last_line = self.clock()

    def bar(self, text: str) -> None:
        """Draw ``text`` as the terminal's progress bar (nothing when not on a terminal)."""
        if not self.terminal:
            return
        with self._lock:
            pad = " " * max(len(self._bar) - len(text), 0)
            self._output.write("\r" + text + pad)
            self._output.flush()
            self._bar = text

    def data(self, text: str) -> None:
        """Write what the command was asked for (``-`` as a path) to the data stream."""
        with self._lock:
            self._data.write(text)
            self._data.flush()

    def info(self, message: str) -> None:
        self._line(plain_line(message))

    def _annotate(
        self, kind: str, message: str, file: str | None, line: int | None, title: str | None = None
    ) -> None:
        if self.github_actions:
            props = []
            if file:
                props.append(f"file={_escape_property(file)}")
            if line:
                props.append(f"line={line}")
            if title:
                props.append(f"title={_escape_property(title)}")
            head = f"::{kind} {','.join(props)}::" if props else f"::{kind}::"
            self._line(head + _escape_data(message))
        else:
            where = f"{file}:{line}: " if file and line else f"{file}: " if file else ""
            what = f"{title}: " if title else ""
            self._line(plain_line(f"{kind}: {where}{what}{message}"))

    def warning(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        title: str | None = None,
    ) -> None:
        self._annotate("warning", message, file, line, title)

    def error(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        title: str | None = None,
    ) -> None:
        self._annotate("error", message, file, line, title)

    def notice(self, message: str) -> None:
        self._annotate("notice", message, None, None)

    def test_failure(
        self, title: str, message: str, *, file: str | None, line: int | None = None
    ) -> None:
        """A failed test: an error annotation on a runner (titled with the test and backend,
        at its file and line when known), a plain indented line elsewhere; never a
        ``warning:`` about ivy-matrix itself."""
        if self.github_actions:
            self._annotate("error", message, file, line, title)
        else:
            self.info(f"  {title}: {message}")

    def traceback(self, text: str) -> None:
        """Print a traceback to the diagnostics stream, each line neutralised like any other."""
        for line in text.splitlines():
            self._line(plain_line(line))

    @contextlib.contextmanager
    def group(self, title: str) -> Iterator[None]:
        """Fold the lines printed inside into one section of the runner's log."""
        if self.github_actions:
            self._line(f"::group::{_escape_data(title)}")
        else:
            self.info(title)
        try:
            yield
        finally:
            if self.github_actions:
                self._line("::endgroup::")


def _random_delimiter() -> str:
    # 128 random bits, as uuid4 has (uuid's import pulls in platform and more: a leg's start-up).
    return f"ivy_matrix_{secrets.token_hex(16)}"


def append_output(
    path: Path, name: str, value: str, *, new_delimiter: Callable[[], str] = _random_delimiter
) -> None:
    """Set a step output through ``$GITHUB_OUTPUT`` (multi-line safe).

    A multi-line value is framed by a random delimiter that does not occur in it, so no value
    can end its frame early and set other outputs.
    """
    value = scrub(value)
    delimiter = new_delimiter()
    while delimiter in value:
        delimiter = new_delimiter()
    with path.open("a", encoding="utf-8") as handle:
        if "\n" in value or "\r" in value:
            handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            handle.write(f"{name}={value}\n")


def append_summary(path: Path, markdown: str) -> None:
    """Add markdown to the job summary (``$GITHUB_STEP_SUMMARY``)."""
    markdown = scrub(markdown)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(markdown if markdown.endswith("\n") else markdown + "\n")
