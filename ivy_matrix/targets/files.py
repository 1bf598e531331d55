"""The file target: rendered dashboards written into ``--output-dir``.

I/O. One markdown file per dashboard, in its category folder (``core/gradients.md``), plus
``README.md``, the index page that links them all (file names: paths.py), and ``trend.json``
with its two pictures.
After every update the folder equals a fresh render of the whole state; a file whose text did
not change is not rewritten, and each write replaces the file atomically.

A store that numbers its revisions (the local store, ledger.py) keeps a record of what the
folder shows, in its own folder (``pages.json``; the output folder holds only the pages): the
folder, the store's revision it shows, the style, each file's size and modification time, and
each dashboard's row of the index (render.py ``IndexRow``). When the store says its states
were read at that revision (``Merged.revision_before``) and every recorded file is still as
written, only the dashboards the update changed are rendered, and the index is drawn from the
recorded rows of the others; otherwise everything is rendered and compared, whatever an
earlier run left there. ``ivy-matrix render --check`` compares the folder with a fresh render
of the store.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from stat import S_ISREG

from ivy_matrix.errors import StoreError
from ivy_matrix.explain.grouping import kinds_from_json, kinds_json
from ivy_matrix.explain.history_text import IndexNotes
from ivy_matrix.jsonshape import expect_int, expect_list, expect_number, expect_object, expect_str
from ivy_matrix.model import DashboardState
from ivy_matrix.runner.files import write_atomic
from ivy_matrix.runner.log import Progress
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.paths import INDEX_NAME
from ivy_matrix.utf8 import utf8_pieces, utf8_size
from ivy_matrix.views.dashboards import (
    RenderedFile,
    index_trend,
    removed_files,
    render_page,
    trend_files,
)
from ivy_matrix.views.durations_file import DurationsFile
from ivy_matrix.views.index_page import IndexRow, index_row, render_index_page
from ivy_matrix.views.style import Style

RECORD_NAME = "pages.json"
RECORD_FORMAT = "ivy-matrix-pages"
# 2: index rows keep their failing rows by kind; 3: their notes list every cell failing for two
# runs or more, and count a test once per error its backends share (an older record is not used);
# 4: their notes keep the durations' (slower cells, each backend's seconds and slowest rows)
RECORD_VERSION = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class PagesRecord:
    """What the output folder ``folder`` shows (module docstring): ``files`` maps each file to
    its size and modification time as written; ``index`` has each dashboard's row, by key."""

    folder: str
    revision: str
    style: str
    files: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    index: Mapping[str, IndexRow] = field(default_factory=dict)


def write_output(
    output_dir: Path,
    merged: Merged,
    *,
    style: Style,
    dry_run: bool,
    log: Progress,
    record: Path | None = None,
) -> tuple[str, ...]:
    """Make the output folder show the whole state, whatever an earlier run left there.

    Every dashboard the update changed is rendered; the others too, unless the folder's record
    shows that it holds them as the store read them (module docstring). Files that are
    already right are not rewritten; files that no dashboard renders are the user's and are
    left alone. ``record``: where the store keeps the folder's record (None: it keeps none).
    Returns the paths written (in a dry run: the paths a real run would write or delete,
    writing nothing).
    """
    shown = (
        read_record(record)
        if record is not None and shows(record, output_dir, merged.revision_before, style)
        else None
    )
    rows: dict[str, IndexRow] = {}
    paths: dict[str, bool] = {}  # each file's path: True when it is written, False deleted
    files = _noted(chain(_render(merged, style, shown, rows), removed_files(merged.removed)), paths)
    written = write_files(output_dir, files, dry_run=dry_run)
    if dry_run:
        for path in written:
            verb = "write" if paths[path] else "delete"
            log.info(f"dry run: would {verb} {output_dir / path}")
        return tuple(written)
    if record is not None:
        _keep_record(record, output_dir, merged, (style, shown), paths=paths, rows=rows)
    return tuple(written)


def _noted(files: Iterable[RenderedFile], paths: dict[str, bool]) -> Iterator[RenderedFile]:
    """``files`` as they come, noting in ``paths`` each one's path and whether it has text."""
    for file in files:
        paths[file.path] = file.text is not None
        yield file
        del file  # not held while the next file is drawn


