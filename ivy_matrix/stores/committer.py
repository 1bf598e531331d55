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

*The branch's size is bounded*: every :data:`FRESH_ROOT_EVERY` commits (the branch's
``REVISION``) the commit is a root commit, with no parent, of the same whole tree, moved with
the same compare-and-swap (git's ``--force-with-lease`` on the tip that was read, so a writer
that raced it loses as on any commit and reads again). The history before it is then
referenced by nothing: a clone of the branch fetches at most that many commits, and GitHub's
garbage collection drops the rest in time. Nothing reads the branch's history: the cells'
histories, the trend and the revision are files of the tree, a pull request's baseline comes
from the states (``pr/ancestry.py``), and reads fetch the tip alone (``--depth=1``). The REST
API cannot compare and swap a move that is not a fast-forward, so over it the history is kept
whole; a server that refuses the fresh root (a rule that blocks force pushes on the branch)
gets the commit on the tip instead, with a warning, and is not asked again by this command.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import replace
from itertools import chain

from ivy_matrix.errors import PushRefusedError
from ivy_matrix.github.types import RefUpdate
from ivy_matrix.model import DashboardId, Trend
from ivy_matrix.runner.log import Progress
from ivy_matrix.state.fold import Merged, window_horizon
from ivy_matrix.state.trend import TREND_NAME, load_trend
from ivy_matrix.stores import Saved
from ivy_matrix.stores.commit import Writing, branch_trend, commit_files
from ivy_matrix.stores.index_file import Summary, retires_something, summarize
from ivy_matrix.stores.layout import BranchPlace
from ivy_matrix.stores.remote import BranchRemote
from ivy_matrix.stores.snapshot import BranchReader
from ivy_matrix.stores.tree import Content, Snapshot
from ivy_matrix.views.dashboards import RenderedFile
from ivy_matrix.views.durations_file import DurationsFile

# Rounds of "apply, then read the dashboards retirement reaches": the second finds none,
# since the window only depends on the runs, which reading more does not add to.
MERGE_ROUNDS = 3
# Every this many revisions the branch starts afresh (see the module docstring; 0: never).
# bench/branch_size.py measures what it bounds (docs/state.md, "The branch's size").
FRESH_ROOT_EVERY = 20


