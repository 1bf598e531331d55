"""Where dashboard state lives between runs: the local directory store.

I/O. The local store is a directory (``.ivy-matrix/`` by default)::

    .ivy-matrix/
      .lock                       held exclusively for a whole read-merge-write
      state/<category>/<title>.json   one serialized dashboard each (see statefile.py)

Several ``ivy-matrix update`` processes may write one store at the same time: each takes the
lock before reading and releases it after writing, and each file is replaced atomically (a
temporary file in the same folder, flushed, then renamed over the old one), so no update is
lost and no reader sees half a file.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from ivy_matrix.atomic import write_atomic
from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.paths import relative_path
from ivy_matrix.progress import Progress, Quiet
from ivy_matrix.statefile import dump_state, load_state
from ivy_matrix.stores import AfterSave, Change, Saved


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a+b") as handle:
        if sys.platform == "win32":  # pragma: no cover  -- the action runs on Linux and macOS
            import msvcrt  # noqa: PLC0415  -- Windows only

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
        else:
            import fcntl  # noqa: PLC0415  -- POSIX only

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if sys.platform != "win32":
                import fcntl  # noqa: PLC0415  -- POSIX only

                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class LocalStore:
    """Dashboard state in a local directory, safe for concurrent writers on one machine.

    ``after_save`` (the output folder) is called under the lock too, so that a slower process
    never overwrites newer pages.
    """

    def __init__(
        self,
        root: Path,
        *,
        dry_run: bool = False,
        log: Progress | None = None,
        after_save: AfterSave | None = None,
    ) -> None:
        self.root = root
        self._state_dir = root / "state"
        self.dry_run = dry_run
        self.log: Progress = log or Quiet()
        self.after_save = after_save

    def update(self, change: Change) -> Saved:
        """Under the lock: read every state, ``change`` them, save what changed."""
        with self.locked():
            merged = change({state.id: state for state in self.load_all()})
            to_save = merged.to_save()
            written = tuple(self.path_of(d).as_posix() for d in to_save)
            if self.dry_run:
                for state in to_save.values():
                    self.log.info(f"dry run: would save the state of {state.key} in {self.root}")
                return Saved(merged=merged, written=written)
            for state in to_save.values():
                self.save(state)
            output = self.after_save(merged) if self.after_save else ()
        return Saved(merged=merged, written=written, output=output)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's lock: wrap a whole read-merge-write in it."""
        try:
            with _exclusive(self.root / ".lock"):
                yield
        except OSError as error:
            raise StoreError(
                f"cannot lock the store {self.root}: {error.strerror or error}; "
                f"check that the folder is writable or pass another --store"
            ) from None

    def path_of(self, dashboard: DashboardId) -> Path:
        return self._state_dir / relative_path(dashboard, ".json")

    def load(self, dashboard: DashboardId) -> DashboardState | None:
        """The stored state of one dashboard, or ``None`` if it has none yet."""
        path = self.path_of(dashboard)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as error:
            raise StoreError(f"cannot read {path}: {error.strerror or error}") from None
        except UnicodeDecodeError:
            raise StoreError(f"cannot read dashboard state {path}: not UTF-8 text") from None
        state = load_state(text, where=str(path))
        if state.id != dashboard:
            raise StoreError(
                f"{path} holds dashboard {state.key!r}, not {dashboard.key!r}; "
                f"two dashboard names map to one file, rename one of them"
            )
        return state

    def load_all(self) -> list[DashboardState]:
        """Every stored dashboard, sorted by key."""
        if not self._state_dir.is_dir():
            return []
        states = []
        for path in sorted(self._state_dir.rglob("*.json")):
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as error:
                raise StoreError(f"cannot read {path}: {error.strerror or error}") from None
            except UnicodeDecodeError:
                raise StoreError(f"cannot read dashboard state {path}: not UTF-8 text") from None
            states.append(load_state(text, where=str(path)))
        return sorted(states, key=lambda s: s.key)

    def save(self, state: DashboardState) -> None:
        """Write one dashboard's state atomically."""
        path = self.path_of(state.id)
        try:
            write_atomic(path, dump_state(state))
        except OSError as error:
            raise StoreError(
                f"cannot write {path}: {error.strerror or error}; "
                f"check that the folder is writable or pass another --store"
            ) from None
