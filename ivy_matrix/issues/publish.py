"""The issue target: one GitHub issue per dashboard and an index issue, from the branch state.

I/O, through :class:`~ivy_matrix.issues.writer.IssueWriter` (which says how issues are
found, written and de-duplicated) and, for creating, the git-ref locks of
``issues/creation_locks.py``. In: a client typed as :class:`IssueTargetAPI`, the repository,
the states and an :class:`~ivy_matrix.issues.writer.IssueOptions`; out: an
:class:`~ivy_matrix.issues.report.IssuesReport`. :func:`publish_issues` writes the dashboards
this update touched, gives the others an issue only when they have none, then the index issue.
With the branch store's ``revision`` the newest writer checks once more, after a jittered
moment, that no slower job replaced its bodies with an older revision (issue edits have no
compare-and-swap). :func:`publish_from_branch` is the target beside the branch store.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Protocol
from urllib.parse import quote

from ivy_matrix.github.types import Issue, IssueAPI
from ivy_matrix.issues.creation_locks import CreationLocks, Creator, RefAPI
from ivy_matrix.issues.finding import INDEX_KEY, Found
from ivy_matrix.issues.index_issue import publish_index
from ivy_matrix.issues.markers import parse_revision
from ivy_matrix.issues.report import IssueAction, IssueResult, IssuesReport, Written
from ivy_matrix.issues.writer import IssueOptions, IssueWriter
from ivy_matrix.model import DashboardState
from ivy_matrix.runner.log import Progress, Quiet
from ivy_matrix.stores import Saved
from ivy_matrix.targets import Published
from ivy_matrix.views.charts import trend_section

# After writing with a revision: wait this long (seconds, jittered), then check once more.
SETTLE_DELAY = (1.0, 3.0)
SETTLE_ROUNDS = 2


class IssueTargetAPI(IssueAPI, RefAPI, Protocol):
    """The calls the issue target makes: issues, and the git refs of its creation locks."""


def publish_issues(
    client: IssueAPI,
    repo: str,
    states: Sequence[DashboardState],
    *,
    touched: Collection[str],
    revision: int | None,
    options: IssueOptions | None = None,
    log: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    settle: tuple[float, float] = SETTLE_DELAY,
    locks: CreationLocks | None = None,
) -> IssuesReport:
    """Publish each dashboard as an issue, and the index issue; see the module docstring.

    Dashboards whose keys are in ``touched`` are (re)written; the others only get an issue if
    they have none yet. ``states`` are every dashboard (the index counts them all). With
    the options' ``dry_run`` nothing is written: the report lists the writes in ``planned``.

    With ``revision``, after writing it waits a jittered moment (``settle`` seconds), lists
    the issues again and rewrites any that a slower job meanwhile replaced with an older
    revision: issue edits have no compare-and-swap, so the newest writer checks its work.

    With ``locks`` (git-ref locks, ``issues/creation_locks.py``) an issue is created only by
    the job that holds its lock; the others write the rest first, then wait for those issues
    to appear (one listing a poll for all of them) and write them.
    """
    options = options or IssueOptions()
    writer = IssueWriter(client, repo, options, log=log or Quiet(), sleep=sleep)
    jitter = rng or random.Random()  # noqa: S311  -- jitter, not cryptography
    creator = None if locks is None or options.dry_run else Creator(writer.finder, locks, jitter)
    found = writer.finder.find()
    written = _publish_dashboards(
        writer, found, states, touched=touched, revision=revision, creator=creator
    )
    by_key = {s.key: s for s in states}
    if revision is not None and not options.dry_run:
        _settle(writer, by_key, written, revision=revision, rng=jitter, delay=settle)
    index_result = None
    if options.index:
        index_result = _publish_index_issue(writer, states, written, found, creator=creator)
    return IssuesReport(
        dashboards=tuple(w.result for w in written.values()),
        index=index_result,
        planned=tuple(writer.requests.planned),
        warnings=tuple(writer.requests.warnings),
    )


def _publish_index_issue(
    writer: IssueWriter,
    states: Sequence[DashboardState],
    written: Mapping[str, Written],
    found: Found,
    *,
    creator: Creator | None,
) -> IssueResult | None:
    """The index issue, after the dashboards' issues; None when it has none and another job
    holds its lock and has not created it (that job writes it)."""
    creating = creator is not None and not found.by_key.get(INDEX_KEY)
    if creator is not None and creating:
        claimed = creator.claim([INDEX_KEY])[INDEX_KEY]
        if claimed is None:
            claimed = creator.wait_for([INDEX_KEY]).get(INDEX_KEY)
        if claimed is None:
            return None
        found.by_key[INDEX_KEY] = claimed
    result = publish_index(writer, states, written, found, pin=writer.options.pin_index)
    if creator is not None and creating and result.action is IssueAction.CREATED:
        creator.created(INDEX_KEY)
    return result


def _publish_dashboards(
    writer: IssueWriter,
    found: Found,
    states: Sequence[DashboardState],
    *,
    touched: Collection[str],
    revision: int | None,
    creator: Creator | None,
) -> dict[str, Written]:
    """Each dashboard's issue: written when touched or missing, kept as it is otherwise."""
    written: dict[str, Written] = {}
    deferred: list[DashboardState] = []
    ordered = sorted(states, key=lambda s: s.key)
    missing = [s.key for s in ordered if not found.by_key.get(s.key)]
    claimed = creator.claim(missing) if creator is not None and missing else {}
    for state in ordered:
        if state.key in touched and found.by_key.get(state.key) and writer.finder.stale:
            # One listing (a request per 100 issues) instead of a read before every write.
            found = writer.finder.find()
        candidates = found.by_key.get(state.key, [])
        if candidates and state.key not in touched:
            keep = candidates[0]
            result = IssueResult(
                key=state.key, action=IssueAction.UNCHANGED, number=keep.number, url=keep.html_url
            )
            written[state.key] = Written(keep, result)
            continue
        if not candidates and creator is not None:
            locked = claimed.get(state.key)
            if locked is None:
                deferred.append(state)  # another job is creating it: written once it appears
                continue
            candidates = locked  # empty: this job holds the lock and creates it
        written[state.key] = _publish_one(writer, creator, state, candidates, revision)
    if deferred and creator is not None:
        appeared = creator.wait_for([s.key for s in deferred])
        for state in deferred:
            if state.key in appeared:
                written[state.key] = _publish_one(
                    writer, creator, state, appeared[state.key], revision
                )
    by_key = {s.key: s for s in states}
    for key, (keep, mine) in writer.finder.lost_races(written).items():
        # Another job created this dashboard's issue first: ours is closed, theirs is written.
        writer.requests.log.info(
            f"dashboard {key}: issue #{keep.number} came first; closing #{mine.number}"
        )
        written[key] = writer.publish(by_key[key], [keep, mine], revision=revision)
    return written


