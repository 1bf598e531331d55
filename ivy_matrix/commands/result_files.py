"""Find and read the JUnit result files a run should read.

I/O: lists directories (and stats files); commands/reading.py reads what it finds, each opened
with :func:`open_regular` (leg files too, commands/leg_files.py).

Patterns are globs relative to ``root`` (or absolute), with ``**`` matching any number of
directories. A pattern that names a directory, or a glob match that is a directory, stands for
every ``*.xml`` file below it. A pattern starting with ``!`` removes what the rest of it
matches; exclusions apply after all inclusions, whatever their order. As with shell globs,
``*`` does not match names that start with a dot.

Symbolic links are followed, but each real file is read once and ``**`` enters each real
directory once: a link back to a folder above it (a loop) ends there, and a file reached
under several names is taken under the name with the fewest links in it.
"""

from __future__ import annotations

import errno
import glob
import io
import os
import stat
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path

# What a path that is not a regular file is, for the message that skips it.
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (a named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def _walk(top: Path) -> list[Path]:
    """Return ``top`` and every directory below it, except those whose name starts with a dot.

    Links to directories are followed, but each real directory is entered once, and the real
    tree comes before what links lead to: a loop ends, and a directory is listed under a name
    without links when it has one.
    """
    seen: set[tuple[int, int] | str] = set()
    found: list[Path] = []
    real: deque[Path] = deque([top])
    linked: deque[Path] = deque()
    while real or linked:
        directory = real.popleft() if real else linked.popleft()
        try:
            info = directory.stat()
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError:
            continue
        # Some file systems give no inode numbers (0): fall back to the resolved path.
        key = (info.st_dev, info.st_ino) if info.st_ino else os.path.realpath(directory)
        if key in seen:
            continue
        seen.add(key)
        found.append(directory)
        for entry in entries:
            try:
                if entry.name.startswith(".") or not entry.is_dir():
                    continue
                (linked if entry.is_symlink() else real).append(directory / entry.name)
            except OSError:
                continue
    return found


def _glob(pattern: str, root: Path) -> list[Path]:
    """Return what ``pattern`` matches under ``root`` (or anywhere, if it is absolute)."""
    parts = pattern.replace(os.sep, "/").split("/")
    if "**" not in parts:
        # Path.glob takes no absolute patterns (Python 3.11) and lets "*" match dot-files.
        # Without "**" glob does not recurse, so links cannot make it loop.
        found = glob.glob(pattern, root_dir=root, recursive=True)  # noqa: PTH207  -- see above
        # glob gives paths relative to root_dir, or absolute ones for an absolute pattern.
        return [root / m for m in found]
    # glob's own "**" follows links into loops: walk the directories it stands for ourselves.
    cut = parts.index("**")
    head = "/".join(parts[:cut]) or ("/" if pattern.startswith("/") else "")
    rest = "/".join(parts[cut + 1 :])
    if not head:
        bases = [root]
    elif glob.has_magic(head):
        bases = [match for match in _glob(head, root) if match.is_dir()]
    else:
        bases = [root / head] if (root / head).is_dir() else []
    matches: list[Path] = []
    for base in bases:
        for directory in _walk(base):
            if rest:
                matches.extend(_glob(rest, directory))
                continue
            # "dir/**" is the directory and everything in it, as glob has it; "dir/**/" only
            # the directories.
            matches.append(directory)
            if pattern.endswith("/"):
                continue
            matches.extend(
                path
                for path in _listdir(directory)
                if not path.name.startswith(".") and path.is_file()
            )
    return matches


def _listdir(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except OSError:
        return []


def _identity(path: Path) -> tuple[int, int] | None:
    """The real file behind ``path`` (device and inode), or None when it cannot be told."""
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if info.st_ino else None


def _links_in(path: Path) -> int:
    """How many of the components of ``path`` are symbolic links."""
    return sum(part.is_symlink() for part in (path, *path.parents))


def _once_each(paths: set[Path], excluded: set[Path]) -> list[Path]:
    """Return ``paths`` without the files ``excluded`` names, each real file once, sorted."""
    gone = {_identity(path) for path in excluded} - {None}
    names: dict[tuple[int, int] | None, list[Path]] = {}
    for path in paths:
        identity = _identity(path)
        if identity is None:
            names.setdefault(None, []).append(path)  # kept: reading it reports any failure
        elif identity not in gone:
            names.setdefault(identity, []).append(path)
    kept = names.pop(None, [])
    for same in names.values():
        kept.append(same[0] if len(same) == 1 else min(same, key=lambda p: (_links_in(p), p)))
    return sorted(kept)


def _expand(pattern: str, root: Path, suffix: str) -> set[Path]:
    """Return the files ``pattern`` matches, with directories expanded to their ``*SUFFIX``."""
    literal = Path(pattern) if Path(pattern).is_absolute() else root / pattern
    # A path that exists is taken as it is, so that "results[cpu].xml" is not a character class.
    if literal.exists():
        matches: Iterable[Path] = [literal]
    else:
        matches = _glob(pattern, root)
    found: set[Path] = set()
    for match in matches:
        if match.is_dir():
            found.update(_glob(f"**/*{suffix}", match))
        elif match.is_file():
            found.add(match)
    return {Path(os.path.normpath(p)) for p in found}


def find_result_files(
    patterns: Sequence[str], *, root: Path, suffix: str = ".xml"
) -> tuple[list[Path], list[str]]:
    """Return the files the patterns select (sorted, without duplicates) and warnings.

    A directory stands for every file below it whose name ends in ``suffix`` (result files:
    ``.xml``; leg files: ``.json``).

    Paths are ``root`` joined with the match (absolute patterns give absolute paths), normalized
    but not resolved. A real file reached under several names (through links) is listed once,
    under the name with the fewest links in it, and an exclusion removes it under every name. Every inclusion pattern that matches no file gives the warning
    "no result files matched 'PATTERN'"; an exclusion that removes nothing is not worth one.
    Blank patterns are ignored.
    """
    included: set[Path] = set()
    excluded: set[Path] = set()
    warnings: list[str] = []
    for raw in patterns:
        pattern = raw.strip()
        if pattern.startswith("!"):
            rest = pattern[1:].strip()
            if rest:
                excluded |= _expand(rest, root, suffix)
            continue
        if not pattern:
            continue
        matched = _expand(pattern, root, suffix)
        if not matched:
            warnings.append(f"no result files matched '{pattern}'")
        included |= matched
    return _once_each(included - excluded, excluded), warnings


def open_regular(path: Path) -> io.BufferedReader:
    """``path`` opened for reading when it is a regular file; :class:`OSError` otherwise.

    The file is opened without waiting and then checked, so that nothing named like a result
    or leg file can stop the run: opening a FIFO (named pipe) waits for a writer that may never
    come, and a device can give bytes without end.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    descriptor = os.open(path, flags | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(descriptor).st_mode
    except OSError:
        os.close(descriptor)
        raise
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        kind = next((name for test, name in _KINDS if test(mode)), "something else")
        raise OSError(errno.EINVAL, f"not a regular file: it is {kind}", str(path))
    return os.fdopen(descriptor, "rb")
