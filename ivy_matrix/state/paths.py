"""Where each dashboard's files go: safe file names, the page paths and the index page.

Pure: no I/O. The same relative paths are used in the local store, the output folder and on
the dashboard branch, so a dashboard's page and state file are found the same way everywhere.

A dashboard's page name depends on its own name only, so every leg and every run agrees on
it and a new dashboard never renames another's file. A category or title keeps its name when
it is lower-case and file-safe; any other name gets ``-`` and a short hash of the exact name
(``Core/Grad`` -> ``Core-70ea1983/Grad-d1c58652.md``), and so do the names that could be
taken for the index (a top-level ``readme``), for a file (a category ending in ``.md``) or
for a hashed name (ending in ``-`` and 8 hex digits). So no two dashboards share a file and
none is the index, even on a file system that ignores case.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path, PurePosixPath

from ivy_matrix.model import DashboardId, DashboardState

INDEX_NAME = "README.md"
INDEX_STEM = INDEX_NAME.removesuffix(".md").casefold()
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_HASHED = re.compile(r".*-[0-9a-f]{8}")
# 255 bytes of a file name, less what the temporary file adds: "." + ".json" + ".XXXXXXXX.tmp"
# (atomic.write_atomic names it with 8 hex digits).
_SLUG_MAX = 236


def slug(part: str) -> str:
    """A file-name-safe form of a dashboard title or category.

    Names that need changing get a short hash, so two different names never share a file.
    A name too long for a file name (its temporary file's name over 255 bytes) is cut to its
    first 200 characters before the hash.
    """
    cleaned = _UNSAFE.sub("-", part).strip("-.") or "_"
    if cleaned == part and len(part) <= _SLUG_MAX:
        return part
    digest = hashlib.sha256(part.encode()).hexdigest()[:8]
    if len(cleaned) + 9 > _SLUG_MAX:
        cleaned = cleaned[:200]
    return f"{cleaned}-{digest}"


def relative_path(dashboard: DashboardId, suffix: str) -> Path:
    """``category/title.suffix``, with both parts made safe for file names."""
    name = slug(dashboard.title) + suffix
    return Path(slug(dashboard.category), name) if dashboard.category else Path(name)


def _file_part(name: str, *, folder: bool, top_level: bool, extension: str = ".md") -> str:
    """One category or title as a file-name part, unique even where case is ignored.

    A folder name ending in ``extension`` is hashed, so that it never meets the file of a
    top-level dashboard (category ``x.md`` and title ``x``).
    """
    safe = slug(name)
    if safe != name:
        return safe  # slug added the hash of the exact name already
    plain = (
        name == name.lower()
        and not _HASHED.fullmatch(name)
        and not (folder and name.endswith(extension))
        and not (top_level and not folder and name == INDEX_STEM)
    )
    if plain:
        return name
    return f"{name}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _dashboard_path(dashboard: DashboardId, extension: str) -> str:
    """``category/title`` + ``extension``, each part made safe and unique by :func:`_file_part`."""
    category = dashboard.category
    title = _file_part(dashboard.title, folder=False, top_level=not category, extension=extension)
    if not category:
        return f"{title}{extension}"
    folder = _file_part(category, folder=True, top_level=True, extension=extension)
    return f"{folder}/{title}{extension}"


def dashboard_file(state: DashboardState) -> str:
    """Where a dashboard's markdown goes, relative to the output folder (posix form)."""
    return _dashboard_path(state.id, ".md")


# The static HTML site's folder on the dashboard branch, and its dashboards' data files.
DURATIONS_DIR = "durations"


def durations_file(backend: str) -> str:
    """Where a backend's durations file goes (``durations/<backend>.json``), its name made
    safe and unique as a dashboard's is."""
    return f"{DURATIONS_DIR}/{_file_part(backend, folder=False, top_level=False, extension='.json')}.json"


SITE_DIR = "site"
SITE_DASHBOARD_DATA = "data/d"


def site_id(state: DashboardState) -> str:
    """A dashboard's id in the site's URLs: its page's path without ``.md`` (``core/gradients``;
    made of ``[A-Za-z0-9._/-]`` only, and unique as the pages are)."""
    return dashboard_file(state).removesuffix(".md")


def site_data_file(state: DashboardState) -> str:
    """Where a dashboard's data file goes in the site's folder (``data/d/core/gradients.js``)."""
    return f"{SITE_DASHBOARD_DATA}/{site_id(state)}.js"


def state_file(dashboard: DashboardId) -> str:
    """Where a dashboard's one-file state goes, relative to the state folder (posix form).

    Named as :func:`dashboard_file` names the page, with ``.json`` (``Core/Grad`` ->
    ``Core-70ea1983/Grad-d1c58652.json``), so no two dashboards share a state file even where
    case is ignored. Lower-case file-safe names, Ivy's among them, keep the path older
    versions gave them with :func:`relative_path` (``core/gradients.json``), except the few
    hashed to keep them apart (``readme``, ``x-0123abcd``, a category ``x.json``).
    """
    return _dashboard_path(dashboard, ".json")


def column_file(dashboard: DashboardId, backend: str) -> str:
    """Where one backend's column of a dashboard is kept, relative to the state folder.

    ``core/gradients.d/torch.json``: the dashboard's page path (:func:`dashboard_file`, unique
    even where case is ignored) with ``.d`` for ``.md``, and the backend named the same way, so
    no two columns share a file, and no folder meets a one-file state (``core/gradients.json``
    of older versions: those end in ``.json``, these folders in ``.d``).
    """
    folder = dashboard_file(DashboardState(id=dashboard)).removesuffix(".md")
    return f"{folder}.d/{_file_part(backend, folder=False, top_level=False)}.json"


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
