"""The ``expectations`` command: the per-backend expectation (xfail) lists, kept by the history.

I/O: reads the stored default-branch states (the local store, or with the branch target the
dashboard branch, read-only) and the lists (``--lists`` with ``{backend}``, and the common
``--common-list``), proposes the changes (``expect/proposal.py``: pure), prints them, writes the
evidence (``--markdown``) and, with ``--write``, rewrites the lists that change (every line
it does not change kept byte for byte, ``expect/lists.py``). In a workflow (the branch target,
a token that can write) the lists are read from the default branch's head instead and the
change goes to one pull request from ``ivy-matrix-expectations`` (``pr/expectations.py``).
Nothing is written when the proposal is refused (an incomplete newest run, a history too
short) or changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ivy_matrix.commands.choose_store import connect, open_branch
from ivy_matrix.config.options import Target
from ivy_matrix.config.settings import Settings
from ivy_matrix.errors import ExitCode, GitHubAPIError, InputError, StoreError, UsageError
from ivy_matrix.expect.evidence import TITLE, describe, render_body
from ivy_matrix.expect.lists import ExpectationList
from ivy_matrix.expect.proposal import COMMON, Proposal, propose
from ivy_matrix.expect.rules import MIN_ADD_AFTER, Rules
from ivy_matrix.github.connection import Connection, Remote
from ivy_matrix.model import DashboardState
from ivy_matrix.runner.files import write_atomic, write_file
from ivy_matrix.runner.log import Log

BACKEND = "{backend}"
# A backend named in a path: a name from the results must not walk out of the lists' folder.
_SAFE_BACKEND = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def run_expectations(
    settings: Settings,
    log: Log,
    remote: Remote | None,
    *,
    lists: str,
    common: Path | None,
    rules: Rules,
    write: bool,
    markdown: Path | None,
) -> ExitCode:
    """Run ``ivy-matrix expectations``; return the exit code."""
    _check(settings, lists, rules)
    with connect(settings, remote, log) as github:
        states = stored_states(settings, github, log)
        paths = list_paths(states, lists, common, log)
        if in_workflow(settings, github):
            return _pull_request(
                settings, github, log, states=states, paths=paths, rules=rules, markdown=markdown
            )
    read = lists_by_key(paths)
    proposal = propose(states, read, rules, branches=settings.feeding_branches)
    changed = _report(proposal, read, markdown, log)
    if changed is None:
        return ExitCode.OK
    if not write:
        log.info(f"expectations: {len(changed)} list(s) would change; pass --write to rewrite them")
        return ExitCode.OK
    for key, listed in sorted(changed.items()):
        write_list(paths[key], listed)
        log.info(f"expectations: rewrote {paths[key]}")
    return ExitCode.OK


def in_workflow(settings: Settings, github: Connection) -> bool:
    """Whether the change goes to a pull request: the branch target with a token that can
    write (a read-only token proposes, as locally, without writing)."""
    return Target.BRANCH in settings.targets and github.available and not settings.read_only


def _report(
    proposal: Proposal,
    read: Mapping[str, ExpectationList],
    markdown: Path | None,
    log: Log,
) -> dict[str, ExpectationList] | None:
    """Say the proposal; the lists it changes (None: refused, or nothing changes)."""
    if proposal.refused:
        log.warning(f"expectations: nothing proposed: {proposal.refused}")
        return None
    for note in proposal.notes:
        log.info(note)
    for edit in proposal.edits:
        log.info(describe(edit))
    changed = proposal.apply(read)
    if markdown is not None:
        write_file(markdown, render_body(proposal), stdout=log.data, what="--markdown")
    if not changed:
        log.info("expectations: the lists are up to date; nothing to change")
        return None
    return changed


def _pull_request(
    settings: Settings,
    github: Connection,
    log: Log,
    *,
    states: list[DashboardState],
    paths: Mapping[str, Path],
    rules: Rules,
    markdown: Path | None,
) -> ExitCode:
    """The workflow's way: the lists as the default branch's head has them, the change as
    one pull request from ``ivy-matrix-expectations`` (``pr/expectations.py``)."""
    from ivy_matrix.pr import expectations as pull  # noqa: PLC0415  -- see choose_store

    where = {key: _repository_path(path) for key, path in paths.items()}
    try:
        base, texts = pull.read_lists(
            github.client, github.repository, settings.default_branch, where.values()
        )
    except GitHubAPIError as error:
        log.warning(f"expectations: the lists could not be read: {error}")
        return ExitCode.OK
    read = {key: ExpectationList.parse(texts[path]) for key, path in where.items() if path in texts}
    proposal = propose(states, read, rules, branches=settings.feeding_branches)
    changed = _report(proposal, read, markdown, log)
    if changed is None:
        return ExitCode.OK
    files = {where[key]: listed.text() for key, listed in sorted(changed.items())}
    if settings.dry_run:
        log.info(f"expectations: dry run: {len(files)} list(s) would go to branch {pull.BRANCH}")
        return ExitCode.OK
    try:
        done = pull.publish(
            github.client,
            github.repository,
            base,
            files,
            lists=where.values(),
            title=TITLE,
            body=render_body(proposal),
        )
    except GitHubAPIError as error:
        # A missing permission (contents: write, pull-requests: write) is named in the error.
        log.warning(f"expectations: the pull request was not written: {error}")
        return ExitCode.OK
    if not done.writes:
        log.info(f"expectations: pull request #{done.number} is up to date; nothing written")
        return ExitCode.OK
    said = "opened" if done.opened else "updated"
    log.info(
        f"expectations: {said} pull request #{done.number} from {pull.BRANCH} "
        f"({len(done.writes)} write(s): {', '.join(done.writes)})"
    )
    return ExitCode.OK


def _repository_path(path: Path) -> str:
    """A list's path as the repository names it (relative, no ``..``)."""
    text = path.as_posix().removeprefix("./")
    if path.is_absolute() or ".." in path.parts or not text:
        raise UsageError(
            f"expectations: the list {path} is not a path inside the repository; in a "
            f"workflow --lists and --common-list name files of the repository, relative to it"
        )
    return text


