"""Where rendered dashboards go: files, issues, the job summary and step outputs.

- ``targets/files.py``: pages in ``--output-dir``;
- ``issues/publish.py``: one issue per dashboard and the index issue (the ``issues/``
  package says how they are written);
- ``targets/summary.py``: the job summary, step outputs, ``--summary-json`` and annotations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class Published:
    """Where people read the dashboards after an update: per dashboard key, and the index;
    ``notes``: what a target left for a later run, in words (the job summary shows them)."""

    urls: Mapping[str, str] = field(default_factory=dict)
    index_url: str | None = None
    notes: tuple[str, ...] = ()
    site_url: str = ""
