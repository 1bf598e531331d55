"""The ``render`` command: write every dashboard of the local store, and the index, into
``--output-dir``; and the static HTML site into ``--html``. With ``--check``, write nothing
and say whether ``--output-dir`` is a fresh render of the store (``update`` renders only what
it changed: this checks, outside the hot path, that the folder still equals the whole render).

I/O: reads the local store (stores/local.py) and writes the files that differ
(targets/files.py, site/write.py); the pages themselves are render.py's and site/build.py's.
Nothing on GitHub.
"""

from __future__ import annotations

from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import ExitCode, StoreError, UsageError
from ivy_matrix.runner.log import Log
from ivy_matrix.site.build import render_site
from ivy_matrix.site.page import read_page
from ivy_matrix.site.write import write_site
from ivy_matrix.stores.local import LocalStore
from ivy_matrix.targets.files import write_files
from ivy_matrix.views.dashboards import RenderedFile, render_files


def run_render(settings: Settings, log: Log, *, check: bool = False) -> ExitCode:
    """Run ``ivy-matrix render``; return the exit code (with ``check``: FAILING when the
    output folder differs from a fresh render)."""
    if settings.output_dir is None and settings.html is None:
        raise UsageError(
            "render needs --output-dir DIR (the markdown pages) or --html DIR (the HTML site), "
            "or both (or IVY_MATRIX_OUTPUT_DIR, IVY_MATRIX_HTML)"
        )
    if not settings.store.is_dir():
        # An empty index written over the real one would look like success.
        raise StoreError(
            f"cannot render: the store {settings.store} does not exist; pass --store with "
            f"the folder that 'ivy-matrix update' wrote"
        )
    store = LocalStore(settings.store)
    states = store.load_all()
    trend = store.load_trend()
    if check:
        return _check(settings, render_files(states, style=settings.style, trend=trend), log)
    if settings.output_dir is not None:
        files = render_files(states, style=settings.style, trend=trend)
        written = write_files(settings.output_dir, files)
        log.info(
            f"rendered {len(states)} dashboard(s) into {settings.output_dir}; "
            f"{len(written)} file(s) changed"
        )
    if settings.html is not None:
        written = write_site(settings.html, render_site(states, read_page(), trend=trend))
        log.info(
            f"rendered the site of {len(states)} dashboard(s) into {settings.html}; "
            f"{len(written)} file(s) changed"
        )
    return ExitCode.OK


def _check(settings: Settings, files: list[RenderedFile], log: Log) -> ExitCode:
    """Whether ``--output-dir`` holds exactly ``files`` (the pages it has beyond them are the
    user's, as for every render)."""
    if settings.output_dir is None:
        raise UsageError("render --check needs --output-dir DIR: the folder it checks")
    differ = write_files(settings.output_dir, files, dry_run=True)
    for path in differ:
        log.warning(f"{settings.output_dir / path} differs from a fresh render of the store")
    if differ:
        return ExitCode.FAILING
    log.info(f"{settings.output_dir} is a fresh render of the store ({len(files)} file(s))")
    return ExitCode.OK
