"""Watching the durations files' texts as the writers make them (views/durations_file.py makes
each text a piece at a time when a writer asks for it: the output folder, the branch store)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from ivy_matrix.views.durations_file import DurationsFile


def watch_texts(monkeypatch: pytest.MonkeyPatch, seen: Callable[[DurationsFile, str], str]) -> None:
    """Pass each piece of text a :class:`DurationsFile` makes, with its file, through
    ``seen``: what it returns is what the writer gets."""
    pieces = DurationsFile.pieces

    def watched(file: DurationsFile) -> Iterator[str]:
        for piece in pieces(file):
            yield seen(file, piece)

    monkeypatch.setattr(DurationsFile, "pieces", watched)


def pieces_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of a :class:`DurationsFile` each time a piece of its text is made, in order
    (the list grows as the writers make them)."""
    made: list[str] = []

    def counted(file: DurationsFile, text: str) -> str:
        made.append(file.path)
        return text

    watch_texts(monkeypatch, counted)
    return made
