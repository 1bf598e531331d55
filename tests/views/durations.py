"""Watching the durations files' texts as the writers make them (views/durations_file.py makes
each text when a writer asks for it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ivy_matrix.views.durations_file import DurationsFile


def watch_texts(monkeypatch: pytest.MonkeyPatch, seen: Callable[[DurationsFile, str], str]) -> None:
    """Pass each text a :class:`DurationsFile` makes, with its file, through ``seen``: what it
    returns is the text the writer gets."""
    make = vars(DurationsFile)["text"].fget  # the property's maker
    monkeypatch.setattr(DurationsFile, "text", property(lambda file: seen(file, make(file))))
