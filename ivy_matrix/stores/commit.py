"""What one commit of the branch store writes, from a change's result and what was read.

Pure: values in, ``(path, content)`` pairs (None: delete) out, each made when the writer asks
for it, so that a commit holds one page's text at a time (``stores/committer.py`` hands them
to the remote as they come); a durations file is given as what makes its pieces
(``stores/tree.Content``), so that it is hashed here and scrubbed and written by the remote a
piece at a time, never whole. Every
commit keeps the branch a render of its state: the changed dashboards' documents and pages,
the index file's summaries of them, the index page drawn from every summary, and
``REVISION`` raised by one. Only files whose git blob differs from the tip's
are written; when none does, nothing is written at all (not even the revision).

A branch read without a valid index (layout 1 or older, or written since by an older
version) is migrated by its next commit: every dashboard's document and page is written in
layout 2, the files of older layouts are deleted, and the index file is written.

The trend (``trend.json`` at the branch's root, trend.py) gets the points of the runs a
commit completes: a run's point sums every dashboard's part, computed for the dashboards read
and taken from the index file's summaries for the others (:func:`branch_trend`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ivy_matrix.model import DashboardId, Trend
from ivy_matrix.state.columnar import dump_columns
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.paths import INDEX_NAME, dashboard_file
from ivy_matrix.state.trend import DEFAULT_POINTS, dashboard_part, join_parts, with_points
from ivy_matrix.stores.index_file import Summary, dump_index, summarize
from ivy_matrix.stores.layout import BranchLayout
from ivy_matrix.stores.tree import Content, Snapshot, git_blob_sha
from ivy_matrix.views.dashboards import RenderedFile, index_trend, render_page, trend_files
from ivy_matrix.views.durations_file import DurationsFile
from ivy_matrix.views.index_page import render_index_page
from ivy_matrix.views.style import Style

# Files committed beside the pages, drawn from the whole store (the site): (the change's result
# with every dashboard, the keys of those to draw) -> the files (text None: delete).
Render = Callable[[Merged, Collection[str]], list[RenderedFile]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Writing:
    """What the branch store's commits say and hold: the commit ``message``, the pages'
    ``style``, the trend's cap (``trend_points``), the files ``site`` draws beside the pages
    (only where every dashboard was read), files known before (``extra``: the durations
    files), every page rendered (``every_page``: ``publish``)
    or only the changed ones, and ``dry_run``: nothing is written, and the files that would be
    are reported."""

    message: str = "ivy-matrix: update"
    style: Style = Style.IVY
    trend_points: int = DEFAULT_POINTS
    site: Render | None = None
    extra: tuple[DurationsFile, ...] = ()
    every_page: bool = False
    dry_run: bool = False


def commit_files(
    layout: BranchLayout,
    snapshot: Snapshot,
    merged: Merged,
    *,
    style: Style,
    every_page: bool = False,
    trend: Trend | None = None,
    fresh: Mapping[DashboardId, Summary] | None = None,
    extra: Sequence[RenderedFile | DurationsFile] = (),
) -> Iterator[tuple[str, Content | None]]:
    """The files that differ from ``snapshot`` once ``merged`` is saved (see the module
    docstring), one at a time: each file is made when asked for, and given only where its
    blob differs from the tip's, so a writer can let each page go once written; then the
    index file and ``REVISION``; nothing at all when nothing differs. ``every_page``: render
    every dashboard read, not only those that changed (``publish``); ``trend``: the store's
    trend after this commit (its file, its pictures and the index's section of it:
    render.trend_files); ``fresh``: summaries already made of states of ``merged``;
    ``extra``: other files (the site), outside the state folder."""
    summaries = dict(snapshot.summaries)
    made = dict(fresh or {})
    if not snapshot.indexed:
        migrated = _migration(
            layout, snapshot, merged, made, style=style, every_page=every_page, trend=trend,
            extra=extra,
        )  # fmt: skip
        yield from migrated.items()
        return
    current = snapshot.tree.files
    given: set[str] = set()  # a file of an old layout two reasons delete is given once
    for path, content in _wanted(
        layout, snapshot, merged, summaries, made, style=style, every=every_page, trend=trend,
        extra=extra,
    ):  # fmt: skip
        if path not in given and _differs(current, path, content):
            given.add(path)
            yield path, content
        del content  # let go before the next file is made
    differs = bool(given)
    if differs:
        yield from _index_files(layout, snapshot, summaries)


def _migration(
    layout: BranchLayout,
    snapshot: Snapshot,
    merged: Merged,
    made: dict[DashboardId, Summary],
    *,
    style: Style,
    every_page: bool,
    trend: Trend | None,
    extra: Sequence[RenderedFile | DurationsFile],
) -> dict[str, Content | None]:
    """:func:`commit_files` on a branch read without a valid index: when anything differs,
    layout 2 from now on (every dashboard's document and page, the old files gone)."""
    current = snapshot.tree.files
    wanted = dict(
        _wanted(
            layout, snapshot, merged, dict(snapshot.summaries), made,
            style=style, every=every_page, trend=trend, extra=extra,
        )
    )  # fmt: skip
    if not any(_differs(current, path, content) for path, content in wanted.items()):
        return {}
    summaries = dict(snapshot.summaries)
    again = _wanted(
        layout, snapshot, merged, summaries, made, style=style, every=True, trend=trend,
        extra=extra,
    )  # fmt: skip
    wanted.update(again)
    writes = {path: content for path, content in wanted.items() if _differs(current, path, content)}
    writes.update(_index_files(layout, snapshot, summaries))
    return writes


def _index_files(
    layout: BranchLayout, snapshot: Snapshot, summaries: Mapping[DashboardId, Summary]
) -> list[tuple[str, Content | None]]:
    """The index file and ``REVISION`` of the commit on ``snapshot``."""
    revision = snapshot.revision + 1
    return [
        (layout.summary_path, dump_index(summaries.values(), revision)),
        (layout.revision_path, f"{revision}\n"),
    ]


def _wanted(
    layout: BranchLayout,
    snapshot: Snapshot,
    merged: Merged,
    summaries: dict[DashboardId, Summary],
    made: dict[DashboardId, Summary],
    *,
    style: Style,
    every: bool,
    trend: Trend | None,
    extra: Sequence[RenderedFile | DurationsFile],
) -> Iterator[tuple[str, Content | None]]:
    """Every file the commit needs, one at a time (``every``: each dashboard read,
    rewritten; else the changed ones), with ``summaries`` brought up to date (in place) as
    they go: the index page, which needs them all, comes after the dashboards."""
    to_save = {**merged.states, **merged.to_save()} if every else merged.to_save()
    for dashboard, state in to_save.items():
        if state.id != dashboard:
            raise ValueError(f"state of {state.key!r} returned under {dashboard.key!r}")
        path = layout.state_path(dashboard)
        yield path, dump_columns(state)
        for old in sorted(snapshot.paths.get(dashboard, set()) - {path}):
            yield old, None
        summary = made.get(dashboard)
        if summary is None or summary.runs != state.runs:
            summary = made[dashboard] = summarize(state)
        summaries[dashboard] = summary
        page = render_page(state, style)
        yield page.path, page.text
    for gone in merged.removed:
        for old in sorted(snapshot.paths.get(gone.id, set())):
            yield old, None
        yield layout.state_path(gone.id), None
        yield dashboard_file(gone), None
        summaries.pop(gone.id, None)
    rows = [s.row for s in summaries.values()]
    yield INDEX_NAME, render_index_page(rows, trend=index_trend(trend))
    for file in [*trend_files(trend), *extra]:
        # A durations file: what makes its pieces (5 MB at 200k tests), never its whole text.
        yield file.path, file.pieces if isinstance(file, DurationsFile) else file.text


def _differs(current: Mapping[str, str], path: str, content: Content | None) -> bool:
    """Whether writing ``content`` at ``path`` (None: deleting it) changes ``current`` (path
    -> blob sha): hashed only where ``current`` has the path. The id is that of the text
    before the last guard's scrub (the remote scrubs what it writes): a text holding a secret
    the guard conceals is written again each time, with the same blob."""
    if content is None:
        return path in current
    sha = current.get(path)
    return sha is None or sha != git_blob_sha(content)


def branch_trend(
    previous: Trend,
    snapshot: Snapshot,
    merged: Merged,
    runs: Collection[int],
    *,
    cap: int,
    fresh: Mapping[DashboardId, Summary],
) -> Trend:
    """``previous`` with the points of ``runs``: each the sum, in key order, of every
    dashboard's part: from ``fresh`` (summaries of ``merged``'s changed states), else
    computed for the other dashboards ``merged`` holds, else from the index's summaries
    (:meth:`Committer.merge` read the dashboards whose summary cannot say it)."""
    gone = {state.id for state in merged.states.values()} | {s.id for s in merged.removed}
    removed = {state.id for state in merged.removed}
    others = {d: s for d, s in snapshot.summaries.items() if d not in gone}
    keys = sorted([*(d for d in merged.states if d not in removed), *others], key=lambda d: d.key)
    points = []
    for run in runs:
        parts = []
        for dashboard in keys:
            state = merged.states.get(dashboard)
            summary = fresh.get(dashboard)
            if summary is not None:
                part = summary.part(run)
            elif state is not None:
                part = dashboard_part(state, run)
            else:
                part = others[dashboard].part(run)
            if part is None and state is not None:
                part = dashboard_part(state, run)
            if part is None:
                raise ValueError(f"the trend part of {dashboard.key} in run {run} was not read")
            parts.append(part)
        point = join_parts(run, parts)
        if point is not None:
            points.append(point)
    return with_points(previous, points, cap=cap)
