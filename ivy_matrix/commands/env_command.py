"""Record this leg's environment: run ``--env-command`` (or the default report of
``--track-packages``) in the test environment and read what it prints.

I/O: starts one process. The versions and their limits are environment.py's. A command that
fails, prints something else than a JSON object, or does not end within
:data:`ENV_TIMEOUT_SECONDS` is a warning naming it (and its exit code): the results are
recorded and published all the same, without an environment. With neither option nothing is
run and no environment is recorded.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

from ivy_matrix.config.settings import Settings
from ivy_matrix.results.collector import Collected
from ivy_matrix.results.environment import (
    DEFAULT_SCRIPT,
    Env,
    cap_env,
    describe_env,
    joined,
    parse_env_output,
)
from ivy_matrix.results.legs import LegResults
from ivy_matrix.results.versions import parse_backend_version, rename_backends
from ivy_matrix.runner.log import Log

# A hang guard only: the default report takes about 0.1 s (python's start and one metadata
# lookup per package).
ENV_TIMEOUT_SECONDS = 60
_SHOWN = 300  # characters of a failing command's error output in its warning


def _default_command(packages: tuple[str, ...]) -> list[str] | None:
    python = shutil.which("python") or shutil.which("python3")
    return None if python is None else [python, "-c", DEFAULT_SCRIPT, *packages]


def record_environment(env_command: str | None, track_packages: tuple[str, ...], log: Log) -> Env:
    """The environment the command reports; ``()`` (with a warning) when it cannot tell."""
    if not env_command and not track_packages:
        return ()
    started = log.clock()
    shown = env_command or f"python (track-packages: {', '.join(track_packages)})"
    # The user's own command is run as a workflow step's `run:` is (it may activate an
    # environment first, e.g. `conda run -n test python report.py`).
    args = env_command or _default_command(track_packages)
    if args is None:
        log.warning(f"env: no python on the PATH to report {shown}; no environment recorded")
        return ()
    output = _output(args, shown, log)
    if output is None:
        return ()
    try:
        env = parse_env_output(output)
    except ValueError as error:
        log.warning(f"env: {shown}: {error}; no environment recorded")
        return ()
    log.info(
        f"env: {len(env)} package(s) in {log.clock() - started:.2f} s: "
        f"{describe_env(env) or 'none of them installed'}"
    )
    return env


def _output(args: str | list[str], shown: str, log: Log) -> str | None:
    """What the command printed, or None (with a warning naming it) when it failed."""
    try:
        done = subprocess.run(  # noqa: S603  -- the configured command, or our own script
            args,
            shell=isinstance(args, str),
            capture_output=True,
            text=True,
            timeout=ENV_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        log.warning(f"env: {shown} did not end within {ENV_TIMEOUT_SECONDS} s; no environment")
        return None
    except OSError as error:
        log.warning(f"env: cannot run {shown}: {error.strerror or error}; no environment")
        return None
    if done.returncode != 0:
        said = done.stderr.strip()[-_SHOWN:]
        log.warning(
            f"env: {shown} exited with code {done.returncode}; no environment recorded, the "
            f"results are recorded without it" + (f": {said}" if said else "")
        )
        return None
    return done.stdout


def job_environment(settings: Settings, collected: Collected, log: Log) -> Env:
    """This job's environment: its result files' suite properties, then what the env command
    (or the default report of ``track-packages``) says, which wins where both name a package.
    ``()`` when the job read no result file of its own (a fan-in job records each leg's)."""
    if not collected.files:
        return ()
    reported = record_environment(settings.env_command, settings.track_packages, log)
    return joined(cap_env(collected.properties.items()), reported)


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
