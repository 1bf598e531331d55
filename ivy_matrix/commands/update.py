"""The ``update`` command: result files in, dashboards out, in the pipeline's order.

I/O: the imperative shell. It only orders the stages; each lives in its own module:

1. read the result files and name every case's cell (commands/reading.py -> collect.py), and
   in a fan-in job the legs' leg files (commands/leg_files.py);
2. find each backend's job link (commands/job_links.py; a leg file's cells link its leg's job);
3. ``store.update(change)``: fold the results into the stored state (commands/folding.py ->
   fold.py, merge.py), in whichever
   store the settings name (commands/choose_store.py; stores/), which also keeps ``--output-dir`` in step;
4. publish: the dashboard issues (issues/publish.py), the job summary, step outputs and
   summary JSON (targets/summary.py).

Results of a pull request (or of a branch that does not feed the dashboards) are never
recorded: nothing is written to the store, the output folder, the branch or the issues; they
feed only the pull request's verdicts (commands/pr_comment.py: the pr-comment target, the
status target's commit statuses and ``fail-on: new``) and this run's job summary.

Pull requests from forks and Dependabot get a read-only token, which the event tells: branch
and issue writes are then skipped, with a warning that explains the ``workflow_run`` pattern,
and the job summary still gets the dashboards; the step exits 0. Anywhere else a refused write
fails the step naming the permission it needs: one 403 is never taken for a fork.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Collection, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from ivy_matrix.commands.choose_store import (
    REMOTE,
    check_targets,
    connect,
    open_store,
    output_folder,
    publish_issue_target,
    remote_targets,
    site_link,
)
from ivy_matrix.commands.environments import environments, job_environment, versioned_columns
from ivy_matrix.commands.fail_on import exit_code
from ivy_matrix.commands.folding import change_of, scope_of
from ivy_matrix.commands.job_links import resolve_links
from ivy_matrix.commands.leg_files import read_legs
from ivy_matrix.commands.reading import log_results, read_results
from ivy_matrix.commands.recorded import inputs_of, known_files, reading_of
from ivy_matrix.config.options import FailOn, Target
from ivy_matrix.config.settings import Settings, require_update_inputs
from ivy_matrix.errors import ExitCode, UsageError
from ivy_matrix.github.connection import Connection, Remote
from ivy_matrix.github.types import Spend
from ivy_matrix.model import Totals
from ivy_matrix.results.cells import Collected
from ivy_matrix.results.environment import Env
from ivy_matrix.results.legs import LegResults, with_legs
from ivy_matrix.runner.files import STDOUT
from ivy_matrix.runner.log import Log
from ivy_matrix.runner.pacing import phase
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.ledger import StaleInputs
from ivy_matrix.stores import Change, Published, Saved, Store
from ivy_matrix.targets.summary import (
    Results,
    SummaryFiles,
    annotate_verdicts,
    log_dashboards,
    log_spend,
    publish_job_summary,
    spend_on_failure,
    write_summary_json,
)
from ivy_matrix.views.durations_file import durations_files

if TYPE_CHECKING:
    from ivy_matrix.targets.summary import PullRequestVerdicts

COMMIT_BACKENDS = 8  # backends named in a commit message
PULL_REQUEST_TARGETS = frozenset({Target.PR_COMMENT, Target.STATUS})
# The pull request's verdicts and comment are imported where they are used (noqa PLC0415
# below): an update that writes the local store needs none of them, and importing them all
# costs more than reading a small result file.


class _Inputs(NamedTuple):
    """What an update read: its result files, the legs' files, and what the store knows of them."""

    results: Collected  # this job's own result files
    collected: Collected  # with the legs' files (a fan-in job)
    leg_files: tuple[LegResults, ...]
    env: Env
    reading: str | None  # how the files were read, for the local store's ledger
    revision: str | None


class _Outcome(NamedTuple):
    """What an update did with its inputs."""

    saved: Saved
    published: Published
    verdicts: PullRequestVerdicts | None


def run_update(settings: Settings, log: Log, remote: Remote | None = None) -> ExitCode:
    """Run ``ivy-matrix update``; return the exit code. ``remote``: how to reach GitHub."""
    with _spill_file() as spill:
        return _update(settings, log, remote, spill)


@contextlib.contextmanager
def _spill_file() -> Iterator[BinaryIO | None]:
    """A temporary file where the timed cases' texts wait until their durations files are
    written (results/timed_cases.py), deleted when the update ends; None when none can be
    made (they are held then). Unbuffered: a write that fails (a full disk) fails as it is
    made, and what was written before is there to be read back (a buffer would keep failing
    to be written, at the next read and at the close)."""
    try:
        spill = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115  -- closed below, by the with
    except OSError:
        yield None
        return
    with spill:
        yield spill


