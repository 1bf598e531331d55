"""This job's environment and the legs': what ``update``, ``collect`` and ``compare`` record of it.

I/O only through env_command.py: what the result files' suite properties say, and what the env
command (or the default report of ``track-packages``) prints, which env_command.py runs; the
columns named with their recorded versions (``backend-version``); the environments an update
recorded, for the job summary.
"""

from __future__ import annotations

from collections.abc import Sequence

from ivy_matrix.config.settings import Settings, child_environment
from ivy_matrix.results.cells import Collected
from ivy_matrix.results.environment import Env, cap_env, joined, redacted_env
from ivy_matrix.results.legs import LegResults
from ivy_matrix.results.versions import parse_backend_version, rename_backends
from ivy_matrix.runner.log import Log


def job_environment(settings: Settings, collected: Collected, log: Log) -> Env:
    """This job's environment: its result files' suite properties, then what the env command
    (or the default report of ``track-packages``) says, which wins where both name a package.
    ``()`` when the job read no result file of its own (a fan-in job records each leg's)."""
    if not collected.files:
        return ()
    redact = settings.redactor()
    reported: Env = ()
    if settings.env_command or settings.track_packages:
        # Imported here: env_command.py starts a process (subprocess, selectors, signal), which
        # only a run given env-command or track-packages needs; every other would pay for
        # importing it at start-up.
        from ivy_matrix.commands.env_command import record_environment  # noqa: PLC0415

        reported = record_environment(
            settings.env_command,
            settings.track_packages,
            log,
            environment=child_environment(settings),
            redact=redact,
        )
    return joined(redacted_env(cap_env(collected.properties.items()), redact), reported)


def versioned_columns(settings: Settings, collected: Collected, env: Env) -> None:
    """Name ``collected``'s columns with their recorded versions (``--backend-version``)."""
    if settings.backend_version:
        rename_backends(collected, env, parse_backend_version(settings.backend_version))


def environments(env: Env, legs: Sequence[LegResults]) -> tuple[tuple[str, Env], ...]:
    """The environments an update recorded, each with what it belongs to: this job's, then
    each leg file's (for the job summary)."""
    found = [("this job", env)] if env else []
    for leg in legs:
        if leg.info.env:
            job = "" if leg.info.job_id is None else f" job {leg.info.job_id}"
            found.append(
                (f"leg{job} (run {leg.info.run_id}, attempt {leg.info.run_attempt})", leg.info.env)
            )
    return tuple(found)
