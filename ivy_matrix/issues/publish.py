"""The issue target: one GitHub issue per dashboard and an index issue, from the branch state.

I/O, through :class:`~ivy_matrix.issues.writer.IssueWriter` (which says how issues are
found, written and de-duplicated). :func:`publish_issues` writes the dashboards this update
touched, gives the others an issue only when they have none, then the index issue. With the
branch store's ``revision`` the newest writer checks once more, after a jittered moment, that
no slower job replaced its bodies with an older revision (issue edits have no
compare-and-swap).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence

from ivy_matrix.config.settings import Settings
from ivy_matrix.github.connection import Connection
from ivy_matrix.github.types import Issue, IssueAPI
from ivy_matrix.issues.creation_locks import IssueLocks
from ivy_matrix.issues.finding import INDEX_KEY, Found
from ivy_matrix.issues.index import publish_index
from ivy_matrix.issues.markers import DEFAULT_BUDGET, DEFAULT_LABEL, parse_revision
from ivy_matrix.issues.report import IssueAction, IssueResult, IssuesReport
from ivy_matrix.issues.writer import IssueWriter, Written, dedupe_created
from ivy_matrix.model import DashboardState
from ivy_matrix.render import Style
from ivy_matrix.runner.log import Progress, Quiet
from ivy_matrix.stores import Saved
from ivy_matrix.targets import Published

# After writing with a revision: wait this long (seconds, jittered), then check once more.
SETTLE_DELAY = (1.0, 3.0)
SETTLE_ROUNDS = 2
# While another job holds the lock of an issue it is creating: look again this often (seconds,
# jittered), this many times (about a minute), then leave that issue to that job.
LOCK_POLL = (1.0, 3.0)
LOCK_POLLS = 30
LOCK_CHECK_EVERY = 10  # polls between reads of the locks' holders (to take over a dead one)


def publish_issues(
    client: IssueAPI,
    repo: str,
    states: Sequence[DashboardState],
    *,
    touched: Collection[str],
    revision: int | None,
    label: str = DEFAULT_LABEL,
    index: bool = True,
    pin_index: bool = False,
    dry_run: bool = False,
    log: Progress | None = None,
    style: Style = Style.IVY,
    graphql_url: str | None = None,
    budget: int = DEFAULT_BUDGET,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    settle: tuple[float, float] = SETTLE_DELAY,
    locks: IssueLocks | None = None,
) -> IssuesReport:
    """Publish each dashboard as an issue, and the index issue; see the module docstring.

    Dashboards whose keys are in ``touched`` are (re)written; the others only get an issue if
    they have none yet. ``states`` are every dashboard (the index counts them all). With
    ``dry_run`` nothing is written: the report lists the writes in ``planned``.

    With ``revision``, after writing it waits a jittered moment (``settle`` seconds), lists
    the issues again and rewrites any that a slower job meanwhile replaced with an older
    revision: issue edits have no compare-and-swap, so the newest writer checks its work.

    With ``locks`` (git-ref locks, ``issues/creation_locks.py``) an issue is created only by the job
    that holds its lock; the others write the rest first, then wait for those issues to
    appear (one listing a poll for all of them) and write them.
    """
    writer = IssueWriter(
        client,
        repo,
        label=label,
        dry_run=dry_run,
        log=log or Quiet(),
        style=style,
        budget=budget,
        sleep=sleep,
    )
    jitter = rng or random.Random()  # noqa: S311  -- jitter, not cryptography
    creator = None if locks is None or dry_run else _Creator(writer, locks, jitter)
    found = writer.find()
    written = _publish_dashboards(
        writer, found, states, touched=touched, revision=revision, creator=creator
    )
    by_key = {s.key: s for s in states}
    if revision is not None and not dry_run:
        _settle(writer, by_key, written, revision=revision, sleep=sleep, rng=jitter, delay=settle)
    index_result = None
    if index:
        index_result = _publish_index_issue(
            writer, states, written, found, creator=creator, pin=pin_index, graphql_url=graphql_url
        )
    return _report(writer, written, index_result)


def _publish_index_issue(
    writer: IssueWriter,
    states: Sequence[DashboardState],
    written: Mapping[str, Written],
    found: Found,
    *,
    creator: _Creator | None,
    pin: bool,
    graphql_url: str | None,
) -> IssueResult | None:
    """The index issue, after the dashboards' issues; None when it has none and another job
    holds its lock and has not created it (that job writes it)."""
    if creator is not None and not found.by_key.get(INDEX_KEY):
        claimed = creator.claim(INDEX_KEY)
        if claimed is None:
            claimed = creator.wait_for([INDEX_KEY]).get(INDEX_KEY)
        if claimed is None:
            return None
        found.by_key[INDEX_KEY] = claimed
    return publish_index(writer, states, written, found, pin=pin, graphql_url=graphql_url)


def _report(
    writer: IssueWriter, written: Mapping[str, Written], index: IssueResult | None
) -> IssuesReport:
    """What this publication wrote (or, in a dry run, planned) and warned about."""
    return IssuesReport(
        dashboards=tuple(w.result for w in written.values()),
        index=index,
        planned=tuple(writer.planned),
        warnings=tuple(writer.warnings),
    )


def _publish_dashboards(
    writer: IssueWriter,
    found: Found,
    states: Sequence[DashboardState],
    *,
    touched: Collection[str],
    revision: int | None,
    creator: _Creator | None,
) -> dict[str, Written]:
    """Each dashboard's issue: written when touched or missing, kept as it is otherwise."""
    written: dict[str, Written] = {}
    deferred: list[DashboardState] = []
    for state in sorted(states, key=lambda s: s.key):
        candidates = found.by_key.get(state.key, [])
        if candidates and state.key not in touched:
            keep = candidates[0]
            result = IssueResult(
                key=state.key, action=IssueAction.UNCHANGED, number=keep.number, url=keep.html_url
            )
            written[state.key] = Written(keep, result)
            continue
        if not candidates and creator is not None:
            claimed = creator.claim(state.key)
            if claimed is None:
                deferred.append(state)  # another job is creating it: written once it appears
                continue
            candidates = claimed  # empty: this job holds the lock and creates it
        written[state.key] = writer.publish(state, candidates, revision=revision)
    if deferred and creator is not None:
        appeared = creator.wait_for([s.key for s in deferred])
        for state in deferred:
            if state.key in appeared:
                written[state.key] = writer.publish(state, appeared[state.key], revision=revision)
    by_key = {s.key: s for s in states}
    for key, (keep, mine) in dedupe_created(writer, written).items():
        # Another job created this dashboard's issue first: ours is closed, theirs is written.
        writer.log.info(f"dashboard {key}: issue #{keep.number} came first; closing #{mine.number}")
        written[key] = writer.publish(by_key[key], [keep, mine], revision=revision)
    return written


