"""The local store's ledger: what it holds, so that an update can tell what it need not do again.

Pure: no I/O; the local store reads and writes the text (``.ivy-matrix/ledger.json``, see
stores/local.py). Nothing in it is needed to read the dashboards: a ledger that is missing,
unreadable or of another version reads as an empty one, and the next update then reads and
renders everything, as if there had never been one. It holds:

- ``store``, a random id made with the ledger, and ``revision``, raised by one whenever the
  store saves or removes a state: together the store's revision (:func:`revision_of`), which
  the output folder records as the revision it shows (targets/files.py), so that an update
  renders only what changed since.
- ``states``: each file of the store's data (the state files, ``trend.json``) as the store left
  it: its size, modification and change times and inode number (:data:`Stat`), so that a file
  changed by anything but the store (a hand edit, a restored backup, a deleted file) is
  noticed. No program sets a change time: a restored backup is noticed even when it keeps
  the sizes and modification times. The revision then moves on, the output folder is rendered
  again in full, and the recorded result files are forgotten (:meth:`Ledger.checked`).
- ``inputs``: the result files whose results the store holds, by *reading*: a digest of the
  settings that shape a file's cells (:func:`reading_digest`: the run, attempt and job, the
  link, the naming and backend rules, ...), then each file's path, size and SHA-256, and what
  reading it reported (counts, first failures, the dashboards it reached). A file recorded
  under the same reading, size and digest is not read again: its results are in the store, and
  merging them again changes nothing (merge.py: the same job's results twice change nothing).
  A change that retires or prunes anything forgets them all (its results may be gone). The
  newest ``READINGS_KEPT`` readings are kept.

The ledger is never the only proof that results are stored: its ``inputs`` count only while
every file of the store's data is as the store last wrote it (``states``); a file skipped on
its word is checked again under the store's lock (:class:`Inputs` ``kept``), and a store that
no longer holds it has the update read every file again (:class:`StaleInputs`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from ivy_matrix.jsonshape import MalformedError, expect_int, expect_list, expect_object, expect_str
from ivy_matrix.model import DashboardId, Failure, FileCounts, FileRecord

# A file as the store left it: size, modification time, change time (ns), inode number.
Stat = tuple[int, int, int, int]
Identity = tuple[str, int, str]

FORMAT = "ivy-matrix-ledger"
VERSION = 2  # 2: four numbers per data file, and the trend (a version 1 ledger reads as none)
READINGS_KEPT = 20
# Changed whenever what a reading of the same bytes gives can change (naming, reading, merging).
READING_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Ledger:
    """What a local store holds (see the module docstring)."""

    store: str = ""
    revision: int = 0
    # By path in the store folder: state/<category>/<title>.json, trend.json.
    states: Mapping[str, Stat] = field(default_factory=dict)
    # (reading digest, its files), oldest first.
    inputs: tuple[tuple[str, tuple[FileRecord, ...]], ...] = ()

    def recorded(self, reading: str) -> dict[Identity, FileRecord]:
        """The files recorded under ``reading``, by identity."""
        for digest, files in self.inputs:
            if digest == reading:
                return {record.identity: record for record in files}
        return {}

    def checked(self, states: Mapping[str, Stat]) -> Ledger:
        """This ledger as proof for a store whose data files are ``states`` now: unchanged if
        they are those it recorded, else without its recorded result files (the store may
        not hold their results: a restored backup, a deleted state file)."""
        if dict(self.states) == dict(states):
            return self
        return Ledger(store=self.store, revision=self.revision, states=self.states)

    def with_inputs(self, reading: str, files: Iterable[FileRecord]) -> Ledger:
        """This ledger with ``files`` recorded under ``reading`` (a file of the same path is
        replaced), that reading the newest, and at most ``READINGS_KEPT`` readings."""
        given = list(files)
        if not given:
            return self
        kept = {r.path: r for r in dict(self.inputs).get(reading, ())}
        kept.update((r.path, r) for r in given)
        others = [(d, f) for d, f in self.inputs if d != reading]
        inputs = (*others, (reading, tuple(kept.values())))[-READINGS_KEPT:]
        return Ledger(store=self.store, revision=self.revision, states=self.states, inputs=inputs)


@dataclass(frozen=True, slots=True, kw_only=True)
class Inputs:
    """The result files an update brings, for a store that keeps a ledger.

    ``files`` (those read this time) are recorded under ``reading`` once the update is saved.
    With ``nothing_new`` every result file was recorded before, the store was at ``revision``
    and the output folder showed it: if the store is still there, it reads no state and
    writes nothing, and the dashboards the files reached (``touched``) are reported unchanged.
    """

    reading: str
    files: tuple[FileRecord, ...] = ()
    # The files not read because the ledger held them (path, size, SHA-256): the store checks
    # under its lock that it still holds them, else raises StaleInputs.
    kept: tuple[Identity, ...] = ()
    nothing_new: bool = False
    revision: str = ""
    touched: tuple[DashboardId, ...] = ()


class StaleInputs(Exception):  # noqa: N818  -- not an error: the update reads everything again
    """The store no longer holds the results of files an update did not read on the ledger's
    word (it changed between the read and the lock): the update reads every file again."""


def revision_of(ledger: Ledger) -> str:
    """The store's revision as the output folder records it: its id and revision number."""
    return f"{ledger.store}:{ledger.revision}"


