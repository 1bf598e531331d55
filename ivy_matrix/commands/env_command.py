"""Record this leg's environment: run ``--env-command`` (or the default report of
``--track-packages``) in the test environment and read what it prints.

I/O: starts one process, in a session (and process group) of its own. The versions and their
limits are environment.py's. The command is the user's code, so it is bounded and kept apart:

- it gets this process's environment without the token or the runner's credentials
  (config/settings.py ``child_environment``);
- at most :data:`ENV_OUTPUT_CAP` bytes of its output are read, and it has
  :data:`ENV_TIMEOUT_SECONDS` to end;
- when it ends, or at either limit, its whole process group is killed: nothing it started in
  the background outlives it (a process that leaves the group, with ``setsid``, is beyond
  reach);
- what it prints is redacted (redaction.py) before it is recorded.

A command that fails, prints more than the cap or something else than a JSON object (text
that is not UTF-8, a lone surrogate), or does not end in time is a warning naming it (and its
exit code): the results are recorded and published all the same, without an environment.
With neither option nothing is run and no environment is recorded.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ivy_matrix.redaction import REDACT_SHAPES
from ivy_matrix.results.environment import (
    DEFAULT_SCRIPT,
    Env,
    describe_env,
    parse_env_output,
    redacted_env,
)
from ivy_matrix.runner.log import Log

# A hang guard only: the default report takes about 0.1 s (python's start and one metadata
# lookup per package).
ENV_TIMEOUT_SECONDS = 60
# A report of a few hundred packages is a few KB; past this it is not a report.
ENV_OUTPUT_CAP = 1 << 20
_SHOWN = 300  # characters of a failing command's error output in its warning
_ERRORS_KEPT = 4096  # bytes of its error output kept while it runs (the last ones)
_POLL = 0.05  # seconds between looks at whether the command ended
# After the command ended and its group was killed: how long its output may take to close (a
# process that left the group can hold it open).
_GRACE = 1.0


def _default_command(packages: tuple[str, ...]) -> list[str] | None:
    python = shutil.which("python") or shutil.which("python3")
    return None if python is None else [python, "-c", DEFAULT_SCRIPT, *packages]


def record_environment(
    env_command: str | None,
    track_packages: tuple[str, ...],
    log: Log,
    *,
    environment: Mapping[str, str],
    redact: Callable[[str], str] = REDACT_SHAPES,
    timeout: float = ENV_TIMEOUT_SECONDS,
) -> Env:
    """The environment the command reports; ``()`` (with a warning) when it cannot tell.

    ``environment``: the command's (``child_environment``: no secret); ``redact``: what hides
    secrets in what it prints; ``timeout``: seconds it has to end.
    """
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
    output = _output(args, shown, log, environment=environment, timeout=timeout, redact=redact)
    if output is None:
        return ()
    try:
        env = redacted_env(parse_env_output(output), redact)
    except ValueError as error:
        log.warning(f"env: {shown}: {error}; no environment recorded")
        return ()
    log.info(
        f"env: {len(env)} package(s) in {log.clock() - started:.2f} s: "
        f"{describe_env(env) or 'none of them installed'}"
    )
    return env


@dataclass(slots=True)
class _Ran:
    """What a bounded run of the command gave."""

    output: bytearray
    errors: bytearray
    code: int | None = None
    timed_out: bool = False
    overflowed: bool = False


def _output(
    args: str | list[str],
    shown: str,
    log: Log,
    *,
    environment: Mapping[str, str],
    timeout: float,
    redact: Callable[[str], str],
) -> str | None:
    """What the command printed, or None (with a warning naming it) when it failed."""
    try:
        ran = _run_bounded(args, environment=environment, timeout=timeout)
    except OSError as error:
        log.warning(f"env: cannot run {shown}: {error.strerror or error}; no environment")
        return None
    if ran.overflowed:
        log.warning(
            f"env: {shown} printed more than {ENV_OUTPUT_CAP >> 20} MiB, so it is not a list "
            f"of package versions; it was stopped, no environment recorded, the results are "
            f"recorded without it"
        )
        return None
    if ran.timed_out:
        log.warning(
            f"env: {shown} did not end within {timeout:g} s; it was stopped, no environment "
            f"recorded, the results are recorded without it"
        )
        return None
    if ran.code != 0:
        said = redact(ran.errors.decode("utf-8", errors="replace").strip()[-_SHOWN:])
        log.warning(
            f"env: {shown} exited with code {ran.code}; no environment recorded, the "
            f"results are recorded without it" + (f": {said}" if said else "")
        )
        return None
    try:
        return ran.output.decode("utf-8")
    except UnicodeDecodeError as error:
        log.warning(
            f"env: {shown}: its output is not UTF-8 text (byte {error.start}); no environment "
            f"recorded, the results are recorded without it"
        )
        return None


def _run_bounded(args: str | list[str], *, environment: Mapping[str, str], timeout: float) -> _Ran:
    """Run the command in a session of its own and read its output until it ends, past the
    cap or the time limit; then kill its process group and read on until every process that
    held the output open is gone (at most :data:`_GRACE` seconds more, module docstring)."""
    process = subprocess.Popen(  # noqa: S603  -- the configured command, or our own script
        args,
        shell=isinstance(args, str),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(environment),
        start_new_session=True,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    ran = _Ran(output=bytearray(), errors=bytearray())
    deadline = time.monotonic() + timeout
    killed = False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ, ran.output)
            selector.register(process.stderr, selectors.EVENT_READ, ran.errors)
            while selector.get_map():
                if not killed and (ran.timed_out or ran.overflowed or _has_ended(process)):
                    _kill_group(process)
                    killed = True
                    deadline = min(deadline, time.monotonic()) + _GRACE
                left = deadline - time.monotonic()
                if left <= 0:
                    if killed:
                        break  # a process that left the group holds the output open
                    ran.timed_out = True
                    continue
                for key, _ in selector.select(min(left, _POLL)):
                    _read_into(key, selector, keep=not ran.overflowed)
                if len(ran.output) > ENV_OUTPUT_CAP:
                    ran.overflowed = True
                    del ran.output[ENV_OUTPUT_CAP:]
                if len(ran.errors) > _ERRORS_KEPT:
                    del ran.errors[:-_ERRORS_KEPT]
    finally:
        _kill_group(process)
        process.stdout.close()
        process.stderr.close()
        ran.code = process.wait()
    return ran


def _read_into(key: selectors.SelectorKey, selector: selectors.BaseSelector, *, keep: bool) -> None:
    """Read what one pipe holds (into its buffer when ``keep``); at its end, stop watching
    it."""
    chunk = os.read(key.fd, 1 << 16)
    if not chunk:
        selector.unregister(key.fileobj)
    elif keep:
        key.data.extend(chunk)


def _has_ended(process: subprocess.Popen[bytes]) -> bool:
    """Whether the command ended, without reaping it where the system allows: its process
    group then keeps its number while the group is killed (Python 3.12 has no ``waitid`` on
    macOS: there it is reaped, and the number is free for a moment)."""
    if not hasattr(os, "waitid"):
        return process.poll() is not None
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the command's process group (it leads it: ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
