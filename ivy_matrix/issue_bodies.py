"""Dashboard issues: their bodies, hidden markers, size budget and hidden state block.

Pure: no I/O (``targets/issue_writer.py`` and ``stores/issues.py`` do the GitHub side). A dashboard issue body looks like::

    <!-- ivy-matrix:dashboard=core/gradients -->        how the action finds its own issue
    Anything a maintainer writes here is kept verbatim.
    <!-- ivy-matrix:begin -->                            the managed region starts
    <!-- ivy-matrix:revision=12 -->                      (with the branch store) what it shows
    ## core/gradients

    | table |

    _The table continues in 2 comments below._          (only when it had to be split)
    <!-- ivy-matrix:parts=2 -->
    <!-- ivy-matrix:state                                (issue-body store only) zlib + base64
    eJy...
    -->
    <!-- ivy-matrix:end -->                              the managed region ends
    Anything a maintainer writes here is kept verbatim too.

Continuation comments start with ``<!-- ivy-matrix:dashboard=<key>:part=N -->`` and are wholly
owned by the action; the index issue starts with ``<!-- ivy-matrix:index -->``. Keys are
percent-encoded in markers, so no dashboard name can end the comment or fake another marker.

**Size.** GitHub refuses issue and comment bodies over 65,536 characters (PLATFORM.md 1.1), and
whether it counts code points or UTF-16 units is unverified, so every body is measured in UTF-16
code units (an emoji counts 2) against a budget with a margin below that limit. A dashboard
over budget in the Ivy style is drawn in the compact style; if that is still over, the rows are
split into complete tables (each with the header) across the body and continuation comments.
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ivy_matrix.errors import IvyMatrixError, StoreError
from ivy_matrix.history import (
    DEFAULT_SECTION_LIMIT,
    dashboard_history,
    render_index_sections,
    render_issue_section,
)
from ivy_matrix.model import DashboardState
from ivy_matrix.render import (
    Style,
    compact_cell,
    compact_table,
    counts_table,
    escape_name,
    render_dashboard,
    render_index,
    table,
)
from ivy_matrix.statefile import dump_state, load_state

# The label that marks dashboard issues (the issue-label option's default).
DEFAULT_LABEL = "ivy-matrix"
BODY_LIMIT = 65_536
# Room for what the budget cannot see: GitHub may count differently than we do.
MARGIN = 1_000
DEFAULT_BUDGET = BODY_LIMIT - MARGIN
# Entries of the failing/flaky section below a dashboard issue's table, tried in turn until
# the body fits (then none).
HISTORY_LIMITS = (DEFAULT_SECTION_LIMIT, 10)

PREFIX = "<!-- ivy-matrix:"
BEGIN = "<!-- ivy-matrix:begin -->"
END = "<!-- ivy-matrix:end -->"
INDEX_MARKER = "<!-- ivy-matrix:index -->"
INDEX_TITLE = "ivy-matrix: test dashboards"
TITLE_PREFIX = "ivy-matrix: "
TITLE_LIMIT = 256
# A row's test name is cut to this many characters when the table has to be split, so that one
# pathological name cannot make a row bigger than a comment.
NAME_CAP = 1_000
# A state block may inflate to at most this much JSON (a guard against a hostile edit).
STATE_INFLATE_LIMIT = 64 * 1024 * 1024
_STATE_OPEN = "<!-- ivy-matrix:state"
_STATE_WRAP = 100
# The widest part numbers a split can need, used to reserve room for the notes.
_MAX_PARTS = 99_999

_KEY = r"(?P<key>[^\s:>]+)"
_DASHBOARD_LINE = re.compile(rf"^<!-- ivy-matrix:dashboard={_KEY} -->\r?$", re.MULTILINE)
_MARKER_LINE = re.compile(
    r"^<!-- ivy-matrix:(?:dashboard=[^\s:>]+|index) -->(?:\r?\n|$)", re.MULTILINE
)
_INDEX_LINE = re.compile(r"^<!-- ivy-matrix:index -->\r?$", re.MULTILINE)
_PART_LINE = re.compile(
    rf"\A<!-- ivy-matrix:dashboard={_KEY}:part=(?P<part>\d+) -->\r?$", re.MULTILINE
)
_REVISION = re.compile(r"<!-- ivy-matrix:revision=(?P<n>\d{1,30}) -->")
_PARTS = re.compile(r"<!-- ivy-matrix:parts=(?P<n>\d{1,9}) -->")
_STATE_BLOCK = re.compile(r"<!-- ivy-matrix:state\s+(?P<data>[A-Za-z0-9+/=\s]*?)\s*-->\r?\n?")


class IssueBodyTooLargeError(IvyMatrixError):
    """The managed part of an issue cannot be made to fit GitHub's body limit."""