class _Creator:
    """Decides, with the git-ref locks, whether this job creates a missing issue."""

    def __init__(self, writer: IssueWriter, locks: IssueLocks, rng: random.Random) -> None:
        self.writer = writer
        self.locks = locks
        self.rng = rng
        self.holders: dict[str, str] = {}  # who holds each lock this job found taken

    def claim(self, key: str, *, check: bool = False) -> list[Issue] | None:
        """No issue when this job now holds the lock of ``key`` (create it then), the issue(s)
        if a takeover found the dead job's issue, None when another job holds the lock.

        Only with ``check`` is the holder's lock read (one more request), to take it over
        when its job died.
        """
        claim = self.locks.claim(key, check=check)
        self.holders[key] = claim.holder
        if not claim.mine:
            return None
        landed = self.writer.find().by_key.get(key) if claim.takeover else None
        return landed or []  # the job that died may have created it after all

    def wait_for(self, keys: Sequence[str]) -> dict[str, list[Issue]]:
        """Wait until the issues of ``keys`` (locked by other jobs) appear; list them for all
        keys at once. A lock whose job died is taken over, and this job creates that issue
        (an empty list). What never appears is left to its holder, with a warning."""
        done: dict[str, list[Issue]] = {}
        waiting = list(keys)
        for poll in range(1, LOCK_POLLS + 1):
            self.writer.sleep(self.rng.uniform(*LOCK_POLL))
            found = self.writer.find()
            for key in list(waiting):
                if found.by_key.get(key):
                    done[key] = found.by_key[key]
                    waiting.remove(key)
            if poll % LOCK_CHECK_EVERY == 0:  # now and then: has a holder died?
                for key in list(waiting):
                    claimed = self.claim(key, check=True)
                    if claimed is not None:
                        done[key] = claimed
                        waiting.remove(key)
            if not waiting:
                break
        for key in waiting:
            name = "the index" if key == INDEX_KEY else f"dashboard {key}"
            self.writer.warn(
                f"the issue of {name} is being created by another job "
                f"({self.holders.get(key) or 'unknown'}), which has not finished; this job "
                f"leaves it to that job"
            )
        return done


def _settle(
    writer: IssueWriter,
    by_key: Mapping[str, DashboardState],
    written: dict[str, Written],
    *,
    revision: int,
    sleep: Callable[[float], None],
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
        sleep(rng.uniform(*delay))
        found = writer.find()
        stale = [
            key
            for key in sorted(ours)
            if found.by_key.get(key) and (parse_revision(found.by_key[key][0].body) or 0) < revision
        ]
        if not stale:
            return
        for key in stale:
            writer.log.info(f"dashboard {key}: an older revision replaced ours; writing again")
            written[key] = writer.publish(by_key[key], found.by_key[key], revision=revision)


def publish_from_branch(
    settings: Settings, saved: Saved, github: Connection, log: Progress, published: Published
) -> Published:
    """The issue target beside the branch store: publish its state at its revision.

    The dashboard issues' URLs replace the branch files' URLs: people read them there.
    """
    merged = saved.merged
    report = publish_issues(
        github.client,
        github.repository,
        merged.ordered(),
        touched=list(merged.reports),
        revision=saved.revision,
        label=settings.issue_label,
        pin_index=settings.pin_index,
        graphql_url=settings.graphql_url,
        dry_run=settings.dry_run,
        log=log,
        style=settings.style,
        sleep=github.remote.sleep,
        locks=IssueLocks(
            github.client,
            github.repository,
            label=settings.issue_label,
            holder=f"run {settings.run_id} attempt {settings.run_attempt} job "
            f"{settings.job_id or '?'} backend {settings.backend or '?'}",
        ),
    )
    for result in report.dashboards:
        log.info(f"issue of {result.key}: {result.action} {result.url or ''}".rstrip())
    if report.index_url:
        log.info(f"index issue: {report.index_url}")
    urls = {**published.urls, **{r.key: r.url for r in report.dashboards if r.url}}
    return Published(urls=urls, index_url=report.index_url or published.index_url)