class Committer:
    """Reads and commits the branch ``place`` names through ``remote``, as ``writing`` says
    (see the module docstring)."""

    def __init__(
        self, remote: BranchRemote, place: BranchPlace, writing: Writing, log: Progress
    ) -> None:
        self.remote = remote
        self.place = place
        self.branch = place.branch
        self.layout = place.layout
        self.writing = writing
        self.log = log
        self.reader = BranchReader(remote, place.branch, self.layout)
        self._fresh_root_refused = False  # the server refused one: not asked again

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
    ) -> Saved | None:
        """Commit what differs (see the module docstring); None when the branch moved first.
        Nothing to write: no request; a dry run: the files it would commit. The runs
        ``merged`` brought get a point in the trend."""
        every_page = self.writing.every_page
        fresh = {d: summarize(s) for d, s in merged.to_save().items()}
        trend = self._trend(snapshot, merged, fresh=fresh, newest=every_page)
        # The store's trend, new points or not (as trend.with_trend gives): the issues and the
        # output folder show it.
        merged = replace(merged, trend=trend or self._current_trend(snapshot))
        files = self._files(snapshot, merged, fresh=fresh)
        saved = Saved(merged=merged, attempts=attempt, revision=snapshot.revision, at=snapshot.tip)
        if self.writing.dry_run:
            return replace(saved, written=tuple(sorted(path for path, _ in files)))
        first = next(files, None)
        if first is None:
            return saved  # nothing differs: no request
        written: list[str] = []
        tree = self.remote.write_tree(
            snapshot.tree.sha or None, self._remembered(chain([first], files), written)
        )
        root = self._fresh_root(snapshot)
        commit = self._commit(snapshot, tree, root=root)
        ref = self.place.ref
        try:
            moved = self.remote.update_ref(RefUpdate(ref=ref, new=commit, old=snapshot.tip))
        except PushRefusedError as error:
            if not root:
                raise
            self._fresh_root_refused = True
            self.log.warning(
                f"branch {self.branch}: the server refuses to start it afresh (a move that is "
                f"not a fast-forward), so its history is kept and grows with every commit; let "
                f"force pushes to it through rules that block them to keep it small "
                f"(docs/state.md): {error}"
            )
            commit = self._commit(snapshot, tree, root=False)
            moved = self.remote.update_ref(RefUpdate(ref=ref, new=commit, old=snapshot.tip))
        if not moved:
            return None
        return replace(
            saved,
            commit_sha=commit,
            at=commit,
            written=tuple(sorted(written)),
            revision=snapshot.revision + 1,
        )

    def _remembered(
        self, files: Iterable[tuple[str, Content | None]], written: list[str]
    ) -> Iterator[tuple[str, Content | None]]:
        """``files`` as the remote writes them, one at a time (a page is let go once
        written), their paths added to ``written``; the state files and the trend are cached
        for the next read (content-addressed: right whether or not this commit lands)."""
        for path, content in files:
            written.append(path)
            if isinstance(content, str) and (self.layout.in_state_dir(path) or path == TREND_NAME):
                self.reader.remember(content)
            yield path, content
            del content  # let go before the next file is made (commit_files)

    def _fresh_root(self, snapshot: Snapshot) -> bool:
        """Whether the commit on ``snapshot`` starts the branch afresh (module docstring)."""
        return (
            FRESH_ROOT_EVERY > 0
            and snapshot.tip is not None
            and (snapshot.revision + 1) % FRESH_ROOT_EVERY == 0
            and self.remote.swaps_any_move
            and not self._fresh_root_refused
        )

    def _commit(self, snapshot: Snapshot, tree: str, *, root: bool) -> str:
        """The commit of ``tree``: on the tip, or with ``root`` a root commit that says so."""
        message = self.writing.message
        if root:
            message = (
                f"{message}\n\nThe branch starts afresh at revision {snapshot.revision + 1}: "
                f"the commits before are not kept (the cells keep their history in their state "
                f"files; docs/state.md)."
            )
            return self.remote.write_commit(message, tree, [])
        parents = [snapshot.tip] if snapshot.tip else []
        return self.remote.write_commit(message, tree, parents)

    def _files(
        self, snapshot: Snapshot, merged: Merged, *, fresh: Mapping[DashboardId, Summary]
    ) -> Iterator[tuple[str, Content | None]]:
        """What committing ``merged`` (with the store's trend) on ``snapshot`` writes, made one
        at a time (none: nothing differs). ``fresh``: summaries already made of ``merged``'s
        states."""
        writing = self.writing
        extra: list[RenderedFile | DurationsFile] = list(writing.extra)
        if writing.site is not None and snapshot.whole:
            keys = [s.key for s in merged.ordered()] if writing.every_page else merged.changed
            extra += writing.site(merged, keys)
        return iter(
            commit_files(
                self.layout,
                snapshot,
                merged,
                style=writing.style,
                every_page=writing.every_page,
                trend=merged.trend,
                fresh=fresh,
                extra=extra,
            )
        )

    def _trend(
        self,
        snapshot: Snapshot,
        merged: Merged,
        *,
        fresh: Mapping[DashboardId, Summary],
        newest: bool,
    ) -> Trend | None:
        """The branch's trend with the points of the runs ``merged`` brought (None: no run, no
        change); with ``newest`` (``merged`` holds every dashboard: ``publish``), also of the
        store's newest run when the trend has no point of it yet, as trend.with_trend does."""
        previous = self._current_trend(snapshot) or Trend()
        wanted = set(merged.runs)
        if newest:
            last = max((s.runs[0] for s in merged.states.values() if s.runs), default=None)
            if last is not None and (not previous.points or last > previous.points[-1].run):
                wanted.add(last)
        if not wanted:
            return None
        return branch_trend(
            previous, snapshot, merged, sorted(wanted), cap=self.writing.trend_points, fresh=fresh
        )

    def _current_trend(self, snapshot: Snapshot) -> Trend | None:
        """The trend on the branch at ``snapshot`` (None when it has no ``trend.json``)."""
        text = self.reader.text(snapshot.tree, TREND_NAME)
        if text is None:
            return None
        return load_trend(text, where=f"{TREND_NAME} on branch {self.branch}")

    def report(self, saved: Saved) -> None:
        where = f"branch {self.branch}"
        if self.writing.dry_run:
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