def _publish_one(
    writer: IssueWriter,
    creator: Creator | None,
    state: DashboardState,
    candidates: Sequence[Issue],
    revision: int | None,
) -> Written:
    """One dashboard's issue, written; the lock of an issue this job created goes."""
    done = writer.publish(state, candidates, revision=revision)
    if creator is not None and done.result.action is IssueAction.CREATED:
        creator.created(state.key)
    return done


def _settle(
    writer: IssueWriter,
    by_key: Mapping[str, DashboardState],
    written: dict[str, Written],
    *,
    revision: int,
    rng: random.Random,
    delay: tuple[float, float],
) -> None:
    """Rewrite issues that a slower job replaced with an older revision after we wrote them.

    A job that read revision 14, then wrote 15 after this job wrote 16, leaves revision 15
    showing. The newest writer notices on one more listing and writes again.
    """
    ours = {
        key
        for key, w in written.items()
        if w.result.action in {IssueAction.CREATED, IssueAction.UPDATED}
    }
    for _ in range(SETTLE_ROUNDS):
        if not ours:
            return
        writer.requests.sleep(rng.uniform(*delay))
        found = writer.finder.find()
        stale = [
            key
            for key in sorted(ours)
            if found.by_key.get(key) and (parse_revision(found.by_key[key][0].body) or 0) < revision
        ]
        if not stale:
            return
        for key in stale:
            writer.requests.log.info(
                f"dashboard {key}: an older revision replaced ours; writing again"
            )
            written[key] = writer.publish(by_key[key], found.by_key[key], revision=revision)


def publish_from_branch(
    client: IssueTargetAPI,
    repo: str,
    saved: Saved,
    published: Published,
    options: IssueOptions,
    *,
    holder: str,
    log: Progress,
    sleep: Callable[[float], None] = time.sleep,
    server_url: str | None = None,
) -> Published:
    """The issue target beside the branch store: publish its state at its revision, each
    missing issue created by the one job (named ``holder``) that holds its creation lock.

    The dashboard issues' URLs replace the branch files' URLs: people read them there. With
    ``server_url``, the index issue shows the trend's pictures, pinned to the branch commit
    that holds them (``saved.at``), so each version of the index keeps its own.
    """
    merged = saved.merged
    if server_url and saved.at and merged.trend is not None:
        base = f"{server_url.rstrip('/')}/{repo}/raw/{saved.at}/"
        charts = trend_section(merged.trend, lambda path: base + quote(path))
        options = replace(options, index_charts=charts)
    report = publish_issues(
        client,
        repo,
        merged.ordered(),
        touched=list(merged.reports),
        revision=saved.revision,
        options=options,
        log=log,
        sleep=sleep,
        locks=CreationLocks(client, repo, label=options.label, holder=holder),
    )
    for result in report.dashboards:
        log.info(f"issue of {result.key}: {result.action} {result.url or ''}".rstrip())
    if report.index_url:
        log.info(f"index issue: {report.index_url}")
    urls = {**published.urls, **{r.key: r.url for r in report.dashboards if r.url}}
    return Published(urls=urls, index_url=report.index_url or published.index_url)
