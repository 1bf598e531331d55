"""utf8.py: a text as UTF-8 a piece at a time."""

from __future__ import annotations

import pytest

from ivy_matrix.utf8 import utf8_pieces, utf8_size

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize("char", ["x", "é", "😀"])
def test_a_page_is_encoded_a_piece_at_a_time(char):
    """A dashboard's page (350 KB at 200k cases) is encoded in pieces of at most 64 Ki
    characters, not held whole as bytes beside its text; joined they are its UTF-8."""
    text = (char * 99 + "\n") * 3500  # 350,000 characters
    pieces = list(utf8_pieces(text))
    assert len(pieces) >= 5
    assert max(len(piece.decode("utf-8")) for piece in pieces) <= 1 << 16
    assert b"".join(pieces) == text.encode("utf-8")
    assert utf8_size(text) == len(text.encode("utf-8"))
