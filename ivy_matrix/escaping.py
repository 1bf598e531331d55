"""Escaping names and links for markdown, and reading them back.

Pure: no I/O. Test, class, backend and dashboard names come from files anyone who can change a
test can write: :func:`escape_name` makes each one plain text in a table cell (no cell ends,
no HTML, no mention, no issue link, no math, no hidden or reordered text), and
:func:`safe_link` lets a cell link only a plain http(s) URL. docs/escaping.md says what holds.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Backslash-escaped: the markdown characters that could end a cell or start formatting or links.
_BACKSLASHED = "\\|*[]~`"
# A zero-width space (written as an entity, so the file shows it) after "@", "#" and "GH-"
# keeps "@user" from notifying anyone and "#123", "owner/repo#123" and "GH-123" from linking
# an issue; GitHub autolinks them in the rendered text, where entities are already decoded.
_ZWSP = "&#8203;"
_ESCAPES = {
    **{c: "\\" + c for c in _BACKSLASHED},
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "@": "@" + _ZWSP,
    "#": "#" + _ZWSP,
    # GitHub's documented way to show a dollar sign that must not start math.
    "$": "<span>$</span>",
    "\n": " ",
    "\r": " ",
    "\t": " ",
}
# Invisible or text-reordering characters could hide or disguise text, and control characters
# could break a terminal: they show as U+FFFD. These are the C0 and C1 controls, the line and
# paragraph separators, and every format character (Unicode category Cf: bidi controls such as
# U+202E and U+2066-U+2069, U+200E/U+200F, U+061C; zero-width characters U+200B-U+200D, U+2060,
# U+FEFF; the soft hyphen; tag characters; ...). Format characters are found with the running
# Python's Unicode database, so a newer Python's new ones are covered too; only names that are
# not plain ASCII are looked at.
_CONTROLS = {
    chr(c): "\ufffd"
    for c in (*range(32), *range(0x7F, 0xA0), 0x2028, 0x2029)
    if chr(c) not in _ESCAPES
}
_ESCAPE_TABLE = str.maketrans({**_CONTROLS, **_ESCAPES})
_GH_REFERENCE = re.compile(r"(gh-)(?=[0-9])", re.IGNORECASE)
_UNESCAPE = re.compile(r"\\([\\|*\[\]~`])|&amp;|&lt;|&gt;|&#8203;|<span>\$</span>")
_UNESCAPED = {"&amp;": "&", "&lt;": "<", "&gt;": ">", _ZWSP: "", "<span>$</span>": "$"}


# Names come back: a row's name is drawn in its table, then in the history lines below it, in
# the index and in the job summary; a backend's in every dashboard. Each is escaped once.
@functools.lru_cache(maxsize=1 << 16)
def escape_name(name: str) -> str:
    """Make a test or backend name safe inside a markdown table cell (docs/escaping.md)."""
    if not name.isascii():
        name = "".join("\ufffd" if unicodedata.category(c) == "Cf" else c for c in name)
    escaped = name.translate(_ESCAPE_TABLE)
    # "GH-123" needs a hyphen: most names have none, and skip the search.
    return _GH_REFERENCE.sub(r"\1" + _ZWSP, escaped) if "-" in escaped else escaped


def unescape_name(text: str) -> str:
    """Undo :func:`escape_name` (line breaks and hidden characters stay replaced)."""

    def replace(match: re.Match[str]) -> str:
        return match.group(1) or _UNESCAPED[match.group(0)]

    return _UNESCAPE.sub(replace, text)


# A link a cell may get: plain http(s), nothing that could end the attribute or the cell.
SAFE_URL = re.compile(r"https?://[^\s\"'<>`\\|]+", re.IGNORECASE)
# Ivy's old generator wrote href="null" when it found no job; adopted cells keep it (no link).
IVY_NO_LINK = "null"


def safe_link(url: str) -> str:
    """``url`` if a cell may link it (plain http(s)), else ``""``: such a cell gets no link."""
    return url if SAFE_URL.fullmatch(url) else ""


def escape_url(url: str) -> str:
    """Keep a URL from closing the ``href`` attribute or the table cell."""
    return (
        url.replace("&", "&amp;")
        .replace('"', "%22")
        .replace("<", "%3C")
        .replace(">", "%3E")
        .replace("|", "%7C")
        .replace(" ", "%20")
        .replace("\n", "")
    )


def markdown_target(url: str) -> str:
    """``url`` escaped (:func:`escape_url`) as the target of a markdown link ``[text](url)``,
    which a ``)`` would end."""
    return escape_url(url).replace(")", "%29")
