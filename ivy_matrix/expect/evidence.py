"""The expectation changes in markdown: one evidence table per edit.

Pure. Each edit gets a heading (what it does to which list, and why) and a table of the cells
behind it: backend, test (dashboard and row), the runs looked at with their job links and
outcomes, the failure signature and line, the first failure of the streak, and the blame
(``explain/blame.py``). Every name and line from the results is escaped (``escaping.py``); a
link is drawn only when it is plain http(s).
"""

from __future__ import annotations

from ivy_matrix.escaping import escape_name, markdown_target, safe_link
from ivy_matrix.expect.proposal import COMMON, Edit, Evidence, Kind, Proposal
from ivy_matrix.state.history import RunRef

TITLE = "ivy-matrix: expectation lists"
_VERB = {Kind.ADD: "add to", Kind.REMOVE: "remove from", Kind.NARROW: "narrow"}
_HEAD = "| backend | test | runs | signature | first failure | blame |\n|---|---|---|---|---|---|"


def list_name(key: str) -> str:
    """A list in words: its backend, or the common list."""
    return "the common list" if key == COMMON else f"the {key} list"


def _run(ref: RunRef, outcome: str) -> str:
    link = safe_link(ref.url)
    text = f"{ref.run_id} {outcome}".strip()
    return f"[{text}]({markdown_target(link)})" if link else text


def _row(evidence: Evidence) -> str:
    runs = ", ".join(
        _run(r, o.value) for r, o in zip(evidence.runs, evidence.outcomes, strict=True)
    )
    signature = evidence.signature
    if evidence.message:
        signature = f"`{evidence.signature}` {escape_name(evidence.message)}".strip()
    first = "" if evidence.first_failure is None else _run(evidence.first_failure, "")
    cells = (
        escape_name(evidence.backend),
        escape_name(f"{evidence.dashboard.key} {evidence.row}"),
        runs,
        signature,
        first,
        escape_name(evidence.blame),
    )
    return "| " + " | ".join(cells) + " |"


def describe(edit: Edit) -> str:
    """An edit in one line (the log, and each section's heading)."""
    where = list_name(edit.backend)
    if edit.kind is Kind.NARROW:
        to = ", ".join(edit.narrowed_to)
        return f"narrow {edit.entry}: from {where} to the list(s) of {to} ({edit.reason})"
    return f"{_VERB[edit.kind]} {where}: {edit.entry} ({edit.reason})"


# GitHub refuses a pull request body over 65,536 characters (PLATFORM.md).
BODY_LIMIT = 65_536


def render_body(proposal: Proposal, *, limit: int = BODY_LIMIT) -> str:
    """The pull request's body: a summary line, then each edit with its evidence table.

    Within ``limit`` characters: the evidence rows that do not fit are left out from the end,
    and a last line counts them (every edit keeps its heading while the headings fit)."""
    counts = {kind: sum(1 for e in proposal.edits if e.kind is kind) for kind in Kind}
    head = [
        f"## {TITLE}",
        "",
        (
            f"{counts[Kind.ADD]} addition(s), {counts[Kind.REMOVE]} removal(s), "
            f"{counts[Kind.NARROW]} narrowing(s), from the stored default-branch history."
        ),
    ]
    sections = [
        ([f"### {escape_name(describe(edit))}"], [_row(e) for e in edit.evidence])
        for edit in proposal.edits
    ]
    notes = [f"- {escape_name(note)}" for note in proposal.notes]
    whole = _join(head, sections, notes, None)
    if len(whole) <= limit:
        return whole
    # Keep each section's heading, then as many rows as fit, in order.
    total_rows = sum(len(rows) for _, rows in sections)
    kept: list[tuple[list[str], list[str]]] = [(title, []) for title, _ in sections]
    budget = limit - len(_join(head, kept, [], _left_out(total_rows, len(sections), 0)))
    for index, (_, rows) in enumerate(sections):
        for row in rows:
            cost = len(row) + 1 + (0 if kept[index][1] else len(_HEAD) + 2)
            if cost > budget:
                break
            kept[index][1].append(row)
            budget -= cost
        else:
            continue
        break
    shown = sum(len(rows) for _, rows in kept)
    left = _left_out(total_rows - shown, len(sections), 0)
    text = _join(head, kept, [], left)
    while len(text) > limit and kept:  # the headings alone are too many
        kept.pop()
        shown = sum(len(rows) for _, rows in kept)
        text = _join(head, kept, [], _left_out(total_rows - shown, len(sections), len(kept)))
    return text


def _left_out(rows: int, edits: int, shown_edits: int) -> str:
    gone = "" if shown_edits in {0, edits} else f" and {edits - shown_edits} edit(s)"
    return (
        f"_{rows} evidence row(s){gone} left out: GitHub's pull request body holds "
        f"{BODY_LIMIT:,} characters (ivy-matrix expectations --markdown writes them all)._"
    )


def _join(
    head: list[str],
    sections: list[tuple[list[str], list[str]]],
    notes: list[str],
    left_out: str | None,
) -> str:
    parts = list(head)
    for title, rows in sections:
        parts += ["", *title]
        if rows:
            parts += ["", _HEAD, *rows]
    for note in notes:
        parts += ["", note]
    if left_out is not None:
        parts += ["", left_out]
    return "\n".join(parts) + "\n"
