"""A text as UTF-8, 64 Ki characters at a time.

Pure: no I/O. A large text (the durations file of 200k tests is 20 MB) is written, compared
or hashed as git's blob (runner/files.py, targets/files.py, github/git_transport.py,
stores/tree.py) without a copy of it all as bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

_PIECE = 1 << 16  # characters encoded at a time: a page's bytes are never held whole


def utf8_pieces(text: str) -> Iterator[bytes]:
    """``text`` as UTF-8, 64 Ki characters at a time."""
    for start in range(0, len(text), _PIECE):
        yield text[start : start + _PIECE].encode("utf-8")


def utf8_size(text: str) -> int:
    """The length of ``text`` in UTF-8, without its bytes held whole."""
    return len(text) if text.isascii() else sum(map(len, utf8_pieces(text)))
