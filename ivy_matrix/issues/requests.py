"""What one issue writer carries from request to request: client, options, pace, plan, warnings.

I/O only through the :class:`~ivy_matrix.github.types.IssueAPI` it holds (this module makes no
request itself). :class:`IssueRequests` is the base of
:class:`~ivy_matrix.issues.writer.IssueWriter`: the layers above it
(``issues/verify.py``: writes read back; ``issues/finding.py``: finding and creating issues;
``issues/writer.py``: one dashboard's issue) share its state. Out: ``planned`` (the writes a dry
run would have made) and ``warnings`` (also logged as they happen).

**Pace.** GitHub allows about 80 content-creating requests a minute per repository
(PLATFORM.md 1.2): every layer counts each such write with :meth:`IssueRequests._pace`, which
lets a writer's first :data:`PACE_FROM` writes go at once and waits :data:`PACE_SECONDS` before
every later one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ivy_matrix.github.types import IssueAPI
from ivy_matrix.issues.report import PlannedWrite
from ivy_matrix.render import Style
from ivy_matrix.runner.log import Progress

# GitHub allows about 80 content-creating requests a minute per repository (PLATFORM.md 1.2):
# a writer's first PACE_FROM writes go at once, every later one PACE_SECONDS after the last.
PACE_FROM = 20
PACE_SECONDS = 60 / 80


class IssueRequests:
    """The state the issue writer's layers share: client, options, pacing, plan and warnings."""

    def __init__(
        self,
        client: IssueAPI,
        repo: str,
        *,
        label: str,
        dry_run: bool,
        log: Progress,
        style: Style,
        budget: int,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.sleep = sleep
        self.repo = repo
        self.label = label
        self.dry_run = dry_run
        self.log = log
        self.style = style
        self.budget = budget
        self.planned: list[PlannedWrite] = []
        self.warnings: list[str] = []
        self._label_ready = False  # issues/finding.py: the label is known to exist
        self.writes = 0  # content-creating requests made (see _pace)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        self.log.warning(message)

    def plan(self, method: str, target: str, body: str | None = None) -> None:
        self.planned.append(PlannedWrite(method=method, target=target, body=body))

    def _pace(self) -> None:
        """Count a content-creating write; past the first PACE_FROM, wait before it."""
        if self.writes >= PACE_FROM:
            self.sleep(PACE_SECONDS)
        self.writes += 1
