"""Which job each backend's results came from: leg files and leg metadata on disk, else one
listing of jobs.

I/O: reads the leg metadata files beside the results, lists the run's jobs (one request, with
``actions: read``), and writes this leg's metadata. The matching itself is pure (jobs.py); the
URLs are built in jobs.py. In order, a backend's cells link: the leg's metadata file; the
given job URL; the given job id (one leg); a job of the run found by runner name or
``job-name``; the run. The cells of a leg file (``update --legs``, read by
commands/leg_files.py) always link the job the leg file names, or the run when it names none:
never a job found by listing, and never the job that reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import GitHubAPIError, InputError, UsageError
from ivy_matrix.github.connection import Connection
from ivy_matrix.model import PULL_REQUEST_EVENTS, RunKey, Source
from ivy_matrix.results.collector import Collected
from ivy_matrix.results.environment import Env
from ivy_matrix.results.jobs import (
    LEG_METADATA_NAME,
    MAX_LEG_METADATA_BYTES,
    Job,
    LegMetadata,
    cell_url,
    find_job,
    leg_metadata_json,
    leg_metadata_problem,
    parse_leg_metadata,
)
from ivy_matrix.results.legs import LegInfo, LegResults
from ivy_matrix.results.signature import Signer
from ivy_matrix.runner.files import write_file
from ivy_matrix.runner.log import Log
from ivy_matrix.state.entries import build_batches
from ivy_matrix.state.merge import Batch, join_batches


def read_leg_metadata(path: Path) -> LegMetadata:
    """Read one leg metadata file (at most 64 KiB); :class:`InputError` naming it if unusable."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_LEG_METADATA_BYTES + 1)
    except OSError as error:
        raise InputError(f"cannot read leg metadata {path}: {error.strerror or error}") from None
    if len(data) > MAX_LEG_METADATA_BYTES:
        raise InputError(f"leg metadata {path}: larger than {MAX_LEG_METADATA_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"leg metadata {path}: not UTF-8 text") from None
    return parse_leg_metadata(text, where=str(path))


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
    legs: Mapping[str, LegMetadata]
    jobs: Mapping[str, Job]
    now: str
    # Backends whose leg metadata was refused: their cells link this run, never a job.
    refused: frozenset[str] = frozenset()
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
        settings = self.settings
        found: dict[str, Source] = {}
        for backend, leg in self.legs.items():
            # The link is built here (it was checked to be exactly this one), not copied.
            link = cell_url(
                server_url=settings.server_url,
                repository=settings.repository,
                run_id=leg.run_id,
                job_id=leg.job_id,
            )
            found[backend] = Source(
                run=leg.run, url=link, time=self.now, env=self.env, **provenance(settings)
            )
        for backend in self.refused:
            found[backend] = self._source(run_id, None)
        for backend, job in self.jobs.items():
            found.setdefault(backend, self._source(run_id, job.id, job.html_url))
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

    def batches(self, collected: Collected, run_id: int, signer: Signer) -> list[Batch]:
        """The batches of this update: the result files' cells recorded as run ``run_id``,
        and each leg file's cells as its own leg's; one batch per dashboard. ``signer`` signs
        every failure line (build_batches)."""
        found = build_batches(collected, self.sources(run_id), signer)
        for leg in self.leg_files:
            source = _always(self.leg_source(leg.info))
            found.extend(build_batches(leg.collected, source, signer))
        return join_batches(found) if self.leg_files else found


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
    """Find each backend's job: its leg's metadata, else (without a given job) one listing.

    The cells of ``leg_files`` link the job each leg file names: nothing is looked up for them.
    ``env`` is this job's environment, recorded with its own cells.
    """
    legs, refused = _leg_metadata(settings, collected, log)
    given = settings.job_url or settings.job_id is not None
    wanted = [b for b in collected.backends if b not in legs and b not in refused]
    jobs = {} if given else _find_jobs(settings, wanted, github, log)
    return Links(
        settings=settings,
        legs=legs,
        jobs=jobs,
        now=now,
        refused=frozenset(refused),
        leg_files=leg_files,
        env=env,
    )


def _leg_metadata(
    settings: Settings, collected: Collected, log: Log
) -> tuple[dict[str, LegMetadata], set[str]]:
    """Metadata files that legs left beside their results (fan-in), by backend.

    Each is checked against this run (:func:`~ivy_matrix.results.jobs.leg_metadata_problem`); the
    backends of refused files are returned too, so that their cells link this run rather than
    any job.
    """
    found: dict[str, LegMetadata] = {}
    refused: set[str] = set()
    seen: set[Path] = set()
    for counts in collected.files:
        path = Path(counts.path).parent / LEG_METADATA_NAME
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        try:
            metadata = read_leg_metadata(path)
        except InputError as error:
            log.warning(str(error), file=path.as_posix())
            continue
        problem = leg_metadata_problem(
            metadata,
            run_id=settings.run_id,
            run_attempt=settings.run_attempt,
            repository=settings.repository,
            server_url=settings.server_url,
        )
        if problem is not None:
            log.warning(
                f"leg metadata {path} is not used: {problem}; the cells of backend "
                f"{metadata.backend!r:.100} link this run",
                file=path.as_posix(),
            )
            refused.add(metadata.backend)
            continue
        found.setdefault(metadata.backend, metadata)
    return found, refused - found.keys()


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


def check_leg_metadata(settings: Settings) -> None:
    """Refuse up front (before any write) what leg-metadata cannot describe."""
    if settings.leg_metadata is None:
        return
    if not settings.backend or settings.run_id is None:
        raise UsageError(
            "leg-metadata needs the leg's backend and run: give --backend and --run-id "
            "(on a runner, GITHUB_RUN_ID gives the run)"
        )
    if not (settings.repository or settings.job_url):
        raise UsageError(
            "leg-metadata needs a link for the leg's cells: give --repository OWNER/REPO "
            "(on a runner, GITHUB_REPOSITORY gives it) or --job-url"
        )


def write_leg_metadata(settings: Settings, source: Source, log: Log) -> None:
    """Write this leg's metadata file (``--leg-metadata``) for a fan-in job to read."""
    if settings.leg_metadata is None or settings.backend is None or settings.run_id is None:
        return
    metadata = LegMetadata(
        backend=settings.backend,
        run_id=settings.run_id,
        run_attempt=settings.run_attempt,
        job_id=None if source.run.job_id < 0 else source.run.job_id,
        job_url=source.url,
    )
    if settings.dry_run:
        log.info(f"dry run: would write {settings.leg_metadata}")
        return
    write_file(
        settings.leg_metadata,
        leg_metadata_json(metadata),
        stdout=log.data,
        what="--leg-metadata",
    )
    log.info(f"wrote this leg's metadata to {settings.leg_metadata}")
