"""Composing dashboard issue bodies and the index issue's body within GitHub's size budget.

Pure: no I/O (``issues/writer.py`` and ``issues/index_issue.py`` write what this returns).
In: dashboard states, the body an issue has now (the maintainer's text outside the managed
region is kept verbatim) and the budget; out: :class:`IssueBodies` (a body and its continuation
comments) or the index body. The layout and markers are ``issues/markers.py``.

**Size.** Every body is measured in UTF-16 code units against the budget (``issues/markers.py``
says why). A dashboard over budget in the Ivy style is drawn in the compact style; if that is
still over, the rows are split into complete tables (each with the header) across the body and
continuation comments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ivy_matrix.errors import IvyMatrixError
from ivy_matrix.escaping import escape_name
from ivy_matrix.explain.blame import render_issue_section
from ivy_matrix.explain.history_text import index_notes, render_notes_sections
from ivy_matrix.issues.markers import (
    BEGIN,
    DEFAULT_BUDGET,
    END,
    INDEX_MARKER,
    continuation_marker,
    dashboard_marker,
    outside_region,
    revision_marker,
    utf16_len,
)
from ivy_matrix.model import DashboardState
from ivy_matrix.state.history import DEFAULT_SECTION_LIMIT, dashboard_history
from ivy_matrix.views.dashboards import compact_cell, render_dashboard, site_line
from ivy_matrix.views.index_page import counts_table, render_index, with_duration_notes
from ivy_matrix.views.style import Style
from ivy_matrix.views.tables import compact_table, table

# Entries of the failing/flaky section below a dashboard issue's table, tried in turn until
# the body fits (then none).
HISTORY_LIMITS = (DEFAULT_SECTION_LIMIT, 10)
# A row's test name is cut to this many characters when the table has to be split, so that one
# pathological name cannot make a row bigger than a comment.
NAME_CAP = 1_000
# The widest part numbers a split can need, used to reserve room for the notes.
_MAX_PARTS = 99_999


class IssueBodyTooLargeError(IvyMatrixError):
    """The managed part of an issue cannot be made to fit GitHub's body limit."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueBodies:
    """What one dashboard issue should hold: its body and its continuation comments, in order.

    ``style`` is the style the table was drawn in (the requested one, or compact when it had to
    shrink); ``continuations`` is empty unless the rows had to be split.
    """

    body: str
    continuations: tuple[str, ...] = ()
    style: Style = Style.IVY


# ----------------------------------------------------------------------------- dashboard bodies


@dataclass(frozen=True, slots=True)
class _Frame:
    """The fixed parts of a dashboard body around its table."""

    key: str
    before: str
    after: str
    revision: int | None
    history: str = ""
    site: str = ""

    def body(self, table_text: str, parts: int) -> str:
        lines = [dashboard_marker(self.key), "\n", self.before, BEGIN, "\n"]
        lines.append(revision_marker(self.revision))
        lines.append(f"## {escape_name(self.key)}\n\n")
        if self.site:
            lines.append(self.site)
        if table_text:
            lines.append(table_text + "\n")
        if self.history:
            lines.append("\n" + self.history.rstrip("\n") + "\n")
        if parts:
            noun = "comment" if parts == 1 else "comments"
            lines.append(f"\n_The table continues in {parts} {noun} below._\n")
            lines.append(f"<!-- ivy-matrix:parts={parts} -->\n")
        lines.extend([END, self.after])
        return "".join(lines)

    def continuation(self, table_text: str, part: int, parts: int) -> str:
        return (
            f"{continuation_marker(self.key, part)}\n"
            f"**{escape_name(self.key)}**, continued ({part} of {parts})\n\n{table_text}\n"
        )


def _fit(header: Sequence[str], rows: Sequence[Sequence[str]], start: int, room: int) -> int:
    """The end of the longest run of rows from ``start`` whose compact table fits in ``room``.

    Exact: a compact table is unpadded, so each row adds its own line and nothing else.
    """
    size = utf16_len(compact_table(header, []))
    end = start
    while end < len(rows):
        size += 1 + utf16_len("| " + " | ".join(c.strip() for c in rows[end]) + " |")
        if size > room:
            break
        end += 1
    return end


def _split(
    frame: _Frame, state: DashboardState, budget: int, key: str
) -> tuple[str, tuple[str, ...]]:
    header = ["", *(escape_name(b) for b in state.backend_names)]
    rows = [
        [escape_name(row.name if len(row.name) <= NAME_CAP else row.name[: NAME_CAP - 1] + "…")]
        + [compact_cell(row.cells[b].latest) if b in row.cells else "" for b in state.backend_names]
        for row in state.rows
    ]
    body_room = budget - utf16_len(frame.body("", _MAX_PARTS)) - 1
    comment_room = budget - utf16_len(frame.continuation("", _MAX_PARTS, _MAX_PARTS))
    chunks: list[tuple[int, int]] = []
    start, room = 0, body_room
    while start < len(rows) or not chunks:
        end = _fit(header, rows, start, room) if room > 0 else start
        if end == start and chunks:
            raise IssueBodyTooLargeError(
                f"cannot publish dashboard {key!r} as an issue: one of its rows does not fit in "
                f"a comment ({len(header) - 1} backends); use the branch or file target for it"
            )
        chunks.append((start, end))
        start, room = end, comment_room
    parts = len(chunks) - 1
    first = compact_table(header, rows[slice(*chunks[0])]) if chunks[0][1] > chunks[0][0] else ""
    comments = tuple(
        frame.continuation(compact_table(header, rows[a:b]), part, parts)
        for part, (a, b) in enumerate(chunks[1:], start=1)
    )
    return frame.body(first, parts), comments


