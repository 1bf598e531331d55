"""The status target of ``update`` on a pull request: its commit statuses, from its verdicts.

I/O: the statuses (``pr/statuses.py``, pure) go on the commit the results tested (a pull
request's head, a merge group's head) through ``pr/status_writer.py``. Which backends are
expected: the ``expected-backends`` setting when given, else every backend the baseline's dashboards
have a column for (commands/compare.py); one of them with no result in this run is ``error``.
A job given one ``backend`` (a matrix leg) sets that backend's status alone, and the aggregate
only when no other backend is expected: the job that sees every backend's results (a fan-in
job) sets the aggregate. With a read-only token (a fork's pull request, Dependabot) nothing is
sent, with a warning: the ``workflow_run`` recipe sets them.
"""

from __future__ import annotations

from collections.abc import Collection

from ivy_matrix.config.settings import Settings
from ivy_matrix.github.connection import Connection
from ivy_matrix.pr.status_writer import write_statuses
from ivy_matrix.pr.statuses import CONTEXT, backend_context, desired_statuses
from ivy_matrix.pr.verdicts import Comparison
from ivy_matrix.results.jobs import run_url
from ivy_matrix.runner.log import Log

READ_ONLY = (
    "the status target sets no commit status: the token is read-only here (a pull request "
    "from a fork, or Dependabot). Set them from a workflow triggered by workflow_run, which "
    "gets a token that can write (docs/workflows.md, 'Pull requests from forks')"
)


def set_statuses(
    settings: Settings,
    comparison: Comparison,
    github: Connection,
    log: Log,
    *,
    baseline_backends: Collection[str],
    comment_url: str | None,
) -> None:
    """Set the pull request's commit statuses (see the module docstring); each links the
    comment when there is one, else the workflow run."""
    sha = settings.commit
    if not sha:
        log.warning(
            f"the status target needs the commit the results tested: pass "
            f"{settings.named('head_sha')} (on a runner the event gives it)"
        )
        return
    expected = set(settings.expected_backends or baseline_backends)
    aggregate = True
    if settings.backend is not None and not settings.legs:
        # One leg's results: its own status; the aggregate needs every backend's.
        aggregate = expected <= {settings.backend}
        expected = set()
        if not aggregate:
            log.info(
                f"the status target: this job has {settings.backend}'s results only, so it sets "
                f"{backend_context(settings.backend)}; the {CONTEXT} status comes from the job "
                f"that reads every backend's results (a fan-in job)"
            )
    url = comment_url or ""
    if not url and settings.repository and settings.run_id is not None:
        url = run_url(settings.server_url, settings.repository, settings.run_id)
    wanted = desired_statuses(comparison, expected=expected, target_url=url, aggregate=aggregate)
    if settings.dry_run:
        for status in wanted:
            log.info(f"dry run: would set {status.context}: {status.state} ({status.description})")
        return
    if settings.read_only:
        log.warning(READ_ONLY)
        return
    done = write_statuses(github.client, github.repository, sha, wanted, log)
    log.info(
        f"commit statuses of {sha[:12]}: {len(done.written)} set, {len(done.unchanged)} "
        f"already so, {len(done.failed)} not set"
    )
