"""The durations files: each backend's tests and their seconds, in the form pytest-split reads.

Pure: no I/O. ``durations/<backend>.json`` (paths.durations_file) is one JSON object, each
test's pytest node id (naming.node_prefix and the case's name: ``path/to/test_x.py::Class::
test_y[param]``) to its seconds (the sum of its cases' ``time`` in the results an update
read), one a line, in the order the results gave them, as ``pytest-split`` reads with
``--durations-path``: each backend's matrix can then be split by its own durations. An update writes the file of
each backend it read results of, whole: the durations of the newest run (one job writes a
run's dashboards: the fan-in job, or the single job that read every result); a backend it
brought nothing of keeps its file. The branch store commits the files, ``--output-dir``
holds them.

The text is written a node id's start at a time, by json's C encoder: each start's names and
seconds are one object encoded at once, and the start is put before each name in the text
(JSON escapes a string a character at a time, so the escaped start and the escaped name are
the escaped node id), without a node id string or a line of Python per test.

The files are made once the results are read (the names and seconds then go) and written at
the update's end, after the states and the pages: in between, each start is held once beside
its encoded names and seconds (:class:`DurationsFile`), and the text, where the start is put
before each name, is made when a writer asks for it. The update then holds one file's text at
a time, while it writes it (at 200k test cases, 8.7 MB are held instead of 20 MB of text, and
the update's peak memory is 88 -> 80 MB: bench/README.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ivy_matrix.state.paths import durations_file

# One entry a line, by json's C encoder (an indent would take its slow Python one). The text
# between two entries is this separator then a key's opening quote: a line break inside a
# name is escaped, so the separator is found nowhere else.
_SEPARATORS = (",\n", ": ")
_NEXT = ',\n"'
_encode = json.JSONEncoder(ensure_ascii=False, separators=_SEPARATORS).encode


@dataclass(frozen=True, slots=True, kw_only=True)
class DurationsFile:
    """One backend's durations file, its text made each time it is asked for (once by a
    writer; again by a branch commit that is tried again). ``parts``: each start of its node
    ids, escaped, and what json encoded of its names and seconds, after the first name's
    opening quote and before the closing brace (``'name": 1.5,\\n"other": 2'``)."""

    path: str
    parts: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        text = ["{"]  # joined once at the end: the text is copied once, not once a step
        for start, body in self.parts:
            # Each name after its start: a line break inside a name is escaped, so the text
            # between two entries is found nowhere else.
            text += ('"', start, body.replace(_NEXT, _NEXT + start), ",\n")
        text[-1] = "}\n"
        return "".join(text)


def durations_files(
    durations: dict[str, dict[str, dict[str, float]]],
) -> list[DurationsFile]:
    """The durations file of each backend of ``durations`` (results/cells.Collected.durations: by
    backend, the start of a node id, the case's name), which it takes over: each backend is
    taken out of ``durations`` as its file is made, so that its cases' names and seconds (a
    few dozen bytes a test case) go then, not at the end of the update (at 200k test cases,
    its peak memory 116 -> 102 MB)."""
    files = []
    for backend in sorted(durations):
        parts = _parts(durations.pop(backend))
        if parts:
            files.append(DurationsFile(path=durations_file(backend), parts=parts))
    return files


def durations_text(prefixes: Mapping[str, Mapping[str, float]]) -> str | None:
    """One backend's durations file (None when it has no test): by node id, in order."""
    parts = _parts(prefixes)
    return DurationsFile(path="", parts=parts).text if parts else None


def _parts(prefixes: Mapping[str, Mapping[str, float]]) -> tuple[tuple[str, str], ...]:
    """:attr:`DurationsFile.parts` (none: no test)."""
    parts = []
    for prefix, named in prefixes.items():
        if not named:
            continue
        body = _encode(named)
        if "::" in body:
            # A name that holds "::" could make the node id of another start's name (numbers
            # and separators hold none): one object, in which a node id twice is written
            # once, with its last seconds (the names of an empty start).
            entries = {
                start + name: seconds
                for start, by_name in prefixes.items()
                for name, seconds in by_name.items()
            }
            return (("", _encode(entries)[2:-1]),)
        parts.append((_encode(prefix)[1:-1], body[2:-1]))
    return tuple(parts)
