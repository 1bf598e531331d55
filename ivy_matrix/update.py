"""The ``update`` command: result files in, dashboards out, wherever the targets say.

I/O: the imperative shell of the pipeline. In order:

1. read the result files (collect.py) and name every case's cell;
2. find the link of each backend's cells: the leg metadata beside the results (fan-in), the
   given job id or URL, else one listing of the run's jobs, else the run's page;
3. fold the results into the stored state, under the local store's lock, or with
   compare-and-swap on the dashboard branch (target ``branch``);
4. publish: dashboard files (``file``), dashboard issues (``issue``), the job summary and
   step outputs (``summary``), and the JSON summary.

Pull requests from forks and Dependabot get a read-only token: branch and issue writes are
then skipped (or refused by GitHub and caught), with a warning that explains the
``workflow_run`` pattern, and the job summary still gets the dashboards; the step exits 0.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from ivy_matrix.atomic import write_atomic
from ivy_matrix.collect import Collected, Collector, build_batches
from ivy_matrix.config import FailOn, Settings, Target, require_update_inputs
from ivy_matrix.errors import GitHubAPIError, InputError, ReadOnlyTokenError
from ivy_matrix.jobs import (
    LEG_METADATA_NAME,
    Job,
    LegMetadata,
    find_job,
    leg_metadata_json,
    read_leg_metadata,
)
from ivy_matrix.links import cell_url
from ivy_matrix.merge import Batch, apply_batch, retire_rows
from ivy_matrix.model import DashboardId, DashboardState, RunKey, Source
from ivy_matrix.naming import Namer
from ivy_matrix.paths import INDEX_NAME, dashboard_file
from ivy_matrix.render import RenderedFile, backend_counts, render_files, render_job_summary
from ivy_matrix.sources import find_result_files
from ivy_matrix.stores.local import LocalStore
from ivy_matrix.targets.files import missing_files, write_files
from ivy_matrix.workflow_commands import Log, append_output, append_summary

if TYPE_CHECKING:
    from ivy_matrix.github_api import GitHubClient
    from ivy_matrix.targets.issue_results import IssuesReport

EXIT_OK = 0
EXIT_USER = 1
# GitHub shows at most 10 warning annotations per step; more only fill the log.
ANNOTATIONS = 10
COMMIT_BACKENDS = 8  # backends named in a commit message

READ_ONLY_ADVICE = (
    "the token is read-only here (a pull request from a fork, or Dependabot), so the "
    "dashboards are in the job summary only. To publish them, upload the result files as an "
    "artifact and run ivy-matrix in a workflow triggered by workflow_run, which gets a token "
    "that can write (see the README, 'Pull requests from forks')"
)


@dataclass(slots=True)
class MergeOutcome:
    """What folding one update's results into the states did."""

    states: dict[DashboardId, DashboardState]
    report: dict[str, dict[str, object]] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    # Where people read the published dashboards (issue or branch file), and the index.
    urls: dict[str, str] = field(default_factory=dict)
    index_url: str | None = None


def merge_batches(
    states: Mapping[DashboardId, DashboardState], batches: Sequence[Batch], settings: Settings
) -> MergeOutcome:
    """Apply every batch, then the retirement policy. Pure: safe to repeat on a fresh read."""
    outcome = MergeOutcome(states=dict(states))
    for batch in batches:
        result = apply_batch(outcome.states.get(batch.dashboard), batch, history=settings.history)
        state, retired = retire_rows(result.state, settings.retire_after_runs)
        outcome.states[state.id] = state
        if result.state_changed or retired:
            outcome.changed.append(state.key)
        outcome.report[state.key] = {
            "changed_cells": result.changed_cells,
            "new_rows": result.new_rows,
            "new_backends": result.new_backends,
            "retired_rows": list(retired),
        }
    return outcome


