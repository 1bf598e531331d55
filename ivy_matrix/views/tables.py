"""Markdown pipe tables: Ivy's padded layout (tabulate's "pipe" format, byte for byte) and a
compact one for bodies with a size limit.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def _plain(texts: Iterable[str]) -> bool:
    # Printable ASCII: one character is one column, so widths need no wcwidth. Joined first:
    # two checks in C over one string instead of two calls per cell.
    joined = "".join(texts)
    return joined.isascii() and joined.isprintable()


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A pipe table exactly as Ivy's dashboards had it (no trailing newline).

    That is ``tabulate(rows, headers, tablefmt="pipe", stralign="left", disable_numparse=True)``
    byte for byte. Tables of printable ASCII (every Ivy-style table) are laid out here directly,
    which is several times faster than tabulate for the tens of thousands of rows of a large
    dashboard; anything else goes through tabulate itself, which measures wide characters.
    The tests hold the two to the same bytes.
    """
    body = [list(row) for row in rows]
    heads = list(header)
    # Each column's distinct texts: a column of badges has a handful, however many rows.
    columns = [set(column) for column in zip(*body, strict=True)] if body else []
    distinct = set(heads).union(*columns)
    if any(c[:1].isspace() or c[-1:].isspace() for c in distinct):
        # tabulate strips the cells (not the headers).
        body = [[cell.strip() for cell in row] for row in body]
        columns = [set(column) for column in zip(*body, strict=True)]
        distinct = set(heads).union(*columns)
    if not body or not _plain(distinct):
        # tabulate measures wide characters, and draws a table with no rows without alignment
        # colons. disable_numparse: a backend called 3.10 must not become 3.1.
        from tabulate import tabulate  # noqa: PLC0415  -- 40 ms of start-up, rarely needed

        return tabulate(
            body, headers=heads, tablefmt="pipe", stralign="left", disable_numparse=True
        )
    # A column is as wide as its widest cell, and its header plus tabulate's padding of 2.
    widths = [max(len(h) + 2, *map(len, column)) for h, column in zip(heads, columns, strict=True)]
    line = "| " + " | ".join(f"{{:<{w}}}" for w in widths) + " |"
    lines = [line.format(*heads), "|" + "|".join(":" + "-" * (w + 1) for w in widths) + "|"]
    lines.extend(line.format(*row) for row in body)
    return "\n".join(lines)


def compact_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A pipe table without padding: what GitHub renders the same, in far fewer characters.

    Padding every cell to its column's widest (one failing cell's link) would multiply the
    size of a large compact table, which is meant for bodies with a size limit.
    """
    lines = [
        "| " + " | ".join(h.strip() for h in header) + " |",
        "|" + "|".join(":--" for _ in header) + "|",
    ]
    lines.extend("| " + " | ".join(c.strip() for c in row) + " |" for row in rows)
    return "\n".join(lines)
