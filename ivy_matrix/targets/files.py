"""The file target: rendered dashboards written into ``--output-dir``.

I/O. One markdown file per dashboard, in its category folder (``core/gradients.md``), plus
``README.md``, the index page that links them all (file names: paths.py). After every update
the folder equals a fresh render of the whole state; a file whose text did not change is not
rewritten, and each write replaces the file atomically.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ivy_matrix.errors import StoreError
from ivy_matrix.fold import Merged
from ivy_matrix.render import RenderedFile, Style, removed_files, render_files
from ivy_matrix.runner.files import write_atomic
from ivy_matrix.runner.log import Progress


def write_output(
    output_dir: Path, merged: Merged, *, style: Style, dry_run: bool, log: Progress
) -> tuple[str, ...]:
    """Make the output folder show the whole state, whatever an earlier run left there.

    Every dashboard is rendered and compared with its file, not only those this update
    changed: a run without ``--output-dir``, or one stopped after saving the store, leaves
    files behind the state. Files that are already right are not rewritten; files that no
    dashboard renders are the user's and are left alone. Returns the paths written (in a dry
    run: the paths a real run would write or delete, writing nothing).
    """
    files = render_files(merged.ordered(), style=style, trend=merged.trend)
    files += removed_files(merged.removed)
    written = write_files(output_dir, files, dry_run=dry_run)
    if dry_run:
        gone = {file.path for file in files if file.text is None}
        for path in written:
            verb = "delete" if path in gone else "write"
            log.info(f"dry run: would {verb} {output_dir / path}")
    return tuple(written)


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
