"""The ``adopt`` command: take an existing dashboard table into the store, cell by cell.

I/O: reads the table file (at most ``readback.MAX_ADOPT_BYTES``, UTF-8), reads it back into a
dashboard's state (readback.py, pure) and stores it through the same ``store.update`` as
``update``, in the store commands/choose_store.py picks (the local folder, or with the branch
target the dashboard branch). A dashboard that already has state is replaced only with
``--force``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ivy_matrix.commands.choose_store import connect, open_store
from ivy_matrix.config.options import Target
from ivy_matrix.config.settings import Settings, parse_dashboard
from ivy_matrix.errors import ExitCode, InputError
from ivy_matrix.github.connection import Remote
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.runner.log import Log
from ivy_matrix.state.fold import Merged
from ivy_matrix.targets.summary import log_spend, spend_on_failure
from ivy_matrix.views.readback import MAX_ADOPT_BYTES, absurd_links, adopt_table


def read_table(file: Path) -> str:
    """The text of the table file; :class:`InputError` naming it when it cannot be adopted."""
    try:
        with file.open("rb") as handle:
            data = handle.read(MAX_ADOPT_BYTES + 1)
        if len(data) > MAX_ADOPT_BYTES:
            raise InputError(
                f"cannot adopt {file}: it is larger than {MAX_ADOPT_BYTES} bytes, "
                f"the most adopt reads"
            )
        return data.decode("utf-8-sig")
    except OSError as error:
        raise InputError(f"cannot read {file}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise InputError(f"cannot adopt {file}: it is not UTF-8 text ({error.reason})") from None


def run_adopt(
    settings: Settings,
    log: Log,
    remote: Remote | None = None,
    *,
    dashboard: str,
    file: Path,
    force: bool,
) -> ExitCode:
    """Run ``ivy-matrix adopt``: store the table in ``file`` as ``dashboard``'s state."""
    dashboard_id: DashboardId = parse_dashboard(dashboard)
    state = adopt_table(read_table(file), dashboard_id)
    for line in absurd_links(state):
        log.warning(f"adopting {file} as {dashboard_id.key}: {line}")
    cells = sum(len(row.cells) for row in state.rows)
    summary = f"{len(state.rows)} rows, {len(state.backends)} backends, {cells} cells"
    on_branch = Target.BRANCH in settings.targets
    where = f"on branch {settings.branch}" if on_branch else f"in {settings.store}"
    replace = "pass --force to replace it" + ("" if on_branch else f" with {file}")

    def change(states: Mapping[DashboardId, DashboardState]) -> Merged:
        if state.id in states and not force:
            raise InputError(f"dashboard {state.key!r} already has state {where}; {replace}")
        return Merged(states={**states, state.id: state}, changed=(state.key,))

    with (
        connect(settings, remote, log) as github,
        spend_on_failure(log, github.spent, warn_percent=settings.budget_warning),
    ):
        store = open_store(
            settings,
            github,
            log,
            remote={Target.BRANCH} if on_branch else set(),
            message=f"ivy-matrix: adopt {state.key}",
            after_save=None,
        )
        store.update(change)
    if not settings.dry_run:
        shown = " on the branch" if on_branch else ""
        log.info(f"adopted {file} as dashboard {dashboard_id.key}{shown}: {summary}")
    log_spend(log, github.spent(), warn_percent=settings.budget_warning)
    return ExitCode.OK
