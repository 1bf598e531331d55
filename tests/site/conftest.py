"""Fixtures of the site's tests: golden data files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import check_golden

GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture(name="site_golden")
def site_golden_fixture(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """Compare a data file with tests/site/golden/<name> (``--update-goldens`` rewrites it)."""

    def check(name: str, actual: str) -> None:
        check_golden(request, GOLDEN / name, actual)

    return check
