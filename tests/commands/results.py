"""JUnit result files for the command tests, and the stored results they become."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome
from ivy_matrix.stores.local import LocalStore

GRADIENTS = "ivy_tests.test_core.test_gradients"
LAYERS = "ivy_tests.test_nn.test_layers"
CORE_GRADIENTS = DashboardId(title="gradients", category="core")
_CHILDREN = {
    "passed": "",
    "failed": '<failure message="assert 1 == 2">trace</failure>',
    "error": '<error message="fixture broke">trace</error>',
    "skipped": '<skipped message="not here"/>',
}
_BADGES = {
    Outcome.SUCCESS: "success-success",
    Outcome.FAILURE: "failure-red",
    Outcome.SKIPPED: "skipped-lightgrey",
    Outcome.FLAKY: "flaky-yellow",
}


def case_xml(name: str, status: str = "passed", classname: str = GRADIENTS) -> str:
    """One ``<testcase>`` element with the result child that ``status`` names."""
    return (
        f"<testcase classname={quoteattr(classname)} name={quoteattr(name)}>"
        f"{_CHILDREN[status]}</testcase>"
    )


def write_junit(path: Path, cases: Sequence[tuple[str, str]], classname: str = GRADIENTS) -> Path:
    """Write a one-suite JUnit file holding ``(name, status)`` cases; return its path."""
    return write_suite(path, "".join(case_xml(name, status, classname) for name, status in cases))


def write_suite(path: Path, body: str) -> Path:
    """Write a one-suite JUnit file holding the ``<testcase>`` elements ``body``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest">'
        f"{body}</testsuite></testsuites>\n",
        encoding="utf-8",
    )
    return path


def ivy_cell(url: str, outcome: Outcome) -> str:
    """A cell exactly as Ivy's dashboards draw it."""
    return (
        f'<a href="{url}" rel="noopener noreferrer" target="_blank">'
        f"<img src=https://img.shields.io/badge/-{_BADGES[outcome]}></a>"
    )


def read_json(path: Path) -> dict[str, Any]:
    """The JSON document at ``path``."""
    document = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def load(dashboard: DashboardId = CORE_GRADIENTS, store: Path = Path(".ivy-matrix")):
    """The stored state of one dashboard (it must exist)."""
    state = LocalStore(store).load(dashboard)
    assert state is not None
    return state


def latest(state: DashboardState, row: str, backend: str) -> Entry:
    """The entry a cell shows."""
    (found,) = [r for r in state.rows if r.name == row]
    return found.cells[backend].latest


def error_lines(out: str) -> list[str]:
    """The ``::error::`` workflow commands in a captured log: ivy-matrix's own errors, not the
    annotations of failed tests (``::error file=...,title=...::``)."""
    return [line for line in out.splitlines() if line.startswith("::error::")]


def tree(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder``, by posix path relative to it, with its bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def update_argv(*extra: str, backend: Sequence[str] = ("--backend", "torch")) -> list[str]:
    """``update`` of the folder ``results`` as run 100, job 7 of o/r, with a summary JSON."""
    return [
        "update",
        "--junit",
        "results",
        *backend,
        *("--run-id", "100", "--job-id", "7", "--repository", "o/r"),
        *("--summary-json", "summary.json"),
        *extra,
    ]
