"""Read an existing dashboard table (Ivy's, or one of ours) back into state.

Pure: no I/O. Every cell is parsed into its outcome and link (and the run and job ids the link
names), and drawn again from that parsed form: nothing of an adopted cell's text is kept, so
no markup, script or mention in it can reach a dashboard. A cell is one of:

- Ivy's: ``<a href="URL" rel="noopener noreferrer" target="_blank">BADGE</a>`` (``rel`` and
  ``target`` optional), or ``BADGE`` alone, where BADGE is
  ``<img src=https://img.shields.io/badge/-LABEL-COLOR>`` (``src`` may be quoted);
- ours in the compact style: ``✅``, ``❌``, ``⏭️``, ``🔁``, or ``[SYMBOL](URL)`` (with
  ``failed/total`` cases after the symbol for a partly failing cell);
- empty.

URL is a plain ``http(s)://`` link, or Ivy's ``null`` (the old generator's "no job found",
kept so that the table renders back byte for byte). Anything else (another scheme such as
``javascript:`` or ``data:``, extra text or markup, a cell longer than :data:`MAX_CELL_CHARS`)
is a problem named by row and column, and every problem of the table is reported at once
(:class:`ProblemsError`).

**An adopted cell never outranks a real result.** Its link is kept as it is (the run, attempt
and job it names can be read back from it with ``jobs.run_key_from_url``), but its place in
run order is unknown, older than any run: a table is anyone's text, and a link naming run
10^26 would otherwise pin its cell against every later result. So the next result for the
cell always wins, whatever run the link names, and adopted cells add no run to the
dashboard's runs. :func:`absurd_links` names the links whose ids no GitHub run or job can
have (above :data:`MAX_GITHUB_ID`), for a warning.
"""

from __future__ import annotations

import html
import re

from ivy_matrix.errors import InputError, ProblemsError
from ivy_matrix.escaping import IVY_NO_LINK, SAFE_URL, unescape_name
from ivy_matrix.model import (
    UNKNOWN_RUN,
    Cell,
    DashboardId,
    DashboardState,
    Entry,
    Outcome,
    Row,
    Seen,
    Source,
)
from ivy_matrix.results.jobs import run_key_from_url
from ivy_matrix.results.junit import cap_name
from ivy_matrix.views.dashboards import COMPACT_SYMBOLS

# The largest table file adopt reads, and the longest cell (name or result) it accepts. Ivy's
# cells are under 200 characters; a cell is copied into every row's width, so a huge one
# would make every line of the table huge.
MAX_ADOPT_BYTES = 64 * 1024 * 1024
MAX_CELL_CHARS = 2000
# The problems listed one by one; the rest are counted.
MAX_PROBLEMS_SHOWN = 100
# The largest id a GitHub run, attempt or job can have: the REST API's ids are JSON numbers,
# which JavaScript clients read exactly only up to 2**53 - 1 (today's run ids are near 2e10).
MAX_GITHUB_ID = 2**53 - 1
_ID_SHOWN = 30  # digits of an absurd id a warning shows

_BADGE = (
    r'<img src=(?P<q>"?)https://img\.shields\.io/badge/-?(?P<label>[A-Za-z]+)-[A-Za-z]+(?P=q)\s*/?>'
)
_IVY_CELL = re.compile(
    rf'(?:<a href="(?P<url>[^"]*)"(?: rel="noopener noreferrer"| target="_blank")*>{_BADGE}</a>)'
    rf"|(?:{_BADGE.replace('?P<', '?P<bare_').replace('(?P=q)', '(?P=bare_q)')})"
)
_SYMBOLS = {symbol: outcome for outcome, symbol in COMPACT_SYMBOLS.items()}
_SYMBOLS["⏭"] = Outcome.SKIPPED  # without the emoji variation selector
_SYMBOL = "|".join(sorted(map(re.escape, _SYMBOLS), key=len, reverse=True))
# A linked compact cell may say how many of its cases failed ("[❌ 44/256](URL)"); the counts
# are not read back (nothing of a cell's text is kept).
_COMPACT_CELL = re.compile(
    rf"(?P<symbol>{_SYMBOL})|\[(?P<linked>{_SYMBOL})(?: \d{{1,12}}/\d{{1,12}})?\]\((?P<url>[^()\s]*)\)"
)
_LABELS = {
    "success": Outcome.SUCCESS,
    "passed": Outcome.SUCCESS,
    "passing": Outcome.SUCCESS,
    "pass": Outcome.SUCCESS,
    "failure": Outcome.FAILURE,
    "failed": Outcome.FAILURE,
    "failing": Outcome.FAILURE,
    "fail": Outcome.FAILURE,
    "error": Outcome.FAILURE,
    "skipped": Outcome.SKIPPED,
    "skip": Outcome.SKIPPED,
    "flaky": Outcome.FLAKY,
}
_SEPARATOR = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$")


def split_row(line: str) -> list[str]:
    """Split one table line into cells; ``\\|`` inside a cell does not split it."""
    text = line.strip()
    text = text.removeprefix("|")
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    cells: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == "|":
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    cells.append("".join(current).strip())
    return cells


def _shown(text: str) -> str:
    """A cell's text as a problem quotes it: short, and one line."""
    return repr(text[:60] + ("..." if len(text) > 60 else ""))  # noqa: PLR2004  -- message brevity


def _link(url: str) -> str:
    """The cell's link as the renderer will write it again; :class:`InputError` if unsafe."""
    if url == IVY_NO_LINK:
        return url
    url = html.unescape(url)
    if len(url) > MAX_CELL_CHARS or not SAFE_URL.fullmatch(url):
        raise InputError(
            f"the link {_shown(url)} is not a plain http(s) URL; remove the link or the cell"
        )
    return url


