"""The issue target: one GitHub issue per dashboard and an index issue, from the branch state.

I/O, through :class:`~ivy_matrix.issues.writer.IssueWriter` (which says how issues are
found, written and de-duplicated). In: a client typed as
:class:`~ivy_matrix.github.types.IssueAPI`, the repository, the states and an
:class:`~ivy_matrix.issues.writer.IssueOptions`; out: an
:class:`~ivy_matrix.issues.report.IssuesReport`. :func:`publish_issues` writes the dashboards
this update touched, gives the others an issue only when they have none, then the index issue.
With the branch store's ``revision`` the newest writer checks once more, after a jittered
moment, that no slower job replaced its bodies with an older revision (issue edits have no
compare-and-swap). :func:`publish_from_branch` is the target beside the branch store.

One job a run writes the issues (the fan-in job, a single job's ``update``, or ``publish``), so
two jobs create one dashboard's issue only when two runs do so at the same moment: each lists
again after creating, and the issue with the higher number is closed as a duplicate of the
other (``issues/finding.py``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from urllib.parse import quote

from ivy_matrix.github.types import IssueAPI
from ivy_matrix.issues.finding import Found
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
) -> IssuesReport:
    """Publish each dashboard as an issue, and the index issue; see the module docstring.

    Dashboards whose keys are in ``touched`` are (re)written; the others only get an issue if
    they have none yet. ``states`` are every dashboard (the index counts them all). With
    the options' ``dry_run`` nothing is written: the report lists the writes in ``planned``.

    With ``revision``, after writing it waits a jittered moment (``settle`` seconds), lists
    the issues again and rewrites any that a slower job meanwhile replaced with an older
    revision: issue edits have no compare-and-swap, so the newest writer checks its work.
    """
    options = options or IssueOptions()
    writer = IssueWriter(client, repo, options, log=log or Quiet(), sleep=sleep)
    jitter = rng or random.Random()  # noqa: S311  -- jitter, not cryptography
    found = writer.finder.find()
    written = _publish_dashboards(writer, found, states, touched=touched, revision=revision)
    by_key = {s.key: s for s in states}
    if revision is not None and not options.dry_run:
        _settle(writer, by_key, written, revision=revision, rng=jitter, delay=settle)
    index_result = None
    if options.index:
        index_result = publish_index(writer, states, written, found, pin=options.pin_index)
    return IssuesReport(
        dashboards=tuple(w.result for w in written.values()),
        index=index_result,
        planned=tuple(writer.requests.planned),
        warnings=tuple(writer.requests.warnings),
    )


def _publish_dashboards(
    writer: IssueWriter,
    found: Found,
    states: Sequence[DashboardState],
    *,
    touched: Collection[str],
    revision: int | None,
) -> dict[str, Written]:
    """Each dashboard's issue: written when touched or missing, kept as it is otherwise."""
    written: dict[str, Written] = {}
    for state in sorted(states, key=lambda s: s.key):
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
        written[state.key] = writer.publish(state, candidates, revision=revision)
    by_key = {s.key: s for s in states}
    for key, (keep, mine) in writer.finder.lost_races(written).items():
        # Another run created this dashboard's issue first: ours is closed, theirs is written.
        writer.requests.log.info(
            f"dashboard {key}: issue #{keep.number} came first; closing #{mine.number}"
        )
        written[key] = writer.publish(by_key[key], [keep, mine], revision=revision)
    return written


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
    client: IssueAPI,
    repo: str,
    saved: Saved,
    published: Published,
    options: IssueOptions,
    *,
    log: Progress,
    sleep: Callable[[float], None] = time.sleep,
    server_url: str | None = None,
) -> Published:
    """The issue target beside the branch store: publish its state at its revision.

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
    )
    for result in report.dashboards:
        log.info(f"issue of {result.key}: {result.action} {result.url or ''}".rstrip())
    if report.index_url:
        log.info(f"index issue: {report.index_url}")
    urls = {**published.urls, **{r.key: r.url for r in report.dashboards if r.url}}
    return Published(urls=urls, index_url=report.index_url or published.index_url)
