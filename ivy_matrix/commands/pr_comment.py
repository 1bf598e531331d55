"""What ``update`` does on a pull request: its verdicts; with the pr-comment target, its comment;
with the status target, its commit statuses (commands/pr_status.py).

I/O: asks GitHub whether the pull request is still open (never only the event payload: a
re-run after the pull request was closed still carries the payload of the first run), reads
the baseline (commands/compare.py: only the columns these results touch), records the
verdicts in the verdict ref over the transport the branch store uses (``branch-transport``:
over git no REST request) and keeps the sticky comment up to date (``pr/comment.py``,
``pr/verdict_ref.py``).
A read-only token (a fork, Dependabot, or no ``contents: write`` for the verdict ref) sends
the comment to the job summary instead, with a warning.
"""

from __future__ import annotations

from dataclasses import replace

from ivy_matrix.commands.choose_store import READ_ONLY_ADVICE, branch_remote, site_link
from ivy_matrix.commands.compare import (
    baseline_states,
    counts_line,
    pr_comment_state,
    pr_comparison,
)
from ivy_matrix.commands.job_links import Links
from ivy_matrix.commands.pr_status import set_statuses
from ivy_matrix.config.options import FailOn, Target
from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError
from ivy_matrix.github.connection import Connection
from ivy_matrix.pr.body import render_comment
from ivy_matrix.pr.comment import CommentLook, PullRequestComment
from ivy_matrix.pr.verdict_ref import VerdictRef
from ivy_matrix.results.cells import Collected
from ivy_matrix.results.legs import with_legs
from ivy_matrix.runner.log import Log, append_summary
from ivy_matrix.targets.summary import PullRequestVerdicts

NOT_FOUND = 404


def pull_request_verdicts(
    settings: Settings, collected: Collected, links: Links, github: Connection, log: Log
) -> PullRequestVerdicts | None:
    """The pull request's verdicts (None when nothing needs them); with the pr-comment
    target, its sticky comment, and where it is."""
    commenting = Target.PR_COMMENT in settings.targets
    if commenting and settings.merge_group:
        log.info("a merge group is no one pull request: the pr-comment target has no comment")
        commenting = False
    if commenting and settings.pr is None:
        settings = replace(settings, pr=_find_pull_request(settings, github, log))
        if settings.pr is None:
            log.warning(
                "the pr-comment target needs the pull request's number: on a pull_request event "
                "or a workflow_run of one GitHub's event gives it; else pass --pr"
            )
            commenting = False
    if commenting and _is_closed(settings, github, log):
        commenting = False
    statuses = Target.STATUS in settings.targets
    if not (commenting or statuses) and settings.fail_on is not FailOn.NEW:
        return None
    # The baseline covers the leg files' dashboards and backends too (a fan-in job).
    baseline = baseline_states(settings, github, log, with_legs(collected, links.leg_files))
    states = baseline.states
    comparison = pr_comparison(settings, collected, links, states)
    log.info(f"pull request verdicts: {counts_line(comparison)}")
    verdicts = PullRequestVerdicts(
        comparison=comparison,
        state=pr_comment_state(settings, comparison, states),
        commenting=commenting,
    )
    if commenting:
        verdicts = _comment(settings, verdicts, github, log)
    if statuses:
        set_statuses(
            settings,
            comparison,
            github,
            log,
            baseline_backends=baseline.backends,
            comment_url=verdicts.comment_url,
        )
    return verdicts


def _is_closed(settings: Settings, github: Connection, log: Log) -> bool:
    """Whether GitHub says the pull request is closed (merged ones are) or does not exist:
    then no comment."""
    number = settings.pr
    if number is None or not github.available:
        return False
    try:
        pull = github.client.get_pull_request(github.repository, number)
    except GitHubAPIError as error:
        if error.status == NOT_FOUND:
            log.warning(f"there is no pull request #{number} in {github.repository}: no comment")
            return True
        log.warning(f"cannot tell whether pull request #{number} is open ({error}); commenting")
        return False
    if pull.state != "closed":
        return False
    log.info(
        f"pull request #{number} is closed (GitHub says so now, whatever the event said): "
        f"no comment"
    )
    return True


def _comment(
    settings: Settings, verdicts: PullRequestVerdicts, github: Connection, log: Log
) -> PullRequestVerdicts:
    """Record this job's verdicts and bring the comment up to date (or degrade); the
    verdicts with where the comment is."""
    state = verdicts.state
    if settings.dry_run:
        log.info(f"dry run: would update the comment on pull request #{state.pr}")
        return verdicts
    if settings.read_only:
        return _degrade(settings, verdicts, log, READ_ONLY_ADVICE)
    run = state.run
    writer = PullRequestComment(
        github.client,
        # Over the branch's transport: over git, recording the verdicts spends no REST request.
        VerdictRef(branch_remote(settings, github, log), state.pr),
        github.repository,
        look=CommentLook(
            author=settings.pr_comment_author,
            when_green=settings.pr_comment_when_green,
            site_url=site_link(settings),
        ),
        log=log,
        sleep=github.remote.sleep,
        writer=f"run {run.run_id}.{run.run_attempt} job {run.job_id}",
    )
    try:
        result = writer.publish(state, verdicts.comparison.ran)
    except ReadOnlyTokenError as error:
        return _degrade(settings, verdicts, log, str(error))
    except GitHubAPIError as error:
        log.warning(f"the comment on pull request #{state.pr} was not brought up to date: {error}")
        return verdicts
    url = result.url
    if result.comment_id is not None:
        # One address whoever wrote it (this job, another writer, or nobody: already current),
        # so a re-run finds the same link in the statuses it set (commands/pr_status.py).
        server = settings.server_url.rstrip("/")
        url = f"{server}/{github.repository}/pull/{state.pr}#issuecomment-{result.comment_id}"
    if result.url:
        log.info(f"pull request comment: {result.url}")
    return replace(verdicts, comment_url=url)


def _find_pull_request(settings: Settings, github: Connection, log: Log) -> int | None:
    """The open pull request whose head is the event's ``owner:branch`` at the event's head
    commit (a workflow_run of a fork's pull request, whose ``pull_requests`` GitHub leaves
    empty); None when there is not exactly one."""
    label, head = settings.pr_head_label, settings.head_sha
    if not (label and head and github.available):
        return None
    try:
        found = github.client.list_pull_requests(github.repository, head=label)
    except GitHubAPIError as error:
        log.warning(f"cannot find the pull request of {label}: {error}")
        return None
    numbers = {pull.number for pull in found if pull.head_sha == head}
    if len(numbers) != 1:
        return None
    (number,) = numbers
    log.info(f"the pull request of {label} at {head[:12]} is #{number}")
    return number


def _degrade(
    settings: Settings, verdicts: PullRequestVerdicts, log: Log, why: str
) -> PullRequestVerdicts:
    """A token that cannot write: the comment goes to the job summary, with the reason."""
    log.warning(why)
    if settings.step_summary is None:
        return verdicts
    try:
        append_summary(
            settings.step_summary, render_comment(verdicts.state, site_url=site_link(settings))
        )
    except OSError as error:
        log.warning(f"cannot write the job summary: {error.strerror or error}")
        return verdicts
    return replace(verdicts, comment_in_summary=True)
