"""The log: plain lines in a terminal, workflow commands on a GitHub runner.

I/O: writes to stdout and to the files the runner names (``$GITHUB_OUTPUT``,
``$GITHUB_STEP_SUMMARY``). On a runner, warnings and errors become ``::warning::`` and
``::error::`` commands (annotations on the run page, with the file when one is named) and long
listings are folded into ``::group::`` sections.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


def _escape_data(text: str) -> str:
    # https://github.com/actions/toolkit/blob/main/packages/core/src/command.ts
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


class _Output:
    """The log's stream, where a write error (a closed pipe, a full disk) ends the log quietly.

    ``ivy-matrix update | head -1`` closes stdout early; the update must still finish and save,
    so the first failed write stops all further output instead of failing the command.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self.lost = False

    @property
    def target(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                self.target.write(text)
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
            # What is still buffered for stdout would fail again when Python exits and print
            # "Exception ignored ... BrokenPipeError": send it to the null device instead.
            with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, sys.stdout.fileno())
                os.close(null)


class Log:
    """Where every user-facing line goes."""

    def __init__(self, *, github_actions: bool, stream: TextIO | None = None) -> None:
        self.github_actions = github_actions
        self._output = _Output(stream)

    @property
    def stream(self) -> _Output:
        return self._output

    def info(self, message: str) -> None:
        print(message, file=self.stream, flush=True)

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
            print(head + _escape_data(message), file=self.stream, flush=True)
        else:
            where = f"{file}:{line}: " if file and line else f"{file}: " if file else ""
            what = f"{title}: " if title else ""
            print(f"{kind}: {where}{what}{message}", file=self.stream, flush=True)

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

    @contextlib.contextmanager
    def group(self, title: str) -> Iterator[None]:
        """Fold the lines printed inside into one section of the runner's log."""
        if self.github_actions:
            print(f"::group::{_escape_data(title)}", file=self.stream, flush=True)
        else:
            self.info(title)
        try:
            yield
        finally:
            if self.github_actions:
                print("::endgroup::", file=self.stream, flush=True)


def append_output(path: Path, name: str, value: str) -> None:
    """Set a step output through ``$GITHUB_OUTPUT`` (multi-line safe)."""
    delimiter = f"ivy_matrix_{uuid.uuid4().hex}"
    with path.open("a", encoding="utf-8") as handle:
        if "\n" in value or "\r" in value:
            handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            handle.write(f"{name}={value}\n")


def append_summary(path: Path, markdown: str) -> None:
    """Add markdown to the job summary (``$GITHUB_STEP_SUMMARY``)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(markdown if markdown.endswith("\n") else markdown + "\n")
