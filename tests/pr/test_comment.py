"""The pr-comment target: one sticky comment per pull request, through races, re-runs, newer
pushes, duplicates, hand edits, other bots' copies of the marker and read-only tokens."""

from __future__ import annotations

import json
import random
from functools import partial
from typing import Any

import pytest

from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError
from ivy_matrix.github.types import IssueComment
from ivy_matrix.model import DashboardId, Outcome, RunKey
from ivy_matrix.pr.body import comment_marker, render_comment
from ivy_matrix.pr.comment import (
    LEASE_TTL,
    CommentLook,
    CommentResult,
    PullRequestComment,
    is_ours,
)
from ivy_matrix.pr.comment_state import (
    CommentState,
    Lease,
    RefState,
    comment_state,
    dump_ref_state,
)
from ivy_matrix.pr.document import compare_document
from ivy_matrix.pr.verdict_ref import MAX_RECORD_BYTES, VerdictRef
from ivy_matrix.pr.verdicts import CellKey, CellVerdict, Verdict, compare
from ivy_matrix.pr.when_green import WhenGreen
from ivy_matrix.runner.log import Log
from ivy_matrix.state.merge import Batch
from ivy_matrix.stores.remote import RestRemote
from tests.concurrency import at_once
from tests.conftest import fake_client, quick_sleep
from tests.github.budget import RACING
from tests.github.fake_server import BOT_LOGIN
from tests.github.memory import MemoryGitHub
from tests.pr.test_body import listed_cells, not_listed, shown_counts
from tests.pr.test_verdicts import pr_entry
from tests.state.test_history import history, state_of

pytestmark = pytest.mark.timeout(120)

REPO = "acme/widgets"
Leg = tuple[CommentState, dict[CellKey, int]]


def leg_state(
    pr: int,
    backend: str,
    *,
    run: int = 100,
    attempt: int = 1,
    job: int = 1,
    head: str = "abc",
    rows: tuple[str, ...] = ("test_a",),
    passing: tuple[str, ...] = (),
    verdict: Verdict = Verdict.NEW,
) -> Leg:
    """One leg's verdicts (``rows`` of ``backend`` with ``verdict``) and the cells it ran
    (those and ``passing``)."""
    key = RunKey(run, attempt, job)
    cells = tuple(
        CellVerdict(
            dashboard="core/gradients",
            row=row,
            backend=backend,
            verdict=verdict,
            link=f"https://github.com/{REPO}/actions/runs/{run}/job/{job}",
            run=key,
            position=(index, 0),
        )
        for index, row in enumerate(rows)
    )
    ran = {("core/gradients", row, backend): attempt for row in (*rows, *passing)}
    state = CommentState(pr=pr, head=head, run=key, cells=cells, backends=((backend, 0, key),))
    return state, ran


def writer(
    memory: MemoryGitHub,
    pr: int,
    *,
    when_green: WhenGreen = WhenGreen.NOTE,
    seed: int = 0,
    clock: Any = None,
) -> PullRequestComment:
    return PullRequestComment(
        memory,
        VerdictRef(RestRemote(memory, REPO), pr),
        REPO,
        look=CommentLook(author=BOT_LOGIN, when_green=when_green),
        log=Log(github_actions=False),
        sleep=quick_sleep,
        rng=random.Random(seed),
        writer=f"test {seed}",
        **({} if clock is None else {"clock": clock}),
    )


def ours(memory: MemoryGitHub, pr: int) -> list[dict[str, Any]]:
    with memory.lock:
        return [
            c
            for c in memory.comments[pr]
            if c["body"].startswith(comment_marker(pr)) and c.get("login", BOT_LOGIN) == BOT_LOGIN
        ]


def the_record(memory: MemoryGitHub, pr: int) -> RefState:
    """The verdict ref's record, which the one comment of ours must show, settled."""
    state = VerdictRef(RestRemote(memory, REPO), pr).read().state
    assert state is not None
    assert state.shown == state.version
    assert state.lease is None
    return state


def shown_verdicts(client: Any, pr: int, body: str) -> CommentState:
    """The verdicts in the pull request's record, which ``body`` must show."""
    found = VerdictRef(RestRemote(client, REPO), pr).read().state
    assert found is not None
    assert body == render_comment(found.verdicts)
    return found.verdicts


def the_state(memory: MemoryGitHub, pr: int) -> CommentState:
    """The verdicts of the pull request: the record's, which the one comment shows."""
    record = the_record(memory, pr)
    (comment,) = ours(memory, pr)
    assert comment["body"] == render_comment(record.verdicts)
    assert comment["id"] == record.comment_id
    return record.verdicts


