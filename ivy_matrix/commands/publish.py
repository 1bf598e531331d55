"""The ``publish`` command: render the dashboards, their issues and the index from the branch
state, with no new results (a fan-in job after the matrix, or a scheduled job).

I/O: the shell around the branch store. One ``store.update`` whose change adds nothing and
applies the store-wide retirement (``fold.merge_batches`` with no batch), rendering every
dashboard and the index and committing only the files that differ (nothing at all when the
branch already shows its state); then, with the ``issue`` target, the dashboard issues and the
index issue from that state (issues/publish.py), and ``--output-dir`` when given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ivy_matrix.commands.choose_store import (
    check_targets,
    connect,
    open_store,
    output_folder,
    publish_issue_target,
    remote_targets,
    site_link,
)
from ivy_matrix.config.options import Target
from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import ExitCode, UsageError
from ivy_matrix.github.connection import Remote
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.runner.log import Log
from ivy_matrix.state.fold import DashboardReport, Merged, merge_batches
from ivy_matrix.stores import Published, Saved
from ivy_matrix.targets.summary import log_spend, spend_on_failure


def run_publish(settings: Settings, log: Log, remote: Remote | None = None) -> ExitCode:
    """Run ``ivy-matrix publish``; return the exit code."""
    check_targets(settings)
    with (
        connect(settings, remote, log) as github,
        spend_on_failure(log, github.spent, warn_percent=settings.budget_warning),
    ):
        targets = remote_targets(settings, log)
        if Target.BRANCH not in targets:
            raise UsageError(
                "publish renders from the state on the dashboard branch: add 'branch' to "
                "--targets (and 'issue' for the issues); the job needs contents: write"
            )
        store = open_store(
            settings,
            github,
            log,
            remote=targets,
            message="ivy-matrix: publish",
            after_save=output_folder(settings, log),
            render_all=True,
        )

        def change(states: Mapping[DashboardId, DashboardState]) -> Merged:
            return merge_batches(
                states, [], history=settings.history, retire_after_runs=settings.retire_after_runs
            )

        saved = store.update(change)
        published = Published(
            urls=saved.urls, index_url=saved.index_url, site_url=site_link(settings)
        )
        if Target.ISSUE in targets:
            published = publish_issue_target(
                settings, github, log, every_dashboard(saved), published
            )
    log.info(
        f"published {len(saved.merged.states)} dashboard(s) from branch {settings.branch}: "
        f"{len(saved.written)} file(s) {'to commit' if settings.dry_run else 'committed'}"
        + (f"; index: {published.index_url}" if published.index_url else "")
    )
    log_spend(log, github.spent(), warn_percent=settings.budget_warning)
    return ExitCode.OK


def every_dashboard(saved: Saved) -> Saved:
    """``saved`` with a report for every dashboard: the issue target rewrites every issue
    whose body differs, not only the dashboards this change reached."""
    merged = saved.merged
    reports = {state.key: DashboardReport() for state in merged.states.values()}
    reports.update(merged.reports)
    return replace(saved, merged=replace(merged, reports=reports))
