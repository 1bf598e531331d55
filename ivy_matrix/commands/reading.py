"""Read the result files of ``update`` and ``compare``, and refuse what would be a silent
wrong answer.

I/O: opens the files commands/result_files.py finds and feeds them to the collector
(collect.py), with a meter on the bytes read (runner/pacing.py). Problems become warnings
naming the file; then the results are checked as a whole, and a read that would record
nothing without saying so is an :class:`~ivy_matrix.errors.InputError` instead:

- no file matched the ``--junit`` patterns (unless ``--if-no-files-found`` says otherwise);
- no file could be read (none is JUnit XML, or all are empty or broken);
- the backend regexes matched none of the paths or test ids they were tried on (the message
  says how many were tried and shows two that did not match).

A test case without a name (an interrupted run writes ``<testcase/>``) is a warning naming the
file and line, and is not recorded. After reading, the log gets one line per backend and the
failed tests (annotations on a runner, indented lines elsewhere; never warnings).

Result files the store holds already (``known``: its ledger's files under this update's
reading, ledger.py) are not read again when they are the same bytes (size and SHA-256, never
a timestamp alone): what reading them reported is taken from the ledger instead, and their
cells, already in the store, are left out. Files are skipped a backend at a time: a backend
(named by a file's path) with one new or changed file has all its files read, so that its
cells are combined as one read of them all combines them; when some test cases name their own
backend, any new file has every file read. With ``record``, each file read gets its record
for the ledger: its SHA-256 is taken from the bytes as they are read, on a thread of its own.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, cast

from ivy_matrix.commands.result_files import find_result_files, open_regular
from ivy_matrix.config.options import IfNoFilesFound
from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import InputError
from ivy_matrix.model import FileRecord
from ivy_matrix.results.cells import Collected
from ivy_matrix.results.collector import Collector, Read
from ivy_matrix.results.junit import cap_name
from ivy_matrix.results.naming import Namer
from ivy_matrix.runner.log import Log
from ivy_matrix.runner.pacing import Meter, phase

# GitHub shows at most 10 error annotations per step; more only fill the log.
ANNOTATIONS = 10


# A file's identity in the ledger: its path as shown, size and SHA-256.
Identity = tuple[str, int, str]


# Chunks read (junit.READ_CHUNK each) waiting for the hashing thread, at most: on a loaded
# machine that thread can lag, and its queue held 14 of them (1.8 MB) in one fresh update of
# 200k cases; when it is full, reading waits for it.
HASH_PENDING = 4


class _Hasher:
    """SHA-256 of the bytes of each file as they are read, on a thread of its own: hashlib lets
    go of the GIL while it hashes, so on a second core this costs the parse no time. At most
    HASH_PENDING chunks wait for it."""

    def __init__(self) -> None:
        self._chunks: queue.Queue[tuple[hashlib._Hash, bytes] | None] = queue.Queue(
            maxsize=HASH_PENDING
        )
        self._thread = threading.Thread(target=self._run, name="ivy-matrix sha256", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._chunks.get()) is not None:
            digest, data = item
            digest.update(data)

    def feed(self, digest: hashlib._Hash, data: bytes) -> None:
        self._chunks.put((digest, data))

    def finish(self) -> None:
        """Wait until every byte fed is hashed."""
        self._chunks.put(None)
        self._thread.join()


class _Metered:
    """A binary stream that tells a meter how many bytes were read from it (and a hasher
    which bytes, when there is one)."""

    def __init__(self, raw: BinaryIO, meter: Meter, hasher: _Hasher | None) -> None:
        self._raw = raw
        self._meter = meter
        self._hasher = hasher
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self._meter.advance(len(data))
        self.size += len(data)
        if self._hasher is not None and data:
            self._hasher.feed(self.digest, data)
        return data


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_results(
    settings: Settings,
    log: Log,
    *,
    known: Mapping[Identity, FileRecord] | None = None,
    record: bool = False,
    spill: BinaryIO | None = None,
) -> Collected:
    """Find and read every result file; refuse a read that would record nothing unsaid.

    ``known``: result files the store holds (module docstring); with ``record``, the files read
    get their records (``Collected.records``); ``spill``: a file the timed cases' texts are
    written to (results/timed_cases.py).
    """
    with phase(log, "read") as step:
        files, warnings = find_result_files(settings.junit, root=Path.cwd())
        if not files:
            no_files_found(settings, log)
        elif settings.if_no_files_found is not IfNoFilesFound.IGNORE:
            for warning in warnings:
                log.warning(warning)
        collector = Collector(
            Namer(settings.naming_rules()), redactor=settings.redactor(), spill=spill
        )
        skipped = _recorded(files, collector.namer, known or {})
        fresh = [path for path in files if path not in skipped]
        meter = Meter(log, sum(_size(path) for path in fresh), "reading result files")
        hasher = _Hasher() if record and fresh else None
        read: list[tuple[str, _Metered, Read]] = []
        with log.group(f"Reading {len(files)} result file(s)"):
            for path in files:
                if path in skipped:
                    _add_recorded(collector, skipped[path], log)
                    continue
                done = _read_one(collector, path, meter, log, hasher)
                if done is not None:
                    read.append(done)
        collected = collector.collected
        if hasher is not None:
            hasher.finish()
            collected.records = [_record(shown, metered, done) for shown, metered, done in read]
        if skipped:
            log.info(
                f"{len(skipped)} result file(s) already in the store for this run (same size "
                f"and SHA-256): not read again"
            )
        _report_problems(collected, log)
        _check(settings, collected, files)
        totals = collected.totals()
        step.done(f"{totals.files} file(s), {totals.tests} test case(s)")
    return collected


def _recorded(
    files: Sequence[Path], namer: Namer, known: Mapping[Identity, FileRecord]
) -> dict[Path, FileRecord]:
    """The files not to read again (module docstring): each recorded under its identity and
    its path's backend, all of a backend's files or none."""
    if not known:
        return {}
    sizes = {(path, size) for path, size, _ in known}
    groups: dict[str | None, list[tuple[Path, FileRecord | None]]] = {}
    for path in files:
        shown, size = shown_path(path), _size(path)
        found = None
        if (shown, size) in sizes:
            found = known.get((shown, size, _sha256(path)))
        backend = namer.backend_for_file(shown)
        backend = None if backend is None else cap_name(backend)
        if found is not None and found.backend != (backend or ""):
            found = None
        groups.setdefault(backend, []).append((path, found))
    dirty = {b for b, items in groups.items() if any(r is None for _, r in items)}
    if dirty and None in groups:
        return {}
    return {
        path: found
        for backend, items in groups.items()
        if backend not in dirty
        for path, found in items
        if found is not None
    }


def _sha256(path: Path) -> str:
    try:
        with open_regular(path) as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError:
        return ""  # matches no record: the file is read, and its error reported there


def _add_recorded(collector: Collector, recorded: FileRecord, log: Log) -> None:
    counts = collector.add_recorded(recorded)
    log.info(
        f"{recorded.path}: {counts.tests} tests, {counts.failed} failed, "
        f"{counts.errors} errors, {counts.skipped} skipped (in the store already)"
    )


def _read_one(
    collector: Collector, path: Path, meter: Meter, log: Log, hasher: _Hasher | None
) -> tuple[str, _Metered, Read] | None:
    """Read one file; return what its record needs once hashed (None: not readable)."""
    shown = shown_path(path)
    try:
        with open_regular(path) as stream:
            metered = _Metered(stream, meter, hasher)
            counts = collector.add_file(cast("BinaryIO", metered), source=shown)
    except OSError as error:
        log.warning(f"cannot read result file: {error.strerror or error}", file=shown)
        return None
    if counts.problem is not None or collector.last is None:
        return None
    log.info(
        f"{shown}: {counts.tests} tests, {counts.failed} failed, "
        f"{counts.errors} errors, {counts.skipped} skipped"
    )
    return shown, metered, collector.last


def _record(shown: str, metered: _Metered, read: Read) -> FileRecord:
    """A file's record for the ledger (its digest finished: the hasher is done)."""
    return FileRecord(
        path=shown,
        size=metered.size,
        sha256=metered.digest.hexdigest(),
        backend=read.backend,
        counts=read.counts,
        failures=read.failures,
        tallies=read.tallies,
        unassigned=read.unassigned,
        nameless_line=read.nameless_line,
        ids_tried=read.ids_tried,
        unmatched_ids=read.unmatched_ids,
        dashboards=read.dashboards,
    )