def compose_issue(
    state: DashboardState,
    *,
    existing_body: str | None,
    revision: int | None,
    budget: int = DEFAULT_BUDGET,
    style: Style = Style.IVY,
    site_url: str = "",
) -> IssueBodies:
    """The body (and continuation comments) of a dashboard's issue; with ``site_url`` (where
    the HTML site is served), a line linking the dashboard's grid there.

    The maintainer's text outside the managed region of ``existing_body`` is kept verbatim.
    Below the table go the dashboard's failing and flaky cells (history.py), with fewer
    entries, or none, when the body would not fit otherwise (before the style changes). The
    table is drawn in ``style``; over ``budget`` (UTF-16 units) in the compact style; and
    if that is still over, its rows are split across the body and continuation comments, each
    a complete table.
    """
    before, after = outside_region(existing_body)
    frame = _Frame(state.key, before, after, revision, site=site_line(site_url, state.key))
    history = dashboard_history(state)
    sections = dict.fromkeys(render_issue_section(history, limit=limit) for limit in HISTORY_LIMITS)
    for candidate in dict.fromkeys((style, Style.COMPACT)):
        table_text = render_dashboard(state, candidate)
        for section in (*sections, ""):
            body = replace(frame, history=section).body(table_text, 0)
            if utf16_len(body) <= budget:
                return IssueBodies(body=body, style=candidate)
    minimal = utf16_len(frame.body("", _MAX_PARTS))
    if minimal > budget:
        raise IssueBodyTooLargeError(
            f"cannot update the issue of dashboard {state.key!r}: the text outside its "
            f"ivy-matrix region takes {utf16_len(before) + utf16_len(after):,} of the "
            f"{budget:,} characters an issue body may hold; shorten that text"
        )
    body, comments = _split(frame, state, budget, state.key)
    return IssueBodies(body=body, continuations=comments, style=Style.COMPACT)


# ----------------------------------------------------------------------------- index


def compose_index(
    states: Sequence[DashboardState],
    links: Mapping[str, str],
    *,
    existing_body: str | None = None,
    budget: int = DEFAULT_BUDGET,
    charts: str = "",
    writes: str = "",
    site_url: str = "",
    revision: int | None = None,
) -> str:
    """The index issue's body: each dashboard with an issue, per backend passing/total, and
    ``charts`` (the trend's pictures) below the table while they fit. First in the region go
    the hidden marker of ``revision`` (the branch store's revision of ``states``; None: none),
    as in a dashboard's body, then ``writes``, the record of the runs' writes
    (``markers.writes_marker``).

    Only dashboards in ``links`` (key -> the issue's URL, or the page's) are listed, and below them the history
    sections (newly failing, failing for long, flaky, slower, slowest: as the index page draws them; fewer entries, then none, when over
    ``budget``). Over ``budget`` without them, the pictures go too; then only the dashboard
    names stay linked; if that is still over, the last dashboards are left out and counted
    in a closing line.
    """
    linked = sorted((s for s in states if s.key in links), key=lambda s: s.key)
    before, after = outside_region(existing_body)

    site = site_line(site_url)
    shows = revision_marker(revision)

    def wrap(text: str) -> str:
        return f"{INDEX_MARKER}\n{before}{BEGIN}\n{shows}{writes}{site}{text}{END}{after}"

    histories = [(state, dashboard_history(state)) for state in linked]
    for pictures in dict.fromkeys((charts, "")):
        index = render_index(linked, lambda s: links[s.key], trend=pictures)
        for limit in HISTORY_LIMITS:
            notes = [
                (state.key, with_duration_notes(index_notes(h, limit=limit), state, limit=limit))
                for state, h in histories
            ]
            sections = render_notes_sections(notes, lambda key: links[key], limit=limit)
            body = wrap(f"{index}\n{sections.rstrip()}\n" if sections else index)
            if utf16_len(body) <= budget:
                return body
        body = wrap(index)
        if utf16_len(body) <= budget:
            return body
    header, rows = counts_table(linked, lambda s: links[s.key])
    shown = len(rows)
    while True:
        more = len(rows) - shown
        tail = f"\n{more} more dashboard(s) not listed here (size limit).\n" if more else ""
        body = wrap(f"# Test dashboards\n\n{table(header, rows[:shown])}\n{tail}")
        if utf16_len(body) <= budget:
            return body
        if shown == 0:
            raise IssueBodyTooLargeError(
                "cannot update the index issue: the text outside its ivy-matrix region leaves "
                "no room for the index; shorten that text"
            )
        shown = max(0, shown - max(1, shown // 10))
