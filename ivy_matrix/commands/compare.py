"""A pull request's verdicts: the ``compare`` command, and what ``update`` does on a pull request.

I/O: reads the default branch's states (the local store, or with the branch target the
dashboard branch, read-only: nothing is locked or written; over git's protocol where the
branch target would use it), writes ``--json`` and ``--markdown``. The verdicts themselves are
pure (``pr/verdicts.py``), and so is the comment body (``pr/body.py``); the sticky comment is
written by ``pr/comment.py``.

The pull request's results are read as ``update`` reads them (the same result, naming and job
link options) and recorded as the pull request's: its number (``--pr``), head commit
(``--head-sha``) and base (``--base-sha``), each from the runner's event when not given. The
baseline is read for the results' own dashboards and backends only (on the dashboard branch,
those columns and nothing else), and its ancestry follows run order from the base commit
(``pr.ancestry.run_order_ancestry``) among them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from ivy_matrix.commands.choose_store import connect, open_branch, site_link
from ivy_matrix.commands.environments import job_environment, versioned_columns
from ivy_matrix.commands.fail_on import exit_code
from ivy_matrix.commands.job_links import Links, resolve_links
from ivy_matrix.commands.reading import read_results
from ivy_matrix.config.options import FailOn, Target
from ivy_matrix.config.settings import Settings, require_update_inputs
from ivy_matrix.errors import ExitCode, StoreError
from ivy_matrix.github.connection import Connection, Remote
from ivy_matrix.model import DashboardState, RunKey
from ivy_matrix.pr.ancestry import pr_base_sha, run_order_ancestry
from ivy_matrix.pr.body import render_comment
from ivy_matrix.pr.comment_state import CommentState, comment_state
from ivy_matrix.pr.document import compare_document
from ivy_matrix.pr.verdicts import (
    COUNT_ORDER,
    Comparison,
    compare,
)
from ivy_matrix.results.cells import Collected
from ivy_matrix.results.signature import Signer
from ivy_matrix.runner.files import write_file
from ivy_matrix.runner.log import Log
from ivy_matrix.stores.local import LocalStore
from ivy_matrix.targets.summary import log_spend, spend_on_failure


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    """The default branch's dashboards that results are compared with (``states``), and every
    backend those dashboards have a column for (``backends``: the baseline's backends, which a
    pull request's statuses expect results from)."""

    states: list[DashboardState]
    backends: frozenset[str]


def baseline_states(
    settings: Settings, github: Connection, log: Log, collected: Collected
) -> Baseline:
    """The default branch's dashboards that ``collected`` can be compared with: from the
    dashboard branch with the branch target (and a token) only the columns of its dashboards
    for its backends, else from the local store; read only."""
    if Target.BRANCH in settings.targets and github.available:
        # Over git's protocol where the branch target uses it (branch-transport): then
        # reading the baseline spends no REST request, the most a pull request's leg spends.
        store = open_branch(settings, github, log)
        columns, backends = store.load_columns(collected.dashboards, collected.backends)
        states = list(columns.values())
        where = f"branch {settings.branch}"
    else:
        if not settings.store.is_dir():
            # A mistyped --store would make every failure "no-baseline", never "new".
            raise StoreError(
                f"there is no store at {settings.named('store')} {settings.store}, so there is "
                f"nothing to compare with; pass the folder that update writes on the default "
                f"branch (default .ivy-matrix), or --targets branch for the dashboard branch"
            )
        states = LocalStore(settings.store).load_all()
        keys = {dashboard.key for dashboard in collected.dashboards}
        backends = frozenset(b for s in states if s.key in keys for b in s.backend_names)
        where = f"store {settings.store}"
    if not states:
        said = f"no default-branch results in {where}: every failing cell would be no-baseline"
        if settings.fail_on is FailOn.NEW:
            raise StoreError(
                f"{said}, so {settings.named('fail_on')} new could never fail; run update on "
                f"the default branch first, or point {settings.named('store')} (or "
                f"{settings.named('branch')}) at the dashboards' state"
            )
        log.warning(
            f"{said}; point {settings.named('store')} (or {settings.named('branch')} with the "
            f"branch target) at the dashboards' state"
        )
    return Baseline(states=sorted(states, key=lambda s: s.key), backends=backends)


def pr_run_id(settings: Settings, states: list[DashboardState]) -> int:
    """The pull request's run id: the given one, else one after every run the store has seen."""
    if settings.run_id is not None:
        return settings.run_id
    return max((s.runs[0] for s in states if s.runs), default=0) + 1


def pr_comparison(
    settings: Settings, collected: Collected, links: Links, states: list[DashboardState]
) -> Comparison:
    """The verdicts of the pull request's results against ``states``."""
    signer = Signer(aliases=settings.backend_aliases)
    batches = list(links.batches(collected, pr_run_id(settings, states), signer).each)
    branches = settings.feeding_branches
    ancestry = run_order_ancestry(states, settings.base_sha or pr_base_sha(batches), branches)
    repository = (
        f"{settings.server_url.rstrip('/')}/{settings.repository}" if settings.repository else ""
    )
    return compare(batches, states, ancestry=ancestry, branches=branches, repository=repository)


def pr_comment_state(
    settings: Settings, comparison: Comparison, states: list[DashboardState]
) -> CommentState:
    """One writer's part of the comment: its verdicts about the head commit, by this run."""
    run = RunKey(
        pr_run_id(settings, states),
        settings.run_attempt,
        -1 if settings.job_id is None else settings.job_id,
    )
    return comment_state(comparison, pr=settings.pr or 0, head=settings.commit, run=run)


def counts_line(comparison: Comparison) -> str:
    """The verdict counts in words, for the log."""
    counts = comparison.counts()
    said = ", ".join(f"{counts[v]} {v.value}" for v in COUNT_ORDER)
    return f"{said} (baseline: {comparison.baseline.value})"


def run_compare(
    settings: Settings,
    log: Log,
    remote: Remote | None,
    *,
    markdown: Path | None,
    json_path: Path | None,
) -> ExitCode:
    """Run ``ivy-matrix compare``: the verdicts, written as JSON and markdown; records nothing."""
    require_update_inputs(settings)
    settings = replace(settings, pull_request=True)
    collected = read_results(settings, log)
    # The pull request's columns are named as the default branch's are (--backend-version).
    env = job_environment(settings, collected, log)
    versioned_columns(settings, collected, env)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with (
        connect(settings, remote, log) as github,
        spend_on_failure(log, github.spent, warn_percent=settings.budget_warning),
    ):
        links = resolve_links(settings, collected, github, log, now=now, env=env)
        states = baseline_states(settings, github, log, collected).states
    comparison = pr_comparison(settings, collected, links, states)
    if json_path is not None:
        text = json.dumps(compare_document(comparison), indent=2, ensure_ascii=False) + "\n"
        write_file(json_path, text, stdout=log.data, what="--json")
    if markdown is not None:
        comment = render_comment(
            pr_comment_state(settings, comparison, states), site_url=site_link(settings)
        )
        write_file(markdown, comment, stdout=log.data, what="--markdown")
    log.info(
        f"ivy-matrix compare: {len(comparison.cells)} cell(s) listed: {counts_line(comparison)}"
    )
    log_spend(log, github.spent(), warn_percent=settings.budget_warning)
    return exit_code(settings.fail_on, collected.totals(), log, comparison)
