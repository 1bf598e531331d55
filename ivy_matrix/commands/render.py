"""The ``render`` command: write every dashboard of the local store, and the index, into
``--output-dir``.

I/O: reads the local store (stores/local.py) and writes the files that differ
(targets/files.py); the pages themselves are render.py's. Nothing on GitHub.
"""

from __future__ import annotations

from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import ExitCode, StoreError, UsageError
from ivy_matrix.render import render_files
from ivy_matrix.runner.log import Log
from ivy_matrix.stores.local import LocalStore
from ivy_matrix.targets.files import write_files


def run_render(settings: Settings, log: Log) -> ExitCode:
    """Run ``ivy-matrix render``; return the exit code."""
    if settings.output_dir is None:
        raise UsageError("render needs --output-dir DIR (or IVY_MATRIX_OUTPUT_DIR)")
    if not settings.store.is_dir():
        # An empty index written over the real one would look like success.
        raise StoreError(
            f"cannot render: the store {settings.store} does not exist; pass --store with "
            f"the folder that 'ivy-matrix update' wrote"
        )
    store = LocalStore(settings.store)
    states = store.load_all()
    files = render_files(states, style=settings.style, trend=store.load_trend())
    written = write_files(settings.output_dir, files)
    log.info(
        f"rendered {len(states)} dashboard(s) into {settings.output_dir}; "
        f"{len(written)} file(s) changed"
    )
    return ExitCode.OK
