"""The site's index, needs-attention lists and failure groups: what every view but the grid
reads.

Pure: no I/O. They cover every dashboard, so the summary, the needs-attention view and the
failure groups open without loading any dashboard's own file (documents.py). Each view's file
holds what it shows, no more (at most ``ROW_LIMIT`` tests), whatever the store's size:

- ``index``: every dashboard with its row count and, per backend, the ``COLUMN_COUNTS``
  (passing/total now and before the column's newest run, failing, flaky, skipped and missing
  cells, then the failed and total cases where the state has counts); the backends' pass rates
  over the last runs (``trend``: from the store's trend when it has one, else from the results
  the cells keep) and the parity of the runs (rows green on every backend);
- the needs-attention lists (:func:`attention_documents`): ``attention`` (the landing view:
  the first ``GROUP_PREVIEW`` tests of each group) and ``attention/<group>`` (one group
  alone), built from :func:`attention_items`;
- the failure groups (:func:`failure_group_documents`): ``groups`` (every signature's line,
  and a sample of ``GROUP_SAMPLE`` tests of each while ``ROW_LIMIT / 2`` rows last) and
  ``groups/<h>`` (one signature alone, up to ``ROW_LIMIT`` tests; the signatures that start
  with hex digit ``h``, and ``0`` also holds the failures without a message).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ivy_matrix.model import DashboardState, Outcome, Source, Trend
from ivy_matrix.site.cells import LETTERS, CellView, Group, PlacedCell
from ivy_matrix.site.documents import FORMAT, VERSION

TREND_RUNS = 30  # points of each backend's sparkline
SHORT_SHA = 12
# The page's limits (core.js shows what the files hold): table rows on the page at once,
# tests of each attention group on the landing view, tests of each failure group's sample.
ROW_LIMIT = 2000
GROUP_PREVIEW = 200
GROUP_SAMPLE = 20
# The files of single failure groups: one per first hex digit of the signature.
SIGNATURE_SHARDS = "0123456789abcdef"

# The counts of one backend of one dashboard, in this order in the index (docs/site.md).
COLUMN_COUNTS = (
    "passing",
    "total",
    "previous_passing",
    "previous_total",
    "failures",
    "flaky",
    "skipped",
    "missing",
    "cases_failed",
    "cases",
)


def _tally(outcome: Outcome | None) -> tuple[int, int]:
    """(passing, total) of one cell, as the index counts: skipped in neither, flaky passes."""
    if outcome is None or outcome is Outcome.SKIPPED:
        return 0, 0
    return (0 if outcome is Outcome.FAILURE else 1), 1


def _previous(view: CellView, newest_run: int) -> Outcome | None:
    """The cell's outcome before its column's newest run (None: it had no result then)."""
    results = view.results
    if results and results[0].entry.run.run_id == newest_run:
        return results[1].outcome if len(results) > 1 else None
    return view.status


def column_counts(state: DashboardState, placed: Sequence[PlacedCell]) -> dict[str, list[int]]:
    """Per backend, the ``COLUMN_COUNTS`` of the dashboard's cells."""
    newest: dict[str, int] = {}
    for item in placed:
        if item.view.results:
            run = item.view.results[0].entry.run.run_id
            newest[item.backend] = max(run, newest.get(item.backend, run))
    counts = {backend: [0] * len(COLUMN_COUNTS) for backend in state.backend_names}
    for item in placed:
        tally = counts[item.backend]
        status = item.view.status
        passing, total = _tally(status)
        before_passing, before_total = _tally(_previous(item.view, newest.get(item.backend, -1)))
        cases = item.view.latest.counts
        for i, value in enumerate(
            (
                passing,
                total,
                before_passing,
                before_total,
                status is Outcome.FAILURE,
                status is Outcome.FLAKY,
                status is Outcome.SKIPPED,
                0,
                0 if cases is None else cases.failed,
                0 if cases is None else cases.total,
            )
        ):
            tally[i] += value
    for backend, tally in counts.items():
        tally[7] = sum(backend not in row.cells for row in state.rows)
    return counts


