"""Where the branch store keeps each file, and what an update touches.

Pure: paths, names and small values; no I/O (reads are in ``stores/snapshot.py``, commits in
``stores/branch.py``). The branch (``ivy-matrix`` by default), layout version 2, holds::

    README.md                                  the index page
    core/gradients.md                          one page per dashboard
    trend.json, charts/*.svg                   the trend and its pictures (trend.py, charts.py)
    .ivy-matrix/state/core/gradients.json      one state document per dashboard (version 3,
                                               by column: columnar.py)
    .ivy-matrix/state/INDEX                    each dashboard's summary (stores/index_file.py)
    .ivy-matrix/state/REVISION                 raised by one in every commit

*Layout 2 reads only what an update touches.* The ``INDEX`` holds what the index page and
the store-wide retirement need of every dashboard, so a writer reads the dashboards its
results touch (one document each, every backend in it: the page needs all of them) and the
small files, whatever the number of dashboards. Layout 1 (one object per backend column,
``core/gradients.d/torch.json``, no ``INDEX``) and the one-file states of before it are read
whole once and rewritten as layout 2 by the next commit (migration on write).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.paths import (
    INDEX_NAME,
    checked_path,
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
SUMMARY_NAME = "INDEX"

# A change of the dashboards it is given only: (their states, the runs of every other
# dashboard of the store, for the retirement window) -> the merged result (fold.merge_batches
# with ``other_runs``).
PartialChange = Callable[[Mapping[DashboardId, DashboardState], Collection[int]], Merged]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """What one update touches, for a store that reads only that: ``dashboards`` are those
    its results reach; ``change`` merges the results into their states (no others are given;
    ``other_runs`` keeps the retirement window the store's)."""

    dashboards: frozenset[DashboardId]
    change: PartialChange
    retire_after_runs: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchPlace:
    """Where the branch store is: ``branch`` (a name; ``refs/heads/`` is dropped) of ``repo``
    (``OWNER/REPO``), its state under ``state_dir`` (a relative path, checked), and the web
    server whose pages people read (``server_url``; None: the store links no page)."""

    repo: str
    branch: str
    state_dir: str = DEFAULT_STATE_DIR
    server_url: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "branch", self.branch.removeprefix("refs/heads/"))
        object.__setattr__(self, "state_dir", checked_path(self.state_dir.strip("/")))

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def layout(self) -> BranchLayout:
        return BranchLayout(self.state_dir)


@dataclass(frozen=True, slots=True)
class BranchLayout:
    """The paths of the state folder ``state_dir`` (a checked relative path) on the branch."""

    state_dir: str

    @property
    def revision_path(self) -> str:
        return f"{self.state_dir}/{REVISION_NAME}"

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
