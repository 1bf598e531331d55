"""Where the branch store keeps each file, and the record of the matrix legs that finished.

Pure: paths and file contents in, paths, file contents and links out; no I/O (the reads are in
``stores/snapshot.py``, the commits in ``branch.py``). The branch (``ivy-matrix`` by default)
holds::

    README.md                                   the index page      (rendered, from the caller)
    core/gradients.md                           one page per dashboard
    trend.json                                  one point per completed run (trend.py; kept
                                                by the store, read back by the next render)
    .ivy-matrix/state/core/gradients.d/torch.json   one state object per backend column
    .ivy-matrix/state/LEGS                       the matrix legs that finished, per run
    .ivy-matrix/state/REVISION                   raised by one in every commit

*One object per column* (chosen by measurement, ``bench/store_scale.py``): a dashboard's state
is split by backend (``statefile.split_columns``; each part is an ordinary state document and
``join_columns`` puts them back), so a leg that brings one backend's results reads and
rewrites only that backend's columns: a leg of ~900 cases sends ~90 KB instead of every
dashboard it touched. Older one-file states (``core/gradients.json``) are read as they are and
replaced by their columns when written (:meth:`BranchLayout.state_writes`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from ivy_matrix.errors import StoreError
from ivy_matrix.fold import Merged
from ivy_matrix.jsonshape import MalformedError, expect_int, expect_list
from ivy_matrix.merge import DEFAULT_HISTORY
from ivy_matrix.model import DashboardId
from ivy_matrix.paths import INDEX_NAME, column_file, dashboard_file, relative_path
from ivy_matrix.statefile import dump_state, split_columns
from ivy_matrix.stores import Change

DEFAULT_STATE_DIR = ".ivy-matrix/state"
# A counter in the state folder, raised by one in every commit. Commits are compare-and-swap,
# so revisions are strictly increasing; projections (issue bodies) carry the revision they
# show, so that a slow writer never replaces a newer projection with an older one.
REVISION_NAME = "REVISION"
# The matrix legs that finished, per run (dump_runs below): the leg that completes a run
# renders the dashboards. Upper case, so no (lower-case) category folder meets it.
LEGS_NAME = "LEGS"

# The finished-legs record: run id -> (matrix size, indexes of the legs that finished).
Runs = dict[int, tuple[int, frozenset[int]]]

RUNS_FORMAT = "ivy-matrix-runs"
RUNS_KEPT_FOR_LEGS = 50  # runs whose finished legs are remembered


def dump_runs(done: Mapping[int, tuple[int, frozenset[int]]]) -> str:
    """The matrix legs that finished, per run id: ``{run: (matrix size, leg indexes)}``.

    Only the newest ``RUNS_KEPT_FOR_LEGS`` runs are kept. Deterministic, so an unchanged record
    is the same blob.
    """
    kept = sorted(done.items(), reverse=True)[:RUNS_KEPT_FOR_LEGS]
    runs = {str(run): {"size": size, "done": sorted(legs)} for run, (size, legs) in kept}
    document = {"format": RUNS_FORMAT, "version": 1, "runs": runs}
    return json.dumps(document, separators=(",", ":"), sort_keys=True) + "\n"


def load_runs(text: str, *, where: str) -> dict[int, tuple[int, frozenset[int]]]:
    """Parse :func:`dump_runs`' text; :class:`StoreError` naming ``where`` if it is not one."""
    try:
        document = json.loads(text)
        if not isinstance(document, dict) or document.get("format") != RUNS_FORMAT:
            raise MalformedError(f"not an {RUNS_FORMAT} document")
        runs = document["runs"]
        if not isinstance(runs, dict):
            raise MalformedError("'runs' is not an object")
        return {
            int(run): (
                expect_int(entry["size"]),
                frozenset(expect_int(i) for i in expect_list(entry["done"])),
            )
            for run, entry in runs.items()
        }
    except (ValueError, KeyError, TypeError) as error:
        raise StoreError(
            f"cannot read the finished matrix legs {where}: {error}; delete the file (the "
            f"next run that finishes renders every dashboard again)"
        ) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Leg:
    """One matrix leg's part in a run: what it reads, and when the run is complete.

    ``dashboards`` and ``backends`` are what its results touch (it reads only those columns);
    ``change`` is its change without store-wide retirement (that needs every dashboard, so it
    runs in the leg that completes the run, with the store's own change). ``index`` is the
    leg's ``strategy.job-index``, ``size`` the ``strategy.job-total``; ``history`` the
    results kept per cell (``history``), used when folding results into the branch.
    """

    run_id: int
    index: int
    size: int
    dashboards: frozenset[DashboardId]
    backends: frozenset[str]
    change: Change
    history: int = DEFAULT_HISTORY


def record_leg(legs: Runs, leg: Leg) -> tuple[Runs, bool]:
    """The finished-legs record with ``leg`` in it, and whether its run is complete."""
    size, done = legs.get(leg.run_id, (leg.size, frozenset()))
    size = max(size, leg.size)
    done |= {leg.index}
    return {**legs, leg.run_id: (size, done)}, done >= frozenset(range(size))


