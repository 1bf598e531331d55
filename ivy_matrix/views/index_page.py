"""The index: every dashboard x backend as passing/total, its totals, the failing tests by kind.

Pure: no I/O. :func:`render_index` draws it from the states; :func:`render_index_page` from each
dashboard's :class:`IndexRow` (what a store keeps so that the index needs no state: the branch's
index file, stores/index.py), with the history sections (history.py) below. The index issue
shares :func:`counts_table` (issues/bodies.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ivy_matrix.escaping import escape_name, markdown_target
from ivy_matrix.explain.grouping import KindCount, dashboard_kinds, kind_counts, kind_line
from ivy_matrix.explain.history_text import (
    SLOWEST_NOTED,
    IndexNotes,
    index_notes,
    render_notes_sections,
)
from ivy_matrix.explain.slowdowns import (
    dashboard_slowdowns,
    describe_slowdown,
    slowest,
)
from ivy_matrix.model import DashboardState
from ivy_matrix.state.durations import rounded
from ivy_matrix.state.history import DEFAULT_SECTION_LIMIT, dashboard_history
from ivy_matrix.state.paths import dashboard_file
from ivy_matrix.state.totals import backend_totals
from ivy_matrix.views.tables import table


def backend_counts(state: DashboardState) -> dict[str, tuple[int, int]]:
    """Per backend: (passing, total) tests; skipped tests count in neither, flaky ones pass."""
    return {name: (t.passing, t.total) for name, t in backend_totals(state).items()}


def counts_table(
    states: Sequence[DashboardState],
    link: Callable[[DashboardState], str | None],
    *,
    link_counts: bool = False,
    total: bool = False,
) -> tuple[list[str], list[list[str]]]:
    """The passing/total table: its header, and a row per dashboard, per backend.

    Backends are in first-seen order over ``states``; a dashboard's name links to
    ``link(state)`` when that is not None, and so do its counts with ``link_counts``. With
    ``total``, a last row adds up every dashboard per backend (totals.py).
    """
    rows = [(state.key, backend_counts(state), link(state)) for state in states]
    return _counts_rows(rows, link_counts=link_counts, total=total)


def _counts_rows(
    dashboards: Sequence[tuple[str, Mapping[str, tuple[int, int]], str | None]],
    *,
    link_counts: bool,
    total: bool = False,
) -> tuple[list[str], list[list[str]]]:
    """:func:`counts_table` from each dashboard's key, counts by backend and link."""
    backends: dict[str, None] = {}
    for _, counts, _ in dashboards:
        backends.update(dict.fromkeys(counts))
    rows = []
    # Passing and total add up over dashboards, as totals.add_totals adds a backend's totals.
    sums = {backend: [0, 0] for backend in backends}
    for key, counts, url in dashboards:
        target = markdown_target(url) if url else None
        cells = []
        for backend in backends:
            if backend not in counts:
                cells.append("")
                continue
            passing, of = counts[backend]
            sums[backend][0] += passing
            sums[backend][1] += of
            text = f"{passing}/{of}"
            cells.append(f"[{text}]({target})" if link_counts and target else text)
        name = escape_name(key)
        rows.append([f"[{name}]({target})" if target else name, *cells])
    if total and dashboards:
        rows.append(["**all dashboards**", *(f"**{p}/{t}**" for p, t in sums.values())])
    return ["dashboard", *(escape_name(b) for b in backends)], rows


INDEX_INTRO = (
    "# Test dashboards\n\n"
    "Passing/total tests per backend, by each test's latest result; a pass after reruns "
    "counts as passing, skipped tests count in neither.\n\n"
)


def _index_top(
    header: Sequence[str], rows: Sequence[Sequence[str]], kinds: Iterable[KindCount], trend: str
) -> str:
    """The index's intro, its table, the failing tests by how their backends share the
    failure ("Failing tests across backends: 3 shared failures, 12 jax-only", grouping.py)
    and ``trend``."""
    said = kind_line(kind_counts(kinds))
    return "".join(
        (
            INDEX_INTRO,
            table(header, rows),
            "\n",
            f"\nFailing tests across backends: {said}.\n" if said else "",
            f"\n{trend}" if trend else "",
        )
    )


def render_index(
    states: Sequence[DashboardState],
    link: Callable[[DashboardState], str],
    *,
    trend: str = "",
) -> str:
    """The index page: each dashboard x backend as passing/total, linked to the dashboard,
    with a last row of the totals per backend; the failing tests by kind
    (:func:`_index_top`); then ``trend`` (charts.trend_section)."""
    header, rows = counts_table(states, link, link_counts=True, total=True)
    return _index_top(header, rows, (c for s in states for c in dashboard_kinds(s)), trend)


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexRow:
    """What the index page shows of one dashboard: its key, its page (relative to the index),
    its passing/total counts by backend (display order), its history lines and its failing
    rows by kind (grouping.py)."""

    key: str
    path: str
    counts: Mapping[str, tuple[int, int]]
    notes: IndexNotes
    kinds: tuple[KindCount, ...] = ()


def index_row(state: DashboardState) -> IndexRow:
    """The index's row of a dashboard (:func:`render_index_page` draws them)."""
    return IndexRow(
        key=state.key,
        path=dashboard_file(state),
        counts=backend_counts(state),
        notes=with_duration_notes(index_notes(dashboard_history(state)), state),
        kinds=dashboard_kinds(state),
    )


def with_duration_notes(
    notes: IndexNotes, state: DashboardState, *, limit: int = DEFAULT_SECTION_LIMIT
) -> IndexNotes:
    """``notes`` with what the index's "Slower" and "Slowest" sections show of a dashboard:
    its cells that got slower, each backend's seconds and slowest rows."""
    slower = dashboard_slowdowns(state)
    totals = backend_totals(state)
    return replace(
        notes,
        slower=tuple(describe_slowdown(s) for s in slower[:limit]),
        slower_total=len(slower),
        seconds=tuple((b, rounded(t.seconds)) for b, t in totals.items() if t.timed),
        slowest=tuple(
            (backend, rounded(cell.seconds), cell.row, cell.url)
            for backend, cells in slowest([state], limit=SLOWEST_NOTED).items()
            for cell in cells
        ),
    )


def render_index_page(rows: Sequence[IndexRow], *, trend: str = "") -> str:
    """The index page of the output folder and the branch, from each dashboard's row (in key
    order): the counts table with its totals, the failing tests by kind, ``trend``
    (charts.trend_section), then the history sections (history.py), as :func:`render_index`
    and the sections draw them."""
    ordered = sorted(rows, key=lambda row: row.key)
    header, cells = _counts_rows(
        [(row.key, row.counts, row.path) for row in ordered], link_counts=True, total=True
    )
    page = _index_top(header, cells, (c for row in ordered for c in row.kinds), trend)
    paths = {row.key: row.path for row in ordered}
    sections = render_notes_sections([(row.key, row.notes) for row in ordered], paths.__getitem__)
    return f"{page}\n{sections.rstrip()}\n" if sections else page
