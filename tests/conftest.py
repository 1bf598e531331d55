"""Shared fixtures: the golden-file comparison, the paths of the shared test data, the GitHub
doubles (under GitHub's budgets) and the plugin that reports what each test spent."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ivy_matrix.github.client import GitHubClient, make_client
from tests.github.fake_server import FakeGitHub
from tests.github.memory import MemoryGitHub

# What each test spent of GitHub's budgets, and the top spenders, in the terminal summary.
pytest_plugins = ("tests.github.spend_report",)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite tests/golden/*.md from the current output (refused when CI is set)",
    )


def shared_dir(name: str) -> Path:
    """A folder of ../shared; skips the test when absent, except in CI where it must exist."""
    path = SHARED / name
    if not path.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing; CI must run with ../shared beside the checkout")
        pytest.skip(f"{path} is not here")
    return path


def check_golden(request: pytest.FixtureRequest, path: Path, actual: str) -> None:
    """``actual`` must equal the golden file at ``path``; ``--update-goldens`` rewrites it
    instead (refused when CI is set)."""
    if request.config.getoption("--update-goldens"):
        if os.environ.get("CI"):
            pytest.fail("--update-goldens is refused when CI is set")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.is_file():
        pytest.fail(f"golden file {path} is missing: run pytest --update-goldens")
    assert actual == path.read_text(encoding="utf-8")


@pytest.fixture(name="golden")
def golden_fixture(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """Compare a rendered body with tests/golden/<name>.md (or <name> itself when it has an
    extension, such as a picture's ``.svg``)."""

    def check(name: str, actual: str) -> None:
        check_golden(request, GOLDEN_DIR / (name if "." in name else f"{name}.md"), actual)

    return check


@pytest.fixture(name="workdir")
def workdir_fixture(tmp_path, monkeypatch):
    """A temporary folder that is the current directory while the test runs."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(name="fake")
def fake_fixture() -> Iterator[FakeGitHub]:
    """A fresh fake GitHub server on 127.0.0.1 (tests that need other settings configure it)."""
    with FakeGitHub() as fake:
        yield fake


def quick_sleep(seconds: float) -> None:
    """Stand-in for time.sleep in API clients: really waits, but at most 20 ms."""
    time.sleep(min(seconds, 0.02))


def fake_client(fake: FakeGitHub, **options) -> GitHubClient:
    """Our GitHub client for the fake, with short waits."""
    options.setdefault("retries", 3)
    options.setdefault("sleep", quick_sleep)
    return make_client(token="t", api_url=fake.base_url, timeout=10, **options)


@pytest.fixture(name="memory")
def memory_fixture() -> MemoryGitHub:
    """A fresh in-memory GitHub (git data and issues of acme/widgets) for store logic tests."""
    return MemoryGitHub()
