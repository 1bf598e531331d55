"""Tests for issues/plan.py: the hour's budget of content-creating requests, its record in the
index issue, and the order in which the budget serves the dashboards' issues.

What a run does with the budget on the budget-enforcing fake GitHub is in test_publish.py.
"""

from __future__ import annotations

from ivy_matrix.issues.markers import (
    BEGIN,
    END,
    INDEX_MARKER,
    Write,
    parse_writes,
    writes_marker,
)
from ivy_matrix.issues.plan import (
    HOUR,
    RECORDED_RUNS,
    HourBudget,
    OwnWrites,
    last_hour,
    merge_writes,
    spent,
    write_order,
)
from ivy_matrix.model import DashboardId, DashboardState
from tests.issues.helpers import make_state


def index_body(record: str) -> str:
    return f"{INDEX_MARKER}\n{BEGIN}\n{record}# Test dashboards\n{END}\n"


def test_the_record_of_the_runs_writes_round_trips_in_the_index_region():
    """What writes_marker records, parse_writes reads back from an index body; outside the
    managed region, or damaged by a hand edit, it reads as no record. A record written before
    runs drew a number (``T+N``) reads as entries of no number."""
    entries = (Write(1_800_000_000, 302), Write(1_800_000_600, 98, 424_242))
    marker = writes_marker(entries)
    assert marker == "<!-- ivy-matrix:writes=1800000000+302,1800000600+98+424242 -->\n"
    assert parse_writes(index_body(marker)) == entries
    assert writes_marker(()) == ""
    assert parse_writes(index_body("")) == ()
    outside = writes_marker(entries) + index_body("")
    assert parse_writes(outside) == ()
    damaged = index_body("<!-- ivy-matrix:writes=12,+3,1800000000+5,7+8+ -->\n")
    assert parse_writes(damaged) == (Write(1_800_000_000, 5),)
    assert parse_writes(index_body("<!-- ivy-matrix:writes=12+x -->\n")) == ()
    assert parse_writes(None) == ()


def test_a_runs_writes_merged_into_a_record_twice_count_once():
    """merge_writes keeps each run's entry once (its larger count), whichever record holds it
    and however often it is merged; OwnWrites.added puts this run's entry in, or says the
    record holds it already. Entries of no number count once when all their values agree."""
    now = 1_800_000_000
    theirs = (Write(now - 100, 40, 7), Write(now - 50, 3))
    mine = OwnWrites(at=now - 10, run=99, before=2)
    once = mine.added(theirs, 5, now)
    # The branch's 2, the 5 issue writes and the index write that records them.
    assert once == (*theirs, Write(now - 10, 8, 99))
    assert once is not None
    assert mine.added(once, 5, now) is None  # it holds them: nothing to write
    assert merge_writes(once, once, theirs) == once
    assert spent(merge_writes(once, merge_writes(theirs, once))) == 40 + 3 + 8
    more = mine.added(once, 9, now)  # after rewriting four more issues: one entry, larger
    assert more == (*theirs, Write(now - 10, 12, 99))
    assert more is not None
    assert merge_writes(more, once) == more
    # Another run at the same second with the same count: its own entry.
    other = Write(now - 10, 8, 100)
    assert spent(merge_writes(once, (other,))) == spent(once) + 8
    assert merge_writes((Write(now, 5),), (Write(now, 5), Write(now, 6))) == (
        Write(now, 5),
        Write(now, 6),
    )
    assert mine.added((), 0, now) == (Write(now - 10, 3, 99),)


def test_only_the_last_hours_runs_count_and_the_record_stays_bounded():
    """A run's writes count for an hour after it was recorded; at most RECORDED_RUNS runs are
    kept, the newest; one dated more than AHEAD seconds ahead does not count."""
    now = 1_800_000_000
    entries = [
        Write(at, n)
        for at, n in [
            (now - HOUR, 300),
            (now - HOUR + 1, 7),
            (now, 5),
            (now + 30, 2),
            (now + 10**6, 500),
        ]
    ]
    # A run dated far ahead is a hand edit, not a clock's drift: it holds nothing back.
    assert last_hour(entries, now) == (
        Write(now - HOUR + 1, 7),
        Write(now, 5),
        Write(now + 30, 2),
    )
    assert spent(last_hour(entries, now)) == 14
    many = [Write(now - i, 1) for i in range(RECORDED_RUNS + 50)]
    kept = last_hour(many, now)
    assert len(kept) == RECORDED_RUNS
    assert kept[-1] == Write(now, 1)


def test_the_budget_leaves_room_for_what_others_spent_and_for_the_index():
    """The dashboards get the hour's requests less the last hour's runs, this run's commit and
    the index's reserve; never less than nothing."""
    assert HourBudget(per_hour=400, earlier=302, before=3, reserve=2).for_dashboards == 93
    assert HourBudget(per_hour=400, earlier=450).for_dashboards == 0
    assert HourBudget(per_hour=400, earlier=302, before=3, reserve=2).for_issues == 95


def test_failing_dashboards_come_first_then_the_oldest_issue_then_the_newest_failure():
    """Existing issues of failing dashboards (the oldest revision first), missing issues of
    failing dashboards (the newest failure first), existing issues of passing ones, then
    missing issues of passing ones (by name)."""

    def dashboard(name: str, *, run: int = 100, failing: bool) -> DashboardState:
        return make_state(
            DashboardId(title=name, category="t"),
            2,
            ("a", "b"),
            run=run,
            fail_every=3 if failing else 10**6,
        )

    fail_old_issue = dashboard("f-issue-rev1", failing=True)
    fail_new_issue = dashboard("f-issue-rev5", failing=True)
    fail_old = dashboard("f-old", run=100, failing=True)
    fail_new = dashboard("f-new", run=200, failing=True)
    pass_issue = dashboard("p-issue", failing=False)
    pass_a = dashboard("p-a", failing=False)
    pass_b = dashboard("p-b", failing=False)
    shown = {"t/f-issue-rev1": 1, "t/f-issue-rev5": 5, "t/p-issue": None}
    order = write_order(
        [fail_new_issue, pass_issue, fail_old_issue],
        [pass_b, fail_old, pass_a, fail_new],
        shown,
    )
    assert [s.key for s in order] == [
        "t/f-issue-rev1",
        "t/f-issue-rev5",
        "t/f-new",
        "t/f-old",
        "t/p-issue",
        "t/p-a",
        "t/p-b",
    ]