def _render(
    merged: Merged, style: Style, shown: PagesRecord | None, rows: dict[str, IndexRow]
) -> Iterator[RenderedFile]:
    """The files to write, drawn one at a time as they are written (a page is let go before
    the next is drawn: 40 pages of a 200k-case matrix are 14 MB of text), filling ``rows``
    with every dashboard's index row: with ``shown``, only what changed is drawn."""
    states = merged.ordered()
    if shown is None:
        wanted: list[DashboardState] = states
    else:
        changed = set(merged.changed)
        wanted = [state for state in states if state.key in changed]
        present = {state.key for state in states}
        rows.update((key, row) for key, row in shown.index.items() if key in present)
    for state in wanted:
        yield render_page(state, style)
        rows[state.key] = index_row(state)
    index = render_index_page(list(rows.values()), trend=index_trend(merged.trend))
    yield RenderedFile(path=INDEX_NAME, text=index)
    yield from trend_files(merged.trend)


def _keep_record(
    path: Path,
    output_dir: Path,
    merged: Merged,
    shown: tuple[Style, PagesRecord | None],
    *,
    paths: Mapping[str, bool],
    rows: Mapping[str, IndexRow],
) -> None:
    """Record what the folder now shows (or, for a store without revisions, forget it):
    ``paths`` are the files rendered (True) or deleted (False)."""
    style, shown_before = shown
    if merged.revision is None:
        _forget(path)
        return
    kept = set(shown_before.files if shown_before is not None else ())
    kept.update(name for name, text in paths.items() if text)
    kept.difference_update(name for name, text in paths.items() if not text)
    record = PagesRecord(
        folder=_folder(output_dir),
        revision=merged.revision,
        style=style.value,
        files=stats(output_dir, kept),
        index=rows,
    )
    try:
        # In pieces: the last guard cuts the text after its line breaks (runner/guard.py).
        write_atomic(path, dump_record(record), sync=False)
    except OSError:
        _forget(path)  # only saves work: the next update renders everything