def parse_cell(text: str) -> Entry | None:
    """Read one cell: ``None`` when empty; :class:`InputError` saying why when unreadable."""
    if not text:
        return None
    if len(text) > MAX_CELL_CHARS:
        raise InputError(f"the cell is {len(text)} characters long, more than {MAX_CELL_CHARS}")
    url = ""
    ivy = _IVY_CELL.fullmatch(text)
    compact = None if ivy else _COMPACT_CELL.fullmatch(text)
    if ivy:
        label = ivy.group("label") or ivy.group("bare_label")
        outcome = _LABELS.get(label.lower())
        if outcome is None:
            raise InputError(f"the badge label {label!r} is not a status this tool knows")
        url = _link(ivy.group("url")) if ivy.group("url") is not None else ""
    elif compact:
        outcome = _SYMBOLS[compact.group("symbol") or compact.group("linked")]
        url = _link(compact.group("url")) if compact.group("url") is not None else ""
    else:
        raise InputError(
            f"{_shown(text)} is not a status badge, optionally linked, that this tool knows "
            f"(expected a shields.io badge such as -success-success or -failure-red, or one "
            f"of {' '.join(COMPACT_SYMBOLS.values())})"
        )
    # Older than any run, whatever run the link names (module docstring).
    return Entry(source=Source(run=UNKNOWN_RUN, url=url), outcome=outcome)


def _name(text: str, what: str, problems: list[str]) -> str:
    if len(text) > MAX_CELL_CHARS:
        problems.append(f"{what} is {len(text)} characters long, more than {MAX_CELL_CHARS}")
        text = text[:MAX_CELL_CHARS]
    # Capped as the JUnit reader caps names, so that results for the test find its row.
    return cap_name(unescape_name(text))


def _read_cells(name: str, values: dict[str, str], problems: list[str]) -> dict[str, Cell]:
    """One row's cells by backend; each unreadable cell is a problem naming row and column."""
    cells: dict[str, Cell] = {}
    for backend, value in values.items():
        try:
            entry = parse_cell(value)
        except InputError as error:
            problems.append(f"row {name!r}, column {backend!r}: cannot read the cell: {error}")
            continue
        if entry is not None:
            cells[backend] = Cell(entries=(entry,))
    return cells


def adopt_table(text: str, dashboard: DashboardId) -> DashboardState:
    """Turn a markdown dashboard table into state, reading every cell (see the module doc).

    :class:`ProblemsError` lists every row and cell that cannot be read.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    header_at = next((i for i, line in enumerate(lines) if line.lstrip().startswith("|")), None)
    if header_at is None or header_at + 1 >= len(lines):
        raise InputError(f"cannot adopt {dashboard.key}: no markdown table found")
    if not _SEPARATOR.match(lines[header_at + 1].strip()):
        raise InputError(
            f"cannot adopt {dashboard.key}: line {header_at + 2} is not a table header separator"
        )
    problems: list[str] = []
    header = split_row(lines[header_at])
    backends = [_name(name, f"column {i}", problems) for i, name in enumerate(header[1:], 1)]
    if len(set(backends)) != len(backends) or not all(backends):
        raise InputError(f"cannot adopt {dashboard.key}: column names must be unique and non-empty")
    rows: list[Row] = []
    names: set[str] = set()
    for seq, line in enumerate(lines[header_at + 2 :]):
        if not line.lstrip().startswith("|"):
            break
        values = split_row(line)
        name = _name(values[0], f"row {seq + 1}", problems)
        if name in names:
            problems.append(f"row {name!r} appears twice")
            continue
        names.add(name)
        if len(values) != len(header):
            problems.append(
                f"row {name!r} has {len(values) - 1} cells, the header has {len(header) - 1} columns"
            )
            continue
        cells = _read_cells(name, dict(zip(backends, values[1:], strict=True)), problems)
        rows.append(Row(name=name, first_seen=Seen(UNKNOWN_RUN, seq), cells=cells))
    if problems:
        shown = problems[:MAX_PROBLEMS_SHOWN]
        if len(problems) > len(shown):
            shown.append(f"... and {len(problems) - len(shown)} more problem(s)")
        raise ProblemsError(
            f"cannot adopt {dashboard.key}: {len(problems)} problem(s) in the table; "
            f"fix each one listed and adopt again",
            problems=shown,
        )
    return DashboardState(
        id=dashboard,
        backends=tuple((b, Seen(UNKNOWN_RUN, i)) for i, b in enumerate(backends)),
        rows=tuple(rows),
        runs=(),
    )


def absurd_links(state: DashboardState) -> list[str]:
    """One line per adopted cell whose link names a run, attempt or job id above
    :data:`MAX_GITHUB_ID` (no GitHub id is that large): row, column and the id."""
    found: list[str] = []
    for row in state.rows:
        for backend, cell in row.cells.items():
            url = cell.latest.source.url
            if not url or url == IVY_NO_LINK:
                continue
            named = run_key_from_url(url)
            for what, value in zip(("run", "attempt", "job"), named, strict=True):
                if value > MAX_GITHUB_ID:
                    digits = str(value)
                    shown = digits if len(digits) <= _ID_SHOWN else f"{digits[:_ID_SHOWN]}..."
                    found.append(
                        f"row {row.name!r}, column {backend!r}: the link names {what} {shown}, "
                        f"larger than any GitHub id; the cell is kept, and the next result for "
                        f"it replaces it"
                    )
    return found
