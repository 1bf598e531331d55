"""A lock file held with ``flock`` (``msvcrt.locking`` on Windows) across processes.

I/O. The holder writes its pid, host and start time into the file, so that a process waiting
for it can say who holds it; the system releases the lock when the holder dies, so a crashed
update never leaves the store locked. Used by the local store (stores/local.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ivy_matrix.errors import StoreError

_POLL_SECONDS = 0.1
_HOLDER_BYTES = 4096


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` if nobody holds it; ``False`` if somebody does."""
    if sys.platform == "win32":  # pragma: no cover  -- the action runs on Linux and macOS
        import msvcrt  # noqa: PLC0415  -- Windows only

        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl  # noqa: PLC0415  -- POSIX only

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    if sys.platform == "win32":  # pragma: no cover  -- the action runs on Linux and macOS
        import msvcrt  # noqa: PLC0415  -- Windows only

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    else:
        import fcntl  # noqa: PLC0415  -- POSIX only

        fcntl.flock(fd, fcntl.LOCK_UN)


def _host() -> str:
    """This machine's name (os.uname where there is one: socket's import costs a leg's
    start-up more than the rest of the lock)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket  # noqa: PLC0415  -- Windows only, see above

    return socket.gethostname()


def _write_holder(fd: int) -> None:
    """Say in the lock file who holds the lock (best effort: it only feeds messages)."""
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    holder = {"pid": os.getpid(), "host": _host(), "since": since}
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(holder).encode())


def _read_holder(fd: int) -> str:
    """Who holds the lock, as the lock file says: ``pid 1234 on host h since ...``."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        holder = json.loads(os.read(fd, _HOLDER_BYTES))
        pid, host, since = holder["pid"], holder["host"], holder["since"]
    except (OSError, ValueError, TypeError, KeyError):
        return "another process (it has not said which yet)"
    return f"pid {pid!r} on host {str(host)[:100]!r} since {str(since)[:40]}"


class FileLock:
    """The store's lock file, held with ``flock`` (released by the system if the holder dies)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, timeout: float, on_wait: Callable[[str], None], store: Path) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o666)
        try:
            self._wait(fd, timeout, on_wait, store)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        _write_holder(fd)

    @staticmethod
    def _wait(fd: int, timeout: float, on_wait: Callable[[str], None], store: Path) -> None:
        deadline = time.monotonic() + timeout
        announced = None
        while not _try_lock(fd):
            holder = _read_holder(fd)
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreError(
                    f"cannot lock the store {store}: it is still held by {holder} after "
                    f"{timeout:g} s (--lock-timeout); if that process is hung, stop it, "
                    f"or pass a longer --lock-timeout"
                )
            if holder != announced:
                on_wait(
                    f"waiting for the lock of the store {store}, held by {holder}; "
                    f"giving up after {timeout:g} s (--lock-timeout)"
                )
                announced = holder
            time.sleep(min(_POLL_SECONDS, left))

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        # Best effort: closing the file releases the lock whatever happens before.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # nobody holds it now
        with contextlib.suppress(OSError):
            _unlock(fd)
        with contextlib.suppress(OSError):
            os.close(fd)