def _update(
    settings: Settings, log: Log, remote: Remote | None, spill: BinaryIO | None
) -> ExitCode:
    started = log.clock()
    _check_inputs(settings)
    inputs = _read_inputs(settings, log, spill=spill)
    with (
        connect(settings, remote, log) as github,
        spend_on_failure(log, github.spent, warn_percent=settings.budget_warning),
    ):
        try:
            outcome = _record_and_publish(settings, inputs, github, log)
        except StaleInputs:
            log.info(
                "the store no longer holds the results of the result files it recorded (it "
                "changed while they were read): reading every result file again"
            )
            inputs = _read_inputs(settings, log, trust_ledger=False, spill=spill)
            outcome = _record_and_publish(settings, inputs, github, log)
    spend = github.spent()  # the connection is closed: nothing more is sent
    recorded = settings.feeds_dashboards
    _summarize(
        settings,
        inputs.collected,
        outcome.saved.merged,
        outcome.published,
        log,
        recorded=recorded,
        spend=spend,
        envs=environments(inputs.env, inputs.leg_files),
        verdicts=outcome.verdicts,
        leg_files=inputs.leg_files,
    )
    totals = inputs.collected.totals()
    _log_done(settings, log, outcome.saved, totals, seconds=log.clock() - started)
    log_spend(log, spend, warn_percent=settings.budget_warning)
    verdicts = outcome.verdicts
    return exit_code(
        settings.fail_on, totals, log, None if verdicts is None else verdicts.comparison
    )


def _check_inputs(settings: Settings) -> None:
    """Every usage error an update can know of before it reads a file."""
    require_update_inputs(settings, legs=True)
    check_targets(settings)
    recorded = settings.feeds_dashboards
    _check_github_targets(
        settings, REMOTE & set(settings.targets) if recorded else _pull_request_targets(settings)
    )


def _read_inputs(
    settings: Settings, log: Log, *, trust_ledger: bool = True, spill: BinaryIO | None = None
) -> _Inputs:
    """Read this job's result files (skipping those the store already holds, unless not
    ``trust_ledger``) and the legs'; ``spill``: where the timed cases' texts wait."""
    reading = reading_of(settings)
    known, revision = known_files(settings, reading) if trust_ledger else ({}, None)
    results = (
        read_results(settings, log, known=known, record=reading is not None, spill=spill)
        if settings.junit
        else Collected()
    )
    env = job_environment(settings, results, log)
    versioned_columns(settings, results, env)
    leg_files = read_legs(settings, log)
    return _Inputs(
        results=results,
        collected=with_legs(results, leg_files),
        leg_files=leg_files,
        env=env,
        reading=reading,
        revision=revision,
    )


def _record_and_publish(
    settings: Settings, inputs: _Inputs, github: Connection, log: Log
) -> _Outcome:
    """Find the job links, then fold the results into the store and publish them, or (results
    that are not recorded) only work out the pull request's verdicts."""
    recorded = settings.feeds_dashboards
    results, collected = inputs.results, inputs.collected
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    targets = remote_targets(settings, log) if recorded else _pull_request_targets(settings)
    with phase(log, "links") as step:
        links = resolve_links(
            settings, results, github, log, now=now, leg_files=inputs.leg_files, env=inputs.env
        )
        step.done(f"{len(collected.backends)} backend(s)")
    verdicts: PullRequestVerdicts | None = None
    if recorded:
        _log_not_a_pull_request(settings, log)
        durations = durations_files(collected.durations)
        store = open_store(
            settings,
            github,
            log,
            remote=targets,
            message=_commit_message(settings, collected),
            after_save=output_folder(settings, log, durations),
            scope=scope_of(settings, results, collected, links, log),
            inputs=inputs_of(settings, results, inputs.reading, inputs.revision),
            extra=durations,
        )
        change = change_of(settings, results, links, log, announce=True, once=store.changes_once)
        saved, published = _save_and_publish(settings, store, change, github, log, targets=targets)
    else:
        _log_not_recorded(settings, log)
        saved, published = Saved(merged=change_of(settings, results, links, log)({})), Published()
        if settings.pull_request and (targets or settings.fail_on is FailOn.NEW):
            from ivy_matrix.commands.pr_comment import (  # noqa: PLC0415  -- see COMMIT_BACKENDS
                pull_request_verdicts,
            )

            with phase(log, "pull request"):
                verdicts = pull_request_verdicts(settings, results, links, github, log)
    return _Outcome(saved=saved, published=published, verdicts=verdicts)


def _log_done(
    settings: Settings, log: Log, saved: Saved, totals: Totals, *, seconds: float
) -> None:
    """The update's last line: what was read, and what became of it."""
    merged = saved.merged
    written = "to write" if settings.dry_run else "written"
    if settings.feeds_dashboards:
        done = (
            f"into {len(merged.reports)} dashboard(s); {merged.changed_cells} cell(s) changed; "
            f"{len(saved.output)} file(s) {written}"
        )
    else:
        done = "not recorded into the dashboards (see above)"
    if settings.summary_json is not None and settings.summary_json != STDOUT:
        # Written by every update (it says what this one did), beside the files counted.
        done += f", plus the summary JSON {settings.summary_json}"
    log.info(
        f"ivy-matrix: {totals.files} file(s), {totals.tests} test cases "
        f"({totals.failed} failed, {totals.errors} errors, {totals.skipped} skipped) "
        f"{done}; done in {seconds:.2f} s"
    )


