"""The ``collect`` command: one matrix leg's results into a leg file, with no network at all.

I/O: reads the result files (commands/result_files.py, named as ``update`` names them) and
writes one leg file (the format is legs.py's); on a runner also the step outputs, one
paragraph of job summary and an annotation for each of the first failures. Nothing else: no
store, no lock, no GitHub request. A job after the matrix folds every leg's file into the
dashboards in one commit (``update --legs``; in the action ``command: fan-in``), and each cell
links the job that ran ``collect``: its ``--job-id`` (the action passes ``job.check_run_id``).

The leg file goes to ``--leg-file``: a path ending in ``.json``, or a directory (created if
missing; default the current directory) where it gets the leg's own name,
``ivy-matrix-leg-<run>-<attempt>-<job>-<digest>.json``, unique in the run, so that every
leg's file can be uploaded as an artifact of that name and downloaded into one folder.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

from ivy_matrix.commands.environments import job_environment, versioned_columns
from ivy_matrix.commands.fail_on import exit_code
from ivy_matrix.commands.job_links import provenance
from ivy_matrix.commands.reading import log_results, read_results
from ivy_matrix.config.options import FailOn
from ivy_matrix.config.settings import Settings, require_update_inputs
from ivy_matrix.errors import ExitCode, InputError, UsageError
from ivy_matrix.results.cells import Collected
from ivy_matrix.results.environment import Env, env_lines
from ivy_matrix.results.legs import MAX_LEG_FILE_BYTES, LegInfo, dump_leg, leg_name, load_leg
from ivy_matrix.runner.files import write_atomic
from ivy_matrix.runner.log import Log, append_output, append_summary


def run_collect(settings: Settings, log: Log) -> ExitCode:
    """Run ``ivy-matrix collect``; return the exit code (``fail-on`` as ``update`` has it)."""
    require_update_inputs(settings)
    info = _leg_info(settings)
    collected = read_results(settings, log)
    env = job_environment(settings, collected, log)
    versioned_columns(settings, collected, env)
    info = replace(info, env=env)
    text = dump_leg(info, collected)
    name = leg_name(info, text)
    path = _leg_path(settings.leg_file, name)
    _check_limits(text, path)
    if settings.dry_run:
        log.info(f"dry run: would write the leg file {path} ({len(text.encode())} bytes)")
    else:
        try:
            write_atomic(path, text)
        except OSError as error:
            raise InputError(
                f"cannot write {settings.named('leg_file')} {path}: {error.strerror or error}"
            ) from None
    log_results(collected, log)
    _report(settings, collected, path, name, log, env=env)
    return exit_code(settings.fail_on, collected.totals(), log)


def _leg_info(settings: Settings) -> LegInfo:
    """This leg's metadata; what a leg file cannot say is refused before anything is read."""
    named = settings.named
    if settings.run_id is None or not settings.repository:
        raise UsageError(
            f"collect needs the run and repository the results belong to: give "
            f"{named('run_id')} and {named('repository')} (on a runner, GITHUB_RUN_ID and "
            f"GITHUB_REPOSITORY give them)"
        )
    if settings.job_url:
        raise UsageError(
            f"collect records the leg's job id, and the fan-in job builds each link from it: "
            f"give {named('job_id')} (the action passes job.check_run_id) instead of "
            f"{named('job_url')}"
        )
    if settings.fail_on is FailOn.NEW:
        raise UsageError(
            f"{named('fail_on')} new needs the pull request's verdicts, which only the fan-in "
            f"job has: set it there, or use failures or errors in the legs"
        )
    return LegInfo(
        run_id=settings.run_id,
        run_attempt=settings.run_attempt,
        job_id=settings.job_id,
        repository=settings.repository,
        server_url=settings.server_url,
        sha=settings.commit,
        ref=settings.ref or "",
        event=provenance(settings)["event"],
    )


def _check_limits(text: str, path: Path) -> None:
    """Refuse a leg file the fan-in job would refuse (its limits, legs.py), before it is written
    and uploaded: the leg says what to do, instead of the fan-in job leaving it out."""
    problem = None
    if len(text.encode("utf-8")) > MAX_LEG_FILE_BYTES:
        problem = f"leg file {path}: larger than {MAX_LEG_FILE_BYTES >> 20} MiB"
    else:
        try:
            load_leg(text, where=str(path))
        except InputError as error:
            problem = str(error)
    if problem is not None:
        raise InputError(
            f"{problem}: the fan-in job would leave these results out; split this leg's tests "
            f"over more legs (or shards)"
        )


def _leg_path(given: Path | None, name: str) -> Path:
    """Where the leg file goes: the given ``.json`` file, else ``<name>.json`` in the given
    directory (the current one by default)."""
    if given is None:
        return Path(f"{name}.json")
    if given.suffix.lower() == ".json" and not given.is_dir():
        return given
    return given / f"{name}.json"


def _report(
    settings: Settings, collected: Collected, path: Path, name: str, log: Log, *, env: Env
) -> None:
    """The log line, and on a runner the step outputs and the job summary."""
    totals = collected.totals()
    counts = (
        f"{totals.tests} test cases ({totals.failed} failed, {totals.errors} errors, "
        f"{totals.skipped} skipped) in {len(collected.dashboards)} dashboard(s)"
    )
    log.info(
        f"ivy-matrix collect: {totals.files} file(s), {counts}; "
        f"{'would write' if settings.dry_run else 'wrote'} {path}"
    )
    try:
        if settings.github_output is not None:
            outputs = {key.replace("_", "-"): str(value) for key, value in asdict(totals).items()}
            outputs |= {"leg-file": str(path.resolve()), "leg-name": name}
            for key, value in outputs.items():
                append_output(settings.github_output, key, value)
        if settings.step_summary is not None:
            append_summary(
                settings.step_summary,
                f"## ivy-matrix: {counts}\n\nCollected into the leg file `{path.name}`; the job "
                f"after the matrix publishes them.\n\n{env_lines([('this leg', env)] if env else [])}",
            )
    except OSError as error:
        log.warning(f"cannot write the job summary or step outputs: {error.strerror or error}")
