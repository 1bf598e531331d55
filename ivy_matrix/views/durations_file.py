"""The durations files: each backend's tests and their seconds, in the form pytest-split reads.

Pure: no I/O of its own (what the update's temporary file holds is read back through
results/timed_cases.py as each file is made). ``durations/<backend>.json`` (paths.durations_file) is one JSON object, each
test's pytest node id (naming.node_prefix and the case's name: ``path/to/test_x.py::Class::
test_y[param]``) to its seconds (the sum of its cases' ``time`` in the results an update
read), one a line, in the order the results gave them, as ``pytest-split`` reads with
``--durations-path``: each backend's matrix can then be split by its own durations. An update writes the file of
each backend it read results of, whole: the durations of the newest run (one job writes a
run's dashboards: the fan-in job, or the single job that read every result); a backend it
brought nothing of keeps its file. The branch store commits the files, ``--output-dir``
holds them.

The text is written a node id's start at a time, by json's C encoder: each start's names and
seconds were encoded at once as they were read (results/timed_cases.py), and the start is put
before each name in the text (JSON escapes a string a character at a time, so the escaped
start and the escaped name are the escaped node id), without a node id string or a line of
Python per test.

What is held: each result file's cases of a start as their encoded entries
(:class:`~ivy_matrix.results.timed_cases.TimedCases`: 8.5 MB at 200k test cases instead of 17
MB of names and floats), which an update writes to its temporary file as they are read and
reads back as each file is written: in memory, only where each is and each start once
(:class:`DurationsFile`). Each file is made, scrubbed by the last guard and written a piece at
a time (:meth:`DurationsFile.pieces`, about :data:`PIECE` characters of entries each;
runner/guard.scrub_pieces), never whole: in the output folder, and on the branch over git,
which hashes it so too (stores/commit.py); only the REST transport, which sends each file in
one request, makes it whole. At 200k test cases the fresh update's peak memory is 80 -> 45 MB
(38 MB without durations: bench/README.md); over git, 62 -> 54 MB.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ivy_matrix.results.timed_cases import (
    NEXT,
    Entries,
    TimedCases,
    decoded,
    encode,
    entries,
    text_of,
)
from ivy_matrix.state.paths import durations_file


@dataclass(frozen=True, slots=True, kw_only=True)
class DurationsFile:
    """One backend's durations file, its text made a piece at a time each time it is asked
    for (by a writer; again by a branch commit that hashes it, or is tried again). ``parts``:
    each start of its node ids, escaped, and what json encoded of its names and seconds,
    after the first name's opening quote and before the closing brace (``'name": 1.5,\\n"other":
    2'``), held or where the update's temporary file has it (results/timed_cases.py: read back
    as it is written)."""

    path: str
    parts: tuple[tuple[str, Entries], ...]

    def pieces(self) -> Iterator[str]:
        """The text a start's names at a time, at most about :data:`PIECE` characters of
        them (the writers write it so: targets/files.py, the branch store): each piece ends
        with a line break."""
        return _pieces(self.parts)


def _pieces(parts: tuple[tuple[str, Entries], ...]) -> Iterator[str]:
    """:meth:`DurationsFile.pieces` of ``parts``."""
    last = len(parts) - 1
    for index, (start, body) in enumerate(parts):
        cuts = _cut(text_of(body))
        for number, cut in enumerate(cuts):
            # Each name after its start: a line break inside a name is escaped, so the text
            # between two entries is found nowhere else.
            head = '{"' if index == number == 0 else '"'
            tail = "}\n" if index == last and number == len(cuts) - 1 else ",\n"
            yield head + start + cut.replace(NEXT, NEXT + start) + tail


PIECE = 1 << 20  # characters of names and seconds in a piece of the text, about


def _cut(body: str) -> list[str]:
    """``body`` in pieces of about :data:`PIECE` characters, cut at the separators between
    entries: each piece is entries as ``body`` is (from a name after its opening quote)."""
    cuts = []
    begin = 0
    while len(body) - begin > PIECE:
        end = body.find(NEXT, begin + PIECE)
        if end < 0:
            break
        cuts.append(body[begin:end])
        begin = end + len(NEXT)
    cuts.append(body[begin:] if begin else body)
    return cuts


def durations_files(durations: TimedCases) -> list[DurationsFile]:
    """The durations file of each backend of ``durations`` (results/cells.Collected.durations),
    which it takes over: each backend is taken out of ``durations`` as its file is made, so
    that what its cases' names and seconds are held as goes then, not at the end of the
    update."""
    files = []
    for backend in sorted(durations.backends()):
        bodies, colons = durations.take(backend)
        parts = _parts(bodies, colons=colons)
        if parts:
            files.append(DurationsFile(path=durations_file(backend), parts=parts))
    return files


def durations_text(prefixes: Mapping[str, Mapping[str, float]]) -> str | None:
    """One backend's durations file (None when it has no test): by node id, in order."""
    bodies = {start: entries(named) for start, named in prefixes.items() if named}
    parts = _parts(bodies, colons=any("::" in body for body in bodies.values()))
    return "".join(_pieces(parts)) if parts else None


def _parts(bodies: Mapping[str, Entries], *, colons: bool) -> tuple[tuple[str, Entries], ...]:
    """:attr:`DurationsFile.parts` of each start's :func:`~ivy_matrix.results.timed_cases.entries`
    text (none: no test); ``colons``: a name among them holds ``"::"``."""
    if colons:
        # A name that holds "::" could make the node id of another start's name (numbers
        # and separators hold none): one object, in which a node id twice is written
        # once, with its last seconds (the names of an empty start).
        whole = {
            start + name: seconds
            for start, body in bodies.items()
            for name, seconds in decoded(text_of(body)).items()
        }
        return (("", entries(whole)),)
    return tuple((encode(start)[1:-1], body) for start, body in bodies.items())
