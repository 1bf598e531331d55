"""Projections of dashboard state: the Ivy table, a compact table and the index page.

Pure: no I/O. The Ivy style is exactly what Ivy's dashboards held, byte for byte::

    tabulate(rows, headers=["", *backends], tablefmt="pipe", stralign="left")

with each filled cell a link around a shields.io badge. Names are escaped so that no test or
backend name can end a cell, start HTML, mention a user or break a line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ivy_matrix.blame import render_issue_section
from ivy_matrix.charts import PARITY_FILE, PASS_RATE_FILE, parity_svg, pass_rate_svg, trend_section
from ivy_matrix.escaping import IVY_NO_LINK, escape_name, escape_url, safe_link
from ivy_matrix.grouping import KindCount, dashboard_kinds, kind_counts, kind_line
from ivy_matrix.history import (
    IndexNotes,
    dashboard_history,
    index_notes,
    render_notes_sections,
)
from ivy_matrix.model import DashboardState, Entry, Outcome, Totals, Trend
from ivy_matrix.paths import INDEX_NAME, dashboard_file
from ivy_matrix.totals import backend_totals
from ivy_matrix.trend import TREND_NAME, dump_trend


class Style(StrEnum):
    """How dashboard cells are drawn."""

    IVY = "ivy"
    COMPACT = "compact"


BADGE_COLORS = {
    Outcome.SUCCESS: "success",
    Outcome.FAILURE: "red",
    Outcome.SKIPPED: "lightgrey",
    Outcome.FLAKY: "yellow",
}
BADGE = "<img src=https://img.shields.io/badge/-{label}-{color}>"
LINK = '<a href="{url}" rel="noopener noreferrer" target="_blank">{inner}</a>'

COMPACT_SYMBOLS = {
    Outcome.SUCCESS: "✅",
    Outcome.FAILURE: "❌",
    Outcome.SKIPPED: "⏭️",
    Outcome.FLAKY: "🔁",
}


def badge(outcome: Outcome) -> str:
    """The shields.io badge of an outcome, in Ivy's style."""
    return BADGE.format(label=outcome.value, color=BADGE_COLORS[outcome])


def ivy_cell(entry: Entry) -> str:
    """One cell in Ivy's style: a link to the job around a badge (just the badge without one)."""
    inner = badge(entry.outcome)
    url = entry.source.url
    if url != IVY_NO_LINK:
        url = safe_link(url)
    return LINK.format(url=escape_url(url), inner=inner) if url else inner


def compact_cell(entry: Entry) -> str:
    """One cell as an emoji; only cells that need a look get a link. A partly failing cell
    (some of its cases failed, some did not) says how many: ``[❌ 44/256](URL)``."""
    symbol = COMPACT_SYMBOLS[entry.outcome]
    counts = entry.counts
    if entry.outcome is Outcome.FAILURE and counts is not None and counts.partly_failing:
        symbol = f"{symbol} {counts.failed}/{counts.total}"
    url = safe_link(entry.source.url)
    if entry.outcome in {Outcome.SUCCESS, Outcome.SKIPPED} or not url:
        return symbol
    return f"[{symbol}]({escape_url(url).replace(')', '%29')})"