@pytest.fixture(name="pr")
def pr_fixture(memory: MemoryGitHub) -> int:
    """A pull request (an issue for comments) in the in-memory GitHub."""
    return int(memory.add_issue(title="A change", pull_request=True)["number"])


def test_sixteen_legs_racing_with_faults_leave_one_comment_with_every_cell(memory, pr):
    """16 legs at once (two shards of each of 8 backends), with writes that land and then
    fail: one comment, showing every leg's cells."""
    # Over the REST git-data API each leg's record costs 3 or more writes (tree, commit, ref,
    # and again when it loses a race): 16 legs at once pass GitHub's 80 a minute. This tests
    # that no cell is lost; what a run costs is bench/github_scale.py's.
    memory.budget.configure(RACING)
    memory.latency = (0.0, 0.003)
    # The first POST lands and errors, and the client's retry posts it again: a duplicate.
    memory.inject("create_issue_comment", status=500, after_write=True, retried=True)
    memory.inject("update_issue_comment", status=502, times=3)
    memory.inject("list_issue_comments", status=503, times=2)
    memory.inject("move_ref", status=502, after_write=True, times=3)
    memory.inject("create_ref", status=502, after_write=True)
    legs = [(f"b{leg % 8:02d}", leg) for leg in range(16)]

    def run(backend: str, job: int) -> None:
        rows = (f"t{job}a", f"t{job}b")
        writer(memory, pr, seed=job).publish(*leg_state(pr, backend, job=job, rows=rows))

    at_once([partial(run, backend, job) for backend, job in legs])
    state = the_state(memory, pr)
    assert len(state.cells) == 32
    assert state.counts()[Verdict.NEW] == 32
    assert {c.backend for c in state.cells} == {b for b, _ in legs}


def test_a_second_identical_write_writes_nothing(memory, pr):
    """Publishing the same cells again makes no write at all."""
    writer(memory, pr).publish(*leg_state(pr, "torch"))
    before = len(memory.writes())
    result = writer(memory, pr).publish(*leg_state(pr, "torch"))
    assert len(memory.writes()) == before
    assert not result.written


def test_an_older_run_never_replaces_a_newer_push(memory, pr):
    """A late writer of an older run (and head) leaves the newer comment as it is."""
    writer(memory, pr).publish(*leg_state(pr, "torch", run=200, head="new"))
    body = ours(memory, pr)[0]["body"]
    writer(memory, pr).publish(*leg_state(pr, "jax", run=100, head="old"))
    assert ours(memory, pr)[0]["body"] == body
    state = the_state(memory, pr)
    assert (state.run.run_id, state.head) == (200, "new")


def test_a_newer_push_starts_the_comment_afresh(memory, pr):
    """A newer run's writer replaces the older run's cells in the same comment."""
    writer(memory, pr).publish(*leg_state(pr, "torch", run=100, head="old"))
    writer(memory, pr).publish(*leg_state(pr, "jax", run=200, head="new", verdict=Verdict.FIXED))
    state = the_state(memory, pr)
    assert {c.backend for c in state.cells} == {"jax"}
    assert state.head == "new"


def test_a_rerun_attempt_replaces_the_cells_its_leg_ran(memory, pr):
    """A re-run attempt of one leg replaces the cells it ran (one now passes), and keeps the
    other legs' cells, of its backend too."""
    writer(memory, pr).publish(*leg_state(pr, "torch", job=1, rows=("t1", "t2")))
    writer(memory, pr).publish(*leg_state(pr, "torch", job=2, rows=("t3",)))
    writer(memory, pr).publish(*leg_state(pr, "jax", job=3, rows=("t1",)))
    rerun = leg_state(pr, "torch", attempt=2, job=9, rows=("t2",), passing=("t1",))
    writer(memory, pr).publish(*rerun)
    state = the_state(memory, pr)
    assert sorted((c.backend, c.row, c.run.run_attempt) for c in state.cells) == [
        ("jax", "t1", 1),
        ("torch", "t2", 2),
        ("torch", "t3", 1),
    ]


def test_another_bots_copy_of_the_marker_is_never_touched(memory, pr):
    """A comment by someone else carrying the marker stays as it is; ours is a new comment."""
    forged = comment_marker(pr) + "\nnot ours"
    memory.add_comment(pr, forged, login="other-bot[bot]")
    writer(memory, pr).publish(*leg_state(pr, "torch"))
    with memory.lock:
        bodies = {c.get("login", BOT_LOGIN): c["body"] for c in memory.comments[pr]}
    assert bodies["other-bot[bot]"] == forged
    assert bodies[BOT_LOGIN] == render_comment(the_state(memory, pr))


