"""Where dashboard state lives between runs: the local directory store.

I/O. The local store is a directory (``.ivy-matrix/`` by default)::

    .ivy-matrix/
      .lock                       held exclusively for a whole read-merge-write; holds the
                                  holder's pid, host and start time (for messages)
      state/<category>/<title>.json   one serialized dashboard each (see statefile.py), named
                                  by paths.state_file (unique even where case is ignored)
      trend.json                  one point per run the store recorded (trend.py)
      ledger.json                 what the store holds: its revision, the state files it
                                  wrote, the result files whose results it holds (ledger.py)

Older versions named the files with ``paths.relative_path``, which differs for names that are
not lower-case (``state/Core/Grad.json``, now ``state/Core-70ea1983/Grad-d1c58652.json``): a
state at its old path is still read, and moves to its new path when it is next saved.

Several ``ivy-matrix update`` processes may write one store at the same time: each takes the
lock before reading and releases it after writing, and each file is replaced atomically (a
temporary file in the same folder, flushed, then renamed over the old one), so no update is
lost and no reader sees half a file.

The ledger only saves work: an update whose result files are all recorded there (the same
reading, size and SHA-256), while the store is at the revision the output folder shows, reads
no state and writes nothing (:class:`~ivy_matrix.state.ledger.Inputs`). A file of the store's
data (a state, the trend) changed by anything but the store is noticed by its size, times and
inode: the revision then moves on, so the output folder is rendered again in full, and the
ledger's result files are forgotten, so that they are read again. The files an update did not
read on the ledger's word are checked again under the lock: if the store no longer records
them, the update raises :class:`~ivy_matrix.state.ledger.StaleInputs` and reads them again.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from ivy_matrix.errors import StoreError
from ivy_matrix.model import DashboardId, DashboardState, Trend
from ivy_matrix.runner.files import write_atomic, write_beside
from ivy_matrix.runner.log import Progress, Quiet
from ivy_matrix.state.columnar import (
    HEAD_END,
    Columns,
    Head,
    column_lines,
    dump_columns,
    head_of,
)
from ivy_matrix.state.fold import DashboardReport, Merged, Stored
from ivy_matrix.state.ledger import (
    Inputs,
    Ledger,
    StaleInputs,
    Stat,
    dump_ledger,
    load_ledger,
    revision_of,
)
from ivy_matrix.state.paths import relative_path, state_file
from ivy_matrix.state.statefile import load_state
from ivy_matrix.state.trend import DEFAULT_POINTS, TREND_NAME, dump_trend, load_trend, with_trend
from ivy_matrix.stores import DEFAULT_LOCK_TIMEOUT, AfterSave, Change, Saved
from ivy_matrix.stores.file_lock import FileLock

LEDGER_NAME = "ledger.json"
# A state's start is read this many bytes at a time, up to its rows (LocalStore._head).
HEAD_READ = 4096
HEAD_END_BYTES = HEAD_END.encode()


class LocalStore:
    """Dashboard state in a local directory, safe for concurrent writers on one machine.

    ``after_save`` (the output folder) is called under the lock too, so that a slower process
    never overwrites newer pages. A dry run takes no lock: the lock file (and the store
    folder) would be a write.
    """

    changes_once = True  # one read and one change, under the lock

    def __init__(
        self,
        root: Path,
        *,
        dry_run: bool = False,
        log: Progress | None = None,
        after_save: AfterSave | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        trend_points: int = DEFAULT_POINTS,
        inputs: Inputs | None = None,
    ) -> None:
        self.root = root
        self._state_dir = root / "state"
        self.trend_path = root / TREND_NAME
        self.ledger_path = root / LEDGER_NAME
        self.trend_points = trend_points
        self.dry_run = dry_run
        self.log: Progress = log or Quiet()
        self.after_save = after_save
        self.lock_timeout = lock_timeout
        self.inputs = inputs
        self._read_before: dict[DashboardId, Columns] = {}
        # The states a fold settled (Stored.folded), each written beside its file until saved.
        self._folded: dict[DashboardId, tuple[DashboardState, Path]] = {}

    def update(self, change: Change) -> Saved:
        """Under the lock: read every state, ``change`` them, save what changed (and the trend,
        with the points of the runs the change brought), then the ledger.

        The change gets the states as a :class:`~ivy_matrix.state.fold.Stored` (:meth:`stored`):
        a fold reads each dashboard's state as it reaches it, and the state to save is written
        beside its file as the fold lets the old one go; all are put in place once the change
        is done (none, if it fails). So one old state is held at a time, not all of them.

        With ``inputs`` that bring nothing new at the revision the store is still at, nothing
        is read or written (module docstring). Files not read because the ledger held them
        must still be held by it: else :class:`StaleInputs`, and nothing is written.
        """
        locked = self.locked(timeout=self.lock_timeout, on_wait=self.log.info)
        with contextlib.nullcontext() if self.dry_run else locked:
            ledger, before = self.ledger()
            inputs = self.inputs
            self._check_kept(ledger)
            if inputs is not None and inputs.nothing_new and before == inputs.revision:
                reports = {d.key: DashboardReport() for d in inputs.touched}
                merged = Merged(states={}, reports=reports, revision=before, revision_before=before)
                return Saved(merged=merged)
            try:
                return self._fold_and_save(change, ledger, before)
            finally:
                self._drop_folded()

    def _fold_and_save(self, change: Change, ledger: Ledger, before: str | None) -> Saved:
        """:meth:`update`'s change and what it saves (under the lock)."""
        merged = change(self.stored())
        previous = self._read_trend()
        merged = with_trend(
            merged,
            load_trend(previous, where=str(self.trend_path)),
            cap=self.trend_points,
        )
        trend = dump_trend(merged.trend) if merged.trend is not None else None
        to_save = merged.to_save()
        store = ledger.store or secrets.token_hex(8)
        revision = ledger.revision + (bool(to_save or merged.removed) or before is None)
        merged = replace(merged, revision=f"{store}:{revision}", revision_before=before)
        written = tuple(
            self.path_of(d).as_posix() for d in [*to_save, *(s.id for s in merged.removed)]
        )
        for state in to_save.values():
            if self.dry_run:
                self.log.info(f"dry run: would save the state of {state.key} in {self.root}")
            else:
                self.save(state)
        for state in merged.removed:
            if self.dry_run:
                self.log.info(f"dry run: would remove the state of {state.key} from {self.root}")
            else:
                self.delete(state.id)
        # The trend after the states: a point is never there without the cells it counts.
        if trend is not None and trend != (previous or dump_trend(Trend())):
            written += (self.trend_path.as_posix(),)
            if self.dry_run:
                self.log.info(f"dry run: would save the trend in {self.trend_path}")
            else:
                self._write(self.trend_path, trend)
        # Still under the lock: a slower process must not overwrite newer files.
        output = self.after_save(merged) if self.after_save else ()
        if not self.dry_run:
            self._save_ledger(ledger, merged, Ledger(store=store, revision=revision))
        return Saved(merged=merged, written=written, output=output)

    def _check_kept(self, ledger: Ledger) -> None:
        """Raise :class:`StaleInputs` unless ``ledger`` (read under the lock) still holds every
        file the update did not read on its word."""
        if self.inputs is None or not self.inputs.kept:
            return
        held = ledger.recorded(self.inputs.reading)
        if not all(identity in held for identity in self.inputs.kept):
            raise StaleInputs

    def ledger(self) -> tuple[Ledger, str | None]:
        """The store's ledger, and its revision (:func:`~ivy_matrix.state.ledger.revision_of`), or
        None when the store's data files are not those the ledger recorded (or there is none):
        the ledger then holds no result files (:meth:`Ledger.checked`)."""
        try:
            text = self.ledger_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = None  # only saves work: without it, everything is read and rendered
        recorded = load_ledger(text)
        ledger = recorded.checked(self._data_stats())
        known = bool(ledger.store) and ledger is recorded
        return ledger, revision_of(ledger) if known else None

    def _save_ledger(self, old: Ledger, merged: Merged, new: Ledger) -> None:
        """Record the revision, the state files as written, and the result files brought
        (all forgotten when anything retired or was pruned: their results may be gone)."""
        retired = merged.removed or any(
            r.retired_rows or r.retired_backends or r.removed for r in merged.reports.values()
        )
        ledger = Ledger(
            store=new.store,
            revision=new.revision,
            states=self._data_stats(),
            inputs=() if retired else old.inputs,
        )
        if self.inputs is not None:
            ledger = ledger.with_inputs(self.inputs.reading, self.inputs.files)
        text = dump_ledger(ledger)
        if text != dump_ledger(old):
            self._write(self.ledger_path, text)

    def _data_stats(self) -> dict[str, Stat]:
        """Each state file's and the trend's :data:`~ivy_matrix.state.ledger.Stat`, by path in
        the store folder."""
        found: dict[str, Stat] = {}
        paths = [os.fspath(self.trend_path)]
        for folder, _, names in os.walk(self._state_dir):
            # A walk of many files, where pathlib would cost more than the stat.
            paths.extend(os.path.join(folder, n) for n in names if n.endswith(".json"))  # noqa: PTH118
        for path in paths:
            try:
                stat = os.stat(path)  # noqa: PTH116  -- as above
            except OSError:
                continue
            key = os.path.relpath(path, self.root).replace(os.sep, "/")
            found[key] = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
        return found

    @contextlib.contextmanager
    def locked(
        self,
        *,
        timeout: float = DEFAULT_LOCK_TIMEOUT,
        on_wait: Callable[[str], None] = lambda _message: None,
    ) -> Iterator[None]:
        """Hold the store's lock: wrap a whole read-merge-write in it.

        While another process holds it, ``on_wait`` hears who (once per holder); after
        ``timeout`` seconds the wait ends with a :class:`StoreError` naming the holder. Errors
        raised inside the block are not the lock's: they pass through unchanged.
        """
        lock = FileLock(self.root / ".lock")
        try:
            lock.acquire(timeout, on_wait, self.root)
        except OSError as error:
            raise StoreError(
                f"cannot lock the store {self.root}: {error.strerror or error}; "
                f"check that the folder is writable or pass another --store"
            ) from None
        try:
            yield
        finally:
            lock.release()

    def path_of(self, dashboard: DashboardId) -> Path:
        """Where ``dashboard``'s state is saved."""
        return self._state_dir / state_file(dashboard)

    def _old_path_of(self, dashboard: DashboardId) -> Path:
        """Where older versions saved ``dashboard``'s state (often :meth:`path_of` itself)."""
        return self._state_dir / relative_path(dashboard, ".json")

    def _read(self, path: Path) -> DashboardState:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise StoreError(f"cannot read dashboard state {path}: not UTF-8 text") from None
        state = load_state(text, where=str(path))
        # Kept until the state is saved again: its unchanged columns are written as read.
        self._read_before[state.id] = Columns(state=state, lines=column_lines(text))
        return state

    def load(self, dashboard: DashboardId) -> DashboardState | None:
        """The stored state of one dashboard, or ``None`` if it has none yet.

        Read from its path, or else from the path older versions gave it.
        """
        for path in dict.fromkeys((self.path_of(dashboard), self._old_path_of(dashboard))):
            try:
                state = self._read(path)
            except FileNotFoundError:
                continue
            except OSError as error:
                raise StoreError(f"cannot read {path}: {error.strerror or error}") from None
            if state.id != dashboard:
                raise StoreError(
                    f"{path} holds dashboard {state.key!r}, not {dashboard.key!r}; "
                    f"two dashboard names map to one file, rename one of them"
                )
            return state
        return None

    def load_all(self) -> list[DashboardState]:
        """Every stored dashboard, sorted by key (:meth:`stored`, each read)."""
        stored = self.stored()
        return [stored[dashboard] for dashboard in stored]

    def stored(self) -> Stored:
        """Every stored dashboard, by key, each state read when it is asked for; what the
        whole store holds (its runs and backends) is read first, from each file's first line.

        A file whose content names another dashboard than its path (a hand-edited title, say)
        is refused, never merged into the dashboard it names; the path older versions gave a
        dashboard is its path too. Each state read is kept with its text (for :meth:`save`)
        until it is saved, or a fold lets it go (:meth:`_settled`).
        """
        heads: dict[DashboardId, tuple[Path, Head]] = {}
        found = sorted(self._state_dir.rglob("*.json")) if self._state_dir.is_dir() else []
        for path in found:
            head = self._head(path)
            new = self.path_of(head.dashboard)
            if path not in {new, self._old_path_of(head.dashboard)}:
                raise StoreError(
                    f"cannot read dashboard state {path}: it holds dashboard "
                    f"{head.dashboard.key!r}, whose state belongs in {new}; put the title and "
                    f"category back as they were, or move the file there"
                )
            # Both paths exist only if a save stopped between writing the new file and
            # removing the old one: the new file is the later write, so it wins.
            if path == new or head.dashboard not in heads:
                heads[head.dashboard] = (path, head)
        runs = {run for _, head in heads.values() for run in head.runs}
        backends = {name for _, head in heads.values() for name in head.backends}

        def read(dashboard: DashboardId) -> DashboardState:
            path, head = heads[dashboard]
            try:
                state = self._read(path)
            except OSError as error:
                raise StoreError(f"cannot read {path}: {error.strerror or error}") from None
            if state.id != head.dashboard or state.runs != head.runs:
                # Its start and its whole disagree (a key written twice by hand, say): the
                # retirement window was worked out from the start.
                raise StoreError(
                    f"cannot read dashboard state {path}: its title, category or runs are "
                    f"not those its first keys say; restore it from a backup"
                )
            return state

        return Stored(
            sorted(heads, key=lambda d: d.key),
            runs=runs,
            backends=backends,
            read=read,
            folded=self._settled,
        )

    def _head(self, path: Path) -> Head:
        """What ``path``'s state says of its dashboard as a whole, from the start of its first
        line (:func:`~ivy_matrix.state.columnar.head_of`; the whole document, in a layout
        without one)."""
        try:
            with path.open("rb") as file:
                start = file.read(HEAD_READ)
                while not (found := start.find(HEAD_END_BYTES)) + 1 and b"\n" not in start:
                    more = file.read(HEAD_READ)
                    if not more:
                        break
                    start += more
            head = head_of(start[:found].decode("utf-8")) if found >= 0 else None
            if head is None:
                head = Head.of(load_state(path.read_text(encoding="utf-8"), where=str(path)))
        except UnicodeDecodeError:
            raise StoreError(f"cannot read dashboard state {path}: not UTF-8 text") from None
        except OSError as error:
            raise StoreError(f"cannot read {path}: {error.strerror or error}") from None
        return head

    def _settled(self, dashboard: DashboardId, state: DashboardState | None, save: bool) -> None:  # noqa: FBT001  -- a Folded callback
        """A fold is done with ``dashboard``: the state read goes, and a state to save is
        written now, while the state read is there to copy unchanged columns from, to a file
        beside its own that :meth:`save` puts in place (none is, should the change fail)."""
        before = self._read_before.pop(dashboard, None)
        if save and state is not None and not self.dry_run:
            path = self.path_of(dashboard)
            try:
                self._folded[dashboard] = (state, write_beside(path, dump_columns(state, before)))
            except OSError as error:
                raise self._unwritable(path, error) from None

    def _drop_folded(self) -> None:
        """Remove the files written for states that were not saved (the change failed)."""
        for _, written in self._folded.values():
            written.unlink(missing_ok=True)
        self._folded.clear()

    def _read_trend(self) -> str | None:
        try:
            return self.trend_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            raise StoreError(f"cannot read {self.trend_path}: {error}") from None

    def load_trend(self) -> Trend:
        """The store's trend (empty when it has none yet)."""
        return load_trend(self._read_trend(), where=str(self.trend_path))

    def delete(self, dashboard: DashboardId) -> None:
        """Remove one dashboard's state, at its path and the old one (none is fine)."""
        for path in (self.path_of(dashboard), self._old_path_of(dashboard)):
            self._remove(path)

    @staticmethod
    def _remove(path: Path) -> None:
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            raise StoreError(
                f"cannot remove {path}: {error.strerror or error}; "
                f"check that the folder is writable or pass another --store"
            ) from None

    def save(self, state: DashboardState) -> None:
        """Write one dashboard's state atomically (put in place as a fold wrote it, or made
        now), then remove it from its old path.

        A crash in between leaves the state at both paths; :meth:`load_all` and :meth:`load`
        read the new one.
        """
        path = self.path_of(state.id)
        folded, written = self._folded.pop(state.id, (None, None))
        if written is not None and folded is state:
            try:
                written.replace(path)
            except OSError as error:
                written.unlink(missing_ok=True)
                raise self._unwritable(path, error) from None
        else:
            if written is not None:
                written.unlink(missing_ok=True)  # a state the change made again since
            self._write(path, dump_columns(state, self._read_before.pop(state.id, None)))
        old = self._old_path_of(state.id)
        if old != path:
            self._remove(old)
            with contextlib.suppress(OSError):  # only tidies up: a folder in use stays
                if old.parent != self._state_dir:
                    old.parent.rmdir()

    @classmethod
    def _write(cls, path: Path, text: str) -> None:
        try:
            write_atomic(path, text)
        except OSError as error:
            raise cls._unwritable(path, error) from None

    @staticmethod
    def _unwritable(path: Path, error: OSError) -> StoreError:
        return StoreError(
            f"cannot write {path}: {error.strerror or error}; "
            f"check that the folder is writable or pass another --store"
        )
