"""Where rendered dashboards go: files, issues, the job summary and step outputs.

- ``targets/files.py``: pages in ``--output-dir``;
- ``targets/issues.py``: one issue per dashboard and the index issue (written through
  ``issue_writer.py``, which builds on ``issue_finding.py``, ``issue_verify.py`` and
  ``issue_requests.py``, and ``issue_index.py``; results in ``issue_results.py``);
- ``targets/summary.py``: the job summary, step outputs, ``--summary-json`` and annotations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class Published:
    """Where people read the dashboards after an update: per dashboard key, and the index."""

    urls: Mapping[str, str] = field(default_factory=dict)
    index_url: str | None = None
