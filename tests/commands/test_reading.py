"""Tests for commands/reading.py: the result files' bytes hashed for the ledger as they are read."""

from __future__ import annotations

import hashlib
import threading
import time

import pytest

from ivy_matrix.commands.reading import HASH_PENDING, _Hasher

pytestmark = pytest.mark.timeout(30)


def test_reading_waits_for_a_lagging_hasher_rather_than_queue_every_chunk():
    """When the hashing thread lags (a loaded machine), at most HASH_PENDING chunks wait for
    it beside the one it hashes: the reader waits, and the bytes read are never all held."""
    release, hashing = threading.Event(), threading.Event()
    digest = hashlib.sha256()

    class Stalled:
        def update(self, data: bytes) -> None:
            hashing.set()
            assert release.wait(20)
            digest.update(data)

    hasher = _Hasher()
    fed: list[int] = []

    def read_all() -> None:
        for number in range(HASH_PENDING + 10):
            hasher.feed(Stalled(), b"x")  # type: ignore[arg-type]  # a digest: only its update is used
            fed.append(number)

    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    assert hashing.wait(20)
    for _ in range(2000):  # until it fills what may wait (bounded: 20 s)
        if len(fed) > HASH_PENDING:
            break
        time.sleep(0.01)
    time.sleep(0.1)  # an unbounded queue takes every chunk at once

    assert len(fed) == HASH_PENDING + 1
    assert reader.is_alive()
    release.set()
    reader.join(20)
    hasher.finish()
    assert len(fed) == HASH_PENDING + 10
    assert digest.digest() == hashlib.sha256(b"x" * (HASH_PENDING + 10)).digest()