def attention_items(
    index: int, placed: Iterable[PlacedCell], messages: dict[str, str]
) -> list[list[object]]:
    """The cells of dashboard number ``index`` that need a look, in display order; the first
    failure line of each signature goes into ``messages``."""
    items: list[list[object]] = []
    for item in placed:
        view = item.view
        if view.group is None:
            continue
        signature = view.latest.signature
        if signature:
            messages.setdefault(signature, view.latest.message)
        items.append(
            [
                index,
                item.row.name,
                item.backend,
                view.group.value,
                LETTERS[view.status],
                view.history.runs,
                signature,
            ]
        )
    return items


def attention_documents(
    items: Sequence[Sequence[object]], messages: Mapping[str, str]
) -> dict[str, dict[str, object]]:
    """The needs-attention views' documents by name, from :func:`attention_items`: the
    landing view's (``attention``) and each group's alone (``attention/<group>``).

    Each holds ``counts`` (per group: its tests and its signatures), ``groups`` (per group,
    its signatures, most tests first, each ``[signature, tests, [[dashboard number, test,
    [[backend, status letter, failing runs], ...]], ...]]``, as far as the view shows them) and
    ``messages`` (the line of each signature listed).
    """
    by_group: dict[str, dict[str, dict[tuple[int, str], list[list[object]]]]] = {}
    for number, row, backend, group, letter, runs, signature in items:
        tests = by_group.setdefault(str(group), {}).setdefault(str(signature or ""), {})
        tests.setdefault((int(str(number)), str(row)), []).append([backend, letter, runs])
    counts = {
        group.value: [
            sum(len(tests) for tests in by_group.get(group.value, {}).values()),
            len(by_group.get(group.value, {})),
        ]
        for group in Group
    }

    def document(only: str | None, cap: int) -> dict[str, object]:
        listed: dict[str, list[list[object]]] = {}
        used: set[str] = set()
        for group in Group:
            by_signature = by_group.get(group.value)
            if by_signature is None or only not in (None, group.value):
                continue
            left = cap
            shown: list[list[object]] = []
            for signature in sorted(by_signature, key=lambda s: (-len(by_signature[s]), s)):
                if left <= 0:
                    break
                tests = list(by_signature[signature].items())[:left]
                left -= len(tests)
                used.add(signature)
                shown.append(
                    [
                        signature,
                        len(by_signature[signature]),
                        [[number, row, cells] for (number, row), cells in tests],
                    ]
                )
            listed[group.value] = shown
        return {
            "format": FORMAT,
            "version": VERSION,
            "counts": counts,
            "groups": listed,
            "messages": {s: messages[s] for s in sorted(used) if s in messages},
        }

    documents = {"attention": document(None, GROUP_PREVIEW)}
    for group in Group:
        documents[f"attention/{group.value}"] = document(group.value, ROW_LIMIT)
    return documents