def _check_github_targets(settings: Settings, targets: Collection[Target]) -> None:
    """What the GitHub targets need, checked before anything is read."""
    if not targets or settings.read_only:
        return
    if settings.run_id is None:
        raise UsageError(
            f"the {' and '.join(sorted(targets))} target(s) need the run id: pass "
            f"{settings.named('run_id')} (on a runner GITHUB_RUN_ID gives it)"
        )
    if not settings.token:
        raise UsageError(
            f"the {' and '.join(sorted(targets))} target(s) need a token: pass "
            f"{settings.named('token')} or set IVY_MATRIX_TOKEN, GITHUB_TOKEN or GH_TOKEN "
            f"(the action's 'token' input defaults to github.token)"
        )


def _summarize(
    settings: Settings,
    collected: Collected,
    merged: Merged,
    published: Published,
    log: Log,
    *,
    recorded: bool,
    spend: Spend | None,
    envs: tuple[tuple[str, Env], ...] = (),
    verdicts: PullRequestVerdicts | None = None,
    leg_files: tuple[LegResults, ...] = (),
) -> None:
    """The summary target and ``--summary-json``: the log lines, annotations and files. On a
    pull request with verdicts the annotations are its new failures (targets/summary.py);
    ``leg_files``: those ``collected`` holds, whose failures their legs annotated."""
    if recorded:
        log_dashboards(log, merged)
    from_legs = sum(
        f.failed + f.errors for leg in leg_files for f in leg.collected.files if f.problem is None
    )
    log_results(collected, log, annotate=verdicts is None, from_legs=from_legs)
    if verdicts is not None:
        annotate_verdicts(log, verdicts, collected)
    outcome = Results(
        collected=collected,
        merged=merged,
        published=published,
        recorded=recorded,
        spend=spend,
        envs=envs,
        verdicts=verdicts,
    )
    if settings.summary_json is not None and settings.dry_run:
        log.info(f"dry run: would write the summary JSON {settings.summary_json}")
    elif settings.summary_json is not None:
        write_summary_json(settings.summary_json, outcome, stdout=log.data)
    if Target.SUMMARY in settings.targets:
        files = SummaryFiles(
            step_summary=settings.step_summary,
            github_output=settings.github_output,
            summary_json=settings.summary_json,
            output_dir=settings.output_dir,
            html=settings.html if Target.SITE in settings.targets else None,
        )
        with phase(log, "summary"):
            publish_job_summary(files, outcome, log)


def _commit_message(settings: Settings, collected: Collected) -> str:
    backends = sorted(collected.backends)
    shown = ", ".join(backends[:COMMIT_BACKENDS]) + (
        ", ..." if len(backends) > COMMIT_BACKENDS else ""
    )
    return f"ivy-matrix: run {settings.run_id} attempt {settings.run_attempt} ({shown})"


def _save_and_publish(
    settings: Settings,
    store: Store,
    change: Change,
    github: Connection,
    log: Log,
    *,
    targets: Collection[Target],
) -> tuple[Saved, Published]:
    """``store.update(change)``, then the dashboard issues. A token that may not write fails
    here naming the permission: a read-only one (a fork's pull request) is known from the
    event, and then no GitHub target is chosen at all (``remote_targets``)."""
    with phase(log, "store") as step:
        saved = store.update(change)
        step.done(f"{saved.merged.changed_cells} cell(s) changed")
    published = Published(urls=saved.urls, index_url=saved.index_url, site_url=site_link(settings))
    if Target.ISSUE in targets and Target.BRANCH in targets:
        with phase(log, "issues"):
            published = publish_issue_target(settings, github, log, saved, published)
    return saved, published


def _pull_request_targets(settings: Settings) -> frozenset[Target]:
    """The pr-comment and status targets asked for, on a pull request (none else)."""
    if not settings.pull_request:
        return frozenset()
    return PULL_REQUEST_TARGETS & frozenset(settings.targets)


def _log_not_a_pull_request(settings: Settings, log: Log) -> None:
    if PULL_REQUEST_TARGETS & set(settings.targets) or settings.fail_on is FailOn.NEW:
        log.info(
            "not a pull request (no --pr, and the event is not one): the pr-comment and status "
            "targets and fail-on: new have nothing to do"
        )


def _log_not_recorded(settings: Settings, log: Log) -> None:
    if settings.pull_request:
        number = f" #{settings.pr}" if settings.pr is not None else ""
        log.info(
            f"results of pull request{number} are not recorded into the dashboards: they feed "
            f"only its verdicts (the pr-comment and status targets, fail-on: new, ivy-matrix "
            f"compare)"
        )
        return
    log.info(
        f"results of {settings.ref} are not recorded into the dashboards: only "
        f"{', '.join(settings.feeding_branches)} feed them (dashboard-branches)"
    )
