"""Which job each backend's results came from: leg files, else one listing of jobs.

I/O: lists the run's jobs (one request, with ``actions: read``). The matching itself is pure
(results/jobs.py); the URLs are built in results/jobs.py. In order, a backend's cells link: the
given job URL; the given job id (one job); a job of the run found by runner name or
``job-name``; the run. The cells of a leg file (``update --legs``, read by
commands/leg_files.py) always link the job the leg file names, or the run when it names none:
never a job found by listing, and never the job that reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.connection import Connection
from ivy_matrix.model import PULL_REQUEST_EVENTS, RunKey, Source
from ivy_matrix.results.cells import Collected
from ivy_matrix.results.environment import Env
from ivy_matrix.results.jobs import Job, cell_url, find_job
from ivy_matrix.results.legs import LegInfo, LegResults
from ivy_matrix.results.signature import Signer
from ivy_matrix.runner.log import Log
from ivy_matrix.state.entries import build_batches, runs_brought
from ivy_matrix.state.merge import Batches, join_batches
from ivy_matrix.state.retirement import batch_runs


class Provenance(TypedDict):
    """The provenance fields of a :class:`~ivy_matrix.model.Source`."""

    sha: str
    event: str
    ref: str
    pr: int | None
    base_sha: str


def provenance(settings: Settings) -> Provenance:
    """Where the results come from: the commit, event and ref; a pull request's number and base.

    A workflow_run job that reports a pull request's run records that pull request's event.
    """
    event = settings.event_name or ""
    if settings.pull_request and event not in PULL_REQUEST_EVENTS:
        event = "pull_request"
    return Provenance(
        sha=settings.commit,
        event=event,
        ref=settings.ref or "",
        pr=settings.pr if settings.pull_request else None,
        base_sha=(settings.base_sha or "") if settings.pull_request else "",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Links:
    """Each backend's job, found once; :meth:`sources` turns them into the cells' sources."""

    settings: Settings
    jobs: Mapping[str, Job]
    now: str
    # A fan-in job's leg files (update --legs): each leg's cells link that leg's own job.
    leg_files: tuple[LegResults, ...] = ()
    # This job's environment (commands/environment.py); a leg file carries its leg's own.
    env: Env = ()

    def _source(self, run_id: int, job_id: int | None, url: str | None = None) -> Source:
        settings = self.settings
        link = settings.job_url or url
        if not link:
            link = cell_url(
                server_url=settings.server_url,
                repository=settings.repository,
                run_id=settings.run_id,
                job_id=job_id,
            )
        run = RunKey(run_id, settings.run_attempt, -1 if job_id is None else job_id)
        return Source(run=run, url=link, time=self.now, env=self.env, **provenance(settings))

    def sources(self, run_id: int) -> Callable[[str], Source]:
        """Each backend's source for results recorded as run ``run_id``."""
        found = {
            backend: self._source(run_id, job.id, job.html_url)
            for backend, job in self.jobs.items()
        }
        fallback = self._source(run_id, self.settings.job_id)
        return lambda backend: found.get(backend, fallback)

    def leg_source(self, info: LegInfo) -> Source:
        """The source of a leg file's cells: that leg's job, linked on this job's server and
        repository (checked to be the leg's), never this job's own id."""
        settings = self.settings
        link = cell_url(
            server_url=settings.server_url,
            repository=settings.repository,
            run_id=info.run_id,
            job_id=info.job_id,
        )
        return Source(run=info.run, url=link, time=self.now, env=info.env, **provenance(settings))

    def batches(
        self, collected: Collected, run_id: int, signer: Signer, *, take: bool = False
    ) -> Batches:
        """The batches of this update: the result files' cells recorded as run ``run_id``,
        and each leg file's cells as its own leg's; one batch per dashboard, built as they are
        merged (all at once in a fan-in job, whose legs' batches are joined first), and the
        runs they bring. ``signer`` signs every failure line; with ``take``, the result files'
        cells leave ``collected`` as their batches are built (build_batches)."""
        sources = self.sources(run_id)
        if not self.leg_files:
            runs = runs_brought(collected, sources)
            return Batches(runs=runs, each=build_batches(collected, sources, signer, take=take))
        found = list(build_batches(collected, sources, signer, take=take))
        for leg in self.leg_files:
            found.extend(build_batches(leg.collected, _always(self.leg_source(leg.info)), signer))
        joined = join_batches(found)
        return Batches(runs=batch_runs(joined), each=joined)


def _always(source: Source) -> Callable[[str], Source]:
    """Every backend's source is ``source`` (a leg file's cells all come from its leg)."""
    return lambda _backend: source


def resolve_links(
    settings: Settings,
    collected: Collected,
    github: Connection,
    log: Log,
    *,
    now: str,
    leg_files: tuple[LegResults, ...] = (),
    env: Env = (),
) -> Links:
    """Find each backend's job: without a given job, by one listing of the run's jobs.

    The cells of ``leg_files`` link the job each leg file names: nothing is looked up for them.
    ``env`` is this job's environment, recorded with its own cells.
    """
    given = settings.job_url or settings.job_id is not None
    jobs = {} if given else _find_jobs(settings, list(collected.backends), github, log)
    return Links(settings=settings, jobs=jobs, now=now, leg_files=leg_files, env=env)


def _find_jobs(
    settings: Settings, backends: Sequence[str], github: Connection, log: Log
) -> dict[str, Job]:
    """Each backend's job, from one listing of the run's jobs (``actions: read``)."""
    by_runner = bool(settings.backend and settings.runner_name)
    if (
        not backends
        or not github.available
        or settings.run_id is None
        or not (settings.job_name or by_runner)
    ):
        return {}
    try:
        listing = github.client.list_run_jobs(
            github.repository, settings.run_id, settings.run_attempt
        )
    except GitHubAPIError as error:
        # A missing link must not stop the update: the cells link the run instead.
        log.warning(f"cannot find this run's jobs: {error}; cells link the run")
        return {}
    found = {}
    for backend in backends:
        job = find_job(
            listing,
            runner_name=settings.runner_name if by_runner else None,
            name_pattern=settings.job_name,
            backend=backend,
        )
        if job is not None:
            found[backend] = job
    return found
