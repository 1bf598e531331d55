"""The file target: rendered dashboards written into ``--output-dir``.

I/O. One markdown file per dashboard, in its category folder (``core/gradients.md``), plus
``README.md``, the index page that links them all (paths.py). A file whose text did not change
is not rewritten; each write replaces the file atomically.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ivy_matrix.atomic import write_atomic
from ivy_matrix.errors import StoreError
from ivy_matrix.merge import Merged
from ivy_matrix.model import DashboardState
from ivy_matrix.paths import dashboard_file
from ivy_matrix.render import RenderedFile, Style, render_files


def write_output(
    output_dir: Path, merged: Merged, *, style: Style, dry_run: bool, everything: bool
) -> tuple[str, ...]:
    """Render and write the pages: the changed and missing ones, or ``everything``.

    Returns the paths written (in a dry run: the paths it would write, writing nothing).
    """
    ordered = merged.ordered()
    wanted = None if everything else set(merged.changed) | missing_files(output_dir, ordered)
    files = render_files(ordered, style=style, only=wanted)
    if dry_run:
        return tuple(file.path for file in files)
    return tuple(write_files(output_dir, files))


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
