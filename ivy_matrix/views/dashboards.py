"""Projections of dashboard state: the Ivy table, a compact table, the job summary and the files.

Pure: no I/O. The Ivy style is exactly what Ivy's dashboards held, byte for byte::

    tabulate(rows, headers=["", *backends], tablefmt="pipe", stralign="left")

with each filled cell a link around a shields.io badge. Names are escaped so that no test or
backend name can end a cell, start HTML, mention a user or break a line. The tables' layout is
tables.py; the index page is index_page.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from ivy_matrix.escaping import IVY_NO_LINK, escape_name, escape_url, markdown_target, safe_link
from ivy_matrix.explain.blame import render_issue_section
from ivy_matrix.model import DashboardState, Entry, Outcome, Totals, Trend
from ivy_matrix.state.history import dashboard_history
from ivy_matrix.state.paths import INDEX_NAME, dashboard_file
from ivy_matrix.state.trend import TREND_NAME, dump_trend
from ivy_matrix.views.charts import (
    PARITY_FILE,
    PASS_RATE_FILE,
    parity_svg,
    pass_rate_svg,
    trend_section,
)
from ivy_matrix.views.index_page import counts_table, index_row, render_index_page
from ivy_matrix.views.style import Style
from ivy_matrix.views.tables import compact_table, table

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


def site_line(site_url: str, key: str = "") -> str:
    """The line that links the HTML site (a dashboard's grid there, with ``key``); "" when
    no site is served or its address is not a plain http(s) link."""
    url = safe_link(site_url)
    if not url:
        return ""
    if key:
        target = f"{url}#/d/{quote(key, safe='/')}"
        return f"[Open {escape_name(key)} in the site]({markdown_target(target)}): its grid, each cell's history and failure.\n\n"
    return f"[Open the site]({markdown_target(url)}): what needs a look, failure groups, each test's history.\n\n"


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
    notes: Sequence[str] = (),
    budget: int = SUMMARY_BUDGET,
    site_url: str = "",
) -> str:
    """The job summary: totals, each updated dashboard's counts and the rows needing a look;
    ``notes`` (what a target left for a later run) below the link to the index.

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
    parts.append(site_line(site_url))
    parts.extend(f"> {escape_name(note)}\n\n" for note in notes)
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
