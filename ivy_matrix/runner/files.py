"""Replace a local file so that readers see the old text or the new one, never half.

I/O: the one way ivy-matrix writes a local file (state, pages, summary JSON, leg files);
:func:`write_file` also takes ``-`` for standard output. What is written passes the guard
(runner/guard.py): no secret it conceals, no well-known key shape.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from ivy_matrix.errors import InputError
from ivy_matrix.runner.guard import scrub, scrub_pieces
from ivy_matrix.utf8 import utf8_pieces


def write_atomic(path: Path, text: str | Iterable[str], *, sync: bool = True) -> None:
    """Replace ``path`` with ``text`` so that readers see the old file or the new, never half.

    ``text`` may come in pieces (an iterable of strings: a large file, made as it is written):
    each is scrubbed and written as it comes (runner/guard.scrub_pieces), never held whole.

    The file gets the permissions of any new file (``0o666`` less the umask), whether or not it
    existed before: the temporary file is created with ``os.open`` mode ``0o666``, so the
    process's umask applies as it does for any ordinary tool. With ``sync`` (the default) the
    text is on disk before the file is replaced, so that a crash leaves the old file or the
    new; files rendered from the state (the output folder's pages) need not wait for that: a
    page a crash cut short differs from its record, and is rendered again.
    """
    temp = write_beside(path, text, sync=sync)
    try:
        temp.replace(path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_beside(path: Path, text: str | Iterable[str], *, sync: bool = True) -> Path:
    """:func:`write_atomic` but its last step: ``text`` in a new temporary file beside
    ``path``, whose path it returns, for the caller to replace ``path`` with (``Path.replace``)
    or remove. A store that must put several files in place only once all are made (the local
    store, as it folds one dashboard at a time) writes each this way first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            write_scrubbed(handle, text)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def write_scrubbed(handle: BinaryIO, text: str | Iterable[str]) -> int:
    """Write ``text`` to ``handle`` as UTF-8, as the last guard scrubs it (whole, or, given in
    pieces, a part at a time: runner/guard.scrub_pieces, never held whole); return the bytes
    written."""
    size = 0
    for scrubbed in (scrub(text),) if isinstance(text, str) else scrub_pieces(text):
        for piece in utf8_pieces(scrubbed):
            size += handle.write(piece)
        del scrubbed  # let go before the next part is made
    return size


def _create_temp(path: Path) -> tuple[int, Path]:
    """A new, empty temporary file beside ``path``: its descriptor and its path."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(temp, flags, 0o666), temp
        except FileExistsError:  # pragma: no cover  -- 32 random bits collided
            continue


STDOUT = Path("-")
"""A path of ``-`` means standard output, wherever ivy-matrix writes one file."""


def write_file(path: Path, text: str, *, stdout: Callable[[str], None], what: str) -> None:
    """Write ``text`` to ``path``, or to ``stdout`` when the path is ``-``.

    A file that cannot be written is an :class:`~ivy_matrix.errors.InputError` naming the
    option (``what``) and the path.
    """
    if path == STDOUT:
        stdout(text)
        return
    try:
        write_atomic(path, text)
    except OSError as error:
        raise InputError(f"cannot write {what} {path}: {error.strerror or error}") from None
