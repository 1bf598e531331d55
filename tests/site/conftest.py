"""Fixtures of the site's tests: golden data files."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture(name="site_golden")
def site_golden_fixture(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """Compare a data file with tests/site/golden/<name> (``--update-goldens`` rewrites it)."""
    update = bool(request.config.getoption("--update-goldens"))

    def check(name: str, actual: str) -> None:
        path = GOLDEN / name
        if update:
            if os.environ.get("CI"):
                pytest.fail("--update-goldens is refused when CI is set")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8")
            return
        if not path.is_file():
            pytest.fail(f"golden file {path} is missing: run pytest --update-goldens")
        assert actual == path.read_text(encoding="utf-8")

    return check
