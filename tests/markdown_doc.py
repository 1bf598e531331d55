"""Reading the project's markdown in tests: sections, fenced blocks, tables, links, anchors.

Pure helpers (the callers read the files). Only what README.md and docs/*.md use: ATX
headings, fenced code blocks, pipe tables whose cells may hold code spans, inline links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^```(?P<lang>\S*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^(?P<level>#{1,6}) (?P<title>.+)$", re.MULTILINE)
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\((?P<target>[^)\s]+)\)")
_CODE_SPAN = re.compile(r"`([^`]+)`")


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """A fenced code block: its language tag ("" when none) and its text."""

    lang: str
    body: str


def without_code(text: str) -> str:
    """``text`` with its fenced code blocks blanked out: every character but line breaks
    becomes a space, so offsets into the result are offsets into ``text``."""
    return _FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def code_blocks(text: str) -> list[Block]:
    """Every fenced code block, in order."""
    return [Block(lang=m.group("lang"), body=m.group("body")) for m in _FENCE.finditer(text)]


def section(text: str, title: str) -> str:
    """The text under the heading ``title`` up to the next heading of its level or above."""
    headings = list(_HEADING.finditer(without_code(text)))
    for index, heading in enumerate(headings):
        if heading.group("title") != title:
            continue
        level = len(heading.group("level"))
        end = next(
            (h.start() for h in headings[index + 1 :] if len(h.group("level")) <= level),
            len(text),
        )
        return text[heading.end() : end]
    raise KeyError(title)


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of ``text`` (lower case, punctuation dropped)."""
    found = set()
    for heading in _HEADING.finditer(without_code(text)):
        title = heading.group("title").lower().replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        found.add(slug)
    return found


def links(text: str) -> list[str]:
    """The targets of the inline links outside code blocks and code spans (images left out)."""
    prose = _CODE_SPAN.sub("", without_code(text))
    return [m.group("target") for m in _LINK.finditer(prose)]


def split_row(line: str) -> list[str]:
    """The cells of one pipe-table row; a ``|`` inside a code span does not split."""
    cells, current, in_code = [], "", False
    for char in line.strip().removeprefix("|").removesuffix("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append(current.strip())
            current = ""
        else:
            current += char
    cells.append(current.strip())
    return cells


def table(text: str, header: list[str]) -> list[list[str]]:
    """The rows of the table whose header cells are ``header`` (separator left out)."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("|") and split_row(line) == header:
            rows = []
            for row in lines[index + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(split_row(row))
            return rows
    raise KeyError(header)


def code_spans(cell: str) -> list[str]:
    """The code spans of a table cell, in order."""
    return _CODE_SPAN.findall(cell)
