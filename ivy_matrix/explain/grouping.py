"""Cross-backend grouping: is a failure one error on several backends, or a backend's own?

Pure: no I/O. For each row (a test) with a failing backend, its failing backends are grouped by
their failure line's signature (signature.py: lines that differ only in backend names, numbers,
addresses, quoted values and paths share one). Each group is classified by what its backends
have in common, not by whether the whole row agrees, the first that applies:

- **backend-specific**: some backend passed (a pass after reruns passes): the error is its
  backends' own ("jax-only", "jax+torch-only");
- **shared**: two or more backends fail with it and none passed: one bug in the code they all
  run, even when another backend fails with an error of its own beside it;
- **backend-specific** too: one backend fails with it, alone, or beside a failure that other
  backends share (a backend that fails every test with one error has its own error, and the
  others' shared failure stays shared);
- **divergent**: one backend fails with it, none passed, and every other failing backend has
  an error of its own too: no two backends agree.

A failure without a message counts as a signature of its own, ``""``. Skipped backends, and
backends with no result, did not run. A row counts once per group: a test that five backends
fail with one error and a sixth with another is one shared failure and one backend-specific; a row whose backends all disagree is one divergent
failure.

Across rows each signature is ranked by the cells it fails (most first), then the backends it
reaches, then first seen; the failures without a message come last. A signature's **kind** is
the kind its groups have most often (a tie goes to shared, then backend-specific). The JSON
outputs list them as ``signatures: [{signature, message, cells, backends, tests, kind}]``
(:func:`signatures_json`).

Used by ``compare --json`` (pr/verdicts.py, on the pull request's results), the summary JSON
(targets/summary.py), the index page (views/index_page.py, :func:`kind_line`: "3 shared
failures, 12 jax-only, 1 divergent") and the site (site/build.py), on each cell's newest
result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ivy_matrix.escaping import escape_name
from ivy_matrix.jsonshape import expect_int, expect_list, expect_str
from ivy_matrix.model import Cell, DashboardState, Outcome


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
    """A failing row: where it is, its failing backends' results (in the order given), the
    backends that passed, and the kind of each of its signatures (module docstring)."""

    dashboard: str
    row: str
    failing: tuple[BackendResult, ...]
    passing: tuple[str, ...] = ()
    kinds: tuple[tuple[str, Kind], ...] = ()

    @property
    def by_signature(self) -> dict[str, tuple[str, ...]]:
        """Each signature of the row with its failing backends, in the order they came."""
        found: dict[str, list[str]] = {}
        for result in self.failing:
            found.setdefault(result.signature, []).append(result.backend)
        return {signature: tuple(backends) for signature, backends in found.items()}

    def kind_of(self, backend: str) -> Kind | None:
        """The kind of the group ``backend`` fails in (None: it does not fail here)."""
        kinds = dict(self.kinds)
        for result in self.failing:
            if result.backend == backend:
                return kinds[result.signature]
        return None


def classify(results: Iterable[BackendResult]) -> dict[str, Kind]:
    """The kind of each signature the row fails with (module docstring); {} when nothing
    fails."""
    results = list(results)
    groups: dict[str, int] = {}
    for result in results:
        if result.outcome is Outcome.FAILURE:
            groups[result.signature] = groups.get(result.signature, 0) + 1
    return _classified(groups, passing=any(r.outcome in _PASSING for r in results))


def _classified(groups: Mapping[str, int], *, passing: bool) -> dict[str, Kind]:
    """The kind of each signature, from how many backends fail with it (``groups``) and
    whether some backend passed."""
    if passing:
        return dict.fromkeys(groups, Kind.BACKEND_SPECIFIC)
    agreeing = any(count > 1 for count in groups.values())
    kinds = {}
    for signature, count in groups.items():
        if count > 1:
            kinds[signature] = Kind.SHARED
        elif agreeing or len(groups) == 1:
            kinds[signature] = Kind.BACKEND_SPECIFIC
        else:
            kinds[signature] = Kind.DIVERGENT
    return kinds


def group_row(dashboard: str, row: str, results: Sequence[BackendResult]) -> RowGroups | None:
    """The row's groups, or None when none of its backends fails."""
    kinds = classify(results)
    if not kinds:
        return None
    return RowGroups(
        dashboard=dashboard,
        row=row,
        failing=tuple(r for r in results if r.outcome is Outcome.FAILURE),
        passing=tuple(r.backend for r in results if r.outcome in _PASSING),
        kinds=tuple(kinds.items()),
    )


