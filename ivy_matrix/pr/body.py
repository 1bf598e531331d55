"""The sticky pull-request comment: its body, its markers, and what a writer should write.

Pure: no I/O (``pr/comment.py`` reads and writes the comment). A comment body looks
like::

    <!-- ivy-matrix:pr=7 -->                      how the writer finds it (with the author)
    <!-- ivy-matrix:head=9f2c0de... -->           the head commit the verdicts are about
    <!-- ivy-matrix:run=4519946746.2 -->          the run id and attempt that wrote them
    ## ivy-matrix: 2 new failures
    ...which baseline; per backend the counts (torch: 2 new, 5 pre-existing, 1 fixed); the new
    failures with links to the PR's job and the baseline's; the rest in <details>...
    <!-- ivy-matrix:verdicts                      every writer's cells (see pr/state.py)
    eJy...
    -->

A writer reads the comment, and :func:`comment_update` merges its own
:class:`~ivy_matrix.pr.state.CommentState` into the one in the hidden block and says what to
write: the new body, or ``None`` when nothing would change (the comment is about a newer head
or run, or already holds these cells). A pull request with no failing cell gets a short
all-green note (:func:`~ivy_matrix.pr.state.has_failures` lets the caller write nothing
instead, when no comment exists yet).

**Size.** The body is kept within ``BUDGET`` UTF-16 units (GitHub refuses comments over 65,536
characters; measured as issues/markers.py does). The hidden block gets at most ``BLOCK_BUDGET`` (and
half the budget); cells it has no room for are left out least important first and counted
(per backend and verdict) instead. The visible part is then cut least important first: fixed,
then flaky, pre-existing and no-baseline cells, then new failures, then the per-backend lines;
the comment says what was cut, and its counts always include every cell.

**Writing it** is ``pr/comment.py``: the comment is the oldest whose first line is
``comment_marker(pr)`` *and* whose author is the expected login; writers merge with
``comment_update`` and re-read until their cells are there (its docstring has the details).
In the ``workflow_run`` fork recipe the PR number and head sha come from
``github.event.workflow_run`` (config/settings.py ``read_event``), never from the artifact.
"""

from __future__ import annotations

import binascii
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ivy_matrix.escaping import escape_name, escape_url, safe_link
from ivy_matrix.issues.markers import DEFAULT_BUDGET, utf16_len
from ivy_matrix.pr.state import CommentState, has_failures, merge_states, pack_state, unpack_state
from ivy_matrix.pr.verdicts import COUNT_ORDER, BaselineKind, CellVerdict, Verdict

BUDGET = DEFAULT_BUDGET
BLOCK_BUDGET = 30_000
NAME_CAP = 200
SHORT_SHA = 7
# Visible sections, most important first; they are cut in the reverse order.
_SECTIONS = (
    (Verdict.NEW, "New failures"),
    (Verdict.NO_BASELINE, "No baseline: new tests or backends"),
    (Verdict.PRE_EXISTING, "Pre-existing failures"),
    (Verdict.FLAKY, "Flaky"),
    (Verdict.FIXED, "Fixed"),
)
_CUT_ORDER = (Verdict.FIXED, Verdict.FLAKY, Verdict.PRE_EXISTING, Verdict.NO_BASELINE, Verdict.NEW)
_PR_LINE = re.compile(r"\A<!-- ivy-matrix:pr=(?P<pr>\d{1,12}) -->\r?$", re.MULTILINE)
_BLOCK = re.compile(r"<!-- ivy-matrix:verdicts\s+(?P<data>[A-Za-z0-9+/=\s]*?)\s*-->")


def _fit_block(state: CommentState, budget: int) -> tuple[CommentState, str]:
    """The state the hidden block can hold within ``budget``, and the block itself."""
    block = pack_state(state)
    if utf16_len(block) <= budget:
        return state, block
    cut_rank = {verdict: index for index, verdict in enumerate(_CUT_ORDER)}
    order = sorted(state.cells, key=lambda c: (cut_rank[c.verdict], [-p for p in c.position]))
    low, high = 1, len(order)  # the fewest cells to leave out so that the block fits
    while low < high:
        middle = (low + high) // 2
        if utf16_len(pack_state(_without(state, order[:middle]))) <= budget:
            high = middle
        else:
            low = middle + 1
    fitted = _without(state, order[:low])
    return fitted, pack_state(fitted)


def _without(state: CommentState, dropped: Sequence[CellVerdict]) -> CommentState:
    omitted = {(n, v): c for n, v, c in state.omitted}
    for cell in dropped:
        omitted[cell.backend, cell.verdict] = omitted.get((cell.backend, cell.verdict), 0) + 1
    gone = {cell.key for cell in dropped}
    return replace(
        state,
        cells=tuple(c for c in state.cells if c.key not in gone),
        omitted=tuple(sorted((n, v, c) for (n, v), c in omitted.items())),
    )


