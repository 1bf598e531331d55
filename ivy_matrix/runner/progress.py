"""Where progress lines and warnings go: the protocol stores and targets log through.

Pure: a protocol and a silent default. ``workflow_commands.Log`` is the real one (it prints
workflow commands on a runner).
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Progress lines and warnings (``workflow_commands.Log`` is one)."""

    def info(self, message: str) -> None: ...

    def warning(self, message: str) -> None: ...


class Quiet:
    """Progress that goes nowhere."""

    def info(self, message: str) -> None:
        pass

    def warning(self, message: str) -> None:
        pass