def read_results(settings: Settings, log: Log) -> Collected:
    """Find and read every result file; problems become warnings naming the file."""
    files, warnings = find_result_files(settings.junit, root=Path.cwd())
    for warning in warnings:
        log.warning(warning)
    collector = Collector(Namer(settings.naming_rules()))
    with log.group(f"Reading {len(files)} result file(s)"):
        for path in files:
            shown = _shown(path)
            try:
                with path.open("rb") as stream:
                    counts = collector.add_file(stream, source=shown)
            except OSError as error:
                log.warning(f"cannot read result file: {error.strerror or error}", file=shown)
                continue
            if counts.problem is None:
                log.info(
                    f"{shown}: {counts.tests} tests, {counts.failed} failed, "
                    f"{counts.errors} errors, {counts.skipped} skipped"
                )
    collected = collector.collected
    for problem in collected.problems:
        log.warning(
            f"result file skipped: {problem.message}", file=problem.source, line=problem.line
        )
    for source, count in collected.unassigned.items():
        log.warning(
            f"{count} test case(s) have no backend: neither backend-from-path nor "
            f"backend-from-test matched; they were not recorded",
            file=source,
        )
    return collected


def _shown(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()


# --------------------------------------------------------------------------- GitHub access


class GitHub:
    """Opens the GitHub client on first use, so runs that need no API never import PyGithub."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: GitHubClient | None = None

    @property
    def available(self) -> bool:
        return bool(self.settings.token and self.settings.repository)

    @property
    def repository(self) -> str:
        if not self.settings.repository:
            raise InputError(
                "no repository: pass --repository OWNER/REPO (on a runner GITHUB_REPOSITORY "
                "sets it)"
            )
        return self.settings.repository

    @property
    def client(self) -> GitHubClient:
        if self._client is None:
            if not self.settings.token:
                raise InputError(
                    "the branch and issue targets need a token: pass --token, or set the "
                    "'token' input (it defaults to github.token) / IVY_MATRIX_TOKEN"
                )
            from ivy_matrix.github_api import make_client  # noqa: PLC0415  -- PyGithub only when needed

            self._client = make_client(token=self.settings.token, api_url=self.settings.api_url)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def is_read_only_event(settings: Settings) -> bool:
    """A pull request from a fork (or Dependabot's) runs with a read-only token."""
    if settings.actor == "dependabot[bot]":
        return True
    if settings.event_name != "pull_request" or settings.event_path is None:
        return False
    try:
        payload = json.loads(settings.event_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    pull = payload.get("pull_request") if isinstance(payload, dict) else None
    if not isinstance(pull, dict):
        return False
    head = (pull.get("head") or {}).get("repo") or {}
    base = (pull.get("base") or {}).get("repo") or {}
    return bool(head.get("fork")) or (
        bool(head.get("full_name")) and head.get("full_name") != base.get("full_name")
    )


# --------------------------------------------------------------------------- job links


def _leg_metadata(collected: Collected, log: Log) -> dict[str, LegMetadata]:
    """Metadata files that legs left beside their results (fan-in), by backend."""
    found: dict[str, LegMetadata] = {}
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
        found.setdefault(metadata.backend, metadata)
    return found


def _find_jobs(
    settings: Settings, backends: Sequence[str], github: GitHub, log: Log
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


def resolve_sources(
    settings: Settings,
    collected: Collected,
    github: GitHub,
    log: Log,
    *,
    run_id: int,
    now: str,
) -> Callable[[str], Source]:
    """Which job each backend's results came from, and the link its cells get.

    In order: the leg's metadata file; the given job URL; the given job id (one leg); a job
    of the run found by runner name or ``job-name`` (one listing of the run's jobs); the run.
    """

    def source(job_id: int | None, url: str | None = None) -> Source:
        link = settings.job_url or url
        if not link:
            link = cell_url(
                server_url=settings.server_url,
                repository=settings.repository,
                run_id=settings.run_id,
                job_id=job_id,
            )
        run = RunKey(run_id, settings.run_attempt, -1 if job_id is None else job_id)
        return Source(run=run, url=link, time=now)

    metadata = _leg_metadata(collected, log)
    backends = collected.backends
    given = settings.job_url or settings.job_id is not None
    jobs = (
        {}
        if given
        else _find_jobs(settings, [b for b in backends if b not in metadata], github, log)
    )
    sources: dict[str, Source] = {}
    for backend in backends:
        if backend in metadata:
            leg = metadata[backend]
            sources[backend] = Source(run=leg.run, url=leg.job_url, time=now)
        elif backend in jobs:
            sources[backend] = source(jobs[backend].id, jobs[backend].html_url)
        else:
            sources[backend] = source(settings.job_id)
    fallback = source(settings.job_id)
    return lambda backend: sources.get(backend, fallback)


def _check_leg_metadata(settings: Settings) -> None:
    """Refuse up front (before any write) what leg-metadata cannot describe."""
    if settings.leg_metadata is None:
        return
    if not settings.backend or settings.run_id is None:
        raise InputError(
            "leg-metadata needs the leg's backend and run: give --backend and --run-id "
            "(on a runner, GITHUB_RUN_ID gives the run)"
        )
    if not (settings.repository or settings.job_url):
        raise InputError(
            "leg-metadata needs a link for the leg's cells: give --repository OWNER/REPO "
            "(on a runner, GITHUB_REPOSITORY gives it) or --job-url"
        )


def _write_leg_metadata(settings: Settings, source: Source, log: Log) -> None:
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
    try:
        write_atomic(settings.leg_metadata, leg_metadata_json(metadata))
    except OSError as error:
        raise InputError(
            f"cannot write --leg-metadata {settings.leg_metadata}: {error.strerror or error}"
        ) from None
    log.info(f"wrote this leg's metadata to {settings.leg_metadata}")


# --------------------------------------------------------------------------- stores


def _update_local(
    settings: Settings,
    collected: Collected,
    github: GitHub,
    log: Log,
    now: str,
) -> tuple[MergeOutcome, Callable[[str], Source], list[str]]:
    store = LocalStore(settings.store)
    with store.locked():
        states = {state.id: state for state in store.load_all()}
        run_id = settings.run_id
        if run_id is None:
            # Not on GitHub Actions: number local runs after everything the store has seen.
            run_id = max((s.runs[0] for s in states.values() if s.runs), default=0) + 1
            log.info(f"no run id given: recording these results as local run {run_id}")
        source_for = resolve_sources(settings, collected, github, log, run_id=run_id, now=now)
        outcome = merge_batches(states, build_batches(collected, source_for), settings)
        if settings.dry_run:
            for key in outcome.changed:
                log.info(f"dry run: would save the state of {key} in {settings.store}")
            return outcome, source_for, []
        by_key = {state.key: state for state in outcome.states.values()}
        for key in outcome.changed:
            store.save(by_key[key])
        # Still under the lock: a slower process must not overwrite newer files.
        written = _write_output(settings, outcome)
    return outcome, source_for, written


def _write_output(
    settings: Settings, outcome: MergeOutcome, *, everything: bool = False
) -> list[str]:
    if Target.FILE not in settings.targets or settings.output_dir is None:
        return []
    ordered = sorted(outcome.states.values(), key=lambda s: s.key)
    wanted = (
        None if everything else set(outcome.changed) | missing_files(settings.output_dir, ordered)
    )
    files = render_files(ordered, style=settings.style, only=wanted)
    if settings.dry_run:
        return [file.path for file in files]
    return write_files(settings.output_dir, files)


@dataclass(slots=True)
class BranchResult:
    """What the branch target did."""

    revision: int | None = None
    commit: str | None = None
    files: tuple[str, ...] = ()


def _update_branch(
    settings: Settings,
    batches: Sequence[Batch],
    github: GitHub,
    log: Log,
) -> tuple[MergeOutcome, BranchResult]:
    from ivy_matrix.stores.branch import BranchStore  # noqa: PLC0415  -- only with the branch target

    store = BranchStore(github.client, github.repository, settings.branch)
    last: list[MergeOutcome] = []

    def change(
        states: Mapping[DashboardId, DashboardState],
    ) -> tuple[dict[DashboardId, DashboardState], list[RenderedFile]]:
        outcome = merge_batches(states, batches, settings)
        last[:] = [outcome]
        ordered = sorted(outcome.states.values(), key=lambda s: s.key)
        changed = {s.id: s for s in ordered if s.key in outcome.changed}
        files = render_files(ordered, style=settings.style, only=outcome.changed)
        return changed, files

    backends = sorted({b for batch in batches for row in batch.cells.values() for b in row})
    shown = ", ".join(backends[:COMMIT_BACKENDS]) + (
        ", ..." if len(backends) > COMMIT_BACKENDS else ""
    )
    message = f"ivy-matrix: run {settings.run_id} attempt {settings.run_attempt} ({shown})"
    result = store.update(change, message, dry_run=settings.dry_run)
    outcome = last[0] if last else merge_batches({}, batches, settings)
    where = f"branch {settings.branch} of {github.repository}"
    if settings.dry_run:
        log.info(f"dry run: would commit {len(result.files_changed)} file(s) to {where}")
        for path in result.files_changed:
            log.info(f"  {path}")
    elif result.commit_sha:
        log.info(
            f"committed {len(result.files_changed)} file(s) to {where} "
            f"(revision {result.revision}, {result.attempts} attempt(s))"
        )
    else:
        log.info(f"{where} already shows these results: nothing to commit")
    if not settings.dry_run:
        base = (
            f"{settings.server_url.rstrip('/')}/{github.repository}/blob/{quote(settings.branch)}"
        )
        outcome.urls = {
            state.key: f"{base}/{quote(dashboard_file(state))}" for state in outcome.states.values()
        }
        outcome.index_url = f"{base}/{INDEX_NAME}"
    return outcome, BranchResult(
        revision=result.revision, commit=result.commit_sha, files=result.files_changed
    )


def _update_issue_store(
    settings: Settings, batches: Sequence[Batch], github: GitHub, log: Log
) -> MergeOutcome:
    """The issue target without the branch: state lives hidden in the dashboard issues."""
    from ivy_matrix.stores.issues import IssueStore  # noqa: PLC0415  -- only with the issue target

    log.warning(
        "the issue target without the branch target keeps the state in the issue bodies, "
        "where concurrent writers can overwrite each other (GitHub has no conditional issue "
        "edits); add 'branch' to targets (contents: write), or publish from one fan-in job"
    )
    last: list[MergeOutcome] = []

    def change(
        states: Mapping[DashboardId, DashboardState],
    ) -> dict[DashboardId, DashboardState]:
        outcome = merge_batches(states, batches, settings)
        last[:] = [outcome]
        return outcome.states

    if settings.dry_run:
        store_states = IssueStore(
            github.client, github.repository, label=settings.issue_label, style=settings.style
        ).load()
        outcome = merge_batches(store_states, batches, settings)
        for key in outcome.changed:
            log.info(f"dry run: would update the issue of dashboard {key}")
        return outcome
    store = IssueStore(
        github.client,
        github.repository,
        label=settings.issue_label,
        style=settings.style,
        history=settings.history,
        log=log,
    )
    result = store.update(change)
    _note_issue_urls(last[0] if last else None, result.report)
    if not result.converged:
        log.warning(
            "other jobs kept rewriting the dashboard issues while this one wrote; some cells "
            "may be missing until the next run (use the branch target to avoid this)"
        )
    return last[0] if last else merge_batches({}, batches, settings)


def _publish_issues(
    settings: Settings, outcome: MergeOutcome, github: GitHub, log: Log, *, revision: int | None
) -> None:
    """One issue per dashboard this update touched, and the index issue."""
    if Target.BRANCH not in settings.targets:
        return  # the issue-body store wrote them already
    from ivy_matrix.targets.issues import publish_issues  # noqa: PLC0415  -- only with the issue target

    ordered = sorted(outcome.states.values(), key=lambda s: s.key)
    report = publish_issues(
        github.client,
        github.repository,
        ordered,
        touched=list(outcome.report),
        revision=revision,
        label=settings.issue_label,
        pin_index=settings.pin_index,
        graphql_url=settings.graphql_url,
        dry_run=settings.dry_run,
        log=log,
        style=settings.style,
    )
    for result in report.dashboards:
        log.info(f"issue of {result.key}: {result.action} {result.url or ''}".rstrip())
    if report.index_url:
        log.info(f"index issue: {report.index_url}")
    _note_issue_urls(outcome, report)


def _note_issue_urls(outcome: MergeOutcome | None, report: IssuesReport) -> None:
    """Dashboard issues are where people read the dashboards: their URLs win."""
    if outcome is None:
        return
    for result in report.dashboards:
        if result.url:
            outcome.urls[result.key] = result.url
    if report.index_url:
        outcome.index_url = report.index_url


def adopt_into_branch(
    settings: Settings, state: DashboardState, *, force: bool, log: Log
) -> tuple[str, ...]:
    """Put an adopted dashboard on the dashboard branch (one commit); return the files written."""
    from ivy_matrix.stores.branch import BranchStore  # noqa: PLC0415  -- only with the branch target

    github = GitHub(settings)
    try:
        store = BranchStore(github.client, github.repository, settings.branch)

        def change(
            states: Mapping[DashboardId, DashboardState],
        ) -> tuple[dict[DashboardId, DashboardState], list[RenderedFile]]:
            if state.id in states and not force:
                raise InputError(
                    f"dashboard {state.key!r} already has state on branch {settings.branch}; "
                    f"pass --force to replace it"
                )
            ordered = sorted({**states, state.id: state}.values(), key=lambda s: s.key)
            return {state.id: state}, render_files(ordered, style=settings.style, only=[state.key])

        result = store.update(change, f"ivy-matrix: adopt {state.key}", dry_run=settings.dry_run)
    finally:
        github.close()
    where = f"branch {settings.branch} of {github.repository}"
    verb = "would commit" if settings.dry_run else "committed"
    log.info(f"{verb} {len(result.files_changed)} file(s) to {where}")
    return result.files_changed


# --------------------------------------------------------------------------- the command


def run_update(settings: Settings, log: Log) -> int:
    """Run ``ivy-matrix update``; return the exit code."""
    started = time.monotonic()
    require_update_inputs(settings)
    _check_leg_metadata(settings)
    collected = read_results(settings, log)
    read_seconds = time.monotonic() - started
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    github = GitHub(settings)
    try:
        remote = {Target.BRANCH, Target.ISSUE} & set(settings.targets)
        read_only = bool(remote) and is_read_only_event(settings)
        if read_only:
            log.warning(READ_ONLY_ADVICE)
        written: list[str] = []
        revision: int | None = None
        if remote and not read_only:
            if settings.run_id is None:
                raise InputError(
                    f"the {' and '.join(sorted(remote))} target(s) need the run id: pass "
                    f"--run-id (on a runner GITHUB_RUN_ID gives it)"
                )
            source_for = resolve_sources(
                settings, collected, github, log, run_id=settings.run_id, now=now
            )
            batches = build_batches(collected, source_for)
            try:
                if Target.BRANCH in settings.targets:
                    outcome, branch = _update_branch(settings, batches, github, log)
                    revision = branch.revision
                else:
                    outcome = _update_issue_store(settings, batches, github, log)
                if Target.ISSUE in settings.targets:
                    _publish_issues(settings, outcome, github, log, revision=revision)
            except ReadOnlyTokenError:
                log.warning(READ_ONLY_ADVICE)
                outcome = merge_batches({}, batches, settings)
            # The store holds every leg's cells: the output folder gets all of it.
            written = _write_output(settings, outcome, everything=True)
        else:
            outcome, source_for, written = _update_local(settings, collected, github, log, now)
        if settings.backend:
            _write_leg_metadata(settings, source_for(settings.backend), log)
    finally:
        github.close()
    for key, entry in outcome.report.items():
        _log_dashboard(log, key, entry)
    _annotate_failures(collected, log)
    ordered = sorted(outcome.states.values(), key=lambda s: s.key)
    totals = _totals(collected)
    changed_cells = sum(int(str(r["changed_cells"])) for r in outcome.report.values())
    _write_summary(settings, collected, totals, ordered, outcome)
    if Target.SUMMARY in settings.targets:
        touched = [s for s in ordered if s.key in outcome.report]
        _publish_job_summary(
            settings,
            collected,
            totals,
            touched,
            changed_cells=changed_cells,
            outcome=outcome,
            log=log,
        )
    log.info(
        f"ivy-matrix: {totals['files']} file(s), {totals['tests']} test cases "
        f"({totals['failed']} failed, {totals['errors']} errors, {totals['skipped']} skipped) "
        f"into {len(outcome.report)} dashboard(s); {changed_cells} cell(s) changed; "
        f"{len(written)} file(s) {'to write' if settings.dry_run else 'written'}; "
        f"read in {read_seconds:.2f} s, done in {time.monotonic() - started:.2f} s"
    )
    return _exit_code(settings.fail_on, totals, log)


def _annotate_failures(collected: Collected, log: Log) -> None:
    """One annotation per failed test, for the first few; the rest are counted.

    Warnings, not errors: failing tests are what a dashboard shows, and they fail the step
    only with ``fail-on``.
    """
    failed = sum(f.failed + f.errors for f in collected.files if f.problem is None)
    shown = collected.failures[:ANNOTATIONS]
    for failure in shown:
        message = failure.message or "failed"
        log.warning(
            message,
            file=failure.test_file or failure.result_file,
            title=f"{failure.test} failed on {failure.backend}",
        )
    if failed > len(shown):
        log.notice(
            f"{failed - len(shown)} more failed test case(s) are not annotated; the dashboards "
            f"and the job summary have them all"
        )


def _log_dashboard(log: Log, key: str, entry: Mapping[str, object]) -> None:
    parts = [f"{entry['changed_cells']} cell(s) changed"]
    if entry["new_rows"]:
        parts.append(f"{entry['new_rows']} new row(s)")
    retired = entry["retired_rows"]
    if isinstance(retired, list) and retired:
        shown = ", ".join(map(str, retired[:10])) + (" ..." if len(retired) > 10 else "")  # noqa: PLR2004  -- log brevity
        parts.append(f"retired {len(retired)} row(s) no recent run reported: {shown}")
    log.info(f"dashboard {key}: " + "; ".join(parts))


def _totals(collected: Collected) -> dict[str, int]:
    files = collected.files
    return {
        "files": len(files),
        "tests": sum(f.tests for f in files),
        "passed": sum(f.passed for f in files),
        "failed": sum(f.failed for f in files),
        "errors": sum(f.errors for f in files),
        "skipped": sum(f.skipped for f in files),
        "flaky": sum(f.flaky for f in files),
        "problems": len(collected.problems),
        "unassigned": sum(collected.unassigned.values()),
    }


def _write_summary(
    settings: Settings,
    collected: Collected,
    totals: Mapping[str, int],
    states: Sequence[DashboardState],
    outcome: MergeOutcome,
) -> None:
    if settings.summary_json is None:
        return
    report = outcome.report
    dashboards = {}
    for state in states:
        counts = backend_counts(state)
        dashboards[state.key] = {
            "file": dashboard_file(state),
            "rows": len(state.rows),
            "backends": {b: {"passing": p, "total": t} for b, (p, t) in counts.items()},
            "updated": state.key in report,
            **({"url": outcome.urls[state.key]} if state.key in outcome.urls else {}),
            **report.get(state.key, {}),
        }
    document = {
        "version": 1,
        "index_url": outcome.index_url,
        "files": [asdict(f) for f in collected.files],
        "totals": dict(totals),
        "dashboards": dashboards,
    }
    try:
        write_atomic(settings.summary_json, json.dumps(document, indent=2) + "\n")
    except OSError as error:
        raise InputError(
            f"cannot write --summary-json {settings.summary_json}: {error.strerror or error}"
        ) from None


def _publish_job_summary(
    settings: Settings,
    collected: Collected,
    totals: Mapping[str, int],
    touched: Sequence[DashboardState],
    *,
    changed_cells: int,
    outcome: MergeOutcome,
    log: Log,
) -> None:
    """Write the job summary and the step outputs, when the runner provides their files."""
    try:
        if settings.step_summary is not None:
            problems = [(p.source, p.message) for p in collected.problems]
            append_summary(
                settings.step_summary,
                render_job_summary(
                    touched,
                    totals=totals,
                    problems=problems,
                    links=outcome.urls,
                    index_url=outcome.index_url,
                ),
            )
        if settings.github_output is not None:
            outputs = {name.replace("_", "-"): str(value) for name, value in totals.items()}
            outputs["changed-cells"] = str(changed_cells)
            outputs["dashboard-urls"] = json.dumps(outcome.urls, sort_keys=True)
            if outcome.index_url:
                outputs["index-url"] = outcome.index_url
            if settings.summary_json is not None:
                outputs["summary-json"] = str(settings.summary_json)
            if settings.output_dir is not None:
                outputs["output-dir"] = str(settings.output_dir)
            for name, value in outputs.items():
                append_output(settings.github_output, name, value)
    except OSError as error:
        log.warning(f"cannot write the job summary or step outputs: {error.strerror or error}")


def _exit_code(fail_on: FailOn, totals: Mapping[str, int], log: Log) -> int:
    if fail_on is FailOn.FAILURES and totals["failed"] + totals["errors"]:
        log.error(
            f"{totals['failed']} test(s) failed and {totals['errors']} had errors (fail-on: failures)"
        )
        return EXIT_USER
    if fail_on is FailOn.ERRORS and totals["errors"]:
        log.error(f"{totals['errors']} test(s) had errors (fail-on: errors)")
        return EXIT_USER
    return EXIT_OK
