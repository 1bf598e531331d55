"""Where the branch store keeps each file, the inbox's ref names, and what an update touches.

Pure: paths, names and small values; no I/O (reads are in ``stores/snapshot.py``, commits in
``stores/branch.py``). The branch (``ivy-matrix`` by default), layout version 2, holds::

    README.md                                  the index page
    core/gradients.md                          one page per dashboard
    trend.json, charts/*.svg                   the trend and its pictures (trend.py, charts.py)
    .ivy-matrix/state/core/gradients.json      one state document per dashboard (version 3,
                                               by column: columnar.py)
    .ivy-matrix/state/INDEX                    each dashboard's summary (stores/index.py)
    .ivy-matrix/state/LEGS                     the matrix legs that finished, per run
    .ivy-matrix/state/REVISION                 raised by one in every commit

*Layout 2 reads only what an update touches.* The ``INDEX`` holds what the index page and
the store-wide retirement need of every dashboard, so a writer reads the dashboards its
results touch (one document each, every backend in it: the page needs all of them) and the
small files, whatever the number of dashboards. Layout 1 (one object per backend column,
``core/gradients.d/torch.json``, no ``INDEX``) and the one-file states of before it are read
whole once and rewritten as layout 2 by the next commit (migration on write).

The inbox (``stores/inbox.py``): a leg's results wait under
``refs/ivy-matrix/inbox/<branch>/<run>-<size>-<index>-<tree>`` (size 0 and index 0 for an
update that is not a matrix leg); the ref ``.../lease`` says which leg is folding them. Names
are parsed as ASCII digits of bounded length, and a matrix has at most ``MAX_MATRIX_SIZE``
legs (GitHub: "A matrix will generate a maximum of 256 jobs per workflow run"), so no name
can make a reader allocate by its numbers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from ivy_matrix.errors import StoreError
from ivy_matrix.jsonshape import MalformedError, expect_int, expect_list
from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.merge import DEFAULT_HISTORY
from ivy_matrix.state.paths import (
    INDEX_NAME,
    column_file,
    dashboard_file,
    relative_path,
    state_file,
)

DEFAULT_STATE_DIR = ".ivy-matrix/state"
LAYOUT_VERSION = 2
# A counter raised by one in every commit. Commits are compare-and-swap, so revisions strictly
# increase; issue bodies carry the revision they show, so that a slow writer never replaces a
# newer projection with an older one.
REVISION_NAME = "REVISION"
# The matrix legs that finished, per run (dump_runs below). Upper case and no ``.json``,
# like the two below, so no dashboard's file meets them and no older version reads them.
LEGS_NAME = "LEGS"
SUMMARY_NAME = "INDEX"
# GitHub runs at most 256 jobs of one matrix.
MAX_MATRIX_SIZE = 256
# Run ids are 64-bit integers: at most 19 digits.
_RUN_DIGITS = 19

# The finished-legs record: run id -> (matrix size, indexes of the legs that finished).
Runs = dict[int, tuple[int, frozenset[int]]]

# A change of the dashboards it is given only: (their states, the runs of every other
# dashboard of the store, for the retirement window) -> the merged result (fold.merge_batches
# with ``other_runs``).
PartialChange = Callable[[Mapping[DashboardId, DashboardState], Collection[int]], Merged]

RUNS_FORMAT = "ivy-matrix-runs"
RUNS_KEPT_FOR_LEGS = 50  # runs whose finished legs are remembered


def dump_runs(done: Runs) -> str:
    """The matrix legs that finished, per run id: ``{run: (matrix size, leg indexes)}``.

    Only the newest ``RUNS_KEPT_FOR_LEGS`` runs are kept. Deterministic, so an unchanged record
    is the same blob.
    """
    kept = sorted(done.items(), reverse=True)[:RUNS_KEPT_FOR_LEGS]
    runs = {str(run): {"size": size, "done": sorted(legs)} for run, (size, legs) in kept}
    document = {"format": RUNS_FORMAT, "version": 1, "runs": runs}
    return json.dumps(document, separators=(",", ":"), sort_keys=True) + "\n"


def load_runs(text: str, *, where: str, max_size: int = MAX_MATRIX_SIZE) -> Runs:
    """Parse :func:`dump_runs`' text; :class:`StoreError` naming ``where`` if it is not one.

    Entries that no matrix can have (a run id that is not ASCII digits, a size over
    ``max_size``, a leg index outside the size) are left out, so a bad entry is never kept.
    """
    try:
        document = json.loads(text)
        if not isinstance(document, dict) or document.get("format") != RUNS_FORMAT:
            raise MalformedError(f"not an {RUNS_FORMAT} document")
        runs = document["runs"]
        if not isinstance(runs, dict):
            raise MalformedError("'runs' is not an object")
        record = {}
        for run, entry in runs.items():
            size = expect_int(entry["size"])
            done = frozenset(expect_int(i) for i in expect_list(entry["done"]))
            if (
                _ASCII_RUN.fullmatch(run)
                and 0 < size <= max_size
                and all(0 <= index < size for index in done)
            ):
                record[int(run)] = (size, done)
    except (ValueError, KeyError, TypeError) as error:
        raise StoreError(
            f"cannot read the finished matrix legs {where}: {error}; delete the file (the "
            f"next run that finishes renders every dashboard again)"
        ) from None
    return record


_ASCII_RUN = re.compile(rf"[0-9]{{1,{_RUN_DIGITS}}}")


@dataclass(frozen=True, slots=True, kw_only=True)
class MatrixLeg:
    """A matrix leg's place in its run: ``strategy.job-index`` of ``strategy.job-total``."""

    run_id: int
    index: int
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """What one update touches and who makes it, for a store that reads only that.

    ``dashboards`` are those its results reach; ``change`` merges the results into their
    states (no others are given; ``other_runs`` keeps the retirement window the store's);
    ``matrix`` is set for a leg of a matrix (``--matrix-size``); ``holder`` names this job in
    the fold lease (``run R attempt A job J``), ``job_id`` lets a waiting leg ask GitHub
    whether a lease's holder is still running.
    """

    dashboards: frozenset[DashboardId]
    change: PartialChange
    run_id: int
    history: int = DEFAULT_HISTORY
    retire_after_runs: int = 0
    matrix: MatrixLeg | None = None
    holder: str = ""
    job_id: int | None = None