def _check(settings: Settings, lists: str, rules: Rules) -> None:
    if BACKEND not in lists:
        raise UsageError(
            f"expectations --lists {lists!r} needs {BACKEND} where the backend's name goes "
            f"(e.g. tests/xfails/{BACKEND}.txt)"
        )
    if rules.add_after < MIN_ADD_AFTER:
        raise UsageError(
            f"expectations --add-after must be at least {MIN_ADD_AFTER}: a failure new in the "
            f"newest run alone is never added"
        )
    if rules.runs_needed > settings.history:
        raise UsageError(
            f"expectations looks at the last {rules.runs_needed} runs, but each cell keeps "
            f"{settings.named('history')} {settings.history} results; raise --history (on the "
            f"updates too) or lower --add-after, --remove-after and --unseen-after"
        )


def stored_states(settings: Settings, github: Connection, log: Log) -> list[DashboardState]:
    """The default branch's dashboards, read only: from the dashboard branch with the branch
    target (and a token), else from the local store."""
    if Target.BRANCH in settings.targets and github.available:
        store = open_branch(settings, github, log)
        return sorted(store.load().values(), key=lambda s: s.key)
    if not settings.store.is_dir():
        raise StoreError(
            f"there is no store at {settings.named('store')} {settings.store}: the lists are "
            f"kept by the history that update records there (or --targets branch)"
        )
    from ivy_matrix.stores.local import LocalStore  # noqa: PLC0415  -- see choose_store

    return LocalStore(settings.store).load_all()


def list_paths(
    states: list[DashboardState], pattern: str, common: Path | None, log: Log
) -> dict[str, Path]:
    """Each stored backend's list (a backend whose name is not safe in a path is left out,
    with a warning) and the common list."""
    paths: dict[str, Path] = {}
    for backend in sorted({b for s in states for b in s.backend_names}):
        if not _SAFE_BACKEND.fullmatch(backend) or ".." in backend:
            log.warning(f"expectations: backend {backend!r} has no list: its name is not a path")
            continue
        paths[backend] = Path(pattern.replace(BACKEND, backend))
    if common is not None:
        paths[COMMON] = common
    return paths


def read_list(path: Path) -> ExpectationList:
    """A list file as it is (its bytes, as UTF-8)."""
    try:
        return ExpectationList.parse(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InputError(f"the expectation list {path} is not UTF-8 ({error.reason})") from None
    except OSError as error:
        raise InputError(f"cannot read the expectation list {path}: {error.strerror}") from None


def write_list(path: Path, listed: ExpectationList) -> None:
    """Rewrite a list (its folder made when it is new)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, listed.text())
    except OSError as error:
        raise InputError(f"cannot write the expectation list {path}: {error.strerror}") from None


def lists_by_key(paths: Mapping[str, Path]) -> dict[str, ExpectationList]:
    """The lists that exist among ``paths``."""
    return {key: read_list(path) for key, path in paths.items() if path.exists()}