def failure_group_documents(
    items: Sequence[Sequence[object]],
    ranked: Sequence[Mapping[str, object]],
    messages: Mapping[str, str],
) -> dict[str, dict[str, object]]:
    """The failure groups' documents by name: ``groups`` and ``groups/<h>`` (module docstring).

    The failing cells of :func:`attention_items` by signature, ranked as ``ranked`` (the
    signatures' JSON, grouping.py) ranks them, then by tests. Each group is ``[signature,
    line, tests, [backends], kind, [[dashboard number, test, [backends failing]], ...]]``;
    ``groups`` also says how many groups there are (``total``).
    """
    found: dict[str, dict[tuple[int, str], dict[str, None]]] = {}
    backends: dict[str, dict[str, None]] = {}
    for number, row, backend, _group, letter, _runs, signature in items:
        if letter != "f":
            continue
        key = str(signature or "")
        tests = found.setdefault(key, {})
        tests.setdefault((int(str(number)), str(row)), {})[str(backend)] = None
        backends.setdefault(key, {})[str(backend)] = None
    info = {str(s["signature"]): (rank, str(s["kind"])) for rank, s in enumerate(ranked)}
    order = sorted(found, key=lambda s: (info.get(s, (len(info), ""))[0], -len(found[s]), s))

    def entry(signature: str, limit: int) -> list[object]:
        tests = list(found[signature].items())[:limit]
        return [
            signature,
            messages.get(signature, ""),
            len(found[signature]),
            list(backends[signature]),
            info.get(signature, (0, ""))[1],
            [[number, row, list(on)] for (number, row), on in tests],
        ]

    budget = ROW_LIMIT // 2
    overview: list[list[object]] = []
    for signature in order[: ROW_LIMIT // 2]:
        limit = max(0, min(budget, GROUP_SAMPLE))
        budget -= min(limit, len(found[signature]))
        overview.append(entry(signature, limit))
    documents: dict[str, dict[str, object]] = {
        "groups": {"format": FORMAT, "version": VERSION, "total": len(order), "groups": overview}
    }
    for shard in SIGNATURE_SHARDS:
        documents[f"groups/{shard}"] = {
            "format": FORMAT,
            "version": VERSION,
            "groups": [entry(s, ROW_LIMIT) for s in order if shard_of(s) == shard],
        }
    return documents


def shard_of(signature: str) -> str:
    """The ``groups/<h>`` file that holds a signature's group (core.js's rule too)."""
    first = signature[:1]
    return first if first and first in SIGNATURE_SHARDS else "0"


def group_counts(items: Iterable[Sequence[object]]) -> dict[str, int]:
    """How many cells each attention group holds (every group, in display order)."""
    counts = dict.fromkeys((g.value for g in Group), 0)
    for item in items:
        counts[str(item[3])] += 1
    return counts


def trend_document(trend: Trend | None, placed: Iterable[PlacedCell]) -> dict[str, object]:
    """The newest ``TREND_RUNS`` runs: ``runs`` ([run id, commit, time]), ``backends`` (per
    backend a [passing, total] per run, or null for a run without its results) and ``parity``
    ([rows green on every backend, rows that ran on all] per run; absent when unknown).

    From the store's trend when it has points (one per completed run, reaching back as far as
    the store has kept them), else from the results the cells keep.
    """
    if trend is not None and trend.points:
        points = trend.points[-TREND_RUNS:]
        backends: dict[str, list[list[int] | None]] = {}
        for number, point in enumerate(points):
            for backend, tally in point.backends:
                line = backends.setdefault(backend, [None] * len(points))
                line[number] = [tally.passed + tally.flaky, tally.ran] if tally.ran else None
        return {
            "runs": [[p.run, p.sha[:SHORT_SHA], p.time] for p in points],
            "backends": backends,
            "parity": [[p.parity.green, p.parity.rows] for p in points],
            "fails_only": dict(points[-1].parity.fails_only),
        }
    return _trend_of_cells(placed)


def _trend_of_cells(placed: Iterable[PlacedCell]) -> dict[str, object]:
    tallies: dict[str, dict[int, list[int]]] = {}
    runs: dict[int, Source] = {}
    for item in placed:
        per_run = tallies.setdefault(item.backend, {})
        for result in item.view.results:
            run = result.entry.run.run_id
            known = runs.get(run)
            if known is None or result.entry.source.time > known.time:
                runs[run] = result.entry.source
            passing, total = _tally(result.outcome)
            tally = per_run.setdefault(run, [0, 0])
            tally[0] += passing
            tally[1] += total
    shown = sorted(runs)[-TREND_RUNS:]
    return {
        "runs": [[run, runs[run].sha[:SHORT_SHA], runs[run].time] for run in shown],
        "backends": {
            backend: [per_run.get(run) for run in shown] for backend, per_run in tallies.items()
        },
    }