def comment_marker(pr: int) -> str:
    """The first line of the comment of pull request ``pr``."""
    return f"<!-- ivy-matrix:pr={pr} -->"


def comment_pr(body: str | None) -> int | None:
    """The pull request number in a body's first-line marker, None when it has none."""
    found = _PR_LINE.search(body or "")
    return int(found.group("pr")) if found else None


def parse_comment(body: str | None) -> CommentState | None:
    """The state in a comment's hidden block; None when it is not ours or is unreadable."""
    pr = comment_pr(body)
    found = _BLOCK.search(body or "")
    if pr is None or found is None:
        return None
    try:
        state = unpack_state(found.group("data"))
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError, TypeError, KeyError):
        return None
    return state if state.pr == pr else None


def comment_update(existing: str | None, new: CommentState, *, budget: int = BUDGET) -> str | None:
    """The body to write after merging ``new`` into the ``existing`` comment; None: no write.

    Nothing is written when ``new`` is about an older run or head than the comment, or adds
    nothing to it. An existing body that is not readable is replaced.
    """
    old = parse_comment(existing)
    if old is not None and old.pr != new.pr:
        old = None
    merged = new if old is None else merge_states(old, new)
    if old is not None and merged == old:
        return None
    body = render_comment(merged, budget=budget)
    return None if body == existing else body


# ----------------------------------------------------------------------------- visible text


def _name(text: str) -> str:
    return escape_name(text if len(text) <= NAME_CAP else text[: NAME_CAP - 1] + "…")


def _link(label: str, url: str | None) -> str:
    safe = safe_link(url or "")
    return f"[{label}]({escape_url(safe).replace(')', '%29')})" if safe else ""


def _cell_line(cell: CellVerdict) -> str:
    parts = [_link("PR job", cell.link), _link("baseline job", cell.baseline_link)]
    since = cell.failing_since
    if since is not None:
        sha = f" ({_name(since.sha[:SHORT_SHA])})" if since.sha else ""
        parts.append(f"failing since run {since.run_id}{sha}")
    place = f"{_name(cell.dashboard)} · {_name(cell.row)} · {_name(cell.backend)}"
    shown = " · ".join(part for part in parts if part)
    return f"- {place}: {shown}\n" if shown else f"- {place}\n"


def _count_line(backend: str, counts: Mapping[Verdict, int]) -> str:
    said = ", ".join(f"{counts[v]} {v.value}" for v in COUNT_ORDER if counts[v])
    return f"- **{_name(backend)}**: {said or 'all passing'}\n"


def _intro(state: CommentState) -> str:
    counts = state.counts()
    head = _name(state.head[:SHORT_SHA]) or "unknown"
    run = f"run {state.run.run_id}, attempt {state.run.run_attempt}"
    new = counts[Verdict.NEW]
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
    lines: Mapping[Verdict, Sequence[str]],
    shown: Mapping[Verdict, int],
    backends_shown: int,
    block: str,
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
    for verdict, title in _SECTIONS:
        count = counts[verdict]
        listed = "".join(lines[verdict][: shown[verdict]])
        if count > shown[verdict]:
            cut.append(f"{count - shown[verdict]} {verdict.value}")
        if not listed:
            continue
        if verdict is Verdict.NEW:
            parts.append(f"### {title}\n\n{listed}\n")
        else:
            parts.append(
                f"<details><summary>{title} ({count})</summary>\n\n{listed}\n</details>\n\n"
            )
    if cut:
        parts.append(f"_Not listed here (comment size limit): {', '.join(cut)}._\n")
    parts.append(block)
    return "".join(parts)


def render_comment(state: CommentState, *, budget: int = BUDGET) -> str:
    """The comment body of ``state`` within ``budget`` (see the module docstring)."""
    state, block = _fit_block(state, min(BLOCK_BUDGET, budget // 2))
    lines = {v: [_cell_line(c) for c in state.cells if c.verdict is v] for v, _ in _SECTIONS}
    shown = {verdict: len(found) for verdict, found in lines.items()}
    backends_shown = len(state.backends)
    while True:
        body = _compose(state, lines, shown, backends_shown, block)
        excess = utf16_len(body) - budget
        if excess <= 0:
            return body
        excess = _cut(lines, shown, excess)
        if excess > 0 and backends_shown:
            backends_shown = max(0, backends_shown - max(1, backends_shown // 10))
        elif excess > 0:
            raise ValueError(f"a pull-request comment cannot fit in {budget} characters")


def _cut(lines: Mapping[Verdict, Sequence[str]], shown: dict[Verdict, int], excess: int) -> int:
    """Leave out listed lines, least important first, until ``excess`` is made up."""
    for verdict in _CUT_ORDER:
        while excess > 0 and shown[verdict]:
            shown[verdict] -= 1
            excess -= utf16_len(lines[verdict][shown[verdict]])
    return excess
