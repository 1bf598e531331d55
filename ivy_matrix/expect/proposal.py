"""What the stored default-branch history says the expectation lists should become.

Pure: states and lists in, a :class:`Proposal` out. The lists are keyed by backend, the list
for every backend by :data:`COMMON`. The runs are the store's runs, newest first (the union of
every dashboard's ``runs``); a cell's results are its default-branch results, one per run
(``state/history.py``). The rules (``Rules``: N, M, K; ``rules.py``):

- **Nothing when the scan is incomplete**: no change at all is proposed when the store has
  fewer runs than N, M or K, or when a backend the store holds has no result in the newest run
  (a leg that did not finish would look like every test of it unseen).
- **Additions**: a test (row) whose cell on a backend failed in each of the last N runs
  (N >= 2), with one failure signature in all of them (``results/signature.py``), and that no
  entry of that backend's list or the common list selects. A failure new in the newest run
  alone is never added. The entry is the row's id (``Class::method``); one that would also
  select a row that is not failing so is not added, and the proposal says why.
- **Removals**: an entry whose selected cells on its backend(s) all passed (``success``: a
  non-strict xfail that passed is recorded so; ``flaky`` is not a pass here) in each of the
  last M runs, or that selects no cell with a result in the last K runs.
- **Narrowing**: an entry of the common list whose cells passed in each of the last M runs on
  some backends but not on others that ran it: it leaves the common list and joins the lists of
  the backends where it still does not pass.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ivy_matrix.expect.lists import ExpectationList, Selector, row_id
from ivy_matrix.expect.rules import MIN_ADD_AFTER, Rules
from ivy_matrix.explain.blame import blame_of, describe_blame, streak
from ivy_matrix.model import DashboardId, DashboardState, Outcome
from ivy_matrix.state.history import RunRef, RunResult, run_results

COMMON = ""
_DEFAULT_RULES = Rules()


class Kind(StrEnum):
    """What an edit does to the lists."""

    ADD = "add"
    REMOVE = "remove"
    NARROW = "narrow"


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """One cell behind an edit: its results in the runs the rule looked at, newest first."""

    backend: str
    dashboard: DashboardId
    row: str
    runs: tuple[RunRef, ...] = ()
    outcomes: tuple[Outcome, ...] = ()
    signature: str = ""
    message: str = ""
    first_failure: RunRef | None = None
    blame: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit:
    """One change to the lists: ``backend`` names the list (COMMON: the common one)."""

    kind: Kind
    backend: str
    entry: str
    reason: str
    evidence: tuple[Evidence, ...] = ()
    narrowed_to: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    """The edits, or why none may be made (``refused``), and additions left out (``notes``)."""

    edits: tuple[Edit, ...] = ()
    refused: str = ""
    notes: tuple[str, ...] = field(default=())

    def apply(self, lists: Mapping[str, ExpectationList]) -> dict[str, ExpectationList]:
        """The lists the edits change, as they become (a list not given starts empty)."""
        changed: dict[str, ExpectationList] = {}

        def get(key: str) -> ExpectationList:
            return changed.get(key) or lists.get(key) or ExpectationList()

        for edit in self.edits:
            if edit.kind is Kind.ADD:
                changed[edit.backend] = get(edit.backend).plus([edit.entry])
                continue
            changed[edit.backend] = get(edit.backend).without([edit.entry])
            for backend in edit.narrowed_to:
                changed[backend] = get(backend).plus([edit.entry])
        return {k: v for k, v in changed.items() if v != lists.get(k, ExpectationList())}


@dataclass(frozen=True, slots=True)
class _Cell:
    dashboard: DashboardId
    row: str
    backend: str
    results: Mapping[int, RunResult]
    ordered: tuple[RunResult, ...]


def _cells(states: Iterable[DashboardState], branches: Collection[str]) -> list[_Cell]:
    cells = []
    for state in sorted(states, key=lambda s: s.key):
        for row in state.rows:
            for backend, cell in sorted(row.cells.items()):
                ordered = tuple(run_results(cell.entries, branches))
                by_run = {r.entry.run.run_id: r for r in ordered}
                cells.append(_Cell(state.id, row.name, backend, by_run, ordered))
    return cells


def _evidence(cell: _Cell, window: Sequence[int], *, failing: bool) -> Evidence:
    results = [cell.results[run] for run in window if run in cell.results]
    newest = results[0].entry if results else None
    first = streak(cell.ordered)[0] if failing else None
    blame = blame_of(cell.ordered) if failing else None
    return Evidence(
        backend=cell.backend,
        dashboard=cell.dashboard,
        row=cell.row,
        runs=tuple(RunRef.of(r.entry) for r in results),
        outcomes=tuple(r.outcome for r in results),
        signature=newest.signature if failing and newest else "",
        message=newest.message if failing and newest else "",
        first_failure=None if first is None else RunRef.of(first),
        blame="" if blame is None else describe_blame(blame),
    )


def _passed(cell: _Cell, window: Sequence[int]) -> bool:
    return all(
        run in cell.results and cell.results[run].outcome is Outcome.SUCCESS for run in window
    )


def propose(
    states: Sequence[DashboardState],
    lists: Mapping[str, ExpectationList],
    rules: Rules = _DEFAULT_RULES,
    *,
    branches: Collection[str] = (),
) -> Proposal:
    """The edits the history asks for (module docstring); ``lists`` by backend (COMMON: the
    common list)."""
    if rules.add_after < MIN_ADD_AFTER:
        return Proposal(
            refused=f"additions need at least {MIN_ADD_AFTER} runs: one failure is not a pattern"
        )
    runs = sorted({run for state in states for run in state.runs}, reverse=True)
    if len(runs) < rules.runs_needed:
        return Proposal(
            refused=f"the store holds {len(runs)} run(s); the rules look at the last "
            f"{rules.runs_needed}, so nothing is proposed until it has them"
        )
    cells = _cells(states, branches)
    backends = sorted({cell.backend for cell in cells})
    newest = runs[0]
    ran = {cell.backend for cell in cells if newest in cell.results}
    missing = [b for b in backends if b not in ran]
    if missing:
        return Proposal(
            refused=f"the newest run ({newest}) has no result for backend(s) "
            f"{', '.join(missing)}: an incomplete run is never acted on"
        )
    edits: list[Edit] = []
    for key, listed in sorted(lists.items()):
        edits.extend(_removals(key, listed, cells, backends, runs, rules))
    additions, notes = _additions(cells, backends, lists, runs[: rules.add_after])
    edits.extend(additions)
    return Proposal(edits=tuple(edits), notes=tuple(notes))


def _removals(  # noqa: PLR0917 -- one list's entries against the cells and the runs
    key: str,
    listed: ExpectationList,
    cells: Sequence[_Cell],
    backends: Sequence[str],
    runs: Sequence[int],
    rules: Rules,
) -> list[Edit]:
    edits = []
    scope = backends if key == COMMON else [key]
    recent = runs[: rules.unseen_after]
    window = runs[: rules.remove_after]
    for entry in listed.entries:
        selector = Selector.of(entry)
        chosen = [c for c in cells if c.backend in scope and selector.selects(c.dashboard, c.row)]
        seen = [c for c in chosen if any(run in c.results for run in recent)]
        if not seen:
            edits.append(
                Edit(
                    kind=Kind.REMOVE,
                    backend=key,
                    entry=entry,
                    reason=f"no result in the last {len(recent)} runs",
                )
            )
            continue
        passing = sorted(
            b
            for b in scope
            if (bs := [c for c in chosen if c.backend == b]) and all(_passed(c, window) for c in bs)
        )
        if not passing:
            continue
        still = sorted({c.backend for c in seen} - set(passing))
        evidence = tuple(
            _evidence(c, window, failing=False) for c in chosen if c.backend in passing
        )
        reason = f"passed in each of the last {len(window)} runs on {', '.join(passing)}"
        if key == COMMON and still:
            edits.append(
                Edit(
                    kind=Kind.NARROW,
                    backend=key,
                    entry=entry,
                    reason=f"{reason}; still expected to fail on {', '.join(still)}",
                    evidence=evidence,
                    narrowed_to=tuple(still),
                )
            )
        elif not still:
            edits.append(
                Edit(kind=Kind.REMOVE, backend=key, entry=entry, reason=reason, evidence=evidence)
            )
    return edits


def _additions(
    cells: Sequence[_Cell],
    backends: Sequence[str],
    lists: Mapping[str, ExpectationList],
    window: Sequence[int],
) -> tuple[list[Edit], list[str]]:
    edits: list[Edit] = []
    notes: list[str] = []
    for backend in backends:
        selectors = [
            Selector.of(e)
            for key in (backend, COMMON)
            for e in (lists[key].entries if key in lists else ())
        ]
        mine = [c for c in cells if c.backend == backend]
        failing: dict[str, list[_Cell]] = {}
        for cell in mine:
            results = [cell.results.get(run) for run in window]
            if not all(r is not None and r.outcome is Outcome.FAILURE for r in results):
                continue
            if len({r.entry.signature for r in results if r is not None}) != 1:
                continue
            if any(s.selects(cell.dashboard, cell.row) for s in selectors):
                continue
            failing.setdefault(row_id(cell.row), []).append(cell)
        for entry, chosen in sorted(failing.items()):
            selector = Selector.of(entry)
            others = [c for c in mine if selector.selects(c.dashboard, c.row) and c not in chosen]
            if others:
                notes.append(
                    f"{backend}: {entry} is not added: it would also list "
                    f"{others[0].dashboard.key} {others[0].row}, which does not fail so"
                )
                continue
            edits.append(
                Edit(
                    kind=Kind.ADD,
                    backend=backend,
                    entry=entry,
                    reason=f"failed in each of the last {len(window)} runs with one signature",
                    evidence=tuple(_evidence(c, window, failing=True) for c in chosen),
                )
            )
    return edits, notes
