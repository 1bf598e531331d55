"""The sticky pull-request comment's body, and the verdicts in the job summary.

Pure: no I/O (``pr/comment.py`` writes the comment, ``targets/summary.py`` the job summary).
The comment is a projection of the verdicts kept under the pull request's verdict ref
(``pr/comment_state.py``, ``pr/verdict_ref.py``), so nothing in it is read back: it can be cut
to size or edited by hand without losing a verdict, and the next writer restores it. A body
looks like::

    <!-- ivy-matrix:pr=7 -->                      how the writer finds it (with the author)
    <!-- ivy-matrix:head=9f2c0de... -->           the head commit the verdicts are about
    <!-- ivy-matrix:run=4519946746.2 -->          the run id and attempt that wrote them
    ## ivy-matrix: 2 new failures
    ...which baseline; per backend the counts (torch: 2 new, 1 fixed, 5 pre-existing); then
    one section per verdict, most important first (``KINDS``): new failures and failing new
    tests open, the others in <details>.

**A section** groups its failing cells by their failure line's signature (reasons.py), the
group with most cells first: a headline with the line (escaped, cut to 300 characters) and how
far it reaches ("AssertionError: ...: **7 tests x 3 backends (torch, jax, tensorflow)**"),
then one line per test with its backends, each linked to its job in the pull request, with
its failed cases when only some failed (``jax 2/8``); pre-existing failures say since when
they fail and why (blame.py), once for the backends that share it. A group shows at most
``EXAMPLES`` tests and counts the rest; cells without a failure line are listed last, all
of them.

**Size.** The body is kept within ``BUDGET`` UTF-16 units (GitHub refuses comments over 65,536
characters; measured as issues/markers.py does). Lines are cut least important first, whatever
the tests are called: every section keeps its first ``KEPT`` test lines while any other line
is cut; pre-existing lines go first, then no-baseline, flaky, fixed, failing new tests, new
failures; then those first lines in the same order; then the per-backend lines. The comment
ends with what it does not list ("Not listed here: 3990 new-test, ..."): with the cells it
lists, those are the counts ``compare`` gives on the same results, whatever was cut.

**Slower**: when the pull request ran a test at least 2 times and 5 s longer than the median
of its newest default-branch durations (verdicts.SlowerCell), one short section after the
failures says so, at most ``SLOWER_SHOWN`` lines and how many more.

In the ``workflow_run`` fork recipe the PR number and head sha come from
``github.event.workflow_run`` (config/settings.py ``read_event``), never from the artifact.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ivy_matrix.escaping import escape_name, escape_url, safe_link
from ivy_matrix.explain.reasons import Failing, extent, group_failures, shown_message
from ivy_matrix.issues.markers import DEFAULT_BUDGET, utf16_len
from ivy_matrix.pr.comment_state import CommentState, has_failures
from ivy_matrix.pr.verdicts import BaselineKind, CellVerdict, Verdict, new_failures
from ivy_matrix.state.durations import seconds_text
from ivy_matrix.views.dashboards import site_line

BUDGET = DEFAULT_BUDGET
NAME_CAP = 200
SHORT_SHA = 7
EXAMPLES = 5  # tests a group of one failure line shows; the rest are counted
KEPT = 3  # test lines each section keeps while lines of any other section are cut
SLOWER_SHOWN = 5  # slower tests the comment lists; the rest are counted
# The sections, most important first: the order they show in and the reverse of the cut's.
KINDS = (
    Verdict.NEW,
    Verdict.NEW_TEST,
    Verdict.FIXED,
    Verdict.FLAKY,
    Verdict.NO_BASELINE,
    Verdict.PRE_EXISTING,
)
TITLES = {
    Verdict.NEW: "New failures",
    Verdict.NEW_TEST: "New tests that fail",
    Verdict.FIXED: "Fixed",
    Verdict.FLAKY: "Flaky",
    Verdict.NO_BASELINE: "No baseline: new backends, or no earlier result",
    Verdict.PRE_EXISTING: "Pre-existing failures",
}
_WHAT = {
    Verdict.NEW: "passed on the default branch, fail here",
    Verdict.NEW_TEST: "tests the default branch does not have",
}
_OPEN = frozenset({Verdict.NEW, Verdict.NEW_TEST})  # shown open; the rest in <details>


def comment_marker(pr: int) -> str:
    """The first line of the comment of pull request ``pr``."""
    return f"<!-- ivy-matrix:pr={pr} -->"


# ----------------------------------------------------------------------------- the lines


def _name(text: str) -> str:
    return escape_name(text if len(text) <= NAME_CAP else text[: NAME_CAP - 1] + "…")


def _link(label: str, url: str | None) -> str:
    safe = safe_link(url or "")
    return f"[{label}]({escape_url(safe).replace(')', '%29')})" if safe else label


@dataclass(frozen=True, slots=True)
class _TestLine:
    """One test's cells of one group: the line (without its indent) and how many cells."""

    text: str
    cells: int


