"""Publish targets: rendered dashboards written where people read them.

I/O. The ``--output-dir`` target writes one markdown file per dashboard, in its category
folder (``core/gradients.md``), plus ``README.md``, the index page that links them all. A
file whose text did not change is not rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardState
from ivy_matrix.render import Style, render_dashboard, render_index
from ivy_matrix.stores.local import relative_path, write_atomic

INDEX_NAME = "README.md"


def dashboard_file(state: DashboardState) -> str:
    """Where a dashboard's markdown goes, relative to the output folder (posix form)."""
    return relative_path(state.id, ".md").as_posix()


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderedFile:
    """One file of the output folder: where it goes and what it holds."""

    path: str
    text: str


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


def write_files(output_dir: Path, files: Iterable[RenderedFile]) -> list[str]:
    """Write the files that changed; return their paths."""
    written = []
    for file in files:
        path = output_dir / file.path
        try:
            if path.is_file() and path.read_text(encoding="utf-8") == file.text:
                continue
            write_atomic(path, file.text)
        except OSError as error:
            raise StoreError(
                f"cannot write {path}: {error.strerror or error}; "
                f"check that --output-dir is writable"
            ) from None
        written.append(file.path)
    return written


def missing_files(output_dir: Path, states: Iterable[DashboardState]) -> set[str]:
    """Keys of dashboards whose file is not in the output folder yet."""
    return {s.key for s in states if not (output_dir / dashboard_file(s)).is_file()}
