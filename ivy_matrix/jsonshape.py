"""Checking the shape of values read back from JSON files (state documents, the trend).

Pure: no I/O. Each ``expect_*`` returns the value when it has the expected type and raises
:class:`MalformedError` (a ValueError) saying what it got otherwise; readers turn that into a
:class:`~ivy_matrix.errors.StoreError` naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping


class MalformedError(ValueError):
    """A value in the document does not have the expected shape."""


def expect_list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise MalformedError(f"expected a list, got {value!r:.60}")
    return value


def expect_int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedError(f"expected an integer, got {value!r:.60}")
    return value


def expect_number(value: object) -> float:
    """An integer or a finite-or-not float (not a boolean), as a float."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise MalformedError(f"expected a number, got {value!r:.60}")
    return float(value)


def expect_str(value: object) -> str:
    if not isinstance(value, str):
        raise MalformedError(f"expected a string, got {value!r:.60}")
    return value


def expect_object(value: object) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise MalformedError(f"expected an object, got {value!r:.60}")
    return value
