"""Publish targets: rendered dashboards written where people read them.

I/O. The ``--output-dir`` target writes one markdown file per dashboard, in its category
folder (``core/gradients.md``), plus ``README.md``, the index page that links them all. A
file whose text did not change is not rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ivy_matrix.atomic import write_atomic
from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardState
from ivy_matrix.paths import dashboard_file
from ivy_matrix.render import RenderedFile


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
