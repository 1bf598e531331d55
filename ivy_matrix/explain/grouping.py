"""Cross-backend grouping: is a failing test one error on every backend, or a backend's own?

Pure: no I/O. For each row (a test) with a failing backend, its failing backends are grouped by
their failure line's signature (signature.py: lines that differ only in backend names, numbers,
addresses, quoted values and paths share one) and the row is classified, the first that
applies:

- **divergent**: its failing backends have different signatures (a failure without a message
  counts as a signature of its own, ``""``);
- **backend-specific**: one signature, and some backend passed (a pass after reruns passes),
  or only one backend fails and no other ran: the error is that backend's;
- **shared**: one signature on every backend that ran (at least two), none passed: one bug in
  the code every backend runs.

Skipped backends, and backends with no result, did not run. Across rows each signature is
ranked by the cells it fails (most first), then the backends it reaches, then first seen; the
failures without a message come last. A signature's **kind** is the kind most of its rows
have (a tie goes to shared, then backend-specific). The JSON outputs list them as
``signatures: [{signature, message, cells, backends, tests, kind}]`` (:func:`signatures_json`).

Used by ``compare --json`` (pr/verdicts.py, on the pull request's results), the summary JSON
(targets/summary.py), the index page (render.py, :func:`kind_line`: "3 shared failures, 12
jax-only, 1 divergent") and the site (site/build.py), on each cell's newest result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ivy_matrix.escaping import escape_name
from ivy_matrix.jsonshape import expect_int, expect_list, expect_str
from ivy_matrix.model import DashboardState, Outcome


class Kind(StrEnum):
    """How a failing row's backends share its failure (module docstring), in tie-break order."""

    SHARED = "shared"
    BACKEND_SPECIFIC = "backend-specific"
    DIVERGENT = "divergent"


_PASSING = frozenset({Outcome.SUCCESS, Outcome.FLAKY})
_RANK = {kind: index for index, kind in enumerate(Kind)}


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendResult:
    """One backend's newest result of a row: its outcome, failure line and signature."""

    backend: str
    outcome: Outcome
    message: str = ""
    signature: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RowGroups:
    """A failing row: where it is, its kind, its failing backends' results (in the order
    given) and the backends that passed."""

    dashboard: str
    row: str
    kind: Kind
    failing: tuple[BackendResult, ...]
    passing: tuple[str, ...] = ()

    @property
    def by_signature(self) -> dict[str, tuple[str, ...]]:
        """Each signature of the row with its failing backends, in the order they came."""
        found: dict[str, list[str]] = {}
        for result in self.failing:
            found.setdefault(result.signature, []).append(result.backend)
        return {signature: tuple(backends) for signature, backends in found.items()}


def classify(results: Iterable[BackendResult]) -> Kind | None:
    """The kind of a row from its backends' results (module docstring); None: nothing fails."""
    results = list(results)
    failing = [r for r in results if r.outcome is Outcome.FAILURE]
    if not failing:
        return None
    if len({r.signature for r in failing}) > 1:
        return Kind.DIVERGENT
    if len(failing) == 1 or any(r.outcome in _PASSING for r in results):
        return Kind.BACKEND_SPECIFIC
    return Kind.SHARED


def group_row(dashboard: str, row: str, results: Sequence[BackendResult]) -> RowGroups | None:
    """The row's groups, or None when none of its backends fails."""
    kind = classify(results)
    if kind is None:
        return None
    return RowGroups(
        dashboard=dashboard,
        row=row,
        kind=kind,
        failing=tuple(r for r in results if r.outcome is Outcome.FAILURE),
        passing=tuple(r.backend for r in results if r.outcome in _PASSING),
    )


def state_groups(state: DashboardState) -> list[RowGroups]:
    """The failing rows of a dashboard by each cell's newest result, backends in display
    order."""
    found = []
    names = state.backend_names
    for row in state.rows:
        cells = row.cells
        results = []
        for name in names:
            cell = cells.get(name)
            if cell is not None:
                latest = cell.latest
                results.append(
                    BackendResult(
                        backend=name,
                        outcome=latest.outcome,
                        message=latest.message,
                        signature=latest.signature,
                    )
                )
        grouped = group_row(state.key, row.name, results)
        if grouped is not None:
            found.append(grouped)
    return found


def dashboard_kinds(state: DashboardState) -> tuple[KindCount, ...]:
    """A dashboard's failing rows by kind, by each cell's newest result (the index's line)."""
    return kind_counts(state_groups(state))


