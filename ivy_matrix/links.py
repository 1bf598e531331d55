"""Job and run URLs, built and read back.

Pure: no I/O. A cell links to the job that produced it:
``{server}/{owner}/{repo}/actions/runs/{run}/job/{job}``. When the job is unknown the run URL
is used, and when even the run is unknown the repository's Actions page: a link is never
``null``.
"""

from __future__ import annotations

import re

from ivy_matrix.model import RunKey

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
