"""Tests for stores/inbox.py and stores/queue.py: results queued in the inbox, folded into the
branch by one leg at a time under the lease, bad objects moved aside.

The races run on the in-memory model (tests/github/memory.py) with threads, their waits on a
VirtualClock; over git's real protocol in tests/stores/test_git.py.
"""

from __future__ import annotations

import pytest

from ivy_matrix.github.types import RefUpdate
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.statefile import dump_state
from ivy_matrix.stores import Saved
from ivy_matrix.stores.remote import RestRemote
from tests.concurrency import VirtualClock, at_once
from tests.github.budget import RACING
from tests.issues.helpers import Lines
from tests.stores.helpers import (
    BRANCH,
    DASHBOARDS,
    INBOX,
    LEASE,
    REPO,
    ROWS,
    RUN,
    STATE_DIR,
    FolderDiedError,
    assert_every_cell_landed,
    assert_markdown_is_a_render_of_the_state,
    branch_states,
    history,
    leg_change,
    leg_scope,
    race_legs,
    run_leg,
    store,
)


def inbox_refs(memory) -> list[str]:
    with memory.lock:
        return sorted(ref for ref in memory.refs[REPO] if ref.startswith(INBOX))


def test_matrix_legs_queue_their_results_and_every_fold_renders(memory):
    """Legs of a 3-leg run each fold their results into the branch, keeping its markdown a
    render of its state; only the leg that completes the run says it rendered the run."""
    outcomes = []
    for leg in range(3):
        outcomes.append(run_leg(memory, leg, 3))
        assert_markdown_is_a_render_of_the_state(memory)
        assert inbox_refs(memory) == []
    assert [o.rendered for o in outcomes] == [False, False, True]
    assert_every_cell_landed(memory, legs=3)
    legs = memory.read_file(f"{STATE_DIR}/LEGS", BRANCH)
    assert f'"{RUN}":{{"done":[0,1,2],"size":3}}' in legs


def test_an_identical_re_run_of_a_leg_writes_nothing(memory):
    """A leg that runs again with the same results, after its run completed, writes nothing."""
    for leg in range(2):
        run_leg(memory, leg, 2)
    writes = len(memory.writes())
    again = run_leg(memory, 1, 2)
    assert again.commit_sha is None
    assert again.rendered
    assert len(memory.writes()) == writes


def test_a_re_run_attempt_of_a_failed_leg_lands_its_new_results(memory):
    """Leg 1 of a done run runs again (attempt 2, new outcomes): the run is complete again,
    the branch shows attempt 2."""
    for leg in range(3):
        run_leg(memory, leg, 3)
    again = run_leg(memory, 1, 3, attempt=2, flip=1)
    assert again.rendered
    assert "core/gradients.md" in again.written
    assert_markdown_is_a_render_of_the_state(memory)
    state = branch_states(memory)[DASHBOARDS[0]]
    assert state.rows[0].cells["b01"].latest.source.run.run_attempt == 2


def test_thirty_two_matrix_legs_at_once_all_land_within_five_tries(memory):
    """32 legs of one run race: every cell lands, no leg tries more than 5 times, the lease
    lets one leg fold at a time, and the markdown is a render of the state at the end."""
    # 32 legs publish within seconds: more than GitHub's 80 writes a minute through the REST
    # API (git's protocol spends none: tests/stores/test_git.py); this tests that nothing is
    # lost, so it takes the racing budget.
    memory.budget.configure(RACING)
    memory.latency = (0.0, 0.002)
    clock = VirtualClock()
    outcomes = race_legs(lambda _leg: (memory, {}), 32, 32, clock=clock, rows=5)
    memory.latency = (0.0, 0.0)
    saved = [o for o in outcomes.values() if isinstance(o, Saved)]
    assert len(saved) == 32, [o for o in outcomes.values() if not isinstance(o, Saved)]
    assert max(s.attempts for s in saved) <= 5
    assert sum(s.rendered for s in saved) == 1  # the fold that completed the run
    assert_every_cell_landed(memory, legs=32, rows=5)
    assert_markdown_is_a_render_of_the_state(memory)
    assert inbox_refs(memory) == []
    # Folds, not legs, move the branch: fewer commits than legs.
    assert len(history(memory)) < 32