def _fails(cells: Mapping[str, Cell]) -> bool:
    """Whether a backend's newest result in ``cells`` is a failure."""
    failure = Outcome.FAILURE
    for held in cells.values():  # noqa: SIM110  -- any() over a generator: 2.5x the time a row
        if held.entries[0].outcome is failure:
            return True
    return False


def state_groups(state: DashboardState) -> list[RowGroups]:
    """The failing rows of a dashboard by each cell's newest result, backends in display
    order."""
    found = []
    names = state.backend_names
    for row in state.rows:
        cells = row.cells
        if not _fails(cells):
            continue  # the usual row: no group (and no result made)
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
    """A dashboard's failures by kind, by each cell's newest result (the index's line): what
    ``kind_counts(state_groups(state))`` counts, from the cells themselves (no result or
    group made), each set of cell objects the failing rows hold (rows alike share them)
    classified once."""
    names = state.backend_names
    counts: Counter[tuple[Kind, tuple[str, ...]]] = Counter()
    found: dict[tuple[int, ...], list[tuple[Kind, tuple[str, ...]]]] = {}
    for row in state.rows:
        cells = row.cells
        if not _fails(cells):
            continue  # the usual row
        key = tuple(map(id, map(cells.get, names)))
        kinds = found.get(key)
        if kinds is None:
            failing: dict[str, list[str]] = {}
            passing = False
            for name in names:
                cell = cells.get(name)
                if cell is not None:
                    latest = cell.entries[0]
                    if latest.outcome is Outcome.FAILURE:
                        failing.setdefault(latest.signature, []).append(name)
                    elif latest.outcome in _PASSING:
                        passing = True
            classified = _classified(
                {signature: len(b) for signature, b in failing.items()}, passing=passing
            )
            kinds = found[key] = _row_kinds(classified.items(), failing)
        counts.update(kinds)
    return _ordered(counts)


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
        for signature, kind in row.kinds:
            kinds.setdefault(signature, Counter())[kind] += 1
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
    """How many failures (a row's group of backends failing with one signature) have one kind;
    for backend-specific ones, per set of failing backends (``backends``; empty for the other
    kinds)."""

    kind: Kind
    backends: tuple[str, ...]
    rows: int


def kind_counts(rows: Iterable[RowGroups | KindCount]) -> tuple[KindCount, ...]:
    """The rows' failures (or counts, added up) by kind: shared first, then backend-specific
    by failures (most first, then by backends), then divergent."""
    counts: Counter[tuple[Kind, tuple[str, ...]]] = Counter()
    for row in rows:
        if isinstance(row, KindCount):
            counts[row.kind, row.backends] += row.rows
        else:
            counts.update(_row_kinds(row.kinds, row.by_signature))
    return _ordered(counts)


def _row_kinds(
    kinds: Iterable[tuple[str, Kind]], by_signature: Mapping[str, Sequence[str]]
) -> list[tuple[Kind, tuple[str, ...]]]:
    """What a failing row counts: each of its signatures' kind (with its failing backends
    when backend-specific), a row whose backends all disagree once as divergent."""
    found: list[tuple[Kind, tuple[str, ...]]] = []
    divergent = False
    for signature, kind in kinds:
        if kind is Kind.BACKEND_SPECIFIC:
            found.append((kind, tuple(sorted(by_signature[signature]))))
        elif kind is Kind.SHARED:
            found.append((kind, ()))
        else:
            divergent = True
    # A row whose backends all disagree is one divergent failure, however many they are.
    if divergent:
        found.append((Kind.DIVERGENT, ()))
    return found


def _ordered(counts: Counter[tuple[Kind, tuple[str, ...]]]) -> tuple[KindCount, ...]:
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
