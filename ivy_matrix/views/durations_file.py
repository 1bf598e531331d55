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
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ivy_matrix.state.paths import durations_file
from ivy_matrix.views.dashboards import RenderedFile


def durations_files(
    durations: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> list[RenderedFile]:
    """The durations file of each backend of ``durations`` (collector.Collected.durations: by
    backend, the start of a node id, the case's name)."""
    files = []
    for backend, prefixes in sorted(durations.items()):
        entries = {
            prefix + name: seconds
            for prefix, named in prefixes.items()
            for name, seconds in named.items()
        }
        if not entries:
            continue
        # One entry a line, by json's C encoder (an indent would take its slow Python one).
        text = json.dumps(entries, ensure_ascii=False, separators=(",\n", ": "))
        files.append(RenderedFile(path=durations_file(backend), text=text + "\n"))
    return files