def test_thirty_two_legs_with_faults_and_a_folder_that_dies_lose_nothing(memory):
    """32 racing legs, with inbox refs that land before a 502 and a folder that dies in the
    middle of its fold (it releases the lease on the way out): every cell lands, within 5
    tries."""
    memory.budget.configure(RACING)
    memory.latency = (0.0, 0.002)
    memory.inject("create_ref", after_write=True, retried=True, times=4)

    def die() -> None:
        raise FolderDiedError

    memory.inject("create_commit", status=None, before=die, times=1)
    clock = VirtualClock()
    outcomes = race_legs(lambda _leg: (memory, {}), 32, 32, clock=clock)
    died = [leg for leg, outcome in outcomes.items() if isinstance(outcome, BaseException)]
    assert len(died) <= 1
    assert all(isinstance(outcomes[leg], FolderDiedError) for leg in died)
    saved = [outcome for outcome in outcomes.values() if isinstance(outcome, Saved)]
    assert max(s.attempts for s in saved) <= 5
    memory.latency = (0.0, 0.0)
    if died:  # its results wait in the inbox: the next update folds them
        run_leg(memory, died[0], 32)
    assert inbox_refs(memory) == []
    assert_every_cell_landed(memory, legs=32)
    assert_markdown_is_a_render_of_the_state(memory)


def test_refs_left_by_a_dead_run_are_folded_by_the_next_leg(memory):
    """A leg folds the inbox refs an earlier run left behind (results already on the branch
    or not) with its own, and deletes them; the old run completes with them."""
    run_leg(memory, 0, 2)
    tip = memory.ref_sha(f"heads/{BRANCH}")

    creates = []

    def die_taking_the_lease() -> None:
        creates.append(1)
        if len(creates) == 2:  # the inbox ref went in; the lease never did
            raise FolderDiedError

    # A leg of the old run published its results, then died before it could fold them.
    memory.inject("create_ref", status=None, before=die_taking_the_lease, times=2)
    with pytest.raises(FolderDiedError):
        run_leg(memory, 1, 2)
    assert memory.ref_sha(f"heads/{BRANCH}") == tip
    assert len(inbox_refs(memory)) == 1
    later = run_leg(memory, 0, 2, run=RUN + 1)
    assert later.commit_sha is not None
    assert inbox_refs(memory) == []
    states = branch_states(memory)
    assert all("b01" in state.backend_names for state in states.values())
    assert_markdown_is_a_render_of_the_state(memory)


def test_a_lease_whose_holder_has_finished_is_taken_over(memory):
    """A lease left by a folder killed outright (its job has finished, GitHub says) is taken
    over at once by a leg of another run, which folds the dead one's results with its own."""
    run_leg(memory, 0, 2)
    remote = RestRemote(memory, REPO)
    dead = store(memory, scope=leg_scope(1, 2, run=RUN))
    commit, ref = dead.inbox.write(leg_scope(1, 2, run=RUN))
    remote.update_refs(
        [RefUpdate(ref=ref, new=commit, old=None), RefUpdate(ref=LEASE, new=commit, old=None)],
        atomic=False,
    )
    asked: list[int] = []

    def finished(job: int) -> bool:
        asked.append(job)
        return True

    clock = VirtualClock()
    outcome = race_legs(
        lambda _leg: (memory, {"job_finished": finished}), 1, 2, clock=clock, run=RUN + 1
    )[0]
    assert isinstance(outcome, Saved)
    assert asked == [1001]
    assert inbox_refs(memory) == []
    states = branch_states(memory)
    assert all(set(state.backend_names) == {"b00", "b01"} for state in states.values())


def test_a_lease_whose_holder_still_runs_is_waited_for(memory):
    """A leg never folds while the lease's holder is running (GitHub says its job is in
    progress), however long it waits: when the holder folds, the leg's results are in."""
    run_leg(memory, 0, 3)
    slow = store(memory, scope=leg_scope(1, 3))
    commit, ref = slow.inbox.write(leg_scope(1, 3))
    remote = RestRemote(memory, REPO)
    remote.update_refs(
        [RefUpdate(ref=ref, new=commit, old=None), RefUpdate(ref=LEASE, new=commit, old=None)],
        atomic=False,
    )
    clock = VirtualClock()
    listings = []

    def running(_job: int) -> bool:
        listings.append(clock.now)
        if len(listings) == 3:  # the slow holder gets on with it: its fold takes the inbox
            remote.update_refs([RefUpdate(ref=LEASE, new=None, old=commit)], atomic=True)
            run_leg(memory, 1, 3)
        return False

    outcome: list[Saved] = []
    stored = {"job_finished": running, "sleep": clock.sleep, "clock": lambda: clock.now}
    at_once([lambda: outcome.append(run_leg(memory, 2, 3, stored=stored))], clock=clock)
    waiting = outcome[0]
    assert waiting.commit_sha is None  # the holder folded its results
    assert len(listings) == 3
    # The holder was asked about every 30 s (the lease's patience), never taken over.
    assert listings[0] >= 30
    assert inbox_refs(memory) == []
    assert_every_cell_landed(memory, legs=3)