def record_legs(legs: Runs, finished: Iterable[tuple[int, int, int]]) -> tuple[Runs, bool]:
    """The finished-legs record with every (run, size, index) in it (size 0: not a matrix
    leg, not recorded), and whether one of their runs is complete with them."""
    record = dict(legs)
    runs = set()
    for run, size, index in finished:
        if not 0 < size <= MAX_MATRIX_SIZE or not 0 <= index < size:
            continue
        old_size, done = record.get(run, (size, frozenset()))
        record[run] = (max(old_size, size), done | {index})
        runs.add(run)
    return record, any(_complete(*record[run]) for run in runs)


def completed_runs(before: Runs, after: Runs) -> set[int]:
    """The runs complete in the record ``after`` and not in ``before``."""
    return {
        run
        for run, (size, done) in after.items()
        if _complete(size, done) and not (run in before and _complete(*before[run]))
    }


def _complete(size: int, done: frozenset[int]) -> bool:
    """Whether the legs ``done`` (indexes below ``size``) are every leg of the matrix."""
    return len({index for index in done if 0 <= index < size}) >= size


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

    @property
    def summary_path(self) -> str:
        return f"{self.state_dir}/{SUMMARY_NAME}"

    def state_path(self, dashboard: DashboardId) -> str:
        """Where a dashboard's state lives (layout 2; named as its page is, so unique)."""
        return f"{self.state_dir}/{state_file(dashboard)}"

    def one_file_path(self, dashboard: DashboardId) -> str:
        """Where versions before layout 1 kept a dashboard's state (``paths.relative_path``;
        the same as :meth:`state_path` for lower-case file-safe names, Ivy's among them)."""
        return f"{self.state_dir}/{relative_path(dashboard, '.json').as_posix()}"

    def column_path(self, dashboard: DashboardId, backend: str) -> str:
        """Where layout 1 kept one backend's column of a dashboard."""
        return f"{self.state_dir}/{column_file(dashboard, backend)}"

    def is_state_file(self, path: str) -> bool:
        return path.startswith(self.state_dir + "/") and path.endswith(".json")

    def in_state_dir(self, path: str) -> bool:
        """Whether ``path`` is the state folder or inside it."""
        return path == self.state_dir or path.startswith(self.state_dir + "/")


def page_links(
    server_url: str, repo: str, branch: str, states: Iterable[DashboardState]
) -> tuple[dict[str, str], str]:
    """Where people read the committed pages on GitHub: per dashboard key, and the index."""
    base = f"{server_url.rstrip('/')}/{repo}/blob/{quote(branch)}"
    urls = {s.key: f"{base}/{quote(dashboard_file(s))}" for s in states}
    return urls, f"{base}/{INDEX_NAME}"


# ----------------------------------------------------------------------------- the inbox

INBOX_ROOT = "refs/ivy-matrix/inbox"
# Bad inbox objects are moved here, under the same name, for people to look at.
REJECTED_ROOT = "refs/ivy-matrix/rejected"
LEASE_NAME = "lease"
_INBOX_NAME = re.compile(
    rf"([0-9]{{1,{_RUN_DIGITS}}})-([0-9]{{1,3}})-([0-9]{{1,3}})-([0-9a-f]{{1,40}})"
)


def inbox_prefix(branch: str) -> str:
    """The prefix of the inbox refs of ``branch`` (ends with a slash)."""
    return f"{INBOX_ROOT}/{branch}/"


def lease_ref(branch: str) -> str:
    """The ref that says which leg folds ``branch``'s inbox (it points at that leg's results)."""
    return f"{inbox_prefix(branch)}{LEASE_NAME}"


def rejected_ref(branch: str, ref: str) -> str:
    """Where a bad inbox ref of ``branch`` is moved aside."""
    return f"{REJECTED_ROOT}/{branch}/{ref.removeprefix(inbox_prefix(branch))}"


def inbox_ref(branch: str, run_id: int, matrix: MatrixLeg | None, tree: str) -> str:
    """The inbox ref of one update's results, held in ``tree``: the run, the matrix size and
    the leg's index (0 and 0 outside a matrix), so a folder records the leg without reading
    more; then the tree's sha, so the same results always get the same name."""
    size, index = (matrix.size, matrix.index) if matrix else (0, 0)
    return f"{inbox_prefix(branch)}{run_id}-{size}-{index}-{tree[:16]}"


def parse_inbox_ref(prefix: str, ref: str) -> tuple[int, int, int] | None:
    """(run id, matrix size, leg index) of an inbox ref; None for any other name (not ASCII
    digits, too long, a size over ``MAX_MATRIX_SIZE``, an index outside the size)."""
    if not ref.startswith(prefix):
        return None
    found = _INBOX_NAME.fullmatch(ref.removeprefix(prefix))
    if found is None:
        return None
    run, size, index = (int(found.group(n)) for n in (1, 2, 3))
    if size > MAX_MATRIX_SIZE or (index >= size if size else index != 0):
        return None
    return run, size, index
