"""The ``prune`` command: remove named dashboards, backends or rows from the store on purpose.

I/O: the shell around ``retirement.prune`` (what goes) and ``fold.prune_change`` (the
store's change). It goes through the same ``store.update`` as ``update``: the local store, or
with the branch target the dashboard branch (one commit that also rewrites or deletes the
rendered files and the index); ``--output-dir`` is refreshed too. With ``--dry-run`` it says
what would go and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from ivy_matrix.commands.choose_store import connect, open_store
from ivy_matrix.config.options import Target
from ivy_matrix.config.settings import Settings, parse_dashboard
from ivy_matrix.errors import ExitCode, StoreError
from ivy_matrix.github.connection import Remote
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.runner.log import Log
from ivy_matrix.state.fold import DashboardReport, Merged, prune_change
from ivy_matrix.state.retirement import prune
from ivy_matrix.targets.files import write_output
from ivy_matrix.targets.summary import log_spend, spend_on_failure


def run_prune(
    settings: Settings,
    log: Log,
    remote: Remote | None = None,
    *,
    dashboards: Sequence[str] = (),
    backends: Sequence[str] = (),
    rows: Sequence[str] = (),
) -> ExitCode:
    """Run ``ivy-matrix prune``; return the exit code."""
    named = [parse_dashboard(name) for name in dashboards]
    on_branch = Target.BRANCH in settings.targets
    if not on_branch and not settings.store.is_dir():
        raise StoreError(
            f"cannot prune --store {settings.store}: there is no store there; pass the folder "
            f"that update writes to (default .ivy-matrix), or --targets branch for the branch"
        )
    output = settings.output_dir
    after_save = (
        None
        if output is None
        else partial(write_output, output, style=settings.style, dry_run=settings.dry_run, log=log)
    )
    with (
        connect(settings, remote, log) as github,
        spend_on_failure(log, github.spent, warn_percent=settings.budget_warning),
    ):
        where = (
            f"branch {settings.branch} of {github.repository}"
            if on_branch
            else f"the store {settings.store}"
        )

        def change(states: Mapping[DashboardId, DashboardState]) -> Merged:
            removals = prune(states, dashboards=named, backends=backends, rows=rows, where=where)
            return prune_change(states, removals)

        store = open_store(
            settings,
            github,
            log,
            remote={Target.BRANCH} if on_branch else set(),
            message=f"ivy-matrix: prune {_what(named, backends, rows)}",
            after_save=after_save,
        )
        saved = store.update(change)
    _log_removals(log, saved.merged, dry_run=settings.dry_run, whole=not (backends or rows))
    if output is not None and not settings.dry_run:
        log.info(f"{len(saved.output)} file(s) of {output} changed")
    log_spend(log, github.spent(), warn_percent=settings.budget_warning)
    return ExitCode.OK


def _what(named: Sequence[DashboardId], backends: Sequence[str], rows: Sequence[str]) -> str:
    """What a prune removes, for its commit message."""
    if not (backends or rows):
        return f"dashboard(s) {', '.join(d.key for d in named)}"
    parts = (
        f"backend(s) {', '.join(backends)}" if backends else "",
        f"row(s) {', '.join(rows)}" if rows else "",
        f"from {', '.join(d.key for d in named)}" if named else "",
    )
    return "; ".join(part for part in parts if part)


def _log_removals(log: Log, merged: Merged, *, dry_run: bool, whole: bool) -> None:
    """Say what the prune removed (or would remove, in a dry run), dashboard by dashboard."""
    verb = "would remove" if dry_run else "removed"
    gone = {state.key: state for state in merged.removed}
    for key, report in sorted(merged.reports.items()):
        if whole and key in gone:
            state = gone[key]
            log.info(
                f"{verb} dashboard {key}: {len(state.rows)} row(s), "
                f"{len(state.backends)} backend(s), its state, file and index entry"
            )
        else:
            log.info(_partial_line(verb, key, report))


def _partial_line(verb: str, key: str, report: DashboardReport) -> str:
    parts = []
    if report.retired_backends:
        parts.append(f"backend(s) {', '.join(report.retired_backends)}")
    if report.retired_rows:
        parts.append(f"{len(report.retired_rows)} row(s): {', '.join(report.retired_rows)}")
    line = f"{verb} from dashboard {key}: " + "; ".join(parts)
    if report.removed:
        line += "; nothing is left, so the dashboard goes too (state, file and index entry)"
    return line
