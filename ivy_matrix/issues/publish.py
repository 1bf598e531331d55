"""The issue target: one GitHub issue per dashboard and an index issue, from the branch state.

I/O, through :class:`~ivy_matrix.issues.writer.IssueWriter` (which says how issues are
found, written and de-duplicated). In: a client typed as
:class:`~ivy_matrix.github.types.IssueAPI`, the repository, a :class:`Publication` (the states,
what this run changed, the branch's revision and pages) and an
:class:`~ivy_matrix.issues.writer.IssueOptions`; out: an
:class:`~ivy_matrix.issues.report.IssuesReport`. :func:`publish_issues` writes the dashboards
this update touched, gives the others an issue only when they have none, then the index issue,
all within the hour's budget of content-creating requests (``issues/plan.py``: what does not
fit waits for a later run, and the log, the job summary and the index say so). With the branch
store's ``revision`` the newest writer checks once more, after a jittered moment, that no
slower job replaced its bodies with an older revision, the index's included (issue edits have
no compare-and-swap), and that the index's record holds its writes.
:func:`publish_from_branch` is the target beside the branch store.

One job a run writes the issues (the fan-in job, a single job's ``update``, or ``publish``), so
two jobs create one dashboard's issue only when two runs do so at the same moment: each lists
again after creating, and the issue with the higher number is closed as a duplicate of the
other (``issues/finding.py``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import quote

from ivy_matrix.github.types import IssueAPI
from ivy_matrix.issues.finding import INDEX_KEY, Found
from ivy_matrix.issues.index_issue import Index, publish_index
from ivy_matrix.issues.markers import parse_revision, parse_writes
from ivy_matrix.issues.plan import RUNS, HourBudget, OwnWrites, last_hour, named, spent, write_order
from ivy_matrix.issues.report import IssueAction, IssueResult, IssuesReport, Written
from ivy_matrix.issues.writer import IssueOptions, IssueWriter
from ivy_matrix.model import DashboardState
from ivy_matrix.runner.log import Progress, Quiet
from ivy_matrix.stores import Published, Saved
from ivy_matrix.views.charts import trend_section

# After writing with a revision: wait this long (seconds, jittered), then check once more.
SETTLE_DELAY = (1.0, 3.0)
SETTLE_ROUNDS = 2
WROTE = frozenset({IssueAction.CREATED, IssueAction.UPDATED})


@dataclass(frozen=True, slots=True, kw_only=True)
class Publication:
    """What one run publishes as issues.

    ``states``: every dashboard (the index counts them all); ``touched``: the keys this run
    changed (their issues are written; the others only get one when they have none);
    ``revision``: the branch store's revision of the states (None: none); ``pages``: where
    each dashboard can be read on the branch (the index links them for dashboards with no
    issue yet); ``spent``: the content-creating requests this run made before the issues.
    """

    states: Sequence[DashboardState]
    touched: Collection[str]
    revision: int | None = None
    pages: Mapping[str, str] = field(default_factory=dict)
    spent: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """How the issue target waits and tells time: ``sleep`` (the pace and the settle),
    ``clock`` (seconds since the epoch, for the hour's record), ``rng`` (jitter) and
    ``settle`` (the jittered wait before the newest writer checks its work)."""

    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    rng: random.Random | None = None
    settle: tuple[float, float] = SETTLE_DELAY


def publish_issues(
    client: IssueAPI,
    repo: str,
    publication: Publication,
    options: IssueOptions | None = None,
    *,
    log: Progress | None = None,
    timing: Timing | None = None,
) -> IssuesReport:
    """Publish each dashboard as an issue, and the index issue; see the module docstring.

    With the options' ``dry_run`` nothing is written: the report lists the writes in
    ``planned`` (within the same budget). With a revision, after writing it waits a jittered
    moment, lists the issues again and rewrites any that a slower job meanwhile replaced with
    an older revision: issue edits have no compare-and-swap, so the newest writer checks its
    work.
    """
    options = options or IssueOptions()
    timing = timing or Timing()
    writer = IssueWriter(client, repo, options, log=log or Quiet(), sleep=timing.sleep)
    found = writer.finder.find()
    listed = found.by_key.get(INDEX_KEY, [])
    earlier = last_hour(parse_writes(listed[0].body if listed else None), int(timing.clock()))
    budget = HourBudget(
        per_hour=options.writes_per_hour,
        earlier=spent(earlier),
        before=publication.spent,
        reserve=int(options.index) + int(options.index and options.pin_index),
    )
    written = _publish_dashboards(writer, found, publication, budget)
    deferred = [key for key, w in written.items() if w.result.action is IssueAction.DEFERRED]
    note = _budget_note(budget, written, deferred, publication)
    if note:
        writer.requests.warn(note)
    rng = timing.rng or random.Random()  # noqa: S311  -- jitter and a run's number, not secrets
    own = OwnWrites(at=int(timing.clock()), run=rng.randrange(1, RUNS), before=budget.before)
    index = Index(
        states=publication.states,
        links=_links(written, publication.pages),
        revision=publication.revision,
        own=own,
        clock=timing.clock,
    )
    index_result = None
    if options.index:
        index_result = publish_index(writer, index, pin=options.pin_index)
    revision = publication.revision
    if revision is not None and not options.dry_run:
        wrote = {key for key, w in written.items() if w.result.action in WROTE}
        if index_result is not None and index_result.action in WROTE:
            wrote.add(INDEX_KEY)
        settled = _settle(
            writer,
            written,
            wrote,
            index,
            keep_index=options.index,
            revision=revision,
            room=budget.for_issues,
            rng=rng,
            delay=timing.settle,
        )
        index_result = settled or index_result
    return IssuesReport(
        dashboards=tuple(w.result for w in written.values()),
        index=index_result,
        planned=tuple(writer.requests.planned),
        warnings=tuple(writer.requests.warnings),
        budget_note=note,
    )


def _links(written: Mapping[str, Written], pages: Mapping[str, str]) -> dict[str, str]:
    """What the index links for each dashboard: its issue, or its page on the branch while its
    issue waits for a later run (the page is current; a waiting issue is not)."""
    links: dict[str, str] = {}
    for key, done in written.items():
        if done.result.action is IssueAction.DEFERRED:
            if key in pages:
                links[key] = pages[key]
        elif done.result.url:
            links[key] = done.result.url
    return links


def _publish_dashboards(
    writer: IssueWriter, found: Found, publication: Publication, budget: HourBudget
) -> dict[str, Written]:
    """Each dashboard's issue: written when touched or missing and within the budget (in
    ``plan.py``'s order), left for a later run when it does not fit, kept as it is otherwise."""
    touched, revision = publication.touched, publication.revision
    written: dict[str, Written] = {}
    updates: list[DashboardState] = []
    creates: list[DashboardState] = []
    for state in sorted(publication.states, key=lambda s: s.key):
        candidates = found.by_key.get(state.key, [])
        if candidates and state.key not in touched:
            keep = candidates[0]
            result = IssueResult(
                key=state.key, action=IssueAction.UNCHANGED, number=keep.number, url=keep.html_url
            )
            written[state.key] = Written(keep, result)
        else:
            (updates if candidates else creates).append(state)
    shown = {s.key: parse_revision(found.by_key[s.key][0].body) for s in updates}
    room = budget.for_dashboards
    writer.requests.log.info(
        f"issues: {len(creates)} to create, {len(updates)} to update; issue-writes-per-hour "
        f"{budget.per_hour}: {budget.earlier} made by runs of the last hour, {budget.before} "
        f"by this run so far, {budget.reserve} kept for the index: {room} left for the "
        f"dashboards"
    )
    for state in write_order(updates, creates, shown):
        if state.key in touched and found.by_key.get(state.key) and writer.finder.stale:
            # One listing (a request per 100 issues) instead of a read before every write.
            found = writer.finder.find()
        candidates = found.by_key.get(state.key, [])
        used = writer.requests.writes + len(writer.requests.planned)
        if used + writer.cost(state, candidates, revision=revision) > room:
            waiting = candidates[0] if candidates else None
            result = IssueResult(
                key=state.key,
                action=IssueAction.DEFERRED,
                number=waiting.number if waiting else None,
                url=waiting.html_url if waiting else None,
            )
            written[state.key] = Written(waiting, result)
            continue
        written[state.key] = writer.publish(state, candidates, revision=revision)
    by_key = {s.key: s for s in publication.states}
    for key, (keep, mine) in writer.finder.lost_races(written).items():
        # Another run created this dashboard's issue first: ours is closed, theirs is written.
        writer.requests.log.info(
            f"dashboard {key}: issue #{keep.number} came first; closing #{mine.number}"
        )
        written[key] = writer.publish(by_key[key], [keep, mine], revision=revision)
    return dict(sorted(written.items()))


def _budget_note(
    budget: HourBudget,
    written: Mapping[str, Written],
    deferred: Sequence[str],
    publication: Publication,
) -> str:
    """What waits for a later run, why, and what to set ("" when nothing waits)."""
    if not deferred:
        return ""
    waiting = [written[key] for key in deferred]
    to_update = sum(1 for w in waiting if w.issue is not None)
    linked = sum(1 for key in deferred if key in publication.pages)
    pages = (
        f"; the index issue links the page on the branch of {linked} of them, which is current"
        if linked
        else ""
    )
    return (
        f"issues: {len(deferred)} of {len(publication.states)} dashboard issue(s) wait for a "
        f"later run ({to_update} to update, {len(deferred) - to_update} to create): GitHub "
        f"allows 500 content-creating requests an hour per repository, and "
        f"issue-writes-per-hour ({budget.per_hour}) left {budget.for_dashboards} for this "
        f"run's dashboards after {budget.earlier} by runs of the last hour and {budget.before} "
        f"by this run's commit{pages}. The next runs write them, the oldest first. To write "
        f"more a run, raise issue-writes-per-hour (at most 500, less what else writes to the "
        f"repository) or run less often. Waiting: {named(deferred)}"
    )


def _settle(
    writer: IssueWriter,
    written: dict[str, Written],
    wrote: Collection[str],
    index: Index,
    *,
    keep_index: bool,
    revision: int,
    room: int,
    rng: random.Random,
    delay: tuple[float, float],
) -> IssueResult | None:
    """Rewrite the issues this run wrote (``wrote``: dashboard keys, and ``INDEX_KEY``) that a
    slower job replaced with an older revision since, within ``room`` (this run's
    content-creating requests in all; a dashboard's rewrite leaves the index's write room);
    the index (when ``keep_index``), and its record when it lacks this run's writes. Returns
    the index's result when it was written again.

    A job that read revision 14, then wrote 15 after this job wrote 16, leaves revision 15
    showing. The newest writer notices on one more listing and writes again.
    """
    by_key = {state.key: state for state in index.states}
    result = None
    left: set[str] = set()  # dashboards that did not fit: the budget only shrinks
    for _ in range(SETTLE_ROUNDS if wrote else 0):
        writer.requests.sleep(rng.uniform(*delay))
        found = writer.finder.find()
        before = writer.requests.writes
        for key in sorted(wrote, key=lambda k: (k == INDEX_KEY, k)):
            shown = found.by_key.get(key)
            if not shown or (parse_revision(shown[0].body) or 0) >= revision:
                continue
            if key == INDEX_KEY:  # written again below, with its record
                writer.requests.log.info(
                    "the index: an older revision replaced ours; writing again"
                )
                continue
            if key in left:
                continue
            cost = writer.cost(by_key[key], shown, revision=revision)
            if writer.requests.writes + cost > room - int(keep_index):  # the index's write kept
                left.add(key)
                writer.requests.warn(
                    f"dashboard {key}: an older revision replaced ours, and the hour's "
                    "issue-writes budget has no room to write it again; the next run that "
                    "changes it will"
                )
                continue
            writer.requests.log.info(
                f"dashboard {key}: an older revision replaced ours; writing again"
            )
            written[key] = writer.publish(by_key[key], shown, revision=revision)
        if keep_index:
            again = publish_index(writer, index, pin=False, room=room)
            result = result if again.action is IssueAction.UNCHANGED else again
        if writer.requests.writes == before:
            break
    return result


def publish_from_branch(
    client: IssueAPI,
    repo: str,
    saved: Saved,
    published: Published,
    options: IssueOptions,
    *,
    log: Progress,
    sleep: Callable[[float], None] = time.sleep,
    server_url: str | None = None,
    spent_before: int = 0,
) -> Published:
    """The issue target beside the branch store: publish its state at its revision
    (``spent_before``: the content-creating requests the run made before).

    The dashboard issues' URLs replace the branch files' URLs: people read them there; a
    dashboard whose issue waits for a later run keeps its file's. With ``server_url``, the
    index issue shows the trend's pictures, pinned to the branch commit that holds them
    (``saved.at``), so each version of the index keeps its own.
    """
    merged = saved.merged
    if server_url and saved.at and merged.trend is not None:
        base = f"{server_url.rstrip('/')}/{repo}/raw/{saved.at}/"
        charts = trend_section(merged.trend, lambda path: base + quote(path))
        options = replace(options, index_charts=charts)
    publication = Publication(
        states=merged.ordered(),
        touched=list(merged.reports),
        revision=saved.revision,
        pages=published.urls,
        spent=spent_before,
    )
    report = publish_issues(client, repo, publication, options, log=log, timing=Timing(sleep=sleep))
    for result in report.dashboards:
        log.info(f"issue of {result.key}: {result.action} {result.url or ''}".rstrip())
    if report.index_url:
        log.info(f"index issue: {report.index_url}")
    issues = {
        r.key: r.url for r in report.dashboards if r.url and r.action is not IssueAction.DEFERRED
    }
    notes = (*published.notes, report.budget_note) if report.budget_note else published.notes
    return replace(
        published,
        urls={**published.urls, **issues},
        index_url=report.index_url or published.index_url,
        notes=notes,
    )