def _report_problems(collected: Collected, log: Log) -> None:
    for problem in collected.problems:
        log.warning(
            f"result file skipped: {problem.message}", file=problem.source, line=problem.line
        )
    for source, (count, line) in collected.nameless.items():
        log.warning(
            f"{count} test case(s) without a name (the first at line {line}; an interrupted "
            f"test run writes them) were not recorded",
            file=source,
            line=line,
        )
    for source, count in collected.unassigned.items():
        log.warning(
            f"{count} test case(s) have no backend: neither backend-from-path nor "
            f"backend-from-test matched; they were not recorded",
            file=source,
        )


def _check(settings: Settings, collected: Collected, files: Sequence[Path]) -> None:
    """The errors of a read that found files but would record nothing (module docstring)."""
    if files and all(counts.problem is not None for counts in collected.files):
        first = collected.problems[0] if collected.problems else None
        why = f" (e.g. {first.source}: {first.message})" if first else ""
        raise InputError(
            f"none of the {len(files)} result file(s) could be read{why}; check that the "
            f"tests write JUnit XML (pytest --junitxml=PATH) and that "
            f"{settings.named('junit')} selects those files"
        )
    if collected.dashboards or not collected.unassigned:
        return
    tried = []
    if collected.paths_tried:
        tried.append(
            f"{settings.named('backend_from_path')} {settings.backend_from_path!r} matched "
            f"none of the {collected.paths_tried} result file path(s) it was tried on "
            f"({_examples(collected.unmatched_paths)})"
        )
    if collected.ids_tried:
        tried.append(
            f"{settings.named('backend_from_test')} {settings.backend_from_test!r} matched "
            f"none of the {collected.ids_tried} test id(s) it was tried on "
            f"({_examples(collected.unmatched_ids)})"
        )
    raise InputError(
        f"no test case got a backend, so nothing would be recorded: {'; '.join(tried)}. "
        f"Fix the regex so that its group (?P<backend>...) matches part of those, or pass "
        f"{settings.named('backend')} NAME for a single leg"
    )