def _plain(texts: Iterable[str]) -> bool:
    # Printable ASCII: one character is one column, so widths need no wcwidth. Joined first:
    # two checks in C over one string instead of two calls per cell.
    joined = "".join(texts)
    return joined.isascii() and joined.isprintable()


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A pipe table exactly as Ivy's dashboards had it (no trailing newline).

    That is ``tabulate(rows, headers, tablefmt="pipe", stralign="left", disable_numparse=True)``
    byte for byte. Tables of printable ASCII (every Ivy-style table) are laid out here directly,
    which is several times faster than tabulate for the tens of thousands of rows of a large
    dashboard; anything else goes through tabulate itself, which measures wide characters.
    The tests hold the two to the same bytes.
    """
    body = [list(row) for row in rows]
    heads = list(header)
    # Each column's distinct texts: a column of badges has a handful, however many rows.
    columns = [set(column) for column in zip(*body, strict=True)] if body else []
    distinct = set(heads).union(*columns)
    if any(c[:1].isspace() or c[-1:].isspace() for c in distinct):
        # tabulate strips the cells (not the headers).
        body = [[cell.strip() for cell in row] for row in body]
        columns = [set(column) for column in zip(*body, strict=True)]
        distinct = set(heads).union(*columns)
    if not body or not _plain(distinct):
        # tabulate measures wide characters, and draws a table with no rows without alignment
        # colons. disable_numparse: a backend called 3.10 must not become 3.1.
        from tabulate import tabulate  # noqa: PLC0415  -- 40 ms of start-up, rarely needed

        return tabulate(
            body, headers=heads, tablefmt="pipe", stralign="left", disable_numparse=True
        )
    # A column is as wide as its widest cell, and its header plus tabulate's padding of 2.
    widths = [max(len(h) + 2, *map(len, column)) for h, column in zip(heads, columns, strict=True)]
    line = "| " + " | ".join(f"{{:<{w}}}" for w in widths) + " |"
    lines = [line.format(*heads), "|" + "|".join(":" + "-" * (w + 1) for w in widths) + "|"]
    lines.extend(line.format(*row) for row in body)
    return "\n".join(lines)


def compact_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A pipe table without padding: what GitHub renders the same, in far fewer characters.

    Padding every cell to its column's widest (one failing cell's link) would multiply the
    size of a large compact table, which is meant for bodies with a size limit.
    """
    lines = [
        "| " + " | ".join(h.strip() for h in header) + " |",
        "|" + "|".join(":--" for _ in header) + "|",
    ]
    lines.extend("| " + " | ".join(c.strip() for c in row) + " |" for row in rows)
    return "\n".join(lines)


def render_dashboard(state: DashboardState, style: Style = Style.IVY) -> str:
    """The dashboard table: one row per test, one column per backend, in first-seen order."""
    draw: Callable[[Entry], str] = ivy_cell if style is Style.IVY else compact_cell
    backends = state.backend_names
    # Rows share cell objects, and cells share entries (one per job and outcome): each is
    # drawn once. A hot loop: one pass over every cell of the dashboard.
    by_cell: dict[int, str] = {}
    by_entry: dict[int, str] = {}
    # A cell's text is its outcome, its job's link and (compact, partly failing) its counts:
    # entries differing only in their failure line draw the same.
    by_look: dict[tuple[object, ...], str] = {}
    body = []
    for row in state.rows:
        cells = row.cells
        line = [escape_name(row.name)]
        for backend in backends:
            cell = cells.get(backend)
            if cell is None:
                line.append("")
                continue
            text = by_cell.get(id(cell))
            if text is None:
                entry = cell.entries[0]
                text = by_entry.get(id(entry))
                if text is None:
                    look = (entry.outcome, entry.source.url, entry.counts)
                    text = by_look.get(look)
                    if text is None:
                        text = by_look[look] = draw(entry)
                    by_entry[id(entry)] = text
                by_cell[id(cell)] = text
            line.append(text)
        body.append(line)
    header = ["", *(escape_name(b) for b in backends)]
    return table(header, body) if style is Style.IVY else compact_table(header, body)


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
        target = escape_url(url).replace(")", "%29") if url else None
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
        notes=index_notes(dashboard_history(state)),
        kinds=dashboard_kinds(state),
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


# The runner refuses a step summary over 1 MiB; leave room for what other steps add.
SUMMARY_BUDGET = 900_000


def _needs_a_look(state: DashboardState) -> DashboardState:
    """The same dashboard with only the rows that have a failure or a flaky pass."""
    rows = tuple(
        row
        for row in state.rows
        if any(c.latest.outcome in {Outcome.FAILURE, Outcome.FLAKY} for c in row.cells.values())
    )
    return DashboardState(id=state.id, backends=state.backends, rows=rows, runs=state.runs)


