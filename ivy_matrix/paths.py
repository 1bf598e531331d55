"""Where each dashboard's files go: safe file names, the page paths and the index page.

Pure: no I/O. The same relative paths are used in the local store, the output folder and on
the dashboard branch, so a dashboard's page and state file are found the same way everywhere.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path, PurePosixPath

from ivy_matrix.model import DashboardId, DashboardState

INDEX_NAME = "README.md"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(part: str) -> str:
    """A file-name-safe form of a dashboard title or category.

    Names that need changing get a short hash, so two different names never share a file.
    """
    cleaned = _UNSAFE.sub("-", part).strip("-.") or "_"
    if cleaned == part:
        return part
    digest = hashlib.sha256(part.encode()).hexdigest()[:8]
    return f"{cleaned}-{digest}"


def relative_path(dashboard: DashboardId, suffix: str) -> Path:
    """``category/title.suffix``, with both parts made safe for file names."""
    name = slug(dashboard.title) + suffix
    return Path(slug(dashboard.category), name) if dashboard.category else Path(name)


def dashboard_file(state: DashboardState) -> str:
    """Where a dashboard's markdown goes, relative to the output folder (posix form)."""
    return relative_path(state.id, ".md").as_posix()


def checked_path(path: str) -> str:
    """``path`` itself if it is a plain relative posix path; ValueError otherwise."""
    parts = PurePosixPath(path).parts
    if (
        not parts
        or path.startswith("/")
        or "\\" in path
        or any(part in {"", ".", ".."} for part in parts)
        or path != "/".join(parts)
    ):
        raise ValueError(f"rendered file path {path!r} is not a plain relative path")
    return path
