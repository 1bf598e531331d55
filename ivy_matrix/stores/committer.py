"""One compare-and-swap commit of the branch store: read what a change needs, write what
differs, move the branch if it is still where it was read, or not at all.

I/O through a :class:`~ivy_matrix.stores.remote.BranchRemote`; ``stores/branch.py`` tries again
from a fresh read when the branch moved:

- :meth:`Committer.read` reads the branch at its tip: the dashboards asked for, or all;
- :meth:`Committer.merge` applies a change to what was read and reads more where the
  store-wide retirement reaches a dashboard not read yet (its summary says so), then applies
  it again, so the result is what the change gives on the whole branch;
- :meth:`Committer.land` writes the files that differ (``stores/commit.py``) as one tree and
  one commit on the tip, and moves the branch to it by compare-and-swap: ``None`` when the
  branch moved first.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

from ivy_matrix.github.types import RefUpdate
from ivy_matrix.model import DashboardId, Trend
from ivy_matrix.runner.log import Progress
from ivy_matrix.state.fold import Merged, window_horizon
from ivy_matrix.state.trend import DEFAULT_POINTS, TREND_NAME, load_trend
from ivy_matrix.stores import Saved
from ivy_matrix.stores.commit import branch_trend, commit_files
from ivy_matrix.stores.index_file import Summary, retires_something, summarize
from ivy_matrix.stores.layout import BranchLayout
from ivy_matrix.stores.remote import BranchRemote
from ivy_matrix.stores.snapshot import BranchReader
from ivy_matrix.stores.tree import Snapshot
from ivy_matrix.views.dashboards import RenderedFile, Style

# Rounds of "apply, then read the dashboards retirement reaches": the second finds none,
# since the window only depends on the runs, which reading more does not add to.
MERGE_ROUNDS = 3


class Committer:
    """Reads and commits ``branch`` through ``remote`` (see the module docstring)."""

    def __init__(
        self,
        remote: BranchRemote,
        branch: str,
        layout: BranchLayout,
        *,
        message: str,
        style: Style,
        dry_run: bool,
        log: Progress,
        trend_points: int = DEFAULT_POINTS,
        site: Callable[[Merged, Collection[str]], list[RenderedFile]] | None = None,
    ) -> None:
        self.remote = remote
        self.site = site  # stores/branch.py's Render: drawn only where every dashboard was read
        self.trend_points = trend_points
        self.branch = branch
        self.layout = layout
        self.message = message
        self.style = style
        self.dry_run = dry_run
        self.log = log
        self.reader = BranchReader(remote, branch, layout)

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def read(self, tip: str | None, dashboards: Collection[DashboardId] | None) -> Snapshot:
        return self.reader.read(tip, dashboards)

    def merge(
        self, snapshot: Snapshot, change: Callable[[Snapshot], Merged], retire_after_runs: int
    ) -> tuple[Snapshot, Merged]:
        """``change`` on ``snapshot``, with every dashboard the retirement reaches read first
        (see the module docstring); the snapshot that was used, and the result."""
        for _ in range(MERGE_ROUNDS):
            merged = change(snapshot)
            if snapshot.whole:
                return snapshot, merged
            others = {d: s for d, s in snapshot.summaries.items() if d not in merged.states}
            horizon = window_horizon(
                merged.states, retire_after_runs, {r for s in others.values() for r in s.runs}
            )
            reached = [d for d, s in others.items() if retires_something(s, horizon)]
            if not reached:
                return snapshot, merged
            snapshot = self.reader.more(snapshot, reached)
        return snapshot, change(snapshot)

    def land(
        self,
        snapshot: Snapshot,
        merged: Merged,
        *,
        attempt: int,
        every_page: bool = False,
        trend_runs: Collection[int] = (),
    ) -> Saved | None:
        """Commit what differs (see the module docstring); None when the branch moved first.
        Nothing to write: no request; a dry run: the files it would commit. ``trend_runs``:
        the runs that get a point in the trend."""
        fresh = {d: summarize(s) for d, s in merged.to_save().items()}
        trend = self.trend(snapshot, merged, trend_runs, fresh=fresh, newest=every_page)
        # The store's trend, new points or not (as trend.with_trend gives): the issues and the
        # output folder show it.
        merged = replace(merged, trend=trend or self.current_trend(snapshot))
        writes = self.files(snapshot, merged, every_page=every_page, fresh=fresh)
        saved = Saved(merged=merged, attempts=attempt, revision=snapshot.revision, at=snapshot.tip)
        if self.dry_run:
            return replace(saved, written=tuple(sorted(writes)))
        if not writes:
            return saved
        tree = self.remote.write_tree(snapshot.tree.sha or None, writes)
        parents = [snapshot.tip] if snapshot.tip else []
        commit = self.remote.write_commit(self.message, tree, parents)
        update = RefUpdate(ref=self.ref, new=commit, old=snapshot.tip)
        if not self.remote.update_ref(update):
            return None
        for path, text in writes.items():
            if text is not None and (self.layout.in_state_dir(path) or path == TREND_NAME):
                self.reader.remember(text)
        return replace(
            saved,
            commit_sha=commit,
            at=commit,
            written=tuple(sorted(writes)),
            revision=snapshot.revision + 1,
        )

    def files(
        self,
        snapshot: Snapshot,
        merged: Merged,
        *,
        every_page: bool = False,
        fresh: Mapping[DashboardId, Summary] | None = None,
    ) -> dict[str, str | None]:
        """What committing ``merged`` on ``snapshot`` writes (empty: nothing differs); with
        the store's trend when ``merged`` holds it (:meth:`trend`), else the branch's as it
        is (the index page shows it). ``fresh``: summaries already made of ``merged``'s
        states."""
        trend = merged.trend if merged.trend is not None else self.current_trend(snapshot)
        extra: list[RenderedFile] = []
        if self.site is not None and snapshot.whole:
            keys = [s.key for s in merged.ordered()] if every_page else merged.changed
            extra = self.site(replace(merged, trend=trend), keys)
        return commit_files(
            self.layout,
            snapshot,
            merged,
            style=self.style,
            every_page=every_page,
            trend=trend,
            fresh=fresh,
            extra=extra,
        )

    def trend(
        self,
        snapshot: Snapshot,
        merged: Merged,
        runs: Collection[int],
        *,
        fresh: Mapping[DashboardId, Summary] | None = None,
        newest: bool = False,
    ) -> Trend | None:
        """The branch's trend with the points of ``runs`` (None: no run, no change); with
        ``newest`` (``merged`` holds every dashboard: ``publish``), also of the store's newest
        run when the trend has no point of it yet, as trend.with_trend does."""
        previous = self.current_trend(snapshot) or Trend()
        wanted = set(runs)
        if newest:
            last = max((s.runs[0] for s in merged.states.values() if s.runs), default=None)
            if last is not None and (not previous.points or last > previous.points[-1].run):
                wanted.add(last)
        if not wanted:
            return None
        return branch_trend(
            previous, snapshot, merged, sorted(wanted), cap=self.trend_points, fresh=fresh or {}
        )

    def current_trend(self, snapshot: Snapshot) -> Trend | None:
        """The trend on the branch at ``snapshot`` (None when it has no ``trend.json``)."""
        text = self.reader.text(snapshot.tree, TREND_NAME)
        if text is None:
            return None
        return load_trend(text, where=f"{TREND_NAME} on branch {self.branch}")

    def report(self, saved: Saved) -> None:
        where = f"branch {self.branch}"
        if self.dry_run:
            self.log.info(f"dry run: would commit {len(saved.written)} file(s) to {where}")
            for path in saved.written:
                self.log.info(f"  {path}")
        elif saved.commit_sha:
            self.log.info(
                f"committed {len(saved.written)} file(s) to {where} "
                f"(revision {saved.revision}, {saved.attempts} attempt(s), {self.remote.name})"
            )
        else:
            self.log.info(f"{where} already shows these results: nothing to commit")