class IssueStateTooLargeError(StoreError):
    """The hidden state block alone does not fit in an issue body."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueBodies:
    """What one dashboard issue should hold: its body and its continuation comments, in order.

    ``style`` is the style the table was drawn in (the requested one, or compact when it had to
    shrink); ``continuations`` is empty unless the rows had to be split.
    """

    body: str
    continuations: tuple[str, ...] = ()
    style: Style = Style.IVY


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units: what a JavaScript ``length`` says (an emoji counts 2)."""
    return len(text.encode("utf-16-le")) // 2


def _quote(key: str) -> str:
    # No spaces, colons or ">" remain, so a key can neither end the comment nor fake ":part=".
    return urllib.parse.quote(key, safe="/._~-")


def dashboard_marker(key: str) -> str:
    """The first line of a dashboard issue's body."""
    return f"<!-- ivy-matrix:dashboard={_quote(key)} -->"


def continuation_marker(key: str, part: int) -> str:
    """The first line of continuation comment ``part`` (1, 2, ...) of a dashboard."""
    return f"<!-- ivy-matrix:dashboard={_quote(key)}:part={part} -->"


def issue_title(key: str) -> str:
    """The title a new dashboard issue gets (maintainers may rename it; it is never rewritten)."""
    title = " ".join(f"{TITLE_PREFIX}{key}".split())
    return title if len(title) <= TITLE_LIMIT else title[: TITLE_LIMIT - 1] + "…"


def _head(body: str) -> str:
    """The part of a body before the managed region (where the marker lives)."""
    begin = body.find(BEGIN)
    return body if begin < 0 else body[:begin]


def dashboard_key(body: str | None) -> str | None:
    """The dashboard key of the marker in a body, or None if it has no dashboard marker."""
    found = _DASHBOARD_LINE.search(_head(body or ""))
    return urllib.parse.unquote(found.group("key")) if found else None


def is_ours(body: str | None, key: str) -> bool:
    """Tell whether a body is the dashboard issue of ``key`` (its marker, not another's)."""
    return dashboard_key(body) == key


def is_index(body: str | None) -> bool:
    """Tell whether a body is the index issue's."""
    return _INDEX_LINE.search(_head(body or "")) is not None


def continuation_part(body: str | None, key: str) -> int | None:
    """The part number if ``body`` is a continuation comment of dashboard ``key``, else None."""
    found = _PART_LINE.search(body or "")
    if found is None or urllib.parse.unquote(found.group("key")) != key:
        return None
    return int(found.group("part"))


def _region(body: str) -> str:
    begin = body.find(BEGIN)
    if begin < 0:
        return ""
    end = body.find(END, begin)
    return body[begin:] if end < 0 else body[begin : end + len(END)]


def parse_revision(body: str | None) -> int | None:
    """The revision recorded in the managed region, or None when it records none."""
    found = _REVISION.search(_region(body or ""))
    return int(found.group("n")) if found else None


def parse_parts(body: str | None) -> int:
    """How many continuation comments the body says the table continues in (0: none)."""
    found = _PARTS.search(_region(body or ""))
    return int(found.group("n")) if found else 0


def _outside(existing: str | None) -> tuple[str, str]:
    """The maintainer's text before and after the managed region of an existing body.

    Our own marker line is taken out of the text before (it is written back as the first
    line); everything else is kept byte for byte. A body with no region keeps all its text
    before the new region.
    """
    if not existing:
        return "", "\n"
    begin = existing.find(BEGIN)
    if begin < 0:
        before, after = existing, "\n"
    else:
        end = existing.find(END, begin)
        before = existing[:begin]
        after = "\n" if end < 0 else existing[end + len(END) :]
    before = _MARKER_LINE.sub("", before, count=1)
    if before and not before.endswith("\n"):
        before += "\n"
    return before, after


# ----------------------------------------------------------------------------- hidden state


def state_block(state: DashboardState) -> str:
    """The hidden block holding a dashboard's state: statefile JSON, zlib, base64, wrapped."""
    packed = base64.b64encode(zlib.compress(dump_state(state).encode("utf-8"), 9)).decode()
    lines = [packed[i : i + _STATE_WRAP] for i in range(0, len(packed), _STATE_WRAP)]
    return f"{_STATE_OPEN}\n" + "\n".join(lines) + "\n-->\n"


