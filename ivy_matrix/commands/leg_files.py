"""The leg files a fan-in job reads (``update --legs GLOB``): found, read, checked, deduplicated,
and each leg's newest attempt kept.

I/O: lists directories and reads the files; nothing else (no network). The format and its
checks are pure (legs.py). What a leg's tests printed is redacted as it is read (the token
this job was given, well-known key shapes, the ``redact`` patterns). A file that cannot be
used (unreadable, not a leg file, of another run, repository or commit, an attempt later than
this job's) is a warning naming it and the reason, and every other leg still lands. The same
file read twice (an artifact downloaded into two folders) counts once, and a leg that a re-run
attempt ran again counts only in its newest attempt (legs.rerun). Leg files found of which none can be used are an
:class:`~ivy_matrix.errors.InputError`: a fan-in that would record nothing says so.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ivy_matrix.commands.reading import no_files_found, shown_path
from ivy_matrix.commands.result_files import find_result_files, open_regular
from ivy_matrix.config.options import IfNoFilesFound
from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import InputError
from ivy_matrix.redaction import Redactor
from ivy_matrix.results.legs import (
    MAX_LEG_FILE_BYTES,
    LegResults,
    leg_problem,
    load_leg,
    redacted_leg,
    rerun,
)
from ivy_matrix.runner.log import Log


@dataclass(frozen=True, slots=True, kw_only=True)
class _Read:
    path: str
    digest: str
    leg: LegResults


def read_legs(settings: Settings, log: Log) -> tuple[LegResults, ...]:
    """Every usable leg file the ``legs`` patterns select, in run order (run, attempt, job)."""
    if not settings.legs:
        return ()
    files, warnings = find_result_files(settings.legs, root=Path.cwd(), suffix=".json")
    if not files:
        no_files_found(settings, log, legs=True)
    elif settings.if_no_files_found is not IfNoFilesFound.IGNORE:
        for warning in warnings:
            log.warning(warning.replace("result files", "leg files"))
    # By digest: the same file read twice (an artifact downloaded twice) counts once. Two
    # different files may name the same job: a job that ran collect twice (two suites).
    kept: dict[str, _Read] = {}
    redactor = settings.redactor()
    with log.group(f"Reading {len(files)} leg file(s)"):
        for path in files:
            read = _read_one(path, settings, log, redactor)
            if read is None:
                continue
            first = kept.setdefault(read.digest, read)
            if first is not read:
                log.info(f"{read.path}: the same leg file as {first.path}; read once")
    if files and not kept:
        # Every file was refused: exit 0 with nothing recorded would look like a quiet run.
        raise InputError(
            f"none of the {len(files)} leg file(s) could be used (the warnings above say why "
            f"for each); check that the legs ran `collect` for this run, repository and server "
            f"({settings.named('run_id')}, {settings.named('repository')}, "
            f"{settings.named('server_url')})"
        )
    ordered = sorted(kept.values(), key=lambda r: (r.leg.info.run, r.path))
    again = rerun([r.leg for r in ordered])
    for index, by in again.items():
        old, new = ordered[index], ordered[by]
        log.info(
            f"{old.path}: attempt {old.leg.info.run_attempt} of a leg that attempt "
            f"{new.leg.info.run_attempt} ran again ({new.path}); only the newer attempt counts"
        )
    return tuple(r.leg for index, r in enumerate(ordered) if index not in again)


def _read_one(path: Path, settings: Settings, log: Log, redactor: Redactor) -> _Read | None:
    """One leg file, parsed and checked against this run; None (and a warning) if unusable."""
    shown = shown_path(path)
    try:
        with open_regular(path) as handle:
            data = handle.read(MAX_LEG_FILE_BYTES + 1)
    except OSError as error:
        log.warning(f"cannot read leg file: {error.strerror or error}", file=shown)
        return None
    try:
        leg = redacted_leg(load_leg(_text(data, shown), where=shown), redactor)
    except InputError as error:
        log.warning(f"{error}; its results are left out", file=shown)
        return None
    problem = leg_problem(
        leg.info,
        run_id=settings.run_id,
        run_attempt=settings.run_attempt,
        repository=settings.repository,
        server_url=settings.server_url,
        sha=settings.commit,
    )
    if problem is not None:
        log.warning(f"leg file {shown} is not used: {problem}", file=shown)
        return None
    totals = leg.collected.totals()
    job = "unknown" if leg.info.job_id is None else str(leg.info.job_id)
    log.info(
        f"{shown}: run {leg.info.run_id} attempt {leg.info.run_attempt} job {job}: "
        f"{totals.files} file(s), {totals.tests} tests, {totals.failed} failed, "
        f"{totals.errors} errors, {totals.skipped} skipped"
    )
    return _Read(path=shown, digest=hashlib.sha256(data).hexdigest(), leg=leg)


def _text(data: bytes, shown: str) -> str:
    """A leg file's bytes as text; InputError when too big or not UTF-8."""
    if len(data) > MAX_LEG_FILE_BYTES:
        raise InputError(f"leg file {shown}: larger than {MAX_LEG_FILE_BYTES >> 20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"leg file {shown}: not UTF-8 text") from None
