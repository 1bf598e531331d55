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
from typing import Any

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


class Visit:
    """A fresh browser context and page, with every request and alert it made."""

    def __init__(self, browser: Any, **options: Any) -> None:
        options.setdefault("viewport", {"width": 1200, "height": 900})
        self.context = browser.new_context(**options)
        self.requests: list[str] = []
        self.alerts: list[str] = []
        self.errors: list[str] = []
        self.context.on("request", lambda request: self.requests.append(request.url))
        self.page = self.context.new_page()
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _dialog(self, dialog: Any) -> None:
        """An alert (or confirm, prompt) the page opened: noted, and dismissed."""
        self.alerts.append(dialog.message)
        dialog.dismiss()

    def open(self, url: str, view: str) -> Any:
        """Go to ``url`` and wait until ``view`` is painted."""
        self.page.goto(url)
        return self.painted(view)

    def painted(self, view: str) -> Any:
        # A function, not an expression: the page's policy forbids eval, which an expression needs.
        self.page.wait_for_function(f"() => document.body.dataset.painted === {view!r}")
        return self.page


def url_of(site: Path, fragment: str = "") -> str:
    return (site / "index.html").as_uri() + fragment


def grid_cells(page: Any) -> dict[tuple[str, str], tuple[str, int, int]]:
    """(test, backend) -> (data-status, data-failed, data-total) of every grid cell shown."""
    cells = page.eval_on_selector_all(
        "#grid td[data-test]",
        "tds => tds.map(td => [td.dataset.test, td.dataset.backend, td.dataset.status,"
        " td.dataset.failed, td.dataset.total])",
    )
    return {(t, b): (s, int(f), int(n)) for t, b, s, f, n in cells}


def shown_rows(page: Any) -> list[str]:
    """The names in the grid's rows, top to bottom."""
    rows: list[str] = page.eval_on_selector_all(
        "#grid tbody tr", "rows => rows.map(r => r.cells[0].textContent)"
    )
    return rows
