"""The project's own files: its licence and how the package declares it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_project_is_mit_licensed_and_says_so_in_its_metadata():
    """LICENSE holds the MIT text for the ivy-matrix authors, and pyproject.toml declares it."""
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the ivy-matrix authors" in text
    assert "WITHOUT WARRANTY OF ANY KIND" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert "[MIT licence](LICENSE)" in (ROOT / "README.md").read_text(encoding="utf-8")