# ----------------------------------------------------------------------------- signatures


@dataclass(frozen=True, slots=True, kw_only=True)
class SignatureGroup:
    """One signature across rows: its first line, the failing cells and tests it has, the
    backends it reaches (first seen first) and its kind."""

    signature: str
    message: str
    cells: int
    backends: tuple[str, ...]
    tests: int
    kind: Kind

    def to_json(self) -> dict[str, object]:
        return {
            "signature": self.signature,
            "message": self.message,
            "cells": self.cells,
            "backends": list(self.backends),
            "tests": self.tests,
            "kind": self.kind.value,
        }


def rank_signatures(rows: Iterable[RowGroups]) -> list[SignatureGroup]:
    """Every signature of ``rows``, ranked (module docstring)."""
    messages: dict[str, str] = {}
    cells: Counter[str] = Counter()
    backends: dict[str, dict[str, None]] = {}
    kinds: dict[str, Counter[Kind]] = {}
    for row in rows:
        for result in row.failing:
            signature = result.signature
            if not messages.get(signature):
                messages[signature] = result.message
            cells[signature] += 1
            backends.setdefault(signature, {})[result.backend] = None
        for signature in row.by_signature:
            kinds.setdefault(signature, Counter())[row.kind] += 1
    order = {signature: index for index, signature in enumerate(messages)}
    groups = [
        SignatureGroup(
            signature=signature,
            message=message,
            cells=cells[signature],
            backends=tuple(backends[signature]),
            tests=sum(kinds[signature].values()),
            kind=min(kinds[signature], key=lambda k: (-kinds[signature][k], _RANK[k])),
        )
        for signature, message in messages.items()
    ]
    groups.sort(key=lambda g: (g.signature == "", -g.cells, -len(g.backends), order[g.signature]))
    return groups


def signatures_json(rows: Iterable[RowGroups]) -> list[dict[str, object]]:
    """The ``signatures`` list of the JSON outputs."""
    return [group.to_json() for group in rank_signatures(rows)]


# ----------------------------------------------------------------------------- the index


@dataclass(frozen=True, slots=True, kw_only=True)
class KindCount:
    """How many failing rows have one kind; for backend-specific ones, per set of failing
    backends (``backends``; empty for the other kinds)."""

    kind: Kind
    backends: tuple[str, ...]
    rows: int


def kind_counts(rows: Iterable[RowGroups | KindCount]) -> tuple[KindCount, ...]:
    """The rows (or counts, added up) by kind: shared first, then backend-specific by rows
    (most first, then by backends), then divergent."""
    counts: Counter[tuple[Kind, tuple[str, ...]]] = Counter()
    for row in rows:
        if isinstance(row, KindCount):
            counts[row.kind, row.backends] += row.rows
        else:
            specific = row.kind is Kind.BACKEND_SPECIFIC
            failing = tuple(sorted({r.backend for r in row.failing})) if specific else ()
            counts[row.kind, failing] += 1
    ordered = sorted(counts.items(), key=lambda item: (_RANK[item[0][0]], -item[1], item[0][1]))
    return tuple(KindCount(kind=k, backends=b, rows=n) for (k, b), n in ordered)


def kind_line(counts: Sequence[KindCount]) -> str:
    """ "3 shared failures, 12 jax-only, 1 divergent" ("" when nothing fails); names escaped
    for markdown."""
    parts = []
    for count in counts:
        if count.kind is Kind.SHARED:
            parts.append(f"{count.rows} shared {'failure' if count.rows == 1 else 'failures'}")
        elif count.kind is Kind.BACKEND_SPECIFIC:
            parts.append(f"{count.rows} {'+'.join(escape_name(b) for b in count.backends)}-only")
        else:
            parts.append(f"{count.rows} divergent")
    return ", ".join(parts)


def kinds_json(counts: Iterable[KindCount]) -> list[list[object]]:
    """Counts by kind as JSON (the index records): ``[[kind, [backends], rows], ...]``."""
    return [[count.kind.value, list(count.backends), count.rows] for count in counts]


def kinds_from_json(value: object) -> tuple[KindCount, ...]:
    """:func:`kinds_json` read back; ValueError when it is not such a list."""
    found = []
    for item in expect_list(value):
        kind, backends, rows = expect_list(item)
        found.append(
            KindCount(
                kind=Kind(expect_str(kind)),
                backends=tuple(expect_str(b) for b in expect_list(backends)),
                rows=expect_int(rows),
            )
        )
    return tuple(found)
