"""Which job of a workflow run produced a leg's results, and the job and run URLs cells link
(built, and read back out of adopted links).

Pure: no I/O (``commands/job_links.py`` lists the jobs).

**Finding the current job** (when ``job.check_run_id`` is not available: GHES, act, other
runners). The jobs of the current run attempt are listed once (``github.client.list_run_jobs``)
and :func:`find_job` picks one:

1. jobs that are ``in_progress`` are preferred: the current job is running, finished legs are not;
2. ``runner_name == $RUNNER_NAME`` identifies a running job when exactly one running job has it;
3. otherwise the job's display name is compared with ``name_pattern`` where ``{backend}`` is
   replaced by the backend, e.g. ``tests ({backend})`` -> ``tests (torch)``. GitHub builds
   display names so: matrix values appended in parentheses (``tests (torch, 3.11)``) unless the
   job's ``name:`` has an expression, a ``caller / `` prefix for jobs of reusable workflows, and
   names over 100 characters cut to 97 characters plus ``...``. A pattern without ``{backend}``
   matches ``pattern (v1, v2, ...)`` when one of the values is the backend.

A job is returned only when the match is unique; otherwise ``None`` and the caller links the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ivy_matrix.model import RunKey

# GitHub shows job names of more than 100 characters as their first 97 and "...".
JOB_NAME_LIMIT = 100
_KEPT = 97
_ELLIPSIS = "..."
_CALLER_SEPARATOR = " / "
_IN_PROGRESS = "in_progress"

DEFAULT_SERVER_URL = "https://github.com"

# Ivy's generator wrote ".../runs/R/jobs/J"; GitHub's own job pages are ".../runs/R/job/J".
_RUN_URL = re.compile(
    r"/actions/runs/(?P<run>\d+)(?:/attempts/(?P<attempt>\d+))?(?:/jobs?/(?P<job>\d+))?"
)


def run_url(server_url: str, repository: str, run_id: int) -> str:
    """The page of a workflow run."""
    return f"{server_url.rstrip('/')}/{repository}/actions/runs/{run_id}"


def job_url(server_url: str, repository: str, run_id: int, job_id: int) -> str:
    """The page of one job of a workflow run."""
    return f"{run_url(server_url, repository, run_id)}/job/{job_id}"


def cell_url(
    *,
    server_url: str,
    repository: str | None,
    run_id: int | None,
    job_id: int | None,
    given: str | None = None,
) -> str:
    """The link a cell gets: the given job URL, else the job, else the run, else Actions."""
    if given:
        return given
    if not repository:
        return ""
    if run_id is None:
        return f"{server_url.rstrip('/')}/{repository}/actions"
    if job_id is None:
        return run_url(server_url, repository, run_id)
    return job_url(server_url, repository, run_id, job_id)


def run_key_from_url(url: str) -> RunKey:
    """Read the run, attempt and job ids back out of a link (``-1`` for what it lacks).

    An attempt that the link does not give is taken as 0, older than any real attempt of the
    same run, so that a new result of that run replaces the adopted one.
    """
    match = _RUN_URL.search(url)
    if match is None:
        return RunKey()
    attempt = match.group("attempt")
    job = match.group("job")
    return RunKey(
        run_id=int(match.group("run")),
        run_attempt=int(attempt) if attempt else 0,
        job_id=int(job) if job else -1,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One job of a workflow run attempt, as the jobs API lists it."""

    id: int
    name: str
    runner_name: str | None
    html_url: str
    status: str
    run_attempt: int


def _callee_parts(name: str) -> list[str]:
    """``name`` and every tail after a ``" / "`` (the name without a reusable-workflow prefix)."""
    parts = [name]
    start = name.find(_CALLER_SEPARATOR)
    while start >= 0:
        parts.append(name[start + len(_CALLER_SEPARATOR) :])
        start = name.find(_CALLER_SEPARATOR, start + 1)
    return parts


def _matrix_values(name: str, base: str) -> list[str] | None:
    """The matrix values of ``base (v1, v2)``, or None if ``name`` is not of that form."""
    if not (name.startswith(base + " (") and name.endswith(")")):
        return None
    return name[len(base) + 2 : -1].split(", ")


def _values_quality(name: str, pattern: str, backend: str) -> int:
    """Match ``pattern (v1, v2, ...)`` with the backend among the values: 3 exact, 2 prefixed."""
    # Truncated names are not tried: the values that tell legs apart were cut off.
    for index, candidate in enumerate(_callee_parts(name)):
        values = _matrix_values(candidate, pattern)
        if values is not None and backend in values:
            return 3 if index == 0 else 2
    return 0


def _name_quality(name: str, pattern: str, backend: str | None) -> int:
    """How well a job's display name matches: 3 exact, 2 with a caller prefix, 1 truncated, 0 not."""
    placeholder = pattern.find("{backend}")
    if placeholder < 0 and backend is not None:
        return _values_quality(name, pattern, backend)
    if placeholder >= 0 and backend is None:
        return 0
    expected = pattern.replace("{backend}", backend or "")
    for index, candidate in enumerate(_callee_parts(name)):
        if candidate == expected:
            return 3 if index == 0 else 2
    if len(name) != JOB_NAME_LIMIT or not name.endswith(_ELLIPSIS):
        return 0
    # The shown name is the first 97 characters of "[caller / ]<full name>". The full name is
    # unknown, so a truncated name matches when its callee part is a prefix of the expected
    # name that still shows the whole backend (else it cannot tell legs apart).
    visible = placeholder + len(backend or "") if placeholder >= 0 else len(expected)
    tails = _callee_parts(name[:_KEPT])
    return int(any(len(tail) >= visible and expected.startswith(tail) for tail in tails))


def find_job(
    jobs: Sequence[Job],
    *,
    runner_name: str | None,
    name_pattern: str | None,
    backend: str | None,
) -> Job | None:
    """The job that is this leg, or None when it cannot be told apart for sure.

    Running jobs are preferred; ``runner_name`` decides when exactly one running job has it;
    otherwise the best unique display-name match wins (see the module docstring).
    """
    running = [job for job in jobs if job.status == _IN_PROGRESS]
    pool: Sequence[Job] = jobs
    if runner_name:
        same_runner = [job for job in running if job.runner_name == runner_name]
        if len(same_runner) == 1:
            return same_runner[0]
        if same_runner:
            pool = same_runner
    if not name_pattern:
        return None
    return _best_by_name(pool, name_pattern, backend)


def _best_by_name(jobs: Iterable[Job], pattern: str, backend: str | None) -> Job | None:
    scored = [(_name_quality(job.name, pattern, backend), job) for job in jobs]
    scored = [(quality, job) for quality, job in scored if quality > 0]
    if not scored:
        return None
    running = [item for item in scored if item[1].status == _IN_PROGRESS]
    if running:
        scored = running
    best = max(quality for quality, _ in scored)
    winners = [job for quality, job in scored if quality == best]
    return winners[0] if len(winners) == 1 else None
