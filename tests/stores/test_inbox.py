"""Tests for stores/inbox.py and the branch store's matrix legs: each leg's results through
the inbox, folded into the branch by one leg at a time, rendered once the run is complete.

The races run on the in-memory model (tests/github/memory.py) with threads.
"""

from __future__ import annotations

from functools import partial

import pytest

from ivy_matrix.statefile import dump_state, load_state
from ivy_matrix.stores import Saved
from ivy_matrix.stores.branch import MAX_ATTEMPTS, BranchStore
from ivy_matrix.stores.layout import Leg
from tests.concurrency import at_once
from tests.github.budget import RACING, ManualClock
from tests.github.memory import MemoryGitHub
from tests.stores.helpers import (
    BRANCH,
    DASHBOARDS,
    INBOX,
    REPO,
    ROWS,
    RUN,
    STATE_DIR,
    FolderDiedError,
    assert_every_cell_landed,
    assert_markdown_is_a_render_of_the_state,
    branch_states,
    client,
    column_change,
    history,
    matrix_store,
    race_legs,
    run_leg,
    store,
)


def test_matrix_legs_write_only_their_column_and_the_last_one_renders(memory):
    """Legs of a 3-leg run commit only their column; the leg that completes it renders all."""
    with client(memory) as gh:
        first = run_leg(gh, 0, 3)
        second = run_leg(gh, 1, 3)
        assert not any(path.endswith(".md") for path in memory.files(BRANCH))
        last = run_leg(gh, 2, 3)
    assert (first.rendered, second.rendered, last.rendered) == (False, False, True)
    assert second.written == (
        f"{STATE_DIR}/LEGS",
        f"{STATE_DIR}/REVISION",
        f"{STATE_DIR}/core/gradients.d/b01.json",
        f"{STATE_DIR}/core/random.d/b01.json",
        f"{STATE_DIR}/stateful/layers.d/b01.json",
    )
    assert {"README.md", "core/gradients.md", "core/random.md", "stateful/layers.md"} <= set(
        last.written
    )
    assert_every_cell_landed(memory, legs=3)
    assert_markdown_is_a_render_of_the_state(memory)


def test_a_leg_reads_only_its_own_columns_until_the_run_is_complete(memory):
    """A leg of a run not yet complete reads the finished legs and its own columns, never
    another leg's, and lands its results through the inbox in one commit."""
    for leg in range(3):
        run_leg(memory, leg, 5)
    # The other legs' columns can no longer be read: a leg that read one would fail.
    tip = memory.ref_sha(f"heads/{BRANCH}")
    with memory.lock:
        tree = memory.trees[memory.commits[tip]["tree"]]
        for path, sha in tree.items():
            if path.endswith(("/b00.json", "/b02.json")):
                del memory.blobs[sha]
    commits, calls = len(history(memory)), len(memory.calls)
    saved = run_leg(memory, 1, 5, run=RUN + 1)  # a new run: its column b01 has the old run's
    assert (saved.commit_sha is not None, saved.rendered) == (True, False)
    assert len(history(memory)) == commits + 1
    assert memory.calls[calls:].count("get_tree") == 1  # the fold reuses the listing of the tip
    tip = memory.ref_sha(f"heads/{BRANCH}")
    with memory.lock:
        assert not [ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]
        tree = memory.trees[memory.commits[tip]["tree"]]
        columns = [
            load_state(memory.blobs[sha], where=path)
            for path, sha in tree.items()
            if path.endswith("/b01.json")
        ]
    assert len(columns) == len(DASHBOARDS)
    assert all(
        row.cells["b01"].latest.source.run.run_id == RUN + 1
        for column in columns
        for row in column.rows
    )


def test_an_identical_re_run_of_a_leg_writes_nothing(memory):
    """A leg that runs again with the same results, after its run completed, writes nothing."""
    with client(memory) as gh:
        for leg in range(2):
            run_leg(gh, leg, 2)
        writes = len(memory.writes())
        again = run_leg(gh, 1, 2)
    assert again.commit_sha is None
    assert len(memory.writes()) == writes


