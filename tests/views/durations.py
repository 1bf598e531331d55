"""Watching the durations files' texts as the writers make them (views/durations_file.py makes
each text when a writer asks for it: whole for the branch store's commit, a piece at a time for
the output folder)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from ivy_matrix.views.durations_file import DurationsFile


def watch_texts(monkeypatch: pytest.MonkeyPatch, seen: Callable[[DurationsFile, str], str]) -> None:
    """Pass each text a :class:`DurationsFile` makes, whole or a piece of it, with its file,
    through ``seen``: what it returns is what the writer gets."""
    whole = vars(DurationsFile)["text"].fget  # the property's maker
    pieces = DurationsFile.pieces

    def watched(file: DurationsFile) -> Iterator[str]:
        for piece in pieces(file):
            yield seen(file, piece)

    monkeypatch.setattr(DurationsFile, "text", property(lambda file: seen(file, whole(file))))
    monkeypatch.setattr(DurationsFile, "pieces", watched)
