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


def render_body(proposal: Proposal) -> str:
    """The pull request's body: a summary line, then each edit with its evidence table."""
    counts = {kind: sum(1 for e in proposal.edits if e.kind is kind) for kind in Kind}
    parts = [
        f"## {TITLE}",
        "",
        (
            f"{counts[Kind.ADD]} addition(s), {counts[Kind.REMOVE]} removal(s), "
            f"{counts[Kind.NARROW]} narrowing(s), from the stored default-branch history."
        ),
    ]
    for edit in proposal.edits:
        parts += ["", f"### {escape_name(describe(edit))}"]
        if edit.evidence:
            parts += ["", _HEAD, *(_row(e) for e in edit.evidence)]
    for note in proposal.notes:
        parts += ["", f"- {escape_name(note)}"]
    return "\n".join(parts) + "\n"