def test_a_re_run_attempt_of_a_failed_leg_finds_the_run_complete_and_renders(memory):
    """Leg 1 of a done run runs again (attempt 2, new outcomes): it renders the new state."""
    with client(memory) as gh:
        for leg in range(3):
            run_leg(gh, leg, 3)
        again = run_leg(gh, 1, 3, attempt=2, flip=1)
    assert again.rendered
    assert "core/gradients.md" in again.written
    assert_markdown_is_a_render_of_the_state(memory)
    state = branch_states(memory)[DASHBOARDS[0]]
    assert state.rows[0].cells["b01"].latest.source.run.run_attempt == 2


def test_a_one_file_state_of_an_older_version_is_read_and_split_when_written(memory):
    """An older one-file state is read as it is, and replaced by its columns when a leg writes."""
    dashboard = DASHBOARDS[0]
    old = column_change(7, rows=3)(column_change(8, rows=3)({}).states).states[dashboard]
    legacy = f"{STATE_DIR}/core/gradients.json"
    memory.push(BRANCH, {legacy: dump_state(old)})
    with client(memory) as gh:
        assert store(gh).load() == {dashboard: old}
        saved = run_leg(gh, 1, 4, rows=3)
    files = memory.files(BRANCH)
    assert legacy not in files
    assert legacy in saved.written
    columns = sorted(p for p in files if p.startswith(f"{STATE_DIR}/core/gradients.d/"))
    assert columns == [f"{STATE_DIR}/core/gradients.d/b{n:02d}.json" for n in (1, 7, 8)]
    state = branch_states(memory)[dashboard]
    assert state.backend_names == ("b01", "b07", "b08")
    assert [row.cells["b07"] for row in state.rows] == [row.cells["b07"] for row in old.rows]


def test_thirty_two_matrix_legs_at_once_all_land_in_few_tries(memory):
    """32 legs of one run race: every cell lands, no leg retries more than a few times, the
    legs' changes run once per try, and the markdown is a render of the state at the end."""
    # 32 legs publishing to the inbox at once make about 150 writes within a second, over
    # GitHub's 80 a minute; this tests that nothing is lost, so it takes the racing budget.
    memory.budget.configure(RACING)
    legs = 32
    memory.latency = (0.0, 0.002)
    outcomes: dict[int, Saved] = {}

    def run(leg: int) -> None:
        change = column_change(leg, rows=5)
        outcomes[leg] = matrix_store(memory, leg, legs, change, seed=leg).update(change)

    at_once([partial(run, leg) for leg in range(legs)])
    memory.latency = (0.0, 0.0)
    assert_every_cell_landed(memory, legs=legs, rows=5)
    assert_markdown_is_a_render_of_the_state(memory)
    tries = sorted(o.attempts for o in outcomes.values())
    # At least one fold renders (the markdown check above is the invariant). Rarely a second
    # fold, racing the first one's ref deletions, renders again: redundant, not wrong.
    assert sum(o.rendered for o in outcomes.values()) >= 1
    assert tries[-1] <= MAX_ATTEMPTS
    print(f"tries: max {tries[-1]}, mean {sum(tries) / legs:.2f}")


def test_thirty_two_legs_with_faults_fold_their_inboxes_and_lose_nothing(memory):
    """32 racing legs, with inbox refs that land before a 502 and a folder that dies after its
    commit, put every cell on the branch, render it once complete and stay within 5 tries."""
    # 32 legs publishing to the inbox at once make about 150 writes within a second, over
    # GitHub's 80 a minute; this tests that nothing is lost, so it takes the racing budget.
    memory.budget.configure(RACING)
    memory.latency = (0.0, 0.002)
    memory.inject("create_ref", after_write=True, retried=True, times=4)

    def die() -> None:
        raise FolderDiedError

    memory.inject("delete_ref", status=None, before=die, times=1)
    outcomes = race_legs(memory, 32)
    died = [leg for leg, outcome in outcomes.items() if isinstance(outcome, BaseException)]
    assert len(died) <= 1
    assert all(isinstance(outcomes[leg], FolderDiedError) for leg in died)
    saved = [outcome for outcome in outcomes.values() if isinstance(outcome, Saved)]
    assert max(s.attempts for s in saved) <= 5
    memory.latency = (0.0, 0.0)
    with memory.lock:
        # Left by the folder that died: already on the branch, folded by the next writer.
        left = [ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]
    assert len(left) <= 1
    assert_every_cell_landed(memory, legs=32)
    assert_markdown_is_a_render_of_the_state(memory)


