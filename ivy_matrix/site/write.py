"""The site in a folder: ``render --html DIR``, and ``--html`` with the ``site`` target.

I/O: writes the files whose bytes differ (targets/files.py, each replaced atomically) and
deletes the data files of dashboards the site no longer has. Files in the folder that are not
the site's (anything outside ``data/d/``, and non-``.js`` files inside it) are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ivy_matrix.errors import StoreError
from ivy_matrix.runner.log import Progress
from ivy_matrix.site.build import DASHBOARD_DATA, render_site
from ivy_matrix.site.page import read_page
from ivy_matrix.state.fold import Merged
from ivy_matrix.targets.files import write_files
from ivy_matrix.views.dashboards import RenderedFile


def write_site_output(
    folder: Path, merged: Merged, *, dry_run: bool, log: Progress
) -> tuple[str, ...]:
    """After an update saved ``merged``: make ``folder`` hold the site of every dashboard
    (the ``site`` target with ``--html``); return the paths written (or, in a dry run, those
    that would be)."""
    files = render_site(merged.ordered(), read_page(), trend=merged.trend)
    written = write_site(folder, files, dry_run=dry_run)
    if dry_run:
        for path in written:
            log.info(f"dry run: would write {folder / path}")
    return tuple(written)


def write_site(folder: Path, files: Sequence[RenderedFile], *, dry_run: bool = False) -> list[str]:
    """Make ``folder`` hold the site ``files``; return the paths written or deleted (in a dry
    run: those a real run would write or delete, touching nothing)."""
    gone = [RenderedFile(path=path, text=None) for path in _stale(folder, {f.path for f in files})]
    return write_files(folder, [*files, *gone], dry_run=dry_run)


def _stale(folder: Path, keep: set[str]) -> list[str]:
    """The dashboard data files in ``folder`` that are not among ``keep``."""
    data = folder / DASHBOARD_DATA
    if not data.is_dir():
        return []
    try:
        found = sorted(path.relative_to(folder).as_posix() for path in data.rglob("*.js"))
    except OSError as error:
        raise StoreError(f"cannot list {data}: {error.strerror or error}") from None
    return [path for path in found if path not in keep]
