"""Failure reasons: failing cells grouped by their failure line's signature, in words.

Pure: no I/O. A failing cell keeps the first line of its failure and that line's signature
(signature.py): the same error on several backends or tests has one signature. Here cells are
grouped by it, biggest group first, and each group is said the way a reader asks: "one error
on torch, jax, tensorflow: 7 tests", with one sample line (escaped, at most
:data:`MESSAGE_SHOWN` characters) and the tests it hit. Cells whose result file gave no message
have no signature and are grouped under "no failure message".

Used by the dashboard issues (:func:`render_reasons`, below the table, within the body's
budget) and the pull-request comment's new failures (pr/body.py groups its lines with
:func:`group_failures`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ivy_matrix.escaping import escape_name

MESSAGE_SHOWN = 300
TESTS_SHOWN = 10  # tests named per group before "and N more"
TIMES = "\N{MULTIPLICATION SIGN}"  # as in "7 tests x 3 backends"


@dataclass(frozen=True, slots=True, kw_only=True)
class Failing:
    """One failing cell: its test (``test``: what a reader knows it by), backend, line and
    the line's signature ("" when it has none)."""

    test: str
    backend: str
    message: str = ""
    signature: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureGroup:
    """The failing cells that share a signature, in the order they came."""

    signature: str
    sample: str
    cells: tuple[Failing, ...]

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(cell.backend for cell in self.cells))

    @property
    def tests(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(cell.test for cell in self.cells))


def group_failures(cells: Iterable[Failing]) -> list[FailureGroup]:
    """The cells grouped by signature, ranked: most cells first, then most backends, then in
    the order they came; the cells without a signature last, as one group. A group's sample
    is its first line."""
    groups: dict[str, list[Failing]] = {}
    for cell in cells:
        groups.setdefault(cell.signature, []).append(cell)
    order = {signature: index for index, signature in enumerate(groups)}
    ranked = sorted(
        groups.items(),
        key=lambda item: (
            item[0] == "",
            -len(item[1]),
            -len({cell.backend for cell in item[1]}),
            order[item[0]],
        ),
    )
    return [
        FailureGroup(
            signature=signature,
            sample=next((c.message for c in members if c.message), ""),
            cells=tuple(members),
        )
        for signature, members in ranked
    ]


def shown_message(message: str) -> str:
    """A failure line as markdown text: cut to MESSAGE_SHOWN characters, then escaped."""
    cut = message if len(message) <= MESSAGE_SHOWN else message[: MESSAGE_SHOWN - 1] + "…"
    return escape_name(cut)


def headline(group: FailureGroup) -> str:
    """ "one error on torch, jax: 7 tests" (or "no failure message on numpy: 1 test")."""
    tests = len(group.tests)
    noun = "test" if tests == 1 else "tests"
    backends = ", ".join(escape_name(b) for b in group.backends)
    what = "one error" if group.signature else "no failure message"
    return f"{what} on {backends}: {tests} {noun}"


def extent(group: FailureGroup) -> str:
    """ "7 tests x 3 backends (torch, jax, tensorflow)" (with a multiplication sign): how
    far one error reaches."""
    tests, backends = len(group.tests), group.backends
    test_noun = "test" if tests == 1 else "tests"
    backend_noun = "backend" if len(backends) == 1 else "backends"
    names = ", ".join(escape_name(b) for b in backends)
    return f"{tests} {test_noun} {TIMES} {len(backends)} {backend_noun} ({names})"


def _tests_line(tests: Sequence[str]) -> str:
    shown = ", ".join(escape_name(t) for t in tests[:TESTS_SHOWN])
    more = f" and {len(tests) - TESTS_SHOWN} more" if len(tests) > TESTS_SHOWN else ""
    return shown + more


def render_reasons(cells: Iterable[Failing], *, limit: int) -> str:
    """The "Failure reasons" section: at most ``limit`` groups, each with its headline, its
    sample line and its tests; "" when no cell fails."""
    groups = group_failures(cells)
    if not groups:
        return ""
    lines = []
    for group in groups[:limit]:
        sample = f": {shown_message(group.sample)}" if group.sample else ""
        lines.append(f"- **{headline(group)}**{sample}\n  {_tests_line(group.tests)}\n")
    if len(groups) > limit:
        lines.append(f"- ... and {len(groups) - limit} more\n")
    return "### Failure reasons\n\n" + "".join(lines) + "\n"
