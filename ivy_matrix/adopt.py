"""Read an existing dashboard table (Ivy's, or one of ours) back into state.

Pure: no I/O. Every cell is parsed back to its outcome, link, run id and job id. The cell's
text is kept as it is, so rendering the adopted state gives back the same bytes; links that the
old generator left as ``null`` or pointing at no run are treated as older than any known run.
"""

from __future__ import annotations

import re

from ivy_matrix.errors import InputError
from ivy_matrix.links import run_key_from_url
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
from ivy_matrix.render import COMPACT_SYMBOLS, unescape_name

_HREF = re.compile(r'<a\s[^>]*href="(?P<url>[^"]*)"|\]\((?P<md>[^)\s]*)\)')
_BADGE = re.compile(r"badge/-?(?P<label>[A-Za-z]+)-[A-Za-z]+")
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


def parse_cell(text: str, where: str) -> Entry | None:
    """Read one cell: ``None`` when empty; an :class:`InputError` naming it when unreadable."""
    if not text:
        return None
    outcome: Outcome | None = None
    badge = _BADGE.search(text)
    if badge:
        outcome = _LABELS.get(badge.group("label").lower())
    else:
        for candidate, symbol in COMPACT_SYMBOLS.items():
            if symbol in text:
                outcome = candidate
                break
    if outcome is None:
        raise InputError(
            f"cannot adopt {where}: {text[:80]!r} has no status badge this tool knows "
            f"(expected a shields.io badge such as -success-success or -failure-red)"
        )
    href = _HREF.search(text)
    url = (href.group("url") or href.group("md") or "") if href else ""
    run = run_key_from_url(url) if url and url != "null" else UNKNOWN_RUN
    return Entry(source=Source(run=run, url=url), outcome=outcome, text=text)


def adopt_table(text: str, dashboard: DashboardId) -> DashboardState:
    """Turn a markdown dashboard table into state, keeping every cell's text."""
    lines = [line for line in text.splitlines() if line.strip()]
    header_at = next((i for i, line in enumerate(lines) if line.lstrip().startswith("|")), None)
    if header_at is None or header_at + 1 >= len(lines):
        raise InputError(f"cannot adopt {dashboard.key}: no markdown table found")
    if not _SEPARATOR.match(lines[header_at + 1].strip()):
        raise InputError(
            f"cannot adopt {dashboard.key}: line {header_at + 2} is not a table header separator"
        )
    header = split_row(lines[header_at])
    backends = [unescape_name(name) for name in header[1:]]
    if len(set(backends)) != len(backends) or not all(backends):
        raise InputError(f"cannot adopt {dashboard.key}: column names must be unique and non-empty")
    rows: list[Row] = []
    runs: set[int] = set()
    names: set[str] = set()
    for seq, line in enumerate(lines[header_at + 2 :]):
        if not line.lstrip().startswith("|"):
            break
        values = split_row(line)
        name = unescape_name(values[0])
        if name in names:
            raise InputError(f"cannot adopt {dashboard.key}: row {name!r} appears twice")
        names.add(name)
        if len(values) != len(header):
            raise InputError(
                f"cannot adopt {dashboard.key}: row {name!r} has {len(values) - 1} cells, "
                f"the header has {len(header) - 1} columns"
            )
        cells: dict[str, Cell] = {}
        for backend, value in zip(backends, values[1:], strict=True):
            entry = parse_cell(value, f"{dashboard.key}, row {name!r}, column {backend!r}")
            if entry is not None:
                cells[backend] = Cell(entries=(entry,))
                if entry.run.run_id >= 0:
                    runs.add(entry.run.run_id)
        rows.append(Row(name=name, first_seen=Seen(UNKNOWN_RUN, seq), cells=cells))
    return DashboardState(
        id=dashboard,
        backends=tuple((b, Seen(UNKNOWN_RUN, i)) for i, b in enumerate(backends)),
        rows=tuple(rows),
        runs=tuple(sorted(runs, reverse=True)),
    )