@dataclass(frozen=True, slots=True)
class _Group:
    """Cells of one section with one failure line: its headline ("" for the cells without a
    line, listed last and all of them) and its tests' lines."""

    headline: str
    lines: tuple[_TestLine, ...]
    tests: int  # how many tests the group has (lines past EXAMPLES are counted, not listed)


def _backend(cell: CellVerdict) -> str:
    """``[jax](job) 2/8``: the backend, linked to the pull request's job, with its failed
    cases when only some failed."""
    cases = f" {cell.cases[0]}/{cell.cases[1]}" if cell.cases else ""
    return _link(_name(cell.backend), cell.link) + cases


def _facts(cell: CellVerdict) -> str:
    """What a pre-existing failure's history says, each fact once: since when it fails (on
    the default branch), and why (blame.py: the hint, the compare link, what changed)."""
    since = cell.failing_since
    parts = []
    if cell.verdict is Verdict.PRE_EXISTING and since is not None:
        sha = f" ({_name(since.sha[:SHORT_SHA])})" if since.sha else ""
        parts.append(f"failing since run {since.run_id}{sha}")
    if cell.verdict is Verdict.PRE_EXISTING and cell.blame_line:
        parts.append(cell.blame_line)
    return ", ".join(parts)


def _test_lines(cells: Sequence[CellVerdict], test_name: str, said: str = "") -> list[_TestLine]:
    """One line per test (in the order the cells came): ``test: [torch](job), [jax](job)``,
    the backends whose histories say the same in one statement (``said``: what the group's
    headline says for all of them, left out here)."""
    tests: dict[tuple[str, str], dict[str, list[CellVerdict]]] = {}
    for cell in cells:
        facts = _facts(cell)
        place = (cell.dashboard, cell.row)
        tests.setdefault(place, {}).setdefault("" if facts == said else facts, []).append(cell)
    lines = []
    for (dashboard, row), statements in tests.items():
        said = "; ".join(
            ", ".join(_backend(c) for c in members) + (f" · {facts}" if facts else "")
            for facts, members in statements.items()
        )
        name = test_name.format(dashboard=_name(dashboard), row=_name(row))
        count = sum(len(members) for members in statements.values())
        lines.append(_TestLine(f"{name}: {said}", count))
    return lines


def _groups(cells: Sequence[CellVerdict], test_name: str) -> list[_Group]:
    """A section's cells grouped by failure line (reasons.py: most cells, then most backends
    first), cells without a line last."""
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
    found = []
    for group in group_failures(failings):
        members = [cell_of[id(f)] for f in group.cells]
        if not group.signature:
            lines = _test_lines(members, test_name)
            found.append(_Group("", tuple(lines), len(lines)))
            continue
        # What every cell's history says (pre-existing: since when, why) is said once, here.
        facts = {_facts(cell) for cell in members}
        said = facts.pop() if len(facts) == 1 else ""
        lines = _test_lines(members, test_name, said)
        headline = f"{shown_message(group.sample) or 'no failure message'}: **{extent(group)}**"
        found.append(
            _Group(headline + (f" · {said}" if said else ""), tuple(lines[:EXAMPLES]), len(lines))
        )
    return found


