"""An expectation list: one test id a line, ``#`` comments and blank lines, as a project keeps it.

Pure: text in, text out. The formats this reads are those of array-api-compat's
``*-xfails.txt`` (whole pytest node ids, ``path/test_x.py::test_f[param]``) and Keras's
``excluded_*_tests.txt`` (``Class::method`` or a bare class name): one entry a line, blank
lines and lines starting with ``#`` ignored, and a `` #`` after an entry starting a comment.

Reading keeps each line's own ending (``\\n``, ``\\r\\n``, ``\\r``, or none on a last line
without a newline), so that :meth:`ExpectationList.text` gives back exactly the text read;
removing an entry drops its line and nothing else; an added entry goes at the end, with the
file's most common line ending (a last line without a newline gets that ending first: the
only line an addition changes).

Matching an entry to a stored row (``results/naming.py``: a row is ``Class.method`` or the
function, parametrizations collapsed; its dashboard is named after the module by default):

- an entry with a file part (``path/test_x.py::Class::method[p]``) is a whole node id: the
  module ``test_x`` must be the row's dashboard (``x``, as naming cleans it) and the rest,
  without the parametrization, the row or a class holding it;
- an entry without one (``Class::method``, ``Class``) selects the rows whose id
  (``Class::method``) contains it, as Keras's ``conftest.py`` matches node ids.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ivy_matrix.model import DashboardId
from ivy_matrix.results.naming import clean_part

_ENDINGS = ("\r\n", "\n", "\r")


@dataclass(frozen=True, slots=True)
class Line:
    """One line as read: its text and its own ending ("" on a last line without one)."""

    text: str
    ending: str

    @property
    def entry(self) -> str:
        """The test id the line lists ("" for a blank line or a comment)."""
        text = self.text.strip()
        if text.startswith("#"):
            return ""
        for at, char in enumerate(text):
            if char == "#" and at > 0 and text[at - 1] in " \t":
                return text[:at].strip()
        return text


def split_lines(text: str) -> tuple[Line, ...]:
    """``text`` as lines, each with its own ending."""
    lines: list[Line] = []
    start = 0
    at = 0
    size = len(text)
    while at < size:
        char = text[at]
        if char in "\r\n":
            ending = "\r\n" if text.startswith("\r\n", at) else char
            lines.append(Line(text[start:at], ending))
            at += len(ending)
            start = at
        else:
            at += 1
    if start < size:
        lines.append(Line(text[start:], ""))
    return tuple(lines)


@dataclass(frozen=True, slots=True)
class ExpectationList:
    """A list file's lines, in order."""

    lines: tuple[Line, ...] = ()

    @classmethod
    def parse(cls, text: str) -> ExpectationList:
        return cls(split_lines(text))

    def text(self) -> str:
        """The file's text: what was read, with only the changes made since."""
        return "".join(line.text + line.ending for line in self.lines)

    @property
    def entries(self) -> tuple[str, ...]:
        """The test ids listed, in file order (a repeated one once)."""
        return tuple(dict.fromkeys(line.entry for line in self.lines if line.entry))

    @property
    def ending(self) -> str:
        """The file's most common line ending (``\\n`` when it has none)."""
        counts = Counter(line.ending for line in self.lines if line.ending)
        return counts.most_common(1)[0][0] if counts else "\n"

    def without(self, entries: Iterable[str]) -> ExpectationList:
        """The list without the lines listing ``entries`` (every other line as it was)."""
        gone = set(entries)
        return ExpectationList(tuple(line for line in self.lines if line.entry not in gone))

    def plus(self, entries: Iterable[str]) -> ExpectationList:
        """The list with ``entries`` it does not list yet added at the end."""
        have = set(self.entries)
        new = [e for e in dict.fromkeys(entries) if e not in have]
        if not new:
            return self
        ending = self.ending
        lines = list(self.lines)
        if lines and not lines[-1].ending:
            lines[-1] = Line(lines[-1].text, ending)
        lines.extend(Line(entry, ending) for entry in new)
        return ExpectationList(tuple(lines))


def row_id(row: str) -> str:
    """A stored row as a test id: ``Class.method`` -> ``Class::method``."""
    return row.replace(".", "::")


def _without_parameters(test: str) -> str:
    head, bracket, _ = test.partition("[")
    return head if bracket and head else test


@dataclass(frozen=True, slots=True)
class Selector:
    """What an entry selects (module docstring)."""

    entry: str
    module: str | None
    test: str

    @classmethod
    def of(cls, entry: str) -> Selector:
        path, sep, rest = entry.partition("::")
        if sep and path.endswith(".py"):
            stem = path.rsplit("/", 1)[-1].removesuffix(".py")
            return cls(entry, clean_part(stem), _without_parameters(rest))
        return cls(entry, None, _without_parameters(entry))

    def selects(self, dashboard: DashboardId, row: str) -> bool:
        """Whether the entry lists the stored row ``row`` of ``dashboard``."""
        rid = row_id(row)
        if self.module is None:
            return bool(self.test) and self.test in rid
        return self.module == dashboard.title and (
            rid == self.test or rid.startswith(self.test + "::")
        )