def test_inbox_refs_left_by_a_dead_run_are_folded_by_the_next_leg_and_change_nothing(memory):
    """A leg folds inbox refs that an earlier run left behind (results already on the branch or
    not) and deletes them; folding results that are already in writes nothing new."""
    run_leg(memory, 0, 2)
    tip = memory.ref_sha(f"heads/{BRANCH}")
    # A leg of the old run that published its results, then died before folding them.
    change = column_change(1)
    dead = matrix_store(memory, 1, 2, change)
    assert dead.leg is not None

    def die() -> None:
        raise FolderDiedError

    memory.inject("list_refs", status=None, before=die)
    with pytest.raises(FolderDiedError):
        dead.update(change)
    assert memory.ref_sha(f"heads/{BRANCH}") == tip
    with memory.lock:
        assert len([ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]) == 1
    # A later run's leg folds it in with its own results, and the old run completes.
    later = run_leg(memory, 0, 2, run=RUN + 1)
    assert later.commit_sha is not None
    with memory.lock:
        assert not [ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]
    states = branch_states(memory)
    assert all("b01" in state.backend_names for state in states.values())
    assert_markdown_is_a_render_of_the_state(memory)


def test_results_folded_before_a_folder_died_are_folded_again_without_change(memory):
    """A folder that dies after its commit, before deleting its inbox ref, leaves the ref; the
    next leg folds it again, which changes nothing of its columns, and deletes it."""

    def die() -> None:
        raise FolderDiedError

    memory.inject("delete_ref", status=None, before=die)
    with pytest.raises(FolderDiedError):
        run_leg(memory, 0, 2)
    assert len(history(memory)) == 1
    with memory.lock:
        assert len([ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]) == 1
    last = run_leg(memory, 1, 2)
    assert len(history(memory)) == 2
    assert not [path for path in last.written if path.endswith("b00.json")]
    assert last.rendered
    with memory.lock:
        assert not [ref for ref in memory.refs[REPO] if ref.startswith(INBOX)]
    assert_every_cell_landed(memory, legs=2)
    assert_markdown_is_a_render_of_the_state(memory)


def test_a_dry_run_leg_publishes_nothing_to_the_inbox(memory):
    """A matrix leg in a dry run reports the files it would change and writes no ref or object."""
    run_leg(memory, 0, 2)
    writes = len(memory.writes())
    change = column_change(1)
    saved = matrix_store(memory, 1, 2, change, dry_run=True).update(change)
    assert f"{STATE_DIR}/core/gradients.d/b01.json" in saved.written
    assert len(memory.writes()) == writes


def test_folding_keeps_as_many_results_per_cell_as_the_legs_history_says():
    """Folded results keep the leg's ``history`` entries per cell, more than the default too."""
    clock = ManualClock()
    memory = MemoryGitHub(clock=clock)
    runs = 12
    for offset in range(runs):
        clock.advance(600)  # workflow runs ten minutes apart: within GitHub's write limits
        change = column_change(0, run=RUN + offset)
        leg = Leg(
            run_id=RUN + offset,
            index=0,
            size=1,
            dashboards=frozenset(DASHBOARDS),
            backends=frozenset({"b00"}),
            change=change,
            history=runs,
        )
        BranchStore(memory, REPO, BRANCH, STATE_DIR, leg=leg).update(change)
    for state in branch_states(memory).values():
        assert {len(row.cells["b00"].entries) for row in state.rows} == {runs}


def test_a_leg_that_folds_reports_the_cells_its_own_results_changed(memory):
    """The folding leg's report counts its own changed cells, not the fold's (zero) view."""
    first = run_leg(memory, 0, 2)
    last = run_leg(memory, 1, 2)
    assert first.commit_sha is not None
    assert last.rendered
    assert first.merged.changed_cells == last.merged.changed_cells == ROWS * len(DASHBOARDS)