@dataclass(frozen=True, slots=True)
class BranchLayout:
    """The paths of the state folder ``state_dir`` (a checked relative path) on the branch."""

    state_dir: str

    @property
    def revision_path(self) -> str:
        return f"{self.state_dir}/{REVISION_NAME}"

    @property
    def legs_path(self) -> str:
        return f"{self.state_dir}/{LEGS_NAME}"

    def state_path(self, dashboard: DashboardId) -> str:
        """Where older versions kept a dashboard's whole state, in one file (read, migrated)."""
        return f"{self.state_dir}/{relative_path(dashboard, '.json').as_posix()}"

    def column_path(self, dashboard: DashboardId, backend: str) -> str:
        """Where one backend's column of a dashboard lives on the branch."""
        return f"{self.state_dir}/{column_file(dashboard, backend)}"

    def is_state_file(self, path: str) -> bool:
        return path.startswith(self.state_dir + "/") and path.endswith(".json")

    def in_state_dir(self, path: str) -> bool:
        """Whether ``path`` is the state folder or inside it."""
        return path == self.state_dir or path.startswith(self.state_dir + "/")

    def state_files(self, dashboard: DashboardId, backends: Iterable[str]) -> set[str]:
        """A dashboard's state files for ``backends``: their columns, and the one-file state
        of older versions."""
        return {self.state_path(dashboard), *(self.column_path(dashboard, b) for b in backends)}

    def leg_paths(self, leg: Leg) -> set[str]:
        """The state files a leg's results touch: its dashboards' for its backends."""
        return {path for d in leg.dashboards for path in self.state_files(d, leg.backends)}

    def state_writes(
        self, paths: Mapping[DashboardId, set[str]], merged: Merged, *, complete: bool
    ) -> dict[str, str | None]:
        """The state files a change's result needs (path -> text, None to delete): its
        dashboards' columns; the one-file states it replaces; with ``complete`` (everything
        read) the columns that went. ``paths`` are the state files read, by dashboard."""
        wanted: dict[str, str | None] = {}
        for dashboard, state in merged.to_save().items():
            if state.id != dashboard:
                raise ValueError(f"state of {state.key!r} returned under {dashboard.key!r}")
            for backend, column in split_columns(state).items():
                wanted[self.column_path(dashboard, backend)] = dump_state(column)
            old = paths.get(dashboard, set())
            for path in old:
                if path not in wanted and (complete or path == self.state_path(dashboard)):
                    wanted[path] = None
        for gone in merged.removed:
            for path in paths.get(gone.id, set()):
                wanted[path] = None
        return wanted


def page_links(
    server_url: str, repo: str, branch: str, merged: Merged
) -> tuple[dict[str, str], str]:
    """Where people read the committed pages on GitHub: per dashboard key, and the index."""
    base = f"{server_url.rstrip('/')}/{repo}/blob/{quote(branch)}"
    urls = {s.key: f"{base}/{quote(dashboard_file(s))}" for s in merged.states.values()}
    return urls, f"{base}/{INDEX_NAME}"


# Matrix legs publish their results under refs of their own here (``branch.py``): one ref per
# leg and result, created if absent, so publishing never contends; any writer folds them in.
INBOX_ROOT = "refs/ivy-matrix/inbox"


def inbox_prefix(branch: str) -> str:
    """The prefix of the inbox refs of ``branch`` (ends with a slash)."""
    return f"{INBOX_ROOT}/{branch}/"


def inbox_ref(branch: str, leg: Leg, tree: str) -> str:
    """The inbox ref of ``leg``'s results, held in ``tree``: the run, the matrix size and the
    leg's index (so a folder records the leg without reading more), then the tree's sha, so
    that the same results always get the same name and different ones never share it."""
    return f"{inbox_prefix(branch)}{leg.run_id}-{leg.size}-{leg.index}-{tree[:16]}"


def parse_inbox_ref(prefix: str, ref: str) -> tuple[int, int, int] | None:
    """(run id, matrix size, leg index) of an inbox ref, or None for a name not ours."""
    parts = ref.removeprefix(prefix).split("-")
    if not ref.startswith(prefix) or len(parts) != 4 or not all(p.isdigit() for p in parts[:3]):  # noqa: PLR2004  -- run-size-index-tree
        return None
    run, size, index = (int(part) for part in parts[:3])
    return (run, size, index) if 0 <= index < size else None


def record_legs(legs: Runs, finished: Iterable[tuple[int, int, int]]) -> tuple[Runs, bool]:
    """The finished-legs record with every (run, size, index) in it, and whether one of their
    runs is complete with them (then the writer renders, as :func:`record_leg` says)."""
    record = dict(legs)
    runs = set()
    for run, size, index in finished:
        old_size, done = record.get(run, (size, frozenset()))
        record[run] = (max(old_size, size), done | {index})
        runs.add(run)
    return record, any(record[run][1] >= frozenset(range(record[run][0])) for run in runs)
