"""The inbox of matrix legs: each leg's results under a ref of its own, read and removed.

I/O, through the git-data calls of :class:`InboxAPI`. A matrix leg publishes its results (its
columns merged into nothing, plus its ``LEGS`` entry) as one root commit under
``refs/ivy-matrix/inbox/<branch>/<run>-<size>-<index>-<tree>``: a ref nobody else writes
(create-if-absent, so no contention; the same results always get the same name). The leg that
folds lists the inbox (one request), reads each pending object once (kept by commit sha) and,
once its commit holding them has landed, deletes the refs it folded. How and when legs fold is
the branch store's loop (``branch.py``); merging results into states is pure
(:func:`fold_results`).

**Design, chosen by measurement.** A leg reads its
own columns (to write nothing when its results are already there, and for a dry run),
then publishes its results (its columns merged into nothing: a root commit of one tree, 3
content-creating requests) under ``refs/ivy-matrix/inbox/<branch>/<run>-<size>-<index>-<tree>``,
a ref nobody else writes (create-if-absent, no contention; the same results always get the
same name). Then the leg whose ref is its run's first pending one *folds*: it lists the
inbox (one request), reads each pending object once (kept by commit sha), merges all of
them into the branch's columns with ``merge.union_states`` (idempotent and
order-independent), records every folded leg in ``LEGS`` (rendering when that completes a
run), commits with compare-and-swap, and only then deletes the refs it folded. Other legs
poll the inbox (windows of 0.5, 1, then 2 s) until their ref is gone, which means their
results are on the branch; the k-th pending ref's leg folds itself after ``PATIENCE`` + k
polls, so a folder that died is replaced by one leg (not all at once) and cannot block, and
refs left by a dead run are folded by the next run's legs (results already in change
nothing). A crash between the commit and the deletes leaves refs whose results are in:
folding them again writes nothing for them. Measured (``bench/store_scale.py``,
bench/README.md): 128 legs in 12.6-14.5 s instead of 79-96 s (3.5-4x one leg), at most 2
tries, 15-16 requests per leg (median); each leg costs 3 content-creating requests for its
inbox object and 1 for the deletion of its ref, plus 3 per fold commit.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Protocol

from ivy_matrix.fold import Merged
from ivy_matrix.merge import union_states
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.statefile import dump_state, split_columns
from ivy_matrix.stores.layout import (
    BranchLayout,
    Leg,
    dump_runs,
    inbox_prefix,
    inbox_ref,
    parse_inbox_ref,
)
from ivy_matrix.stores.snapshot import BranchReader, GitReads

# Requests sent at once when a folder reads inbox objects or deletes the refs it folded.
PARALLEL = 16


class InboxAPI(GitReads, Protocol):
    """The git-data calls the inbox needs (``github.client.GitHubClient`` has them)."""

    def create_tree(
        self, repo: str, base_tree: str | None, files: Mapping[str, str | None]
    ) -> str: ...

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str: ...

    def create_ref(self, repo: str, ref: str, sha: str) -> bool: ...

    def list_refs(self, repo: str, prefix: str) -> dict[str, str]: ...

    def delete_ref(self, repo: str, ref: str) -> bool: ...


class Inbox:
    """The inbox refs of one branch: publish a leg's results, list, read and delete them."""

    def __init__(
        self,
        client: InboxAPI,
        repo: str,
        *,
        branch: str,
        layout: BranchLayout,
        reader: BranchReader,
        message: str,
    ) -> None:
        self.client = client
        self.repo = repo
        self.prefix = inbox_prefix(branch)
        self.branch = branch
        self.layout = layout
        self.message = message
        self._reader = reader
        # Inbox commits read (or written) here: commit sha -> its result columns.
        self._objects: dict[str, list[DashboardState]] = {}
        self._lock = threading.Lock()

    def publish(self, leg: Leg) -> str:
        """Write ``leg``'s results (its columns, merged into nothing) as one root commit under
        an inbox ref nobody else writes; return the ref. Three content-creating requests."""
        columns = [
            column
            for state in leg.change({}).to_save().values()
            for column in split_columns(state).values()
        ]
        files = {
            self.layout.column_path(column.id, column.backend_names[0]): dump_state(column)
            for column in columns
        }
        files[self.layout.legs_path] = dump_runs({leg.run_id: (leg.size, frozenset({leg.index}))})
        tree = self.client.create_tree(self.repo, None, files)
        commit = self.client.create_commit(self.repo, f"{self.message} (results)", tree, [])
        ref = inbox_ref(self.branch, leg, tree)
        # False: the same results are already waiting under this name (a retried request
        # that had landed, or an identical re-run): either way they are in the inbox.
        self.client.create_ref(self.repo, ref, commit)
        with self._lock:
            self._objects[commit] = columns
        return ref

    def pending(self) -> dict[str, str]:
        """The inbox refs of this branch (name -> commit), by name; other names are ignored."""
        listed = self.client.list_refs(self.repo, self.prefix)
        return {ref: listed[ref] for ref in sorted(listed) if parse_inbox_ref(self.prefix, ref)}

    def legs(self, pending: Mapping[str, str]) -> list[tuple[int, int, int]]:
        """(run id, matrix size, leg index) of each leg whose results wait under ``pending``."""
        return [found for ref in pending if (found := parse_inbox_ref(self.prefix, ref))]

    def states(self, pending: Mapping[str, str]) -> list[DashboardState]:
        """The result columns of every pending inbox commit (each listed and read once)."""
        with self._lock:
            missing = [sha for sha in dict.fromkeys(pending.values()) if sha not in self._objects]
        if missing:
            with ThreadPoolExecutor(max_workers=min(PARALLEL, len(missing))) as pool:
                trees = list(pool.map(lambda sha: self.client.get_tree(self.repo, sha), missing))
            read = self._reader.read_files(trees)
            with self._lock:
                self._objects.update(zip(missing, read, strict=True))
        with self._lock:
            return [
                state for sha in dict.fromkeys(pending.values()) for state in self._objects[sha]
            ]

    def delete(self, pending: Mapping[str, str]) -> None:
        """Delete the refs of ``pending`` (only once the branch holds their results)."""
        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(pending))) as pool:
            list(pool.map(lambda ref: self.client.delete_ref(self.repo, ref), pending))


def fold_results(
    states: Mapping[DashboardId, DashboardState], results: Sequence[DashboardState], history: int
) -> dict[DashboardId, DashboardState]:
    """``states`` with every result column merged in (idempotent, order-independent)."""
    folded = dict(states)
    for result in results:
        mine = folded.get(result.id)
        folded[result.id] = result if mine is None else union_states(mine, result, history=history)
    return folded


def own_reports(folded: Merged, own: Merged) -> Merged:
    """``folded`` with the cells, rows and columns this leg's results added as ``own`` (its
    read before publishing) counted them, and the fold's retirement kept."""
    reports = dict(folded.reports)
    for key, mine in own.reports.items():
        reports[key] = replace(
            reports.get(key, mine),
            changed_cells=mine.changed_cells,
            new_rows=mine.new_rows,
            new_backends=mine.new_backends,
        )
    return replace(folded, reports=reports)
