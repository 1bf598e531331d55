"""Which default-branch results are ancestors of a pull request's merge base.

Pure: no I/O. The baseline of a pull request's cell (pr/verdicts.py) is its newest
default-branch result from the merge base or an ancestor of it; an :class:`Ancestry` says which
recorded jobs those are:

- :func:`commit_ancestry` wraps a real test (``is_ancestor(sha) -> bool | None``, e.g.
  ``git merge-base --is-ancestor``); a result with no recorded sha is not known to be one.
- :func:`run_order_ancestry` needs no git: it finds the newest default-branch run that recorded
  the merge-base sha, and counts every default-branch result of that run or an earlier one as
  an ancestor. That is exact for a default branch that only moves forward (runs start in
  commit order); a force-push or a run of an older commit started late can mislead it. When
  no run recorded the merge base (not set, or older than the history), nothing is an ancestor
  and every baseline is "latest".
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from ivy_matrix.model import DashboardState, Source
from ivy_matrix.state.history import is_default_branch
from ivy_matrix.state.merge import Batch


@dataclass(frozen=True, slots=True, kw_only=True)
class Ancestry:
    """Which recorded jobs tested the merge base or an ancestor of it (None: unknown).

    ``located`` says whether the merge base itself is known at all.
    """

    test: Callable[[Source], bool | None]
    located: bool

    def __call__(self, source: Source) -> bool | None:
        return self.test(source)


NO_ANCESTRY = Ancestry(test=lambda _source: None, located=False)


def commit_ancestry(is_ancestor: Callable[[str], bool | None]) -> Ancestry:
    """An ancestry from a real test of commits (``is_ancestor(sha)``, None when unknown)."""
    return Ancestry(test=lambda s: is_ancestor(s.sha) if s.sha else None, located=True)


def run_order_ancestry(
    states: Iterable[DashboardState], base_sha: str, branches: Collection[str] = ()
) -> Ancestry:
    """An ancestry from run order alone (see the module docstring for the approximation)."""
    if not base_sha:
        return NO_ANCESTRY
    anchor = -1
    seen: set[int] = set()
    for state in states:
        for row in state.rows:
            for cell in row.cells.values():
                if id(cell) in seen:
                    continue
                seen.add(id(cell))
                for entry in cell.entries:
                    source = entry.source
                    if source.sha == base_sha and is_default_branch(source, branches):
                        anchor = max(anchor, source.run.run_id)
    if anchor < 0:
        return NO_ANCESTRY
    return Ancestry(test=lambda s: s.run.run_id <= anchor, located=True)


def pr_base_sha(batches: Iterable[Batch]) -> str:
    """The base sha the pull request's newest result recorded ("" when none did)."""
    entries = [e for b in batches for cells in b.cells.values() for e in cells.values()]
    newest = max(entries, key=lambda e: e.run, default=None)
    return "" if newest is None else newest.source.base_sha