@dataclass(slots=True)
class _Section:
    """A section's groups, and how many of its test lines are shown (in group order)."""

    kind: Verdict
    groups: list[_Group]
    shown: int = 0

    @property
    def lines(self) -> list[tuple[int, _TestLine]]:
        """Every test line it may show, with its group's index, in the order they are cut."""
        return [(index, line) for index, group in enumerate(self.groups) for line in group.lines]

    def text(self, total: int) -> tuple[str, int]:
        """The section as markdown, and how many of its cells it lists."""
        candidates = self.lines[: self.shown]
        if not candidates:
            return "", 0
        by_group: dict[int, list[_TestLine]] = {}
        for index, line in candidates:
            by_group.setdefault(index, []).append(line)
        parts = []
        for index, lines in by_group.items():
            group = self.groups[index]
            indent = "  " if group.headline else ""
            if group.headline:
                parts.append(f"- {group.headline}\n")
            parts += [f"{indent}- {line.text}\n" for line in lines]
            more = group.tests - len(lines)
            if more:
                parts.append(f"{indent}- … and {more} more {'test' if more == 1 else 'tests'}\n")
        listed = sum(line.cells for _, line in candidates)
        body = "".join(parts)
        title = f"{TITLES[self.kind]} ({total})"
        if self.kind in _OPEN:
            return f"### {title}\n\n_{_WHAT[self.kind]}_\n\n{body}\n", listed
        return f"<details><summary>{title}</summary>\n\n{body}\n</details>\n\n", listed


# ----------------------------------------------------------------------------- the body


def _count_line(backend: str, counts: Mapping[Verdict, int]) -> str:
    said = ", ".join(f"{counts[v]} {v.value}" for v in KINDS if counts[v])
    return f"- **{_name(backend)}**: {said or 'all passing'}\n"


def headline(state: CommentState) -> str:
    """ "ivy-matrix: 2 new failures" (or "no new failures", "no failing tests")."""
    new = new_failures(state.counts())
    if not has_failures(state):
        return "ivy-matrix: no failing tests"
    if new:
        return f"ivy-matrix: {new} new {'failure' if new == 1 else 'failures'}"
    return "ivy-matrix: no new failures"


def _intro(state: CommentState) -> str:
    head = _name(state.head[:SHORT_SHA]) or "unknown"
    run = f"run {state.run.run_id}, attempt {state.run.run_attempt}"
    if state.baseline is BaselineKind.MERGE_BASE:
        against = "each test's newest default-branch result at this PR's merge base or before"
    elif state.located:
        against = (
            "each test's newest default-branch result (for some tests the history holds none "
            "at or before the merge base)"
        )
    else:
        against = "each test's newest default-branch result (the merge base is not in the history)"
    return f"## {headline(state)}\n\nHead {head} ({run}) against {against}.\n\n"


def _test_name(state: CommentState) -> str:
    """How a test is named: by its row alone when every cell is of one dashboard."""
    one = len({cell.dashboard for cell in state.cells}) <= 1
    return "{row}" if one else "{dashboard} · {row}"


@dataclass(slots=True)
class _Layout:
    """What a body shows: its sections (with the lines shown) and how many backend lines."""

    state: CommentState
    sections: list[_Section]
    backends_shown: int
    prefix: str = ""  # what comes after the counts (the job summary's link to the comment)
    slower: bool = False  # whether the body says which tests got slower (the comment does)

    def compose(self, *, markers: bool) -> str:
        state = self.state
        names = [name for name, _, _ in state.backends]
        parts = []
        if markers:
            parts += [
                comment_marker(state.pr),
                f"\n<!-- ivy-matrix:head={re.sub(r'[^0-9A-Za-z]', '', state.head)} -->\n",
                f"<!-- ivy-matrix:run={state.run.run_id}.{state.run.run_attempt} -->\n",
            ]
        parts.append(_intro(state))
        parts += [_count_line(name, state.counts(name)) for name in names[: self.backends_shown]]
        if self.backends_shown < len(names):
            parts.append(f"- … and {len(names) - self.backends_shown} more backends\n")
        parts.append("\n" + self.prefix)
        counts = state.counts()
        cut = []
        for section in self.sections:
            text, listed = section.text(counts[section.kind])
            parts.append(text)
            if counts[section.kind] > listed:
                cut.append(f"{counts[section.kind] - listed} {section.kind.value}")
        if cut:
            parts.append(
                f"_Not listed here: {', '.join(cut)} (a few tests of each failure line, "
                f"within GitHub's size limit)._\n"
            )
        if self.slower:
            parts.append(_slower_section(state))
        return "".join(parts)

    def cut(self, excess: int) -> int:
        """Leave out test lines, least important first (module docstring), until ``excess``
        UTF-16 units are made up; what is still to make up."""
        for floor in (KEPT, 0):
            for section in reversed(self.sections):
                lines = section.lines
                while excess > 0 and section.shown > floor:
                    section.shown -= 1
                    excess -= utf16_len(lines[section.shown][1].text) + 5
        return excess