def reading_digest(settings: Iterable[tuple[str, object]]) -> str:
    """A digest of the settings that shape what reading a file gives (name, value pairs)."""
    text = json.dumps([READING_VERSION, *[[k, repr(v)] for k, v in settings]])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# --------------------------------------------------------------------------- the file


def _record_json(record: FileRecord) -> dict[str, object]:
    document = asdict(record)
    document["dashboards"] = [[d.title, d.category] for d in record.dashboards]
    return document


def dump_ledger(ledger: Ledger) -> str:
    """The text of ``ledger.json`` (deterministic)."""
    document = {
        "format": FORMAT,
        "version": VERSION,
        "store": ledger.store,
        "revision": ledger.revision,
        "states": {path: list(stat) for path, stat in sorted(ledger.states.items())},
        "inputs": [[d, [_record_json(r) for r in files]] for d, files in ledger.inputs],
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def _ints(value: object, n: int) -> tuple[int, ...]:
    numbers = tuple(expect_int(x) for x in expect_list(value))
    if len(numbers) != n:
        raise MalformedError(f"expected {n} numbers, got {len(numbers)}")
    return numbers


def _record(value: object) -> FileRecord:
    item = expect_object(value)
    counts = expect_object(item["counts"])
    problem = counts.get("problem")
    return FileRecord(
        path=expect_str(item["path"]),
        size=expect_int(item["size"]),
        sha256=expect_str(item["sha256"]),
        backend=expect_str(item["backend"]),
        counts=FileCounts(
            **{k: expect_int(v) for k, v in counts.items() if k not in {"path", "problem"}},
            path=expect_str(counts["path"]),
            problem=None if problem is None else expect_str(problem),
        ),
        failures=tuple(
            Failure(**{k: expect_str(v) for k, v in expect_object(f).items()})
            for f in expect_list(item["failures"])
        ),
        tallies=tuple(
            (expect_str(name), (a, b, c, d))
            for name, (a, b, c, d) in (
                (t[0], _ints(t[1], 4)) for t in map(expect_list, expect_list(item["tallies"]))
            )
        ),
        unassigned=expect_int(item["unassigned"]),
        nameless_line=expect_int(item["nameless_line"]),
        ids_tried=expect_int(item["ids_tried"]),
        unmatched_ids=tuple(expect_str(x) for x in expect_list(item["unmatched_ids"])),
        dashboards=tuple(
            DashboardId(title=expect_str(t), category=expect_str(c))
            for t, c in map(expect_list, expect_list(item["dashboards"]))
        ),
    )


def load_ledger(text: str | None) -> Ledger:
    """Parse ``ledger.json``; anything that is not a ledger of this version is an empty one
    (it only saves work: without it, everything is read and rendered again)."""
    if not text:
        return Ledger()
    try:
        document = expect_object(json.loads(text))
        if document.get("format") != FORMAT or document.get("version") != VERSION:
            return Ledger()
        return Ledger(
            store=expect_str(document["store"]),
            revision=expect_int(document["revision"]),
            states={
                path: (a, b, c, d)
                for path, (a, b, c, d) in (
                    (k, _ints(v, 4)) for k, v in expect_object(document["states"]).items()
                )
            },
            inputs=tuple(
                (expect_str(d), tuple(_record(r) for r in expect_list(files)))
                for d, files in map(expect_list, expect_list(document["inputs"]))
            ),
        )
    except (ValueError, KeyError, TypeError, RecursionError):
        return Ledger()
