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
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, cast

from ivy_matrix.collect import Collected, Collector
from ivy_matrix.commands.result_files import find_result_files
from ivy_matrix.config.options import IfNoFilesFound
from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import InputError
from ivy_matrix.naming import Namer
from ivy_matrix.runner.log import Log
from ivy_matrix.runner.pacing import Meter, phase

# GitHub shows at most 10 error annotations per step; more only fill the log.
ANNOTATIONS = 10


class _Metered:
    """A binary stream that tells a meter how many bytes were read from it."""

    def __init__(self, raw: BinaryIO, meter: Meter) -> None:
        self._raw = raw
        self._meter = meter

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self._meter.advance(len(data))
        return data


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_results(settings: Settings, log: Log) -> Collected:
    """Find and read every result file; refuse a read that would record nothing unsaid."""
    with phase(log, "read") as step:
        files, warnings = find_result_files(settings.junit, root=Path.cwd())
        if not files:
            _no_files_found(settings, log)
        elif settings.if_no_files_found is not IfNoFilesFound.IGNORE:
            for warning in warnings:
                log.warning(warning)
        collector = Collector(Namer(settings.naming_rules()))
        meter = Meter(log, sum(_size(path) for path in files), "reading result files")
        with log.group(f"Reading {len(files)} result file(s)"):
            for path in files:
                _read_one(collector, path, meter, log)
        collected = collector.collected
        _report_problems(collected, log)
        _check(settings, collected, files)
        totals = collected.totals()
        step.done(f"{totals.files} file(s), {totals.tests} test case(s)")
    return collected


def _read_one(collector: Collector, path: Path, meter: Meter, log: Log) -> None:
    shown = _shown(path)
    try:
        with path.open("rb") as stream:
            metered = cast("BinaryIO", _Metered(stream, meter))
            counts = collector.add_file(metered, source=shown)
    except OSError as error:
        log.warning(f"cannot read result file: {error.strerror or error}", file=shown)
        return
    if counts.problem is None:
        log.info(
            f"{shown}: {counts.tests} tests, {counts.failed} failed, "
            f"{counts.errors} errors, {counts.skipped} skipped"
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


def _no_files_found(settings: Settings, log: Log) -> None:
    """No result file at all: usually a wrong path, which must not look like success."""
    patterns = ", ".join(repr(p) for p in settings.junit)
    message = f"no result files matched the junit pattern(s) {patterns} (in {Path.cwd()})"
    option = settings.named("if_no_files_found")
    if settings.if_no_files_found is IfNoFilesFound.ERROR:
        raise InputError(
            f"{message}; check the paths, or set {option} to warn or ignore if a run may have "
            f"no results"
        )
    if settings.if_no_files_found is IfNoFilesFound.WARN:
        log.warning(f"{message}; nothing to publish ({option}: warn)")


def log_results(collected: Collected, log: Log) -> None:
    """One line per backend, then the failed tests: annotations on a runner (the first
    ANNOTATIONS), indented lines elsewhere; the rest counted."""
    for backend, (tests, failed, errors, skipped) in sorted(collected.by_backend.items()):
        log.info(
            f"{backend}: {tests} test case(s), {failed} failed, {errors} error(s), "
            f"{skipped} skipped"
        )
    failed = sum(f.failed + f.errors for f in collected.files if f.problem is None)
    shown = collected.failures[:ANNOTATIONS]
    if shown:
        log.info("failed tests:")
    for failure in shown:
        message = (failure.message or "failed").splitlines()[0]
        log.test_failure(
            f"{failure.test} failed on {failure.backend}",
            message,
            file=failure.test_file or failure.result_file,
        )
    if failed > len(shown):
        where = "the dashboards and the job summary" if log.github_actions else "the dashboards"
        log.info(f"... and {failed - len(shown)} more failed test case(s): {where} have them all")


def _shown(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()
