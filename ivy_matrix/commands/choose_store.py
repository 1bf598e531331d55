"""Which store a command's settings name, what keeps the output folder in step with it, and the
GitHub connection they write through.

I/O (it builds the stores). The one place that decides between the stores, so the pipeline
(commands/update.py) and ``adopt`` call ``store.update(change)`` without knowing which store they hold:

- the branch target: :class:`~ivy_matrix.stores.branch.BranchStore` (compare-and-swap);
- otherwise, and whenever the token is read-only: the local folder
  (:class:`~ivy_matrix.stores.local.LocalStore`).

The issue target publishes the branch store's state (:func:`publish_issue_target`), so it
needs the branch target (:func:`check_targets`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Collection, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ivy_matrix.config.options import BranchTransport, Target, option_default
from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import UsageError
from ivy_matrix.github.connection import Connection, Remote
from ivy_matrix.runner.log import Log
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.ledger import Inputs
from ivy_matrix.state.paths import SITE_DIR, site_data_file
from ivy_matrix.stores import AfterSave, Published, Saved, Store
from ivy_matrix.stores.local import LocalStore
from ivy_matrix.targets.files import RECORD_NAME, write_files, write_output
from ivy_matrix.views.dashboards import RenderedFile
from ivy_matrix.views.durations_file import DurationsFile

if TYPE_CHECKING:
    from ivy_matrix.issues.writer import IssueOptions
    from ivy_matrix.stores.branch import BranchStore, Retries
    from ivy_matrix.stores.commit import Render, Writing
    from ivy_matrix.stores.layout import Scope
    from ivy_matrix.stores.remote import BranchRemote

# The branch store, the issues and the site are imported where they are chosen (noqa PLC0415
# below): a leg that writes the local store needs none of them, and a matrix leg starts a fresh
# interpreter, which pays for every module it imports.
REMOTE = frozenset({Target.BRANCH, Target.ISSUE})
READ_ONLY_ADVICE = (
    "the token is read-only here (a pull request from a fork, or Dependabot), so the "
    "dashboards are in the job summary only. To publish them, upload the result files as an "
    "artifact and run ivy-matrix in a workflow triggered by workflow_run, which gets a token "
    "that can write (see the README, 'Pull requests from forks')"
)
ISSUE_NEEDS_BRANCH = (
    "the issue target publishes the state kept on the dashboard branch: add 'branch' to "
    "targets (the job needs contents: write and issues: write). ivy-matrix 0.2.0 kept the "
    "state in the issue bodies instead; that store is gone (see the CHANGELOG)"
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


def check_targets(settings: Settings) -> None:
    """The ``issue`` target needs the branch target (its state lives there); the ``site``
    target needs somewhere to go: the dashboard branch, or ``--html``."""
    targets = settings.targets
    if Target.ISSUE in targets and Target.BRANCH not in targets:
        raise UsageError(ISSUE_NEEDS_BRANCH)
    if Target.SITE in targets and Target.BRANCH not in targets and settings.html is None:
        raise UsageError(
            "the site target writes the HTML site into site/ of the dashboard branch (add "
            "'branch' to targets) or into the folder --html names (input 'html'): give one"
        )


def check_branch(settings: Settings) -> None:
    """The dashboard branch is a branch of its own: never the repository's default branch
    (the event says which) or the branch this run tests, which the dashboards' commits would
    fill with their pages (a README.md of their own) and state."""
    branch = settings.branch.removeprefix("refs/heads/")
    ref = settings.ref or ""
    what = None
    if branch == settings.default_branch:
        what = "the repository's default branch"
    elif ref.startswith("refs/heads/") and branch == ref.removeprefix("refs/heads/"):
        what = "the branch this run tests"
    if what is not None:
        raise UsageError(
            f"{settings.named('branch')} got {settings.branch!r}, {what}: the dashboards' "
            f"commits (their README.md, pages and state) would go into it. Give them a branch "
            f"of their own (the default is {option_default('branch', str)!r})"
        )


def output_folder(
    settings: Settings, log: Log, extra: Sequence[DurationsFile] = ()
) -> AfterSave | None:
    """What keeps the local folders in step with the store: ``--output-dir`` with the file
    target (and ``extra``, the durations files), ``--html`` with the site target (None when
    neither is asked for)."""
    writers: list[AfterSave] = []
    if Target.FILE in settings.targets and settings.output_dir is not None:
        if extra:
            output_dir = settings.output_dir
            writers.append(
                lambda _: tuple(write_files(output_dir, extra, dry_run=settings.dry_run))
            )
        writers.append(
            partial(
                write_output,
                settings.output_dir,
                style=settings.style,
                dry_run=settings.dry_run,
                log=log,
                record=pages_record(settings),
            )
        )
    if Target.SITE in settings.targets and settings.html is not None:
        from ivy_matrix.site.write import write_site_output  # noqa: PLC0415  -- see REMOTE

        writers.append(partial(write_site_output, settings.html, dry_run=settings.dry_run, log=log))
    if not writers:
        return None

    def write(merged: Merged) -> tuple[str, ...]:
        return tuple(path for writer in writers for path in writer(merged))

    return write


def pages_record(settings: Settings) -> Path | None:
    """Where the local store keeps the output folder's record (None: another store keeps the
    state, and the folder is rendered in full)."""
    if REMOTE & set(settings.targets) and not settings.read_only:
        return None
    return settings.store / RECORD_NAME


def branch_site(settings: Settings) -> Render | None:
    """With the site target, what the branch store commits under ``site/`` beside the pages:
    the HTML site, less the data files of dashboards that went (None without it). The site's
    index covers every dashboard, so the store then reads them all (``open_store``)."""
    if Target.SITE not in settings.targets:
        return None

    def render(merged: Merged, keys: Collection[str]) -> list[RenderedFile]:
        from ivy_matrix.site.build import render_site  # noqa: PLC0415  -- see REMOTE
        from ivy_matrix.site.page import read_page  # noqa: PLC0415  -- see REMOTE

        states = merged.ordered()
        files = [
            RenderedFile(path=f"{SITE_DIR}/{file.path}", text=file.text)
            for file in render_site(states, read_page(), only=keys, trend=merged.trend)
        ]
        return files + [
            RenderedFile(path=f"{SITE_DIR}/{site_data_file(gone)}", text=None)
            for gone in merged.removed
        ]

    return render


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
    inputs: Inputs | None = None,
    extra: Sequence[DurationsFile] = (),
) -> Store:
    """The store for ``remote`` (the GitHub targets this run writes); see the module docstring.

    ``render_all``: the branch store renders every dashboard, not only those that changed;
    ``inputs``: the result files the update brings, for the local store's ledger; ``extra``:
    files the branch store commits beside the pages (the durations files).
    """
    if Target.BRANCH not in remote:
        return LocalStore(
            settings.store,
            dry_run=settings.dry_run,
            log=log,
            after_save=after_save,
            lock_timeout=settings.lock_timeout,
            trend_points=settings.trend_points,
            inputs=inputs,
        )
    check_branch(settings)
    from ivy_matrix.stores.branch import Retries  # noqa: PLC0415  -- see REMOTE
    from ivy_matrix.stores.commit import Writing  # noqa: PLC0415  -- see REMOTE

    writing = Writing(
        message=message,
        style=settings.style,
        trend_points=settings.trend_points,
        site=branch_site(settings),
        extra=tuple(extra),
        every_page=render_all,
        dry_run=settings.dry_run,
    )
    return open_branch(
        settings,
        github,
        log,
        writing=writing,
        retries=Retries(sleep=github.remote.sleep),
        # The site's index covers every dashboard: with it, every update reads them all.
        scope=None if Target.SITE in settings.targets else scope,
        after_save=after_save,
    )


def open_branch(
    settings: Settings,
    github: Connection,
    log: Log,
    *,
    writing: Writing | None = None,
    retries: Retries | None = None,
    scope: Scope | None = None,
    after_save: AfterSave | None = None,
) -> BranchStore:
    """The branch store of ``settings`` (``branch``, through ``branch-transport``), writing as
    ``writing`` says; without it (``compare``, the expected backends) it is only read."""
    from ivy_matrix.stores.branch import BranchStore  # noqa: PLC0415  -- see REMOTE
    from ivy_matrix.stores.layout import BranchPlace  # noqa: PLC0415  -- see REMOTE

    place = BranchPlace(
        repo=github.repository, branch=settings.branch, server_url=settings.server_url
    )
    return BranchStore(
        branch_remote(settings, github, log),
        place,
        writing=writing,
        retries=retries,
        scope=scope,
        after_save=after_save,
        log=log,
    )


def branch_remote(settings: Settings, github: Connection, log: Log) -> BranchRemote:
    """How the branch store reaches the repository (``branch-transport``): git's protocol,
    the REST API, or git with the REST API where git cannot be used (``auto``). ``auto``
    tries git only where ``server-url`` is the API's server (GitHub, GHES, a stand-in that
    serves both): an API set elsewhere with the default server URL means the REST API."""
    from ivy_matrix.stores.remote import AutoRemote, RestRemote  # noqa: PLC0415  -- see REMOTE

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
    from ivy_matrix.issues.publish import publish_from_branch  # noqa: PLC0415  -- see REMOTE

    spent = github.spent()
    return publish_from_branch(
        github.client,
        github.repository,
        saved,
        published,
        issue_options(settings),
        log=log,
        sleep=github.remote.sleep,
        server_url=settings.server_url,
        spent_before=spent.content_requests if spent is not None else 0,
    )


def issue_options(settings: Settings) -> IssueOptions:
    """What the dashboard issues look like and whether they are written."""
    from ivy_matrix.issues.writer import IssueOptions  # noqa: PLC0415  -- see REMOTE

    return IssueOptions(
        label=settings.issue_label,
        style=settings.style,
        pin_index=settings.pin_index,
        graphql_url=settings.graphql_url,
        dry_run=settings.dry_run,
        writes_per_hour=settings.issue_writes_per_hour,
        site_url=site_link(settings),
    )


def site_link(settings: Settings) -> str:
    """Where the HTML site is served, for the links to it ("": none): ``site-url``, else, with
    the branch and site targets on github.com, GitHub Pages deploying the dashboard branch
    (docs/site.md: the site is then at ``https://OWNER.github.io/REPO/site/``)."""
    if settings.site_url:
        return settings.site_url
    on_github = settings.server_url.rstrip("/") == "https://github.com"
    targets = settings.targets
    if not (on_github and Target.SITE in targets and Target.BRANCH in targets):
        return ""
    owner, _, repo = (settings.repository or "").partition("/")
    if not owner or not repo:
        return ""
    return f"https://{owner.lower()}.github.io/{repo}/site/"


def job_name(settings: Settings) -> str:
    """This job as a lock names its holder to the jobs that wait for it."""
    return (
        f"run {settings.run_id} attempt {settings.run_attempt} job "
        f"{settings.job_id or '?'} backend {settings.backend or '?'}"
    )