def render_job_summary(
    states: Sequence[DashboardState],
    *,
    totals: Totals,
    problems: Sequence[tuple[str, str]],
    links: Mapping[str, str] | None = None,
    index_url: str | None = None,
    budget: int = SUMMARY_BUDGET,
) -> str:
    """The job summary: totals, each updated dashboard's counts and the rows needing a look.

    Dashboards are added in order while they fit in ``budget`` characters; the rest are named
    in one closing line, so the summary never passes the runner's limit.
    """
    head = (
        f"## ivy-matrix: {totals.tests} test cases, {totals.failed} failed, "
        f"{totals.errors} errors, {totals.skipped} skipped\n\n"
    )
    parts = [head]
    if index_url:
        parts.append(f"All dashboards: {escape_url(index_url)}\n\n")
    links = links or {}
    if states:
        header, rows = counts_table(states, lambda state: links.get(state.key))
        parts.append(table(header, rows) + "\n\n")
    if problems:
        parts.append(f"{len(problems)} result file(s) could not be read:\n\n")
        parts.extend(f"- {escape_name(path)}: {escape_name(why)}\n" for path, why in problems)
        parts.append("\n")
    size = sum(len(p) for p in parts)
    left_out = []
    for state in states:
        failing = _needs_a_look(state)
        if not failing.rows:
            continue
        block = (
            f"<details><summary>{escape_name(state.key)}: {len(failing.rows)} test(s) with "
            f"failures or flaky passes</summary>\n\n{render_dashboard(failing, Style.COMPACT)}"
            f"\n\n</details>\n\n"
        )
        if size + len(block) > budget:
            left_out.append(state.key)
            continue
        parts.append(block)
        size += len(block)
    if left_out:
        parts.append(
            f"{len(left_out)} more dashboard(s) with failures not shown here (size limit): "
            + ", ".join(escape_name(k) for k in left_out[:50])
            + "\n"
        )
    return "".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderedFile:
    """One file of the output folder (or the dashboard branch): where it goes, what it holds
    (``None``: delete it)."""

    path: str
    text: str | None


def removed_files(states: Iterable[DashboardState]) -> list[RenderedFile]:
    """The files of dashboards that are gone: to be deleted."""
    return [RenderedFile(path=dashboard_file(state), text=None) for state in states]


def render_page(state: DashboardState, style: Style) -> RenderedFile:
    """A dashboard's page: its table; a compact one gets its failing and flaky cells below.
    The Ivy-style table is Ivy's format byte for byte, so nothing is added to it."""
    text = render_dashboard(state, style)
    if style is Style.COMPACT:
        section = render_issue_section(dashboard_history(state))
        if section:
            text = f"{text}\n\n{section.rstrip()}"
    return RenderedFile(path=dashboard_file(state), text=text)


def trend_files(trend: Trend | None) -> list[RenderedFile]:
    """``trend.json`` and its two pictures (charts.py), when the trend has points."""
    if trend is None or not trend.points:
        return []
    return [
        RenderedFile(path=TREND_NAME, text=dump_trend(trend)),
        RenderedFile(path=PASS_RATE_FILE, text=pass_rate_svg(trend)),
        RenderedFile(path=PARITY_FILE, text=parity_svg(trend)),
    ]


def index_trend(trend: Trend | None) -> str:
    """What the index shows of the trend below its table (charts.trend_section)."""
    return trend_section(trend, lambda path: path) if trend is not None else ""


def render_files(
    states: Sequence[DashboardState],
    *,
    style: Style,
    only: Iterable[str] | None = None,
    trend: Trend | None = None,
) -> list[RenderedFile]:
    """The dashboards (all, or those whose keys are in ``only``) and the index page, and with
    a ``trend`` that has points (the store keeps one) its file, ``trend.json``, and its two
    pictures (charts.py).

    Below the index's table go the pictures with their tables of the latest values, then its
    history sections (newly failing, failing for long, flaky; history.py); a compact
    dashboard gets its failing and flaky cells below its table.
    """
    wanted = None if only is None else set(only)
    files = [render_page(state, style) for state in states if wanted is None or state.key in wanted]
    index = render_index_page([index_row(state) for state in states], trend=index_trend(trend))
    files.append(RenderedFile(path=INDEX_NAME, text=index))
    return files + trend_files(trend)
