"""The store's change for an update: its results folded into the states a store reads.

I/O only through the log (a local run's number is said once). The change itself is pure: a
store calls it with the states it read, and again with newer ones when a compare-and-swap
failed. :func:`scope_of` says what the update touches, so that the branch store reads only
that.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from ivy_matrix.commands.job_links import Links
from ivy_matrix.config.options import Target
from ivy_matrix.config.settings import Settings
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.results.cells import Collected
from ivy_matrix.results.signature import Signer
from ivy_matrix.runner.log import Log
from ivy_matrix.state.fold import Merged, held_backends, held_runs, merge_batches
from ivy_matrix.stores import Change

if TYPE_CHECKING:
    from ivy_matrix.stores.layout import PartialChange, Scope

BACKENDS_NAMED = 8  # missing backends a warning names


def scope_of(
    settings: Settings, results: Collected, collected: Collected, links: Links, log: Log
) -> Scope | None:
    """What this update touches, for the branch store: it then reads only that.
    ``results``: the JUnit results (the change adds the leg files' through ``links``);
    ``collected``: with the leg files'."""
    from ivy_matrix.stores.layout import Scope  # noqa: PLC0415  -- without the branch target, none of it is needed

    if settings.run_id is None or Target.BRANCH not in settings.targets:
        return None
    return Scope(
        dashboards=frozenset(collected.dashboards),
        change=_partialchange_of(settings, results, links, log),
        retire_after_runs=settings.retire_after_runs,
    )


def change_of(
    settings: Settings,
    collected: Collected,
    links: Links,
    log: Log,
    *,
    announce: bool = False,
    once: bool = False,
) -> Change:
    """The store's change: fold this update's results into the states it reads (pure).
    With ``announce`` (the change a store records), a local run's number is said once. With
    ``once`` (for a store that calls its change once: ``Store.changes_once``), each
    dashboard's cells leave ``collected`` as they are folded, so that its new state takes
    their place instead of sitting beside them; a second call is refused."""
    partial = _partialchange_of(settings, collected, links, log, announce=announce, once=once)
    return lambda states: partial(states, ())


def _partialchange_of(
    settings: Settings,
    collected: Collected,
    links: Links,
    log: Log,
    *,
    announce: bool = False,
    once: bool = False,
) -> PartialChange:
    """This update's results folded into the states given, the runs of the store's other
    dashboards counting in the retirement window (pure but for ``once``: change_of).

    Each dashboard's batch is built as it is merged and dropped after, so that the batches
    are never all held at once, nor while the store renders and writes (a retried branch
    commit builds them again).
    """
    said: list[int] = []
    folded: list[bool] = []  # with ``once``: whether the cells were folded (and let go)

    signer = Signer(aliases=settings.backend_aliases)

    def change(states: Mapping[DashboardId, DashboardState], other_runs: Collection[int]) -> Merged:
        if once:
            if folded:
                raise RuntimeError("this update's results are folded once only, and they were")
            folded.append(True)
        run_id = settings.run_id
        if run_id is None:
            # Not on GitHub Actions: number local runs after everything the store has seen.
            run_id = max(held_runs(states), default=0) + 1
            if announce and run_id not in said:
                said.append(run_id)
                log.info(f"no run id given: recording these results as local run {run_id}")
                _warn_partial_run(settings, collected, states, run_id, log)
        return merge_batches(
            states,
            links.batches(collected, run_id, signer, take=once),
            history=settings.history,
            retire_after_runs=settings.retire_after_runs,
            other_runs=other_runs,
        )

    return change


def _warn_partial_run(
    settings: Settings,
    collected: Collected,
    states: Mapping[DashboardId, DashboardState],
    run_id: int,
    log: Log,
) -> None:
    """A local run that brings only some of the store's backends is a run of its own in the
    trend, where the others did not run: say so, and how to record them as one run."""
    brought = set(collected.backends)
    missing = sorted(set(held_backends(states)) - brought)
    if not brought or not missing:
        return
    shown = ", ".join(missing[:BACKENDS_NAMED]) + (", ..." if len(missing) > BACKENDS_NAMED else "")
    log.warning(
        f"local run {run_id} brings {len(brought)} of the store's "
        f"{len(brought) + len(missing)} backends (not {shown}): the trend counts it as a run "
        f"of its own, in which those did not run. Give every backend's result files to one "
        f"update ({settings.named('backend_from_path')} 'results/(?P<backend>[^/]+)/'), or "
        f"give the updates of one run the same {settings.named('run_id')}"
    )