def test_duplicates_of_ours_are_deleted_and_the_oldest_kept(memory, pr):
    """Two comments of ours (a POST that landed twice, or an older version's): the oldest shows
    the verdicts, the other goes."""
    first = memory.add_comment(pr, comment_marker(pr) + "\nold")
    memory.add_comment(pr, comment_marker(pr) + "\nduplicate")
    writer(memory, pr).publish(*leg_state(pr, "torch"))
    (kept,) = ours(memory, pr)
    assert kept["id"] == first["id"]
    assert {c.backend for c in the_state(memory, pr).cells} == {"torch"}


def test_all_green_with_nothing_configured_posts_no_comment(memory, pr):
    """With pr-comment-when-green nothing, an all-green pull request gets no comment; with
    note, a short note."""
    green = CommentState(pr=pr, head="abc", run=RunKey(100, 1, 1))
    result = writer(memory, pr, when_green=WhenGreen.NOTHING).publish(green, {})
    assert result.url is None
    assert memory.comments[pr] == []
    later = CommentState(
        pr=pr, head="abc", run=RunKey(100, 1, 2), backends=(("jax", 0, RunKey(100, 1, 2)),)
    )
    writer(memory, pr, when_green=WhenGreen.NOTE).publish(later, {})
    assert "no failing tests" in ours(memory, pr)[0]["body"]


def test_a_read_only_token_raises_for_the_caller_to_degrade(pr):
    """A read-only token's refused write reaches the caller (which falls back to the summary)."""
    memory = MemoryGitHub(read_only=True)
    number = int(memory.add_issue(pull_request=True)["number"])
    with pytest.raises(ReadOnlyTokenError):
        writer(memory, number).publish(*leg_state(number, "torch"))
    assert memory.comments[number] == []
    assert pr  # the fixture's writable GitHub is not used here


def test_a_hand_edit_loses_no_verdict(memory, pr):
    """Someone edits the comment by hand (dropping what it said); the next leg's write shows
    every leg's verdicts again, the edited-away backends' included."""
    writer(memory, pr).publish(*leg_state(pr, "torch", job=1))
    writer(memory, pr).publish(*leg_state(pr, "jax", job=2))
    (comment,) = ours(memory, pr)
    with memory.lock:
        comment["body"] = comment_marker(pr) + "\n\nLooks fine to me!"
    writer(memory, pr).publish(*leg_state(pr, "numpy", job=3))
    state = the_state(memory, pr)
    assert sorted(c.backend for c in state.cells) == ["jax", "numpy", "torch"]
    assert "- **jax**: 1 new\n" in ours(memory, pr)[0]["body"]


class CountingText(str):  # noqa: SLOT000  -- it counts on the instance; str allows no slots
    """A comment body that counts the characters the code reading it looks at."""

    scanned = 0

    def _count(self, characters: int) -> None:
        self.scanned += characters

    def startswith(self, prefix, *args):
        self._count(len(prefix) if isinstance(prefix, str) else len(self))
        return super().startswith(prefix, *args)

    def __getitem__(self, key):
        found = super().__getitem__(key)
        self._count(len(found))
        return found

    def __eq__(self, other):
        self._count(len(self))
        return super().__eq__(other)

    def __ne__(self, other):
        self._count(len(self))
        return super().__ne__(other)

    __hash__ = str.__hash__

    def whole(self, *_args: object, **_kwargs: object) -> Any:
        raise AssertionError("the comment's text is scanned as a whole")

    find = rfind = index = split = rsplit = splitlines = partition = count = whole


MB = 1 << 20


