"""What a part that reports its progress needs of the log: lines, and the phase they belong to.

Pure: no I/O (a protocol; :class:`~ivy_matrix.runner.log.Log` is the one the process uses). The
GitHub client reports retries and long waits to it, and ``runner.pacing`` its phases' waits.
"""

from __future__ import annotations

from typing import Protocol


class Reporter(Protocol):
    """Where a client says its retries and long waits (``runner.log.Log`` is one): lines, and
    the phase of the command they happen in."""

    phase: str | None

    def info(self, message: str) -> None: ...
