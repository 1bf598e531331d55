"""Which store a command's settings name, what keeps the output folder in step with it, and the
GitHub connection they write through.

I/O (it builds the stores). The one place that decides between the stores, so the pipeline
(commands/update.py) and ``adopt`` call ``store.update(change)`` without knowing which store they hold:

- the branch target: :class:`~ivy_matrix.stores.branch.BranchStore` (compare-and-swap);
- the issue target alone: :class:`~ivy_matrix.issues.store.IssueStore` (jobs take turns,
  with a warning);
- otherwise, and whenever the token is read-only: the local folder
  (:class:`~ivy_matrix.stores.local.LocalStore`).

Both issue parts (the issue-body store, and the issue target beside the branch store:
:func:`publish_issue_target`) get their values from :func:`issue_options` and :func:`job_name`.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Collection
from functools import partial

from ivy_matrix.config.options import BranchTransport, Target
from ivy_matrix.config.settings import Settings
from ivy_matrix.github.connection import Connection, Remote
from ivy_matrix.issues.publish import publish_from_branch
from ivy_matrix.issues.store import IssueStore
from ivy_matrix.issues.store_lock import Turns
from ivy_matrix.issues.writer import IssueOptions
from ivy_matrix.runner.log import Log
from ivy_matrix.stores import AfterSave, Saved, Store
from ivy_matrix.stores.branch import BranchStore
from ivy_matrix.stores.layout import Scope
from ivy_matrix.stores.local import LocalStore
from ivy_matrix.stores.remote import AutoRemote, BranchRemote, RestRemote
from ivy_matrix.targets import Published
from ivy_matrix.targets.files import write_output

REMOTE = frozenset({Target.BRANCH, Target.ISSUE})
READ_ONLY_ADVICE = (
    "the token is read-only here (a pull request from a fork, or Dependabot), so the "
    "dashboards are in the job summary only. To publish them, upload the result files as an "
    "artifact and run ivy-matrix in a workflow triggered by workflow_run, which gets a token "
    "that can write (see the README, 'Pull requests from forks')"
)
ISSUE_STORE_WARNING = (
    "the issue target without the branch target keeps the state in the issue bodies, "
    "where concurrent writers can overwrite each other (GitHub has no conditional issue "
    "edits), so jobs take turns and one that waits too long refuses; add 'branch' to "
    "targets (contents: write), or publish from one fan-in job"
)


def connect(settings: Settings, remote: Remote | None, log: Log) -> Connection:
    """The command's GitHub connection (opened on first use): the token, API and repository;
    its retries and long waits are said in ``log``."""
    return Connection(
        token=settings.token,
        api_url=settings.api_url,
        server_url=settings.server_url,
        repository=settings.repository,
        remote=remote,
        log=log,
    )


def remote_targets(settings: Settings, log: Log) -> frozenset[Target]:
    """The GitHub targets this run can write (none when the token is read-only)."""
    remote = REMOTE & frozenset(settings.targets)
    if remote and settings.read_only:
        log.warning(READ_ONLY_ADVICE)
        return frozenset()
    return remote


def output_folder(settings: Settings, log: Log) -> AfterSave | None:
    """What keeps ``--output-dir`` in step with the store (None without the file target)."""
    if Target.FILE not in settings.targets or settings.output_dir is None:
        return None
    return partial(
        write_output, settings.output_dir, style=settings.style, dry_run=settings.dry_run, log=log
    )


def open_store(
    settings: Settings,
    github: Connection,
    log: Log,
    *,
    remote: Collection[Target],
    message: str,
    after_save: AfterSave | None,
    scope: Scope | None = None,
    render_all: bool = False,
) -> Store:
    """The store for ``remote`` (the GitHub targets this run writes); see the module docstring.

    ``render_all``: the branch store renders every dashboard, not only those that changed.
    """
    if not remote:
        return LocalStore(
            settings.store,
            dry_run=settings.dry_run,
            log=log,
            after_save=after_save,
            lock_timeout=settings.lock_timeout,
            trend_points=settings.trend_points,
        )
    if Target.BRANCH in remote:
        return BranchStore(
            None,
            github.repository,
            settings.branch,
            remote=branch_remote(settings, github, log),
            message=message,
            style=settings.style,
            trend_points=settings.trend_points,
            dry_run=settings.dry_run,
            log=log,
            after_save=after_save,
            server_url=settings.server_url,
            sleep=github.remote.sleep,
            scope=scope,
            render_all=render_all,
            read_all_when_complete=Target.ISSUE in remote,
            job_finished=github.job_finished,
        )
    log.warning(ISSUE_STORE_WARNING)
    return IssueStore(
        github.client,
        github.repository,
        issue_options(settings),
        turns=Turns(holder=job_name(settings)),
        history=settings.history,
        log=log,
        after_save=after_save,
        sleep=github.remote.sleep,
    )


def branch_remote(settings: Settings, github: Connection, log: Log) -> BranchRemote:
    """How the branch store reaches the repository (``branch-transport``): git's protocol,
    the REST API, or git with the REST API where git cannot be used (``auto``). ``auto``
    tries git only where ``server-url`` is the API's server (GitHub, GHES, a stand-in that
    serves both): an API set elsewhere with the default server URL means the REST API."""
    choice = settings.branch_transport

    def rest() -> BranchRemote:
        return RestRemote(github.client, github.repository)

    same = _same_server(settings.server_url, settings.api_url)
    if choice is BranchTransport.REST or (
        choice is BranchTransport.AUTO and not (github.has_git and same)
    ):
        return rest()
    if choice is BranchTransport.GIT:
        return github.git()
    return AutoRemote(github.git, rest, log)


def _same_server(server_url: str, api_url: str) -> bool:
    """Whether the API is on the web server's host (GHES: ``/api/v3``) or its ``api.`` host."""
    server = urllib.parse.urlsplit(server_url).hostname or ""
    api = urllib.parse.urlsplit(api_url).hostname or ""
    return bool(server) and api in {server, f"api.{server}"}


def publish_issue_target(
    settings: Settings, github: Connection, log: Log, saved: Saved, published: Published
) -> Published:
    """The issue target beside the branch store (``issues/publish.py``), from ``saved``."""
    return publish_from_branch(
        github.client,
        github.repository,
        saved,
        published,
        issue_options(settings),
        holder=job_name(settings),
        log=log,
        sleep=github.remote.sleep,
    )


def issue_options(settings: Settings) -> IssueOptions:
    """What the dashboard issues look like and whether they are written."""
    return IssueOptions(
        label=settings.issue_label,
        style=settings.style,
        pin_index=settings.pin_index,
        graphql_url=settings.graphql_url,
        dry_run=settings.dry_run,
    )


def job_name(settings: Settings) -> str:
    """This job as a lock names its holder to the jobs that wait for it."""
    return (
        f"run {settings.run_id} attempt {settings.run_attempt} job "
        f"{settings.job_id or '?'} backend {settings.backend or '?'}"
    )
