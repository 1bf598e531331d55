"""Each timed test case's seconds, held as the durations file writes them.

Pure apart from the file it may be handed. An update reads the seconds of every timed case,
by backend, the start of its pytest node id (naming.node_prefix: ``path.py::Class::``) and its
name, for the durations files (views/durations_file.py). :class:`TimedCases` holds them as
the text those files hold: a result file's cases of one start encoded at once by json's C
encoder (``'name": 1.5,\\n"other": 2'``), not a dict entry, a name and a float a test case (at
200k test cases, 8.5 MB of text instead of 17 MB). Handed an unbuffered file (``spill``: the
update's temporary file, commands/update.py), it writes each text there and holds where it
is, and the text is read back when its durations file is written (the fresh update of 200k
test cases peaks 10 MB lower: bench/README.md); a file it cannot write to is let go, and the
texts are held from then on. The collector holds each run of one place's cases so as the run
ends (:meth:`TimedCases.hold`: a run's names are not held to the end of their file) and adds
them once the whole file was read (:meth:`TimedCases.add_held`; a broken file's are never
read back). That file is the update's own (nameless where the system allows, deleted when the
update ends, never published): what it holds is what memory would (the names redacted as they
were read: when a look at a run's names finds what may hide a secret, they are read back and
redacted before they are added), and what is read back of it passes the last guard where it
is written. A node id in two files or runs has its seconds added when its backend's file is
made (:meth:`TimedCases.take`): the few starts found in several are read back then, added in
the order they came, and encoded again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import BinaryIO, NamedTuple

# One entry a line, by json's C encoder (an indent would take its slow Python one). The text
# between two entries is this separator then a key's opening quote: a line break inside a
# name is escaped, so the separator is found nowhere else.
SEPARATORS = (",\n", ": ")
NEXT = ',\n"'
encode = json.JSONEncoder(ensure_ascii=False, separators=SEPARATORS).encode
_FROM_END = 2  # seek's whence: from the file's end (io.SEEK_END)


def entries(named: Mapping[str, float]) -> str:
    """The text of ``named`` (a name -> seconds, not empty) in a durations file: what json
    encodes of it after the first name's opening quote and before the closing brace."""
    return encode(named)[2:-1]


def decoded(body: str) -> dict[str, float]:
    """The names and seconds of an :func:`entries` text (floats read back exactly)."""
    found: dict[str, float] = json.loads('{"' + body + "}")
    return found


def names_text(prefix: str, body: str) -> str:
    """The names of an :func:`entries` text, each after ``prefix``, for a look of the redactor
    (redaction.Redactor.may_hide) at them: ``body`` itself, ``prefix`` put before each name,
    when it escapes nothing (JSON escapes with a backslash): each name is then in it as it is,
    and a look finds in it whatever it would in the names alone (what lies between two names
    may only make it look closer); else the names decoded, one a line."""
    if "\\" not in body:
        return prefix + body.replace(NEXT, NEXT + prefix)
    return prefix + ("\n" + prefix).join(decoded(body))


class Spilled(NamedTuple):
    """An :func:`entries` text written to a file: where it is, in UTF-8."""

    file: BinaryIO
    offset: int
    size: int

    def text(self) -> str:
        self.file.seek(self.offset)
        return self.file.read(self.size).decode("utf-8", "surrogatepass")


Entries = str | Spilled  # an :func:`entries` text, held or written to a file


def text_of(held: Entries) -> str:
    """The :func:`entries` text ``held`` is (read back when it was written to a file)."""
    return held if isinstance(held, str) else held.text()


def _merged(bodies: list[Entries]) -> Entries:
    """One start's texts, one a file that had cases of it, as one (a name in several: its
    seconds added, at its first place)."""
    if len(bodies) == 1:
        return bodies[0]
    merged: dict[str, float] = {}
    for body in bodies:
        for name, seconds in decoded(text_of(body)).items():
            merged[name] = merged.get(name, 0.0) + seconds
    return entries(merged)


class TimedCases:
    """The timed cases' seconds by backend, then the start of their node ids (in the order
    they came), each start's cases as :func:`entries` texts, one a file added; written to
    ``spill`` when given (module docstring)."""

    __slots__ = ("_colons", "_held", "_spill")

    def __init__(self, spill: BinaryIO | None = None) -> None:
        self._held: dict[str, dict[str, list[Entries]]] = {}
        self._spill = spill
        self._colons: set[str] = set()  # the backends with a name that holds "::"

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
            text = entries(named)
            self.add_held(backend, start, self.hold(text), colons="::" in text)

    def hold(self, text: str) -> Entries:
        """An :func:`entries` text as it is held: written to the spill (then what is kept is
        where it is), else the text itself. Added only by :meth:`add_held`: a text held for a
        file that turns out broken is never read back."""
        if self._spill is not None:
            try:
                return self._written(self._spill, text)
            except OSError:
                self._spill = None  # held from now on: nothing is lost
        return text

    def add_held(self, backend: str, start: str, body: Entries, *, colons: bool) -> None:
        """As :meth:`add`, the cases of one start given as their :meth:`hold` text (not
        empty); ``colons``: a name among them holds ``"::"``."""
        if colons:
            self._colons.add(backend)
        self._held.setdefault(backend, {}).setdefault(start, []).append(body)

    @staticmethod
    def _written(spill: BinaryIO, text: str) -> Spilled:
        data = memoryview(text.encode("utf-8", "surrogatepass"))  # read back as it was
        offset = spill.seek(0, _FROM_END)
        written = 0
        while written < len(data):  # an unbuffered file may take part, then fail
            written += spill.write(data[written:])
        return Spilled(spill, offset, len(data))

    def backends(self) -> list[str]:
        """The backends with a timed case, in the order they came."""
        return list(self._held)

    def take(self, backend: str) -> tuple[dict[str, Entries], bool]:
        """One backend's starts, each with the :func:`entries` text of its cases (those of
        several files added up), taken out: they are not held any longer; and whether a name
        among them holds ``"::"``."""
        starts = self._held.pop(backend)
        return {start: _merged(bodies) for start, bodies in starts.items()}, (
            backend in self._colons
        )

    def seconds(self) -> dict[str, dict[str, dict[str, float]]]:
        """Every case's seconds, by backend, start and name (a leg file's form)."""
        return {
            backend: {start: decoded(text_of(_merged(bodies))) for start, bodies in starts.items()}
            for backend, starts in self._held.items()
        }
