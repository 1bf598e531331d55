"""The inbox of the branch store: each update's results under a ref of its own, read back,
checked, and merged into the branch.

I/O through a :class:`~ivy_matrix.stores.remote.BranchRemote` (building an object is local over
git). An update that does not commit its results itself (a matrix leg, or a writer that lost
the branch to another) publishes them as one root commit (its dashboards' states merged into
nothing, in layout 2's paths) under ``refs/ivy-matrix/inbox/<branch>/<run>-<size>-<index>-
<tree>``: a ref nobody else writes, created if absent, so publishing never contends and the
same results always get the same name. The commit's message names the job that wrote it
(``holder:``, ``job:``, ``run:``): the fold lease points at it (``stores/lease.py``).

A folder reads every pending object once (kept by commit sha) and checks it: a file that is
not a dashboard state, a state that does not load (garbage, truncated JSON), or one under
another dashboard's path makes the object *bad*: its readable states are still folded, and its
ref is moved aside to ``refs/ivy-matrix/rejected/<branch>/...`` with a warning naming the ref
and the reason, so no bad object stops a run, or any later run, from landing its cells.
Merging results into states is pure (:func:`fold_results`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ivy_matrix.errors import GitHubAPIError, StoreError
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.merge import union_states
from ivy_matrix.state.statefile import dump_state, load_state
from ivy_matrix.stores.layout import (
    BranchLayout,
    Scope,
    dump_runs,
    inbox_prefix,
    inbox_ref,
    lease_ref,
    parse_inbox_ref,
)
from ivy_matrix.stores.remote import BranchRemote

_JOB = re.compile(r"^job: ([0-9]{1,19})$", re.MULTILINE)
_RUN = re.compile(r"^run: ([0-9]{1,19})$", re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pending:
    """The inbox as listed: its result refs (name -> commit, oldest run first), the lease, and
    names that are not ours (moved aside by the next fold)."""

    refs: dict[str, str] = field(default_factory=dict)
    # (run id, matrix size, leg index) of each ref, in the same order.
    legs: tuple[tuple[int, int, int], ...] = ()
    lease: str | None = None
    strays: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Results:
    """What the pending objects hold: their readable states, and why each bad one is bad."""

    states: list[DashboardState]
    bad: dict[str, str]


class Inbox:
    """The inbox of one branch: publish results, list, read and check them."""

    def __init__(
        self, remote: BranchRemote, *, branch: str, layout: BranchLayout, message: str
    ) -> None:
        self.remote = remote
        self.branch = branch
        self.prefix = inbox_prefix(branch)
        self.lease = lease_ref(branch)
        self.layout = layout
        self.message = message
        # Objects read (or written) here: commit sha -> (states, why it is bad or None).
        self._objects: dict[str, tuple[list[DashboardState], str | None]] = {}

    def write(self, scope: Scope) -> tuple[str, str]:
        """Build the object of ``scope``'s results (written locally over git); return (its
        commit, its ref name). Nothing is pushed here."""
        states = list(scope.change({}, ()).to_save().values())
        files = {self.layout.state_path(state.id): dump_state(state) for state in states}
        if scope.matrix is not None:
            leg = scope.matrix
            files[self.layout.legs_path] = dump_runs(
                {leg.run_id: (leg.size, frozenset({leg.index}))}
            )
        tree = self.remote.write_tree(None, files)
        message = (
            f"{self.message} (results)\n\nholder: {scope.holder}\n"
            f"job: {scope.job_id if scope.job_id is not None else ''}\nrun: {scope.run_id}\n"
        )
        commit = self.remote.write_commit(message, tree, [])
        self._objects[commit] = (states, None)
        return commit, inbox_ref(self.branch, scope.run_id, scope.matrix, tree)

    def pending(self, listed: Mapping[str, str]) -> Pending:
        """The inbox in a listing of its prefix (see :class:`Pending`)."""
        refs = {}
        strays = {}
        for ref, sha in listed.items():
            if ref == self.lease:
                continue
            parsed = parse_inbox_ref(self.prefix, ref)
            if parsed is None:
                strays[ref] = sha
            else:
                refs[ref] = (parsed, sha)
        ordered = sorted(refs.items(), key=lambda item: (item[1][0], item[0]))
        return Pending(
            refs={ref: sha for ref, (_, sha) in ordered},
            legs=tuple(parsed for _, (parsed, _) in ordered),
            lease=listed.get(self.lease),
            strays=strays,
        )

    def read(self, refs: Mapping[str, str]) -> Results:
        """The states of every object under ``refs`` (each read and checked once)."""
        states: list[DashboardState] = []
        bad: dict[str, str] = {}
        for ref, sha in refs.items():
            found = self._objects.get(sha)
            if found is None:
                found = self._objects[sha] = self._check(ref, sha)
            states.extend(found[0])
            if found[1] is not None:
                bad[ref] = found[1]
        return Results(states=states, bad=bad)

    def _check(self, ref: str, sha: str) -> tuple[list[DashboardState], str | None]:
        """The readable states of one object, and why it is bad (None: it is not)."""
        layout = self.layout
        try:
            tree = self.remote.tree(sha)
            files = {p: b for p, b in tree.files.items() if p != layout.legs_path}
            texts = self.remote.texts(set(files.values()))
        except GitHubAPIError as error:
            return [], f"its object cannot be read ({error})"
        states: list[DashboardState] = []
        problems: list[str] = []
        for path, blob in sorted(files.items()):
            if not layout.is_state_file(path):
                problems.append(f"{path} is not a dashboard state")
                continue
            try:
                state = load_state(texts[blob], where=f"{path} of {ref}")
            except StoreError as error:
                problems.append(str(error))
                continue
            if path != layout.state_path(state.id):
                problems.append(
                    f"{path} holds dashboard {state.key!r}, whose state belongs in "
                    f"{layout.state_path(state.id)}"
                )
                continue
            states.append(state)
        if not files:
            problems.append("it holds no results")
        return states, "; ".join(problems[:3]) or None


def holder_of(message: str) -> tuple[int | None, int | None]:
    """(job id, run id) named by an inbox object's message (None where it names none)."""
    job = _JOB.search(message)
    run = _RUN.search(message)
    return (int(job.group(1)) if job else None, int(run.group(1)) if run else None)


def fold_results(
    states: Mapping[DashboardId, DashboardState], results: Sequence[DashboardState], history: int
) -> dict[DashboardId, DashboardState]:
    """``states`` with every result merged in (idempotent, order-independent)."""
    folded = dict(states)
    for result in results:
        mine = folded.get(result.id)
        folded[result.id] = result if mine is None else union_states(mine, result, history=history)
    return folded


def own_reports(folded: Merged, own: Merged) -> Merged:
    """``folded`` with the cells, rows and columns this update's results added as ``own`` (its
    read before publishing) counted them, and the fold's retirement kept."""
    reports = dict(folded.reports)
    for key, mine in own.reports.items():
        reports[key] = replace(
            reports.get(key, mine),
            changed_cells=mine.changed_cells,
            new_rows=mine.new_rows,
            new_backends=mine.new_backends,
        )
    return replace(folded, reports=reports)
