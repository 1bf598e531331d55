"""The commit statuses of a pull request: one per backend and one for all, from its verdicts.

Pure: no I/O. The status target (``pr/status_writer.py``) sets what :func:`desired_statuses`
returns on the commit the results tested (a pull request's head, a merge group's head), so
that branch protection can require a stable check per backend that fails only on what the
pull request broke:

- ``ivy-matrix/<backend>``: ``failure`` when the backend has a ``new`` or ``new-test`` cell
  (pr/verdicts.py), named in the description (``2 new: test_roll, test_tile``); ``success``
  otherwise, whatever failed before the pull request (``no new failures; 5 pre-existing``);
  ``error`` (``no results from this run``) for an expected backend with no result at all: a
  leg that crashed or was cancelled never passes for one that had nothing to fail (fail
  closed);
- ``ivy-matrix``, the aggregate: ``error`` when a backend is ``error``, else ``failure`` when
  one is ``failure``, else ``success``.

A description is one line of at most :data:`DESCRIPTION_LIMIT` characters (GitHub refuses a
longer one with 422): what does not fit is cut between two names, or within the only one,
and ends with "…".
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from enum import StrEnum

from ivy_matrix.github.types import CommitStatus
from ivy_matrix.pr.verdicts import (
    COUNT_ORDER,
    FAILING_VERDICTS,
    NEW_VERDICTS,
    CellVerdict,
    Comparison,
)

CONTEXT = "ivy-matrix"
DESCRIPTION_LIMIT = 140
ELLIPSIS = "\N{HORIZONTAL ELLIPSIS}"
NO_RESULTS = "no results from this run"
SEPARATOR = ", "
# Failing verdicts that are not the pull request's doing: counted in a success's description.
OTHERS = tuple(v for v in COUNT_ORDER if v in FAILING_VERDICTS and v not in NEW_VERDICTS)


class State(StrEnum):
    """The states of a commit status this target sets."""

    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"


def backend_context(backend: str) -> str:
    """The context of ``backend``'s status: ``ivy-matrix/<backend>``."""
    return f"{CONTEXT}/{backend}"


def fit(text: str, limit: int = DESCRIPTION_LIMIT) -> str:
    """``text`` on one line in at most ``limit`` characters: cut after the last whole item of
    a ``, `` list that fits (``3 new: a, b, …``), else within the text, ending with "…"."""
    line = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    if len(line) <= limit:
        return line
    head = line[: limit - len(ELLIPSIS)]
    cut = head.rfind(SEPARATOR)
    if cut > 0:
        return head[: cut + len(SEPARATOR)] + ELLIPSIS
    return head.rstrip() + ELLIPSIS


def _tests(cells: Iterable[CellVerdict]) -> list[str]:
    """The tests (rows) of ``cells``, each once, in the order they come."""
    return list(dict.fromkeys(cell.row for cell in cells))


def _new(cells: Sequence[CellVerdict]) -> str:
    """``2 new: test_roll, test_tile`` (the whole list; :func:`fit` cuts it)."""
    return f"{len(cells)} new: {SEPARATOR.join(_tests(cells))}"


def _others(cells: Sequence[CellVerdict]) -> str:
    """The failing verdicts that are not the pull request's, counted: ``5 pre-existing``."""
    counts = dict.fromkeys(OTHERS, 0)
    for cell in cells:
        if cell.verdict in counts:
            counts[cell.verdict] += 1
    return SEPARATOR.join(f"{n} {v.value}" for v, n in counts.items() if n)


def _backend_status(
    backend: str, cells: Sequence[CellVerdict], *, ran: bool, url: str
) -> CommitStatus:
    context = backend_context(backend)
    if not ran:
        return CommitStatus(
            context=context, state=State.ERROR, description=NO_RESULTS, target_url=url
        )
    new = [c for c in cells if c.verdict in NEW_VERDICTS]
    if new:
        return CommitStatus(
            context=context, state=State.FAILURE, description=fit(_new(new)), target_url=url
        )
    others = _others(cells)
    said = f"no new failures; {others}" if others else "no new failures"
    return CommitStatus(context=context, state=State.SUCCESS, description=fit(said), target_url=url)


def desired_statuses(
    comparison: Comparison,
    *,
    expected: Collection[str] = (),
    target_url: str = "",
    aggregate: bool = True,
) -> tuple[CommitStatus, ...]:
    """The statuses of the backends the results have (in their display order) and of the
    ``expected`` ones they lack (``error``, in name order), then, with ``aggregate``, the
    ``ivy-matrix`` status of them all; each links ``target_url``."""
    ran = comparison.backends
    backends = [*ran, *sorted(set(expected) - set(ran))]
    statuses = [
        _backend_status(
            backend,
            [c for c in comparison.cells if c.backend == backend],
            ran=backend in ran,
            url=target_url,
        )
        for backend in backends
    ]
    if aggregate:
        statuses.append(_aggregate(comparison, statuses, target_url))
    return tuple(statuses)


def _aggregate(comparison: Comparison, statuses: Sequence[CommitStatus], url: str) -> CommitStatus:
    """The ``ivy-matrix`` status: the worst of the backends' (error, failure, success)."""
    start = len(CONTEXT) + 1

    def named(state: State) -> list[str]:
        return [s.context[start:] for s in statuses if s.state == state]

    new = [c for c in comparison.cells if c.verdict in NEW_VERDICTS]
    missing, failing = named(State.ERROR), named(State.FAILURE)
    if missing:
        said = f"no results from {SEPARATOR.join(missing)}"
        if new:
            said += f"; {_new(new)}"
        return CommitStatus(
            context=CONTEXT, state=State.ERROR, description=fit(said), target_url=url
        )
    if failing:
        said = f"{len(new)} new on {SEPARATOR.join(failing)}: {SEPARATOR.join(_tests(new))}"
        return CommitStatus(
            context=CONTEXT, state=State.FAILURE, description=fit(said), target_url=url
        )
    others = _others(comparison.cells)
    said = f"no new failures on {len(statuses)} backend{'' if len(statuses) == 1 else 's'}"
    if others:
        said += f"; {others}"
    return CommitStatus(context=CONTEXT, state=State.SUCCESS, description=fit(said), target_url=url)