def _forget(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as error:
        raise StoreError(
            f"cannot remove {path}: {error.strerror or error}; check that --output-dir is writable"
        ) from None


def stats(output_dir: Path, paths: Iterable[str]) -> dict[str, tuple[int, int]]:
    """Each file's size and modification time (files that are not there are left out)."""
    found = {}
    for path in sorted(paths):
        try:
            stat = os.stat(output_dir / path)  # noqa: PTH116  -- one call per file
        except OSError:
            continue
        found[path] = (stat.st_size, stat.st_mtime_ns)
    return found


def on_disk(output_dir: Path, files: Mapping[str, tuple[int, int]]) -> bool:
    """Whether every recorded file is still as it was written (same size and time)."""
    return stats(output_dir, files) == dict(files)


def _folder(output_dir: Path) -> str:
    return str(output_dir.resolve())


def shows(record_path: Path, output_dir: Path, revision: str | None, style: Style) -> bool:
    """Whether the record at ``record_path`` says the folder shows the store's ``revision`` in
    ``style``, and every file it names is still as written."""
    record = read_record(record_path) if revision is not None else None
    return (
        record is not None
        and record.folder == _folder(output_dir)
        and record.revision == revision
        and record.style == style.value
        and on_disk(output_dir, record.files)
    )


def write_files(
    output_dir: Path, files: Iterable[RenderedFile | DurationsFile], *, dry_run: bool = False
) -> list[str]:
    """Write the files whose text differs from what the folder holds, and delete those whose
    dashboard is gone (text ``None``); return their paths.

    With ``dry_run``, write nothing and return the same list: what a real run would write.
    """
    written = []
    for file in files:
        # A durations file is made a piece at a time as it is compared and written, never
        # whole; a page is let go before the next is drawn.
        text = file.pieces if isinstance(file, DurationsFile) else file.text
        if _write(output_dir / file.path, text, dry_run=dry_run):
            written.append(file.path)
        del file, text
    return written


def _write(path: Path, text: str | Callable[[], Iterable[str]] | None, *, dry_run: bool) -> bool:
    """Make the file at ``path`` hold ``text`` (None: not be there; a callable: what makes
    the text's pieces, each time it is called); whether that changed it (in a dry run: would
    change it)."""
    try:
        if text is None:
            if not path.is_file():
                return False
            if not dry_run:
                path.unlink()
        elif _holds(path, text):
            return False
        elif not dry_run:
            write_atomic(path, text if isinstance(text, str) else text(), sync=False)
    except OSError as error:
        raise StoreError(
            f"cannot write {path}: {error.strerror or error}; check that --output-dir is writable"
        ) from None
    return True


def _holds(path: Path, text: str | Callable[[], Iterable[str]]) -> bool:
    """Whether the file at ``path`` holds ``text`` (a text: read only when the sizes agree;
    pieces: made once, each compared as it comes): neither the file nor the text held whole
    as bytes."""
    try:
        stat = os.stat(path)  # noqa: PTH116  -- one call, its size and kind
    except FileNotFoundError:
        return False
    if not S_ISREG(stat.st_mode):
        return False
    if isinstance(text, str):
        if stat.st_size != utf8_size(text):
            return False
        pieces: Iterable[str] = (text,)
    else:
        pieces = text()
    with path.open("rb") as handle:
        return all(
            handle.read(len(piece)) == piece for part in pieces for piece in utf8_pieces(part)
        ) and not handle.read(1)


# --------------------------------------------------------------------------- the record


def _row_json(row: IndexRow) -> dict[str, object]:
    notes = row.notes
    return {
        "path": row.path,
        "counts": {backend: list(pair) for backend, pair in row.counts.items()},
        "notes": [
            [list(notes.newly), notes.newly_total],
            [list(notes.longer), notes.longer_total],
            [list(notes.flaky), notes.flaky_total],
            [list(notes.slower), notes.slower_total],
            [[list(pair) for pair in notes.seconds], [list(item) for item in notes.slowest]],
        ],
        "kinds": kinds_json(row.kinds),
    }


_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dump_record(record: PagesRecord) -> Iterator[str]:
    """The text of the folder's record (deterministic: one JSON document, its ``index`` last),
    a line at a time: the head, then each dashboard's index row on a line of its own. Neither
    the whole document nor its whole text is made (the rows' JSON values and json's pieces
    were 1.6 MB beside the 0.5 MB text of 200k cases), and the last guard cuts the text after
    its line breaks as it is written, where it takes a text without them whole."""
    head = {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "folder": record.folder,
        "revision": record.revision,
        "style": record.style,
        "files": {path: list(stat) for path, stat in sorted(record.files.items())},
    }
    yield _json(head)[:-1] + ',"index":{\n'
    for number, (key, row) in enumerate(sorted(record.index.items())):
        yield ("," if number else "") + _json(key) + ":" + _json(_row_json(row)) + "\n"
    yield "}}\n"


def _lines(value: object) -> tuple[tuple[str, ...], int]:
    lines, total = expect_list(value)
    return tuple(expect_str(line) for line in expect_list(lines)), expect_int(total)


def _row(key: str, value: object) -> IndexRow:
    item = expect_object(value)
    counts = {}
    for backend, pair in expect_object(item["counts"]).items():
        passing, total = expect_list(pair)
        counts[backend] = (expect_int(passing), expect_int(total))
    listed = expect_list(item["notes"])
    (newly, newly_total), (longer, longer_total), (flaky, flaky_total), (slower, slower_total) = (
        map(_lines, listed[:4])
    )
    seconds, slowest = expect_list(listed[4])
    notes = IndexNotes(
        newly=newly,
        newly_total=newly_total,
        longer=longer,
        longer_total=longer_total,
        flaky=flaky,
        flaky_total=flaky_total,
        slower=slower,
        slower_total=slower_total,
        seconds=tuple(
            (expect_str(backend), expect_number(value))
            for backend, value in map(expect_list, expect_list(seconds))
        ),
        slowest=tuple(
            (expect_str(backend), expect_number(value), expect_str(row), expect_str(url))
            for backend, value, row, url in map(expect_list, expect_list(slowest))
        ),
    )
    kinds = kinds_from_json(item["kinds"])
    return IndexRow(key=key, path=expect_str(item["path"]), counts=counts, notes=notes, kinds=kinds)


def read_record(path: Path) -> PagesRecord | None:
    """The folder's record; None when there is none or it cannot be read (it only saves
    work: without it, everything is rendered and compared)."""
    try:
        document = expect_object(json.loads(path.read_bytes()))
        if document.get("format") != RECORD_FORMAT or document.get("version") != RECORD_VERSION:
            return None
        files = {}
        for name, stat in expect_object(document["files"]).items():
            size, mtime = expect_list(stat)
            files[name] = (expect_int(size), expect_int(mtime))
        return PagesRecord(
            folder=expect_str(document["folder"]),
            revision=expect_str(document["revision"]),
            style=expect_str(document["style"]),
            files=files,
            index={k: _row(k, v) for k, v in expect_object(document["index"]).items()},
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