def adversarial_bodies(pr: int) -> dict[str, str]:
    """Hand edits shaped against the patterns that used to read the comment: the old hidden
    block's opener and a megabyte of white space with no end, openers repeated, base64 broken
    by spaces."""
    marker = comment_marker(pr)
    opener = "<!-- ivy-matrix:verdicts"
    return {
        "opener, spaces, no end": f"{marker}\n{opener} " + " " * MB,
        "openers repeated": f"{marker}\n" + f"{opener} \t\n" * (MB // 27),
        "base64 and spaces": f"{marker}\n{opener}\n" + "QUFB \n" * (MB // 6) + "-- >",
        "marker only, spaces after": marker + " " * MB,
    }


@pytest.mark.parametrize(
    "shape",
    [
        "opener, spaces, no end",
        "openers repeated",
        "base64 and spaces",
        "marker only, spaces after",
    ],
)
def test_a_megabyte_of_hand_edited_text_is_read_in_bounded_work(shape):
    """Whether a comment is ours is told from its first line alone: a megabyte of adversarial
    text costs a fixed number of characters looked at."""
    body = CountingText(adversarial_bodies(7)[shape])
    assert len(body) >= MB
    comment = IssueComment(id=1, body=body, html_url="u", author=BOT_LOGIN)
    is_ours(comment, 7, BOT_LOGIN)
    assert body.scanned <= len(comment_marker(7)) + 2


def test_a_hand_edited_comment_of_hostile_shape_is_replaced_in_linear_work(memory, pr):
    """A comment of ours edited into the old hidden block's opener and 60,000 spaces (which
    used to keep a leg busy for minutes): the writer looks at each character at most twice
    and replaces the body."""
    body = CountingText(comment_marker(pr) + "\n<!-- ivy-matrix:verdicts " + " " * 60_000)
    memory.add_comment(pr, body)
    writer(memory, pr).publish(*leg_state(pr, "torch"))
    assert body.scanned <= 2 * len(body)
    assert {c.backend for c in the_state(memory, pr).cells} == {"torch"}


def test_legs_that_record_while_the_comment_is_written_are_shown_by_the_writer(memory, pr):
    """While the lease holder's edit takes its time, other legs record their verdicts and leave
    at once (no comment request of theirs); the holder then shows them all."""
    writer(memory, pr).publish(*leg_state(pr, "torch", job=1))
    others = [leg_state(pr, backend, job=job) for job, backend in enumerate(("jax", "numpy"), 2)]
    results: list[CommentResult] = []

    def others_record() -> None:
        calls = len(memory.calls)
        results.extend(
            writer(memory, pr, seed=job).publish(*leg) for job, leg in enumerate(others, 2)
        )
        with memory.lock:
            assert not [c for c in memory.calls[calls:] if "comment" in c]

    memory.inject("update_issue_comment", status=None, before=others_record)
    holder = writer(memory, pr, seed=1).publish(*leg_state(pr, "mxnet", job=5))
    assert holder.rounds == 2
    assert [r.rounds for r in results] == [0, 0]
    assert sorted(c.backend for c in the_state(memory, pr).cells) == [
        "jax",
        "mxnet",
        "numpy",
        "torch",
    ]


def test_a_lease_left_by_a_killed_job_is_taken_over_after_it_expires(memory, pr):
    """A job killed while it held the lease leaves the comment behind; a writer after
    LEASE_TTL takes the lease over and shows everything; one before it only records."""
    writer(memory, pr).publish(*leg_state(pr, "torch", job=1))
    ref = VerdictRef(RestRemote(memory, REPO), pr)
    found = ref.read()
    assert found.state is not None
    stuck = RefState(
        verdicts=found.state.verdicts,
        version=found.state.version,
        shown=found.state.shown,
        comment_id=found.state.comment_id,
        lease=Lease(holder="killed", at=1_000.0),
    )
    assert ref.write(found.tip, stuck, "a job that was killed") is not None
    early = writer(memory, pr, seed=2, clock=lambda: 1_000.0 + LEASE_TTL - 1)
    assert early.publish(*leg_state(pr, "jax", job=2)).rounds == 0
    late = writer(memory, pr, seed=3, clock=lambda: 1_000.0 + LEASE_TTL + 1)
    assert late.publish(*leg_state(pr, "numpy", job=3)).rounds == 1
    assert sorted(c.backend for c in the_state(memory, pr).cells) == ["jax", "numpy", "torch"]


def test_a_cut_comment_counts_what_compare_counts(memory, pr):
    """8 legs (2 backends x 4 shards) with 5,000 failing cells: the comment is cut to size,
    and its counts per backend and verdict are the ones compare finds on all the results."""
    dash = DashboardId(title="gradients", category="core")
    rows = [f"tests/test_layers.py::test_forward_{i:05d}" for i in range(2500)]
    baseline = state_of({row: {"torch": history(Outcome.SUCCESS)} for row in rows[::2]})
    batches = []
    for shard in range(4):
        for job, backend in enumerate(("torch", "jax"), 1):
            cells = {
                row: {backend: pr_entry(Outcome.FAILURE, job=10 * shard + job)}
                for row in rows[shard::4]
            }
            batches.append(Batch(dashboard=dash, cells=cells))
    for index, batch in enumerate(batches):
        comparison = compare([batch], [baseline])
        run = RunKey(500, 1, index)
        state = comment_state(comparison, pr=pr, head="head", run=run)
        writer(memory, pr, seed=index).publish(state, comparison.ran)
    document = compare_document(compare(batches, [baseline]))
    expected: dict[str, dict[str, int]] = json.loads(json.dumps(document["backends"]))
    (comment,) = ours(memory, pr)
    body = comment["body"]
    listed, cut = listed_cells(body), not_listed(body)
    assert cut
    for verdict in Verdict:
        total = sum(counts[verdict.value] for counts in expected.values())
        assert listed.get(verdict, 0) + cut.get(verdict.value, 0) == total
    assert shown_counts(body) == {
        backend: {verdict: n for verdict, n in counts.items() if n}
        for backend, counts in expected.items()
    }
    assert expected["torch"] == {
        "new": 1250,
        "new-test": 1250,
        "pre-existing": 0,
        "fixed": 0,
        "flaky": 0,
        "no-baseline": 0,
    }
    assert expected["jax"]["no-baseline"] == 2500  # the baseline has no jax column


def test_a_pull_request_that_does_not_exist_ends_at_the_first_listing(memory, capsys):
    """A listing GitHub refuses for good (404) is not retried: a warning, no comment, and the
    lease is given back."""
    result = writer(memory, 4242).publish(*leg_state(4242, "torch"))
    assert result.url is None
    assert result.rounds == 1
    assert memory.calls.count("list_issue_comments") == 1
    assert "cannot write the comment on pull request #4242" in capsys.readouterr().err
    record = VerdictRef(RestRemote(memory, REPO), 4242).read().state
    assert record is not None
    assert record.lease is None


def test_legs_of_an_older_and_a_newer_push_racing_leave_the_newer_heads_cells(memory, pr):
    """8 legs of an older run and 8 of a newer push at once: the comment holds the newer's."""
    # 16 legs recording at once over the REST git-data API pass GitHub's 80 writes a minute
    # (see the 16-leg race above); this tests which head wins.
    memory.budget.configure(RACING)
    memory.latency = (0.0, 0.003)
    legs = [
        (run, head, f"b{leg:02d}") for run, head in ((100, "old"), (200, "new")) for leg in range(8)
    ]

    def run_leg(index: int, run: int, head: str, backend: str) -> None:
        writer(memory, pr, seed=index).publish(
            *leg_state(pr, backend, run=run, head=head, job=index)
        )

    at_once([partial(run_leg, index, *item) for index, item in enumerate(legs)])
    state = the_state(memory, pr)
    assert (state.run.run_id, state.head) == (200, "new")
    assert {c.backend for c in state.cells} == {f"b{leg:02d}" for leg in range(8)}
    assert {c.run.run_id for c in state.cells} == {200}


def test_a_pull_request_edit_is_sent_once_when_asked(fake):
    """update_issue_comment(retry=False) makes one request and reports GitHub's error."""
    client = fake_client(fake)
    number = int(fake.add_issue(pull_request=True)["number"])
    comment = client.create_issue_comment(REPO, number, "hello")
    fake.inject(method="PATCH", path=r"/issues/comments/\d+$", status=502, times=2)
    with pytest.raises(GitHubAPIError):
        client.update_issue_comment(REPO, comment.id, "changed", retry=False)
    patches = [r for r in fake.requests if r.method == "PATCH"]
    assert len(patches) == 1
    assert client.update_issue_comment(REPO, comment.id, "again").body == "again"


def test_verdicts_larger_than_the_ref_may_hold_are_not_written(memory, pr, capsys):
    """60,000 new failures, each with a failure line of 500 characters of its own (twice Ivy's
    whole matrix failing), make a record of about 37 MiB, more than MAX_RECORD_BYTES: nothing
    is pushed (no ref, no comment), and a warning says why."""
    key = RunKey(100, 1, 1)
    cells = tuple(
        CellVerdict(
            dashboard=f"core/module_{index % 100}",
            row=f"test_{index:06}",
            backend="torch",
            verdict=Verdict.NEW,
            link=f"https://github.com/{REPO}/actions/runs/100/job/1",
            run=key,
            position=(index, 0),
            message=f"AssertionError {index:06} " + "x" * 478,
            signature=f"{index:016x}",
        )
        for index in range(60_000)
    )
    state = CommentState(pr=pr, head="abc", run=key, cells=cells, backends=(("torch", 0, key),))
    assert len(dump_ref_state(RefState(verdicts=state)).encode()) > MAX_RECORD_BYTES
    result = writer(memory, pr).publish(state, {})
    assert result == CommentResult(url=None, written=False, rounds=0)
    assert memory.writes() == []
    assert VerdictRef(RestRemote(memory, REPO), pr).read().tip is None
    warning = capsys.readouterr().err
    assert "the verdicts of 60,000 cell(s) take 3" in warning
    assert f"more than the 32 MiB refs/ivy-matrix/pr/{pr} may hold" in warning
