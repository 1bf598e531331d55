"""The sticky pull-request comment's body: its markers and what it says.

Pure: no I/O (``pr/comment.py`` writes the comment). The comment is a projection of the
verdicts kept under the pull request's verdict ref (``pr/state.py``, ``pr/verdict_ref.py``),
so nothing in it is read back: it can be cut to size or edited by hand without losing a
verdict, and the next writer restores it. A body looks like::

    <!-- ivy-matrix:pr=7 -->                      how the writer finds it (with the author)
    <!-- ivy-matrix:head=9f2c0de... -->           the head commit the verdicts are about
    <!-- ivy-matrix:run=4519946746.2 -->          the run id and attempt that wrote them
    ## ivy-matrix: 2 new failures
    ...which baseline; per backend the counts (torch: 2 new, 5 pre-existing, 1 fixed); the new
    failures (``new``, and ``new-test``: failing tests the baseline does not have, marked "new
    test") with links to the PR's job and the baseline's, grouped by their failure line, the
    groups ranked by cells and backends ("AssertionError: ...: **7 tests x 3 backends
    (torch, jax, tensorflow)**", the line escaped, reasons.py); the rest in <details>...

A pull request with no failing cell gets a short all-green note
(:func:`~ivy_matrix.pr.comment_state.has_failures` lets the caller write nothing instead, when no
comment exists yet).

**Size.** The body is kept within ``BUDGET`` UTF-16 units (GitHub refuses comments over 65,536
characters; measured as issues/markers.py does). Listed cells are cut least important first:
fixed, then flaky, pre-existing and no-baseline cells, then new failures (new tests' with
them), then the
per-backend lines; the comment says what was cut. Its counts always include every cell: they
are the counts ``compare`` gives on the same results.

In the ``workflow_run`` fork recipe the PR number and head sha come from
``github.event.workflow_run`` (config/settings.py ``read_event``), never from the artifact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ivy_matrix.escaping import escape_name, escape_url, safe_link
from ivy_matrix.explain.reasons import Failing, extent, group_failures, shown_message
from ivy_matrix.issues.markers import DEFAULT_BUDGET, utf16_len
from ivy_matrix.pr.comment_state import CommentState, has_failures
from ivy_matrix.pr.verdicts import COUNT_ORDER, BaselineKind, CellVerdict, Verdict, new_failures

BUDGET = DEFAULT_BUDGET
NAME_CAP = 200
SHORT_SHA = 7
# Visible sections, most important first, each with the verdicts it lists; they are cut in
# the reverse order (by their first verdict).
_SECTIONS = (
    ((Verdict.NEW, Verdict.NEW_TEST), "New failures"),
    ((Verdict.NO_BASELINE,), "No baseline: new backends, or no earlier result"),
    ((Verdict.PRE_EXISTING,), "Pre-existing failures"),
    ((Verdict.FLAKY,), "Flaky"),
    ((Verdict.FIXED,), "Fixed"),
)
_CUT_ORDER = (Verdict.FIXED, Verdict.FLAKY, Verdict.PRE_EXISTING, Verdict.NO_BASELINE, Verdict.NEW)
# A listed line: its text, and the verdict of the cell it lists (None: a group's headline).
_Line = tuple[str, Verdict | None]


def comment_marker(pr: int) -> str:
    """The first line of the comment of pull request ``pr``."""
    return f"<!-- ivy-matrix:pr={pr} -->"


# ----------------------------------------------------------------------------- visible text


def _name(text: str) -> str:
    return escape_name(text if len(text) <= NAME_CAP else text[: NAME_CAP - 1] + "…")


def _link(label: str, url: str | None) -> str:
    safe = safe_link(url or "")
    return f"[{label}]({escape_url(safe).replace(')', '%29')})" if safe else ""


def _cell_line(cell: CellVerdict, indent: str = "") -> _Line:
    parts = [_link("PR job", cell.link), _link("baseline job", cell.baseline_link)]
    since = cell.failing_since
    if since is not None:
        sha = f" ({_name(since.sha[:SHORT_SHA])})" if since.sha else ""
        parts.append(f"failing since run {since.run_id}{sha}")
    if cell.verdict is Verdict.PRE_EXISTING and cell.blame_line:
        # Why it fails on the default branch: the code or the environment (blame.py).
        parts.append(cell.blame_line)
    if cell.verdict is Verdict.NEW_TEST:
        parts.insert(0, "new test")
    place = f"{_name(cell.dashboard)} · {_name(cell.row)} · {_name(cell.backend)}"
    shown = " · ".join(part for part in parts if part)
    text = f"{indent}- {place}: {shown}\n" if shown else f"{indent}- {place}\n"
    return text, cell.verdict


def _new_failure_lines(cells: Sequence[CellVerdict]) -> list[_Line]:
    """The new failures, grouped by failure line (most cells, then most backends first): a
    headline with the line and how far it reaches, then its cells; cells without a line are
    listed as they are, last."""
    failings = [
        Failing(
            test=f"{cell.dashboard} · {cell.row}",
            backend=cell.backend,
            message=cell.message,
            signature=cell.signature,
        )
        for cell in cells
    ]
    # The list keeps every Failing alive, so their ids stay theirs while this runs.
    cell_of = {id(failing): cell for failing, cell in zip(failings, cells, strict=True)}
    lines: list[_Line] = []
    for group in group_failures(failings):
        members = [cell_of[id(failing)] for failing in group.cells]
        if not group.signature:
            lines += [_cell_line(cell) for cell in members]
            continue
        lines.append((f"- {shown_message(group.sample)}: **{extent(group)}**\n", None))
        lines += [_cell_line(cell, indent="  ") for cell in members]
    return lines


def _count_line(backend: str, counts: Mapping[Verdict, int]) -> str:
    said = ", ".join(f"{counts[v]} {v.value}" for v in COUNT_ORDER if counts[v])
    return f"- **{_name(backend)}**: {said or 'all passing'}\n"


def _intro(state: CommentState) -> str:
    counts = state.counts()
    head = _name(state.head[:SHORT_SHA]) or "unknown"
    run = f"run {state.run.run_id}, attempt {state.run.run_attempt}"
    new = new_failures(counts)
    if not has_failures(state):
        title = "no failing tests"
    elif new:
        title = f"{new} new {'failure' if new == 1 else 'failures'}"
    else:
        title = "no new failures"
    if state.baseline is BaselineKind.MERGE_BASE:
        against = "each test's newest default-branch result at this PR's merge base or before"
    elif state.located:
        against = (
            "each test's newest default-branch result (for some tests the history holds none "
            "at or before the merge base)"
        )
    else:
        against = "each test's newest default-branch result (the merge base is not in the history)"
    return f"## ivy-matrix: {title}\n\nHead {head} ({run}) against {against}.\n\n"


def _compose(
    state: CommentState,
    lines: Mapping[Verdict, Sequence[_Line]],
    shown: Mapping[Verdict, int],
    backends_shown: int,
) -> str:
    names = [name for name, _, _ in state.backends]
    parts = [
        comment_marker(state.pr),
        f"\n<!-- ivy-matrix:head={re.sub(r'[^0-9A-Za-z]', '', state.head)} -->\n",
        f"<!-- ivy-matrix:run={state.run.run_id}.{state.run.run_attempt} -->\n",
        _intro(state),
        *(_count_line(name, state.counts(name)) for name in names[:backends_shown]),
    ]
    if backends_shown < len(names):
        parts.append(f"- ... and {len(names) - backends_shown} more backends\n")
    parts.append("\n")
    cut: list[str] = []
    counts = state.counts()
    for verdicts, title in _SECTIONS:
        first = verdicts[0]
        kept = list(lines[first][: shown[first]])
        while kept and kept[-1][1] is None:
            kept.pop()  # a headline whose cells were all cut
        for verdict in verdicts:
            listed = sum(1 for _, of in kept if of is verdict)
            if counts[verdict] > listed:
                cut.append(f"{counts[verdict] - listed} {verdict.value}")
        if not kept:
            continue
        text = "".join(line for line, _ in kept)
        if first is Verdict.NEW:
            parts.append(f"### {title}\n\n{text}\n")
        else:
            count = sum(counts[verdict] for verdict in verdicts)
            parts.append(f"<details><summary>{title} ({count})</summary>\n\n{text}\n</details>\n\n")
    if cut:
        parts.append(f"_Not listed here (comment size limit): {', '.join(cut)}._\n")
    return "".join(parts)


def render_comment(state: CommentState, *, budget: int = BUDGET) -> str:
    """The comment body of ``state`` within ``budget`` (see the module docstring)."""
    lines = {
        verdicts[0]: [_cell_line(c) for c in state.cells if c.verdict in verdicts]
        for verdicts, _ in _SECTIONS
    }
    new = [c for c in state.cells if c.verdict in {Verdict.NEW, Verdict.NEW_TEST}]
    lines[Verdict.NEW] = _new_failure_lines(new)
    shown = {verdict: len(found) for verdict, found in lines.items()}
    backends_shown = len(state.backends)
    while True:
        body = _compose(state, lines, shown, backends_shown)
        excess = utf16_len(body) - budget
        if excess <= 0:
            return body
        excess = _cut(lines, shown, excess)
        if excess > 0 and backends_shown:
            backends_shown = max(0, backends_shown - max(1, backends_shown // 10))
        elif excess > 0:
            raise ValueError(f"a pull-request comment cannot fit in {budget} characters")


def _cut(lines: Mapping[Verdict, Sequence[_Line]], shown: dict[Verdict, int], excess: int) -> int:
    """Leave out listed lines, least important first, until ``excess`` is made up."""
    for verdict in _CUT_ORDER:
        while excess > 0 and shown[verdict]:
            shown[verdict] -= 1
            excess -= utf16_len(lines[verdict][shown[verdict]][0])
    return excess
