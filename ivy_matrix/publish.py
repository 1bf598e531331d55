"""Publish targets: rendered dashboards written where people read them.

I/O. The ``--output-dir`` target writes one markdown file per dashboard, in its category
folder (``core/gradients.md``), plus ``README.md``, the index page that links them all. A
file whose text did not change is not rewritten.

A dashboard's file name depends on its own name only, so every leg and every run agrees on
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardState
from ivy_matrix.render import Style, render_dashboard, render_index
from ivy_matrix.store import slug, write_atomic

INDEX_NAME = "README.md"


INDEX_STEM = INDEX_NAME.removesuffix(".md").casefold()
_HASHED = re.compile(r".*-[0-9a-f]{8}")


def _file_part(name: str, *, folder: bool, top_level: bool) -> str:
    """One category or title as a file-name part, unique even where case is ignored."""
    safe = slug(name)
    if safe != name:
        return safe  # slug added the hash of the exact name already
    plain = (
        name == name.lower()
        and not _HASHED.fullmatch(name)
        and not (folder and name.endswith(".md"))
        and not (top_level and not folder and name == INDEX_STEM)
    )
    if plain:
        return name
    return f"{name}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def dashboard_file(state: DashboardState) -> str:
    """Where a dashboard's markdown goes, relative to the output folder (posix form)."""
    category = state.id.category
    title = _file_part(state.id.title, folder=False, top_level=not category)
    if not category:
        return f"{title}.md"
    return f"{_file_part(category, folder=True, top_level=True)}/{title}.md"


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderedFile:
    """One file of the output folder: where it goes and what it holds (``None``: delete it)."""

    path: str
    text: str | None


def removed_files(states: Iterable[DashboardState]) -> list[RenderedFile]:
    """The files of dashboards that are gone: to be deleted."""
    return [RenderedFile(path=dashboard_file(state), text=None) for state in states]


def render_files(
    states: Sequence[DashboardState], *, style: Style, only: Iterable[str] | None = None
) -> list[RenderedFile]:
    """The dashboards (all, or those whose keys are in ``only``) and the index page."""
    wanted = None if only is None else set(only)
    files = [
        RenderedFile(path=dashboard_file(state), text=render_dashboard(state, style))
        for state in states
        if wanted is None or state.key in wanted
    ]
    files.append(RenderedFile(path=INDEX_NAME, text=render_index(states, dashboard_file)))
    return files


def write_files(
    output_dir: Path, files: Iterable[RenderedFile], *, dry_run: bool = False
) -> list[str]:
    """Write the files whose text differs from what the folder holds, and delete those whose
    dashboard is gone (text ``None``); return their paths.

    With ``dry_run``, write nothing and return the same list: what a real run would write.
    """
    written = []
    for file in files:
        path = output_dir / file.path
        try:
            if file.text is None:
                if not path.is_file():
                    continue
                if not dry_run:
                    path.unlink()
            elif path.is_file() and path.read_bytes() == file.text.encode("utf-8"):
                continue
            elif not dry_run:
                write_atomic(path, file.text)
        except OSError as error:
            raise StoreError(
                f"cannot write {path}: {error.strerror or error}; "
                f"check that --output-dir is writable"
            ) from None
        written.append(file.path)
    return written