def _examples(samples: Sequence[str]) -> str:
    shown = " and ".join(repr(sample) for sample in samples)
    return f"for example {shown}" if samples else "none kept"


def no_files_found(settings: Settings, log: Log, *, legs: bool = False) -> None:
    """No result file (or with ``legs``, no leg file) at all: usually a wrong path, which must
    not look like success."""
    what, name = ("leg files", "legs") if legs else ("result files", "junit")
    patterns = ", ".join(repr(p) for p in (settings.legs if legs else settings.junit))
    message = f"no {what} matched the {name} pattern(s) {patterns} (in {Path.cwd()})"
    check = (
        "check that the legs ran ivy-matrix collect and that their files are here"
        if legs
        else "check the paths"
    )
    option = settings.named("if_no_files_found")
    if settings.if_no_files_found is IfNoFilesFound.ERROR:
        raise InputError(
            f"{message}; {check}, or set {option} to warn or ignore if a run may have none"
        )
    if settings.if_no_files_found is IfNoFilesFound.WARN:
        log.warning(f"{message}; nothing to publish from them ({option}: warn)")


def log_results(
    collected: Collected, log: Log, *, annotate: bool = True, from_legs: int = 0
) -> None:
    """One line per backend, then the failed tests: annotations on a runner (the first
    ANNOTATIONS), indented lines elsewhere; the rest counted. ``annotate=False``: the
    backends' lines only (a pull request's annotations are its new failures,
    targets/summary.py). ``from_legs``: the failed cases of leg files among them, which their
    legs annotated (``collected.failures`` has none)."""
    for backend, (tests, failed, errors, skipped) in sorted(collected.by_backend.items()):
        log.info(
            f"{backend}: {tests} test case(s), {failed} failed, {errors} error(s), "
            f"{skipped} skipped"
        )
    if not annotate:
        return
    failed = sum(f.failed + f.errors for f in collected.files if f.problem is None) - from_legs
    shown = collected.failures[:ANNOTATIONS]
    if shown:
        log.info("failed tests:")
    for failure in shown:
        message = (failure.message or "failed").splitlines()[0]
        line = failure.test_line
        log.test_failure(
            f"{failure.test} failed on {failure.backend}",
            message,
            file=failure.test_file or failure.result_file,
            line=int(line) if failure.test_file and line.isascii() and line.isdigit() else None,
        )
    where = "the dashboards and the job summary" if log.github_actions else "the dashboards"
    if failed > len(shown):
        log.info(f"... and {failed - len(shown)} more failed test case(s): {where} have them all")
    if from_legs:
        log.info(
            f"{from_legs} failed test case(s) of the leg files, annotated in their legs' jobs: "
            f"{where} have them all"
        )


def shown_path(path: Path) -> str:
    """``path`` as messages show it: relative to the working directory when it is below it."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()