def _state_too_large(key: str, size: int, budget: int) -> IssueStateTooLargeError:
    return IssueStateTooLargeError(
        f"cannot keep the state of dashboard {key!r} in its issue: even compressed it needs "
        f"{size:,} of the {budget:,} characters an issue body may hold here; give the job "
        f"'permissions: contents: write' and add 'branch' to the 'targets' input, so the state "
        f"is kept on a branch instead"
    )


def embed_state(body: str, state: DashboardState, *, budget: int = DEFAULT_BUDGET) -> str:
    """``body`` with its hidden state block set to ``state`` (inside the managed region).

    Raises :class:`IssueStateTooLargeError` when the result would pass ``budget``.
    """
    block = state_block(state)
    begin = body.find(BEGIN)
    end = body.find(END, begin) if begin >= 0 else -1
    if begin < 0 or end < 0:
        raise ValueError("the body has no ivy-matrix region to hold the state")
    region = _STATE_BLOCK.sub("", body[begin:end])
    result = body[:begin] + region + block + body[end:]
    if utf16_len(result) > budget:
        raise _state_too_large(state.key, utf16_len(block), budget)
    return result


def extract_state(body: str | None, *, where: str = "the issue body") -> DashboardState | None:
    """The state in a body's hidden block; None when it has none.

    A block that is not readable raises :class:`~ivy_matrix.errors.StoreError` naming ``where``.
    """
    region = _region(body or "")
    found = _STATE_BLOCK.search(region)
    if found is None:
        return None
    advice = "delete the ivy-matrix:state block from the issue to start the dashboard afresh"
    try:
        packed = base64.b64decode(re.sub(r"\s+", "", found.group("data")), validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, STATE_INFLATE_LIMIT)
        if inflater.unconsumed_tail:
            raise StoreError(f"cannot read dashboard state in {where}: it is too large; {advice}")
        text = raw.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError) as error:
        raise StoreError(
            f"cannot read dashboard state in {where}: the hidden block is damaged ({error}); "
            f"{advice}"
        ) from None
    return load_state(text, where=where)


# ----------------------------------------------------------------------------- dashboard bodies


@dataclass(frozen=True, slots=True)
class _Frame:
    """The fixed parts of a dashboard body around its table."""

    key: str
    before: str
    after: str
    revision: int | None
    state: str
    history: str = ""

    def body(self, table_text: str, parts: int) -> str:
        lines = [dashboard_marker(self.key), "\n", self.before, BEGIN, "\n"]
        if self.revision is not None:
            lines.append(f"<!-- ivy-matrix:revision={self.revision} -->\n")
        lines.append(f"## {escape_name(self.key)}\n\n")
        if table_text:
            lines.append(table_text + "\n")
        if self.history:
            lines.append("\n" + self.history.rstrip("\n") + "\n")
        if parts:
            noun = "comment" if parts == 1 else "comments"
            lines.append(f"\n_The table continues in {parts} {noun} below._\n")
            lines.append(f"<!-- ivy-matrix:parts={parts} -->\n")
        lines.extend([self.state, END, self.after])
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
    with_state: bool = False,
) -> IssueBodies:
    """The body (and continuation comments) of a dashboard's issue.

    The maintainer's text outside the managed region of ``existing_body`` is kept verbatim.
    Below the table go the dashboard's failing and flaky cells (history.py), with fewer
    entries, or none, when the body would not fit otherwise (before the style changes). The
    table is drawn in ``style``; over ``budget`` (UTF-16 units) in the compact style; and
    if that is still over, its rows are split across the body and continuation comments, each
    a complete table. ``with_state`` adds the hidden state block (issue-body store), which
    must fit in the body itself.
    """
    before, after = _outside(existing_body)
    frame = _Frame(state.key, before, after, revision, state_block(state) if with_state else "")
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
        if with_state and minimal - utf16_len(frame.state) <= budget:
            raise _state_too_large(state.key, utf16_len(frame.state), budget)
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
) -> str:
    """The index issue's body: each dashboard with an issue, per backend passing/total.

    Only dashboards in ``links`` (key -> issue URL) are listed, and below them the history
    sections (newly failing, failing for long, flaky; fewer entries, then none, when over
    ``budget``). Over ``budget`` without them, only the dashboard names stay linked; if that is still over, the last dashboards are left out and
    counted in a closing line.
    """
    linked = sorted((s for s in states if s.key in links), key=lambda s: s.key)
    before, after = _outside(existing_body)

    def wrap(text: str) -> str:
        return f"{INDEX_MARKER}\n{before}{BEGIN}\n{text}{END}{after}"

    index = render_index(linked, lambda s: links[s.key])
    histories = [dashboard_history(state) for state in linked]
    for limit in HISTORY_LIMITS:
        sections = render_index_sections(histories, lambda key: links[key], limit=limit)
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
