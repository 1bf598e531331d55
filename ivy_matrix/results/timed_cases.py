"""Each timed test case's seconds, held as the durations file writes them.

Pure: no I/O. An update reads the seconds of every timed case, by backend, the start of its
pytest node id (naming.node_prefix: ``path.py::Class::``) and its name, for the durations
files (views/durations_file.py). :class:`TimedCases` holds them as the text those files hold:
a result file's cases of one start encoded at once by json's C encoder when the file is added
(``'name": 1.5,\\n"other": 2'``), not a dict entry, a name and a float a test case (at 200k
test cases, 8 MB are held instead of 17 MB: bench/README.md). A node id in two files has its
seconds added when its backend's file is made (:meth:`TimedCases.take`): the few starts
found in several files are read back then, added in the order they came, and encoded again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

# One entry a line, by json's C encoder (an indent would take its slow Python one). The text
# between two entries is this separator then a key's opening quote: a line break inside a
# name is escaped, so the separator is found nowhere else.
SEPARATORS = (",\n", ": ")
NEXT = ',\n"'
encode = json.JSONEncoder(ensure_ascii=False, separators=SEPARATORS).encode


def entries(named: Mapping[str, float]) -> str:
    """The text of ``named`` (a name -> seconds, not empty) in a durations file: what json
    encodes of it after the first name's opening quote and before the closing brace."""
    return encode(named)[2:-1]


def decoded(body: str) -> dict[str, float]:
    """The names and seconds of an :func:`entries` text (floats read back exactly)."""
    found: dict[str, float] = json.loads('{"' + body + "}")
    return found


def _merged(bodies: list[str]) -> str:
    """One start's texts, one a file that had cases of it, as one (a name in several: its
    seconds added, at its first place)."""
    if len(bodies) == 1:
        return bodies[0]
    merged: dict[str, float] = {}
    for body in bodies:
        for name, seconds in decoded(body).items():
            merged[name] = merged.get(name, 0.0) + seconds
    return entries(merged)


class TimedCases:
    """The timed cases' seconds by backend, then the start of their node ids (in the order
    they came), each start's cases as :func:`entries` texts, one a file added."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[str, dict[str, list[str]]] = {}

    @classmethod
    def of(cls, seconds: Mapping[str, Mapping[str, Mapping[str, float]]]) -> TimedCases:
        """Held from seconds by backend, start and name (a leg file's)."""
        held = cls()
        for backend, starts in seconds.items():
            for start, named in starts.items():
                held.add(backend, start, named)
        return held

    def __bool__(self) -> bool:
        return bool(self._held)

    def __repr__(self) -> str:
        return f"TimedCases({self.seconds()!r})"

    def add(self, backend: str, start: str, named: Mapping[str, float]) -> None:
        """The cases of ``named`` (name -> seconds) of one start, from one file, added: a
        node id held already gets their seconds added (when its file is made)."""
        if named:
            self._held.setdefault(backend, {}).setdefault(start, []).append(entries(named))

    def backends(self) -> list[str]:
        """The backends with a timed case, in the order they came."""
        return list(self._held)

    def take(self, backend: str) -> dict[str, str]:
        """One backend's starts, each with the :func:`entries` text of its cases (those of
        several files added up), taken out: they are not held any longer."""
        return {start: _merged(bodies) for start, bodies in self._held.pop(backend).items()}

    def seconds(self) -> dict[str, dict[str, dict[str, float]]]:
        """Every case's seconds, by backend, start and name (a leg file's form)."""
        return {
            backend: {start: decoded(_merged(bodies)) for start, bodies in starts.items()}
            for backend, starts in self._held.items()
        }
