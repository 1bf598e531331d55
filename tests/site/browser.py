"""Headless Chromium for the site's tests: Debian's chromium driven by Playwright.

No browser is downloaded: Playwright starts the system's chromium (``executable_path``) with
the flags that keep it from reaching the network (this machine has none but loopback), and a
fresh profile of its own. scripts/bootstrap --dev installs chromium and axe-core when they are
missing; without them the browser tests are skipped, except under CI, where they fail.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / ".venv" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
]


def missing(what: str) -> None:
    """Skip the test for want of ``what``; under CI, fail instead (CI must have it)."""
    message = f"{what} is not installed here (scripts/bootstrap --dev installs it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def chromium_path() -> str:
    """Debian's chromium (or skip, see :func:`missing`)."""
    path = shutil.which("chromium")
    if path is None:
        missing("chromium")
    assert path is not None
    return path


def axe_source() -> str:
    """axe-core's browser script, installed for the tests only (or skip)."""
    if not AXE.is_file():
        missing(f"axe-core ({AXE})")
    return AXE.read_text(encoding="utf-8")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  -- the stdlib's name
        pass


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` over HTTP on 127.0.0.1 (a port the OS picks); yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