def test_a_dry_run_leg_publishes_nothing_to_the_inbox(memory):
    """A matrix leg in a dry run reports the files it would change and writes no ref or object."""
    run_leg(memory, 0, 2)
    writes = len(memory.writes())
    saved = run_leg(memory, 1, 2, stored={"dry_run": True})
    assert f"{STATE_DIR}/core/gradients.json" in saved.written
    assert len(memory.writes()) == writes


def test_folding_keeps_as_many_results_per_cell_as_the_legs_history_says(memory):
    """Folded results keep the leg's ``history`` entries per cell, more than the default too."""
    runs = 12
    memory.budget.configure(RACING)  # twelve runs' writes within a second of the test's clock
    for offset in range(runs):
        run_leg(memory, 0, 2, run=RUN + offset, history=runs)
    for state in branch_states(memory).values():
        assert {len(row.cells["b00"].entries) for row in state.rows} == {runs}


def test_a_leg_that_folds_reports_the_cells_its_own_results_changed(memory):
    """The folding leg's report counts its own changed cells, not the fold's view."""
    first = run_leg(memory, 0, 2)
    last = run_leg(memory, 1, 2)
    assert first.commit_sha is not None
    assert last.rendered
    assert first.merged.changed_cells == last.merged.changed_cells == ROWS * len(DASHBOARDS)


# ----------------------------------------------------------------------------- bad objects


def put_object(memory, ref: str, files: dict[str, str]) -> None:
    """An inbox object holding ``files`` under ``ref``, as a broken or foreign writer left it."""
    tree = memory.create_tree(REPO, None, files)
    commit = memory.create_commit(REPO, "left here", tree, [])
    assert memory.create_ref(REPO, ref, commit)


def test_bad_inbox_objects_are_moved_aside_with_a_warning_and_every_run_lands(memory):
    """Garbage, truncated JSON, a dashboard under another's path, and names that are not
    ASCII or name a matrix of more than 256 legs: each is a warning naming the ref and why;
    readable results are folded, the refs are moved aside, this run and the next land."""
    good = leg_change(5, rows=2)({}).states[DASHBOARDS[0]]
    text = dump_state(good)
    bad = {
        f"{INBOX}{RUN}-4-1-aaaa": {f"{STATE_DIR}/core/gradients.json": "not json at all"},
        f"{INBOX}{RUN}-4-2-bbbb": {f"{STATE_DIR}/core/gradients.json": text[: len(text) // 2]},
        f"{INBOX}{RUN}-4-3-cccc": {
            f"{STATE_DIR}/core/random.json": text,  # gradients' results under random's path
            f"{STATE_DIR}/core/gradients.json": text,
        },
        f"{INBOX}²²-4-0-dddd": {f"{STATE_DIR}/core/gradients.json": text},
        f"{INBOX}{RUN}-99999999999-0-eeee": {f"{STATE_DIR}/core/gradients.json": text},
        f"{INBOX}{RUN}-4-0-ffff": {"README.md": "# hello\n"},
    }
    for ref, files in bad.items():
        put_object(memory, ref, files)
    log = Lines()
    saved = run_leg(memory, 0, 4, stored={"log": log})
    assert saved.commit_sha is not None
    warnings = log.warnings
    for ref in bad:
        assert any(ref in line for line in warnings), ref
    assert any("not JSON" in line for line in warnings)
    assert any("belongs in" in line for line in warnings)
    assert inbox_refs(memory) == []
    with memory.lock:
        aside = [
            r for r in memory.refs[REPO] if r.startswith(f"refs/ivy-matrix/rejected/{BRANCH}/")
        ]
    assert len(aside) == len(bad)
    # The readable results of the object with one misplaced file were folded.
    assert "b05" in branch_states(memory)[DASHBOARDS[0]].backend_names
    later = run_leg(memory, 1, 4)
    assert later.commit_sha is not None
    assert_markdown_is_a_render_of_the_state(memory)


def test_a_huge_matrix_size_in_a_ref_name_never_reaches_the_legs_record(memory):
    """A ref naming a matrix of 99,999,999,999 legs is refused before it is recorded: LEGS
    only ever holds sizes up to 256."""
    put_object(
        memory,
        f"{INBOX}{RUN}-99999999999-5-abcd",
        {f"{STATE_DIR}/core/gradients.json": dump_state(leg_change(5)({}).states[DASHBOARDS[0]])},
    )
    run_leg(memory, 0, 2)
    legs = memory.read_file(f"{STATE_DIR}/LEGS", BRANCH)
    assert "99999999999" not in legs
    assert f'"{RUN}":{{"done":[0],"size":2}}' in legs


def test_an_unused_change_argument_is_not_called_with_a_scope(memory):
    """With a scope the store applies the scope's change; the one given to update is not."""
    called = []

    def change(states):
        called.append(1)
        return Merged(states=dict(states))

    store(memory, scope=leg_scope(0)).update(change)
    assert called == []
