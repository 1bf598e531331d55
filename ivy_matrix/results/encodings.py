"""The bytes of a result file as expat should get them: the encoding found, and transcoded.

Pure: works on bytes and a binary stream it is given. Expat reads UTF-8, UTF-16, ISO-8859-1 and
US-ASCII itself, and those bytes reach it untouched (:func:`raw_chunks`). Any other encoding
Python knows as text (declared, or UTF-32 found by its byte order mark or first bytes) is
decoded incrementally, chunk by chunk, and handed on as UTF-8 with the declaration rewritten to
say so (:func:`utf8_chunks`): memory stays flat. A declared encoding Python does not know, a
codec that is not a text encoding (``rot13``, ``base64``), or bytes that do not decode raise
:class:`BadInputError`, which the reader turns into a problem for the file.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from typing import BinaryIO


class BadInputError(Exception):
    """Raised to stop reading a file; the reader makes it a ParseProblem, it never escapes."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


# The start of a file that is looked at for a byte order mark and the XML declaration.
HEAD_BYTES = 4096
# Byte order marks, then the first bytes of "<?" in the encodings XML autodetects without one.
_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)
_UNMARKED = (
    (b"\x00\x00\x00<", "utf-32-be"),
    (b"<\x00\x00\x00", "utf-32-le"),
    (b"\x00<\x00?", "utf-16-be"),
    (b"<\x00?\x00", "utf-16-le"),
    (b"\x4c\x6f\xa7\x94", "cp037"),  # "<?xm" in EBCDIC
)
# Byte layouts that expat reads itself, and the encoding names it knows (case-insensitive).
_EXPAT_LAYOUTS = frozenset({None, "utf-8", "utf-16-le", "utf-16-be"})
_EXPAT_NAMES = frozenset({"utf-8", "utf-16", "utf-16le", "utf-16be", "iso-8859-1", "us-ascii"})
_DECLARATION = re.compile(r"<\?xml[ \t\r\n].*?\?>", re.DOTALL)
_ENCODING = re.compile(r"([ \t\r\n]encoding[ \t\r\n]*=[ \t\r\n]*)(?:\"([^\"]*)\"|'([^']*)')")


def _layout(head: bytes) -> tuple[str | None, int]:
    """Return how the bytes are laid out (None: ASCII-compatible) and the length of the BOM."""
    for mark, codec in _BOMS:
        if head.startswith(mark):
            return codec, len(mark)
    for mark, codec in _UNMARKED:
        if head.startswith(mark):
            return codec, 0
    return None, 0


def plan_decoding(head: bytes, *, complete: bool) -> tuple[str | None, int]:
    """Return the codec to transcode the file with (None: expat reads it) and the bytes to skip.

    ``head`` is the start of the file (all of it when ``complete``). Raises BadInputError for
    a declared encoding that Python cannot decode as text.
    """
    layout, bom = _layout(head)
    text = head[bom : bom + HEAD_BYTES].decode(layout or "latin-1", errors="replace")
    declared = None
    if text.startswith("<?xml") and text[5:6] in {" ", "\t", "\r", "\n"}:
        end = text.find("?>")
        if end < 0:
            if complete:  # expat says what is wrong with a file that ends inside it
                return None, 0
            raise BadInputError(
                f"the XML declaration does not end within the first {HEAD_BYTES} bytes; "
                "check that this is an XML file",
                1,
            )
        found = _ENCODING.search(text, 0, end)
        if found is not None:
            declared = found.group(2) if found.group(2) is not None else found.group(3)
    if declared is None:
        return (None, 0) if layout in _EXPAT_LAYOUTS else (layout, bom)
    try:
        info = codecs.lookup(declared)
    except (LookupError, ValueError, TypeError):
        info = None
    if info is None or info.incrementaldecoder is None:
        raise BadInputError(
            f"the file declares encoding {declared!r}, which is not an encoding Python knows; "
            "write it in UTF-8 (or declare the encoding it is written in)",
            1,
        )
    if not getattr(info, "_is_text_encoding", True):
        raise BadInputError(
            f"the file declares encoding {declared!r}, which is not a text encoding; "
            "write it in UTF-8 (or declare the encoding it is written in)",
            1,
        )
    if layout in _EXPAT_LAYOUTS and declared.lower() in _EXPAT_NAMES:
        return None, 0
    # A byte order mark, or a wide layout, decides; otherwise the declaration does.
    return (info.name, 0) if layout in {None, "cp037"} else (layout, bom)


def _pending(decoder: codecs.IncrementalDecoder) -> int:
    """How many bytes an incremental decoder holds back."""
    return len(decoder.getstate()[0])


def raw_chunks(head: bytes, stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    """Yield the file's bytes as they are, in chunks of ``chunk_size``."""
    for start in range(0, len(head), chunk_size):
        yield head[start : start + chunk_size]
    del head  # one chunk in memory at a time
    read = stream.read
    chunk = read(chunk_size)
    while chunk:
        yield chunk
        chunk = read(chunk_size)


def utf8_chunks(
    head: bytes, stream: BinaryIO, chunk_size: int, codec: str, skip: int
) -> Iterator[bytes]:
    """Yield the file decoded with ``codec`` and encoded as UTF-8, declaration rewritten.

    Decodes chunk by chunk with an incremental decoder: memory stays flat. Bytes that do not
    decode raise BadInputError naming the codec and the byte offset.
    """
    decoder = codecs.getincrementaldecoder(codec)()
    offset = base = skip
    try:
        text = decoder.decode(head[skip:])
        offset = len(head)
        del head  # one chunk in memory at a time
        found = _DECLARATION.match(text.removeprefix("\ufeff"))
        if found is None and text.lstrip("\ufeff").startswith("<?xml"):
            raise BadInputError(
                f"the XML declaration does not end within the first {HEAD_BYTES} bytes "
                f"once decoded as {codec}; check the declared encoding",
                1,
            )
        if found is not None:
            declaration = _ENCODING.sub(r'\1"utf-8"', found.group())
            text = declaration + text.removeprefix("\ufeff")[found.end() :]
        for start in range(0, len(text), chunk_size):
            yield text[start : start + chunk_size].encode("utf-8")
        del text
        read = stream.read
        chunk = read(chunk_size)
        while chunk:
            # An error's offset counts from the bytes the decoder still holds.
            base = offset - _pending(decoder)
            yield decoder.decode(chunk).encode("utf-8")
            offset += len(chunk)
            chunk = read(chunk_size)
        base = offset - _pending(decoder)
        yield decoder.decode(b"", final=True).encode("utf-8")
    except UnicodeError as exc:
        where = getattr(exc, "start", None)
        at = f" at byte {base + where}" if isinstance(where, int) else ""
        reason = getattr(exc, "reason", None) or str(exc)
        raise BadInputError(
            f"the file does not decode as {codec}{at} ({reason}); "
            "check that it is written in the encoding it declares",
            None,
        ) from None
