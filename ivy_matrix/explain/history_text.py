"""What a cell's history says, in words: its line, the index page's sections, the summary JSON.

Pure: no I/O. The histories are worked out by history.py; these are their projections: a
cell's line (:func:`describe`: since when it fails, its last pass, flakiness), the index page's
"Newly failing", "Still failing" and "Flaky" sections, and the durations' "Slower" and
"Slowest" (index_page.py draws them below the index table from each dashboard's
:class:`IndexNotes`, slowdowns.py's lines among them; the index issue from the histories), the section below a dashboard issue's table (blame.py
``render_issue_section``, within its size budget) and the summary JSON's ``history``
(targets/summary.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ivy_matrix.escaping import escape_name, markdown_target, safe_link
from ivy_matrix.state.durations import seconds_text
from ivy_matrix.state.history import (
    DEFAULT_SECTION_LIMIT,
    SHORT_SHA,
    CellReport,
    DashboardHistory,
    FlakyReason,
    RunRef,
)


def _run(ref: RunRef) -> str:
    sha = f" ({escape_name(ref.sha[:SHORT_SHA])})" if ref.sha else ""
    return f"run {ref.run_id}{sha}"


def describe(report: CellReport) -> str:
    """One cell in words: test, backend, a link to its job, since when it fails, flakiness."""
    url = safe_link(report.latest.source.url)
    outcome = report.latest.outcome.value
    shown = f"[{outcome}]({markdown_target(url)})" if url else outcome
    head = f"{escape_name(report.row)} · {escape_name(report.backend)}: {shown}"
    return ", ".join([head, *history_facts(report)])


def history_facts(report: CellReport) -> list[str]:
    """What a cell's history says, each fact once: since when it fails, its last pass,
    flakiness (markdown)."""
    history = report.history
    parts = []
    if history.failing_since is not None:
        at_least = "at least " if history.since_oldest else ""
        noun = "run" if history.runs == 1 else "runs"
        parts.append(
            f"failing since {_run(history.failing_since)}, {at_least}{history.runs} {noun}"
        )
    if history.last_pass is not None and history.failing:
        parts.append(f"last passed in {_run(history.last_pass)}")
    if history.flaky is FlakyReason.RERUN:
        parts.append("flaky: passed only after reruns")
    elif history.flaky is FlakyReason.FLIPS:
        parts.append("flaky: flips between passing and failing")
    return parts


def section_lines(title: str, lines: Sequence[str], limit: int) -> str:
    if not lines:
        return ""
    shown = [f"- {line}\n" for line in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"- ... and {len(lines) - limit} more\n")
    return f"{title}\n\n" + "".join(shown) + "\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexNotes:
    """What the index's sections show of one dashboard: its cells' lines (:func:`describe`),
    at most ``limit`` per section, and how many each section has in all; its cells that got
    slower (slowdowns.py's lines); per backend the seconds of its rows' latest durations
    (``seconds``) and its slowest rows, ``(backend, seconds, row, job URL)``, at most
    :data:`SLOWEST_NOTED` a backend."""

    newly: tuple[str, ...] = ()
    newly_total: int = 0
    longer: tuple[str, ...] = ()
    longer_total: int = 0
    flaky: tuple[str, ...] = ()
    flaky_total: int = 0
    slower: tuple[str, ...] = ()
    slower_total: int = 0
    seconds: tuple[tuple[str, float], ...] = ()
    slowest: tuple[tuple[str, float, str, str], ...] = ()


# The slowest rows per backend the index lists (and each dashboard's notes keep).
SLOWEST_NOTED = 5


def index_notes(
    history: DashboardHistory,
    *,
    limit: int = DEFAULT_SECTION_LIMIT,
) -> IndexNotes:
    """The lines a dashboard gives the index's sections (enough for any index that shows it:
    no section shows more than ``limit`` lines)."""
    newly = history.newly_failing()
    longer = history.still_failing()
    flaky = history.flaky()
    return IndexNotes(
        newly=tuple(describe(r) for r in newly[:limit]),
        newly_total=len(newly),
        longer=tuple(describe(r) for r in longer[:limit]),
        longer_total=len(longer),
        flaky=tuple(describe(r) for r in flaky[:limit]),
        flaky_total=len(flaky),
    )


def render_index_sections(
    histories: Sequence[DashboardHistory],
    link: Callable[[str], str],
    *,
    limit: int = DEFAULT_SECTION_LIMIT,
) -> str:
    """The index's "Newly failing", "Still failing" and "Flaky" sections.

    Each entry links its dashboard (``link(key)``) and the job of its newest result; empty
    sections are left out ("" when all are empty). At most ``limit`` entries per section.
    """
    notes = [(h.key, index_notes(h, limit=limit)) for h in histories]
    return render_notes_sections(notes, link, limit=limit)


def render_notes_sections(
    notes: Sequence[tuple[str, IndexNotes]],
    link: Callable[[str], str],
    *,
    limit: int = DEFAULT_SECTION_LIMIT,
) -> str:
    """:func:`render_index_sections` from each dashboard's :class:`IndexNotes` (by key), as
    the dashboard branch keeps them, so its index is drawn without reading every state."""

    def section(title: str, pick: Callable[[IndexNotes], tuple[tuple[str, ...], int]]) -> str:
        lines: list[str] = []
        total = 0
        for key, dashboard in notes:
            shown, count = pick(dashboard)
            total += count
            prefix = f"[{escape_name(key)}]({markdown_target(link(key))}) · "
            lines.extend(prefix + line for line in shown[: max(limit - len(lines), 0)])
        if not total:
            return ""
        more = [f"- ... and {total - limit} more\n"] if total > limit else []
        return f"{title}\n\n" + "".join(f"- {line}\n" for line in lines) + "".join(more) + "\n"

    return "".join(
        (
            section("## Newly failing", lambda n: (n.newly, n.newly_total)),
            section("## Still failing", lambda n: (n.longer, n.longer_total)),
            section("## Flaky", lambda n: (n.flaky, n.flaky_total)),
            section("## Slower", lambda n: (n.slower, n.slower_total)),
            _slowest_section(notes, link),
        )
    )


def _slowest_section(notes: Sequence[tuple[str, IndexNotes]], link: Callable[[str], str]) -> str:
    """Each backend's seconds over every dashboard and its slowest rows, longest first ("" when
    no row has a duration)."""
    seconds: dict[str, float] = {}
    rows: dict[str, list[tuple[float, str, str, str]]] = {}
    for key, dashboard in notes:
        for backend, value in dashboard.seconds:
            seconds[backend] = seconds.get(backend, 0.0) + value
        for backend, value, row, url in dashboard.slowest:
            rows.setdefault(backend, []).append((-value, key, row, url))
    if not seconds:
        return ""
    parts = ["## Slowest\n\n"]
    for backend, total in seconds.items():
        parts.append(f"**{escape_name(backend)}**: {seconds_text(total)} in all\n\n")
        for value, key, row, url in sorted(rows.get(backend, []))[:SLOWEST_NOTED]:
            said = slow_line(row, -value, url)
            parts.append(f"- [{escape_name(key)}]({markdown_target(link(key))}) · {said}\n")
        parts.append("\n")
    return "".join(parts)


def summary_cells(history: DashboardHistory) -> list[dict[str, object]]:
    """The summary JSON's data of a dashboard: each failing or flaky cell's history."""
    return [
        {
            "row": report.row,
            "backend": report.backend,
            "failing_since": (
                None
                if report.history.failing_since is None
                else report.history.failing_since.to_json()
            ),
            "failing_runs": report.history.runs,
            "last_pass": (
                None if report.history.last_pass is None else report.history.last_pass.to_json()
            ),
            "flaky": report.history.flaky is not None,
        }
        for report in history.cells
    ]


def slow_line(row: str, seconds: float, url: str) -> str:
    """One of the slowest cells in words: test, its duration (its job linked)."""
    link = safe_link(url)
    said = seconds_text(seconds)
    return (
        f"{escape_name(row)}: [{said}]({markdown_target(link)})"
        if link
        else f"{escape_name(row)}: {said}"
    )
