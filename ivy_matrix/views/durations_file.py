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
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ivy_matrix.state.paths import durations_file
from ivy_matrix.views.dashboards import RenderedFile

# One entry a line, by json's C encoder (an indent would take its slow Python one). The text
# between two entries is this separator then a key's opening quote: a line break inside a
# name is escaped, so the separator is found nowhere else.
_SEPARATORS = (",\n", ": ")
_NEXT = ',\n"'
_encode = json.JSONEncoder(ensure_ascii=False, separators=_SEPARATORS).encode


def durations_files(
    durations: dict[str, dict[str, dict[str, float]]],
) -> list[RenderedFile]:
    """The durations file of each backend of ``durations`` (results/cells.Collected.durations: by
    backend, the start of a node id, the case's name), which it takes over: each backend is
    taken out of ``durations`` as its text is made, so that its cases' names and seconds (a
    few dozen bytes a test case) go then, not at the end of the update (at 200k test cases,
    its peak memory 116 -> 102 MB)."""
    files = []
    for backend in sorted(durations):
        text = durations_text(durations.pop(backend))
        if text is not None:
            files.append(RenderedFile(path=durations_file(backend), text=text))
    return files


def durations_text(prefixes: Mapping[str, Mapping[str, float]]) -> str | None:
    """One backend's durations file (None when it has no test): by node id, in order."""
    parts = ["{"]  # joined once at the end: the text is copied once, not once a step
    for prefix, named in prefixes.items():
        if not named:
            continue
        body = _encode(named)
        if "::" in body:
            # A name that holds "::" could make the node id of another start's name (numbers
            # and separators hold none): one object, in which a node id twice is written
            # once, with its last seconds.
            return _one_object(prefixes)
        start = _encode(prefix)[1:-1]
        # 'name": 1.5,\n"other": 2' (the body without '{"' and '}'), each name after its start.
        parts += ('"', start, body[2:-1].replace(_NEXT, _NEXT + start), ",\n")
    if len(parts) == 1:
        return None
    parts[-1] = "}\n"
    return "".join(parts)


def _one_object(prefixes: Mapping[str, Mapping[str, float]]) -> str | None:
    entries = {
        prefix + name: seconds
        for prefix, named in prefixes.items()
        for name, seconds in named.items()
    }
    return _encode(entries) + "\n" if entries else None