def _layout(state: CommentState, kinds: Sequence[Verdict], prefix: str = "") -> _Layout:
    name = _test_name(state)
    sections = []
    for kind in kinds:
        cells = [c for c in state.cells if c.verdict is kind]
        if cells:
            groups = _groups(cells, name)
            sections.append(_Section(kind, groups, sum(len(g.lines) for g in groups)))
    return _Layout(state, sections, len(state.backends), prefix)


def _fit(layout: _Layout, budget: int, *, markers: bool) -> str:
    while True:
        body = layout.compose(markers=markers)
        excess = utf16_len(body) - budget
        if excess <= 0:
            return body
        excess = layout.cut(excess)
        if excess > 0 and layout.backends_shown:
            shown = layout.backends_shown
            layout.backends_shown = max(0, shown - max(1, shown // 10))
        elif excess > 0:
            raise ValueError(f"a pull-request comment cannot fit in {budget} characters")


def render_comment(state: CommentState, *, budget: int = BUDGET, site_url: str = "") -> str:
    """The comment body of ``state`` within ``budget`` (see the module docstring); with
    ``site_url`` (where the HTML site is served), a closing line that links it."""
    tail = site_line(site_url)
    layout = _layout(state, KINDS)
    layout.slower = True
    return _fit(layout, budget - utf16_len(tail), markers=True) + tail


def _slower_section(state: CommentState) -> str:
    """The tests the pull request ran slower than the default branch, at most SLOWER_SHOWN
    ("" when none)."""
    if not state.slower:
        return ""
    dashboards = {cell.dashboard for cell in state.cells}
    several = len(dashboards | {cell.dashboard for cell in state.slower}) > 1
    lines = []
    for cell in state.slower[:SLOWER_SHOWN]:
        test = f"{_name(cell.dashboard)} · {_name(cell.row)}" if several else _name(cell.row)
        seconds = _link(seconds_text(cell.seconds), cell.link)
        lines.append(
            f"- {test} · {_name(cell.backend)}: {seconds}, "
            f"{cell.seconds / cell.median if cell.median else math.inf:.1f} times the default "
            f"branch's median {seconds_text(cell.median)} of {cell.runs} runs\n"
        )
    more = len(state.slower) - SLOWER_SHOWN
    if more > 0:
        lines.append(f"- … and {more} more\n")
    return (
        "\n### Slower\n\nTests this pull request ran at least 2 times and 5 s longer:\n\n"
        + "".join(lines)
    )


def render_summary(
    state: CommentState, *, comment_url: str | None, commenting: bool = True, budget: int = BUDGET
) -> str:
    """The verdicts in a pull request's job summary: the comment's headline and counts, its
    new failures and failing new tests, and a link to the comment (``comment_url``; without
    it, where the comment is, when this job keeps one: ``commenting``)."""
    link = _link("the pull request's comment", comment_url)
    if link.startswith("["):
        where = f"Every verdict is in {link}.\n\n"
    elif commenting:
        where = f"Every verdict is in the comment on pull request #{state.pr}.\n\n"
    else:
        where = ""
    layout = _layout(state, (Verdict.NEW, Verdict.NEW_TEST), prefix=where)
    return _fit(layout, budget, markers=False)
