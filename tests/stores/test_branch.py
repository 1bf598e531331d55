"""Tests for stores/branch.py: state and dashboards on a branch, one compare-and-swap commit
per update, retried from a fresh read when another run's writer moved the branch first,
reading only what an update touches.

Store logic and the races run on the in-memory model (tests/github/memory.py); the tests of
what goes over the wire run through real PyGithub on the HTTP fake; the git transport in
tests/stores/test_git.py.
"""

from __future__ import annotations

import gc
import threading
import time
from functools import partial

import pytest

from ivy_matrix.errors import GitHubAPIError, StoreError
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.results.timed_cases import TimedCases
from ivy_matrix.state import statefile
from ivy_matrix.state.fold import merge_batches
from ivy_matrix.state.merge import Batch
from ivy_matrix.state.statefile import dump_state
from ivy_matrix.stores import Saved, snapshot
from ivy_matrix.stores.index_file import load_index
from ivy_matrix.views.durations_file import durations_files
from tests.concurrency import at_once
from tests.github.budget import RACING
from tests.stores.helpers import (
    BRANCH,
    DASHBOARDS,
    REPO,
    RUN,
    STATE_DIR,
    assert_every_cell_landed,
    assert_markdown_is_a_render_of_the_state,
    branch_states,
    client,
    history,
    job_url,
    leg_batches,
    leg_change,
    run_leg,
    store,
)
from tests.views.durations import pieces_made

LAYOUT = (
    f"{STATE_DIR}/INDEX",
    f"{STATE_DIR}/REVISION",
    f"{STATE_DIR}/core/gradients.json",
    f"{STATE_DIR}/core/random.json",
    f"{STATE_DIR}/stateful/layers.json",
    "README.md",
    "charts/parity.svg",
    "charts/pass-rate.svg",
    "core/gradients.md",
    "core/random.md",
    "stateful/layers.md",
    "trend.json",
)


def test_first_update_creates_the_branch_and_makes_one_commit(fake):
    """A missing branch is created with a root commit that holds every file, and nothing else."""
    with client(fake) as gh:
        branch = store(gh, message="ivy-matrix: run 1")
        saved = branch.update(leg_change(0))
    assert saved.attempts == 1
    assert saved.commit_sha == fake.ref_sha(f"heads/{BRANCH}")
    assert saved.revision == 1
    assert saved.written == LAYOUT
    assert len(history(fake)) == 1
    assert fake.commits[saved.commit_sha]["message"] == "ivy-matrix: run 1"
    assert [(r.method, r.path.rsplit("/git/", 1)[-1]) for r in fake.writes()] == [
        ("POST", "trees"),
        ("POST", "commits"),
        ("POST", "refs"),
    ]
    assert sorted(fake.files(BRANCH)) == sorted(saved.written)
    assert_every_cell_landed(fake, legs=1)
    assert_markdown_is_a_render_of_the_state(fake)


def test_unchanged_update_makes_no_write_request(fake):
    """Running the same update again reads the branch and writes nothing at all."""
    with client(fake) as gh:
        branch = store(gh)
        branch.update(leg_change(0))
        writes = len(fake.writes())
        tip = fake.ref_sha(f"heads/{BRANCH}")
        again = branch.update(leg_change(0))
        fresh = store(gh).update(leg_change(0))  # a new store: no blob cache
    assert (again.commit_sha, again.attempts, again.written, again.revision) == (None, 1, (), 1)
    assert fresh.commit_sha is None
    assert len(fake.writes()) == writes
    assert fake.ref_sha(f"heads/{BRANCH}") == tip


def test_only_changed_files_are_written(fake):
    """A change of one dashboard writes its state, its page, the index page, the index file,
    the revision and the trend with its pictures (a new run is a new point)."""
    dashboard = DASHBOARDS[0]
    entry = Entry(source=Source(run=RunKey(RUN + 1, 1, 7), url=job_url(7)), outcome=Outcome.FAILURE)
    batch = Batch(dashboard=dashboard, cells={"test_new": {"b00": entry}})
    with client(fake) as gh:
        branch = store(gh)
        branch.update(leg_change(0))
        saved = branch.update(lambda states: merge_batches(states, [batch]))
    assert saved.written == (
        f"{STATE_DIR}/INDEX",
        f"{STATE_DIR}/REVISION",
        f"{STATE_DIR}/core/gradients.json",
        "README.md",
        "charts/parity.svg",
        "charts/pass-rate.svg",
        "core/gradients.md",
        "trend.json",  # the point of run RUN + 1
    )
    assert saved.revision == 2
    tree_posts = fake.requests_to("POST", r"/git/trees$")
    assert sorted(e["path"] for e in tree_posts[-1].body["tree"]) == list(saved.written)


def test_read_only_token_error_reaches_the_caller(fake):
    """With a read-only token the update fails with GitHub's 403 mapped to ReadOnlyTokenError."""
    fake.configure(read_only=True)
    with client(fake) as gh, pytest.raises(GitHubAPIError, match="read-only"):
        store(gh).update(leg_change(0, rows=1))


def test_gives_up_after_max_attempts_with_a_clear_error(memory):
    """When the tip moves before every ref update, the update stops after max_attempts."""
    store(memory).update(leg_change(0, rows=1))
    moves = iter(range(3))
    memory.inject(
        "update_branch",
        status=None,
        before=lambda: memory.push(BRANCH, {"other.md": f"{next(moves)}"}),
        times=3,
    )
    with pytest.raises(StoreError, match="moved it 3 times"):
        store(memory, max_attempts=3).update(leg_change(1, rows=1))
    assert memory.read_file("other.md", BRANCH) == "2"


def test_two_legs_creating_the_branch_at_once_both_land(fake):
    """Leg A's branch creation is held until leg B created it and committed; A re-reads and lands."""
    release = threading.Event()
    hold = fake.inject(method="POST", path=r"/git/refs$", status=None, wait=release)
    results: dict[str, Saved] = {}

    def leg_a() -> None:
        with client(fake) as gh:
            results["a"] = store(gh, 1).update(leg_change(0))

    thread = threading.Thread(target=leg_a, daemon=True)
    thread.start()
    while not hold.hits:  # leg A's create is held (a hang is the suite's hang guard's)
        time.sleep(0.005)
    with client(fake) as gh:
        results["b"] = store(gh, 2).update(leg_change(1))
    release.set()
    thread.join()
    assert results["b"].attempts == 1
    assert results["a"].attempts == 2
    assert [r.status for r in fake.requests_to("POST", r"/git/refs$")] == [201, 422]
    assert len(history(fake)) == 2
    assert_every_cell_landed(fake, legs=2)


def test_commit_post_that_landed_before_a_502_gives_one_commit(fake):
    """A 502 after the commit was stored is retried; the branch still gets exactly one commit."""
    fake.inject(method="POST", path=r"/git/commits$", status=502, after_write=True)
    with client(fake) as gh:
        saved = store(gh).update(leg_change(0))
    assert history(fake) == [saved.commit_sha]


@pytest.mark.parametrize("faults", [False, True])
def test_sixteen_concurrent_updates_never_lose_a_cell(memory, faults):
    """16 updates of every dashboard at once (no scope: each reads everything); every cell
    lands, one commit each."""
    legs = 16
    # Every try writes (tree, commit, ref): more than GitHub's 80 a minute when 16 race; this
    # tests that nothing is lost, so it takes the racing budget.
    memory.budget.configure(RACING)
    memory.latency = (0.0, 0.002)  # every call pauses, so the updates really interleave
    if faults:
        # Writes that land and are then answered 502: the client's retry repeats them.
        memory.inject("update_branch", after_write=True, retried=True, times=3)
        memory.inject("create_commit", after_write=True, retried=True, times=3)
    outcomes: dict[int, Saved] = {}

    def update(leg: int) -> None:
        outcomes[leg] = store(memory, leg).update(leg_change(leg))

    at_once([partial(update, leg) for leg in range(legs)])
    memory.latency = (0.0, 0.0)
    assert_every_cell_landed(memory, legs=legs)
    assert_markdown_is_a_render_of_the_state(memory)
    chain = history(memory)
    assert len(chain) == legs
    assert {o.commit_sha for o in outcomes.values()} - {None} <= set(chain)


def test_revision_rises_by_one_per_commit_across_writers(memory):
    """Each commit raises the branch revision by exactly one, whoever makes it."""
    first = store(memory).update(leg_change(0))
    second = store(memory).update(leg_change(1))
    unchanged = store(memory).update(leg_change(1))
    assert (first.revision, second.revision, unchanged.revision) == (1, 2, 2)
    assert memory.read_file(f"{STATE_DIR}/REVISION", BRANCH) == "2\n"


def test_a_page_of_megabytes_is_committed_through_a_blob_of_its_own(fake):
    """A page over the inline limit is sent with POST /git/blobs and lands whole."""
    big = leg_batches(0, rows=8000, dashboards=DASHBOARDS[:1])
    with client(fake) as gh:
        store(gh).update(lambda states: merge_batches(states, big))
    page = fake.files(BRANCH)["core/gradients.md"]
    assert len(page) > 1 << 20
    assert page.decode().count("| test_") == 8000
    assert len(fake.requests_to("POST", r"/git/blobs$")) == 1


def test_every_page_is_rendered_for_publish_not_only_the_changed_ones(memory):
    """A store built with every_page (the publish command) restores a page that went missing,
    where an update that changes nothing renders and writes nothing."""

    def nothing_new(states):
        return merge_batches(states, [])

    store(memory).update(leg_change(0))
    tip = memory.ref_sha(f"heads/{BRANCH}")
    assert tip is not None
    tree = memory.create_tree(REPO, memory.get_tree(REPO, tip).sha, {"stateful/layers.md": None})
    assert memory.update_branch(REPO, BRANCH, memory.create_commit(REPO, "x", tree, [tip]))
    assert store(memory).update(nothing_new).written == ()
    assert "stateful/layers.md" not in memory.files(BRANCH)
    every = store(memory, every_page=True).update(nothing_new)
    assert every.written == (f"{STATE_DIR}/INDEX", f"{STATE_DIR}/REVISION", "stateful/layers.md")
    assert_markdown_is_a_render_of_the_state(memory)


# ----------------------------------------------------------------------------- with a scope


def test_an_update_reads_only_the_dashboards_it_touches_and_commits_once(memory):
    """An update touching one dashboard of three reads the tree, the small files and that one
    document, and commits once: the other documents are never read."""
    run_leg(memory, 0)
    run_leg(memory, 1)
    tip = memory.ref_sha(f"heads/{BRANCH}")
    with memory.lock:  # the untouched dashboards' documents can no longer be read
        tree = memory.trees[memory.commits[tip]["tree"]]
        hidden = {
            sha: memory.blobs.pop(sha)
            for path, sha in tree.items()
            if path.endswith(("random.json", "layers.json"))
        }
    calls = len(memory.calls)
    saved = run_leg(memory, 2, dashboards=DASHBOARDS[:1])
    made = memory.calls[calls:]
    with memory.lock:
        memory.blobs.update(hidden)
    assert saved.commit_sha == memory.ref_sha(f"heads/{BRANCH}")
    assert made.count("get_tree") == 1
    # The index file, the revision, the one document and the trend (for this run's point,
    # from the others' summaries).
    assert made.count("get_blob_text") == 4
    assert [c for c in made if c.startswith(("create", "update", "delete"))] == [
        "create_tree",
        "create_commit",
        "update_branch",
    ]
    assert set(memory.refs[REPO]) == {f"refs/heads/{BRANCH}"}
    state = branch_states(memory)[DASHBOARDS[0]]
    assert state.backend_names == ("b00", "b01", "b02")


def test_an_update_that_loses_the_branch_reads_again_and_lands(memory):
    """An update whose compare-and-swap loses the branch to another run's writer reads the
    new tip again (only the blobs that changed: the rest are cached), applies its change to
    it and commits on it: nothing is lost, and the markdown is a render of the state."""
    run_leg(memory, 0)
    memory.inject("update_branch", status=None, before=lambda: run_leg(memory, 1), times=1)
    calls = len(memory.calls)
    saved = run_leg(memory, 2)
    assert saved.attempts == 2
    assert memory.calls[calls:].count("update_branch") == 3  # the other writer's, ours twice
    assert set(memory.refs[REPO]) == {f"refs/heads/{BRANCH}"}
    assert_every_cell_landed(memory, legs=3)
    assert_markdown_is_a_render_of_the_state(memory)


def test_a_durations_file_is_made_for_each_try_and_lands_with_the_commit(memory, monkeypatch):
    """The durations files (made when they are written: views/durations_file.py) go into the
    update's one commit; a commit that loses the branch makes them again for the next try,
    from what they hold, and the commit that lands has them whole."""
    made = pieces_made(monkeypatch)
    files = durations_files(
        TimedCases.of({"jax": {"t.py::K::": {"a[1]": 1.5, "b": 2.0}}, "numpy": {}})
    )
    run_leg(memory, 0)
    memory.inject("update_branch", status=None, before=lambda: run_leg(memory, 1), times=1)
    saved = run_leg(memory, 2, stored={"extra": tuple(files)})
    assert saved.attempts == 2
    assert made == ["durations/jax.json", "durations/jax.json"]
    assert memory.files(BRANCH)["durations/jax.json"] == (
        b'{"t.py::K::a[1]": 1.5,\n"t.py::K::b": 2.0}\n'
    )
    assert_every_cell_landed(memory, legs=3)


def test_an_update_with_a_scope_gives_up_after_max_attempts(memory):
    """A scoped update whose every compare-and-swap loses gives up after ``max_attempts``
    tries with a StoreError that names the branch and says what to do; nothing of it lands."""
    run_leg(memory, 0)
    moves = iter(range(3))
    memory.inject(
        "update_branch",
        status=None,
        before=lambda: memory.push(BRANCH, {"other.md": f"{next(moves)}"}),
        times=3,
    )
    with pytest.raises(StoreError, match=r"branch 'ivy-matrix'.* 3 times.*one fan-in job"):
        run_leg(memory, 2, stored={"max_attempts": 3})
    assert memory.read_file("other.md", BRANCH) == "2"  # every try lost to another writer
    assert "b02" not in branch_states(memory)[DASHBOARDS[0]].backend_names


def test_older_layouts_are_read_whole_and_migrated_by_the_next_write(memory):
    """A branch of layout 1 (one object per column) and one-file states of before is read
    whole; the next commit writes layout 2 (one document per dashboard and the index file)
    and removes the old files; later legs then read only what they touch."""
    one_file = leg_change(7, rows=3)({}).states[DASHBOARDS[0]]
    column = leg_change(8, rows=3)({}).states[DASHBOARDS[1]]
    memory.push(
        BRANCH,
        {
            f"{STATE_DIR}/core/gradients.json": dump_state(one_file),
            f"{STATE_DIR}/core/random.d/b08.json": dump_state(column),
            f"{STATE_DIR}/REVISION": "4\n",
        },
    )
    assert store(memory).load() == {DASHBOARDS[0]: one_file, DASHBOARDS[1]: column}
    saved = run_leg(memory, 1, rows=3, dashboards=DASHBOARDS[:1])
    files = memory.files(BRANCH)
    assert f"{STATE_DIR}/core/random.d/b08.json" not in files
    assert {f"{STATE_DIR}/INDEX", f"{STATE_DIR}/core/random.json", "core/random.md"} <= set(
        saved.written
    )
    assert saved.revision == 5
    states = branch_states(memory)
    assert states[DASHBOARDS[0]].backend_names == ("b01", "b07")
    assert states[DASHBOARDS[1]] == column
    assert_markdown_is_a_render_of_the_state(memory)


def test_an_index_an_older_version_left_behind_is_not_trusted(memory):
    """A branch an older version committed to since the index file was written (its
    revision differs) is read whole, and the index rebuilt: nothing it wrote is missed."""
    run_leg(memory, 0, rows=3)
    old_write = leg_change(5, rows=3)({}).states[DASHBOARDS[2]]
    memory.push(
        BRANCH,
        {
            **{p: d.decode() for p, d in memory.files(BRANCH).items()},
            f"{STATE_DIR}/stateful/layers.d/b05.json": dump_state(old_write),
            f"{STATE_DIR}/REVISION": "2\n",
        },
    )
    run_leg(memory, 1, rows=3, dashboards=DASHBOARDS[:1])
    states = branch_states(memory)
    assert states[DASHBOARDS[2]].backend_names == ("b00", "b05")
    assert f"{STATE_DIR}/stateful/layers.d/b05.json" not in memory.files(BRANCH)
    assert_markdown_is_a_render_of_the_state(memory)


def test_retirement_reaches_dashboards_the_leg_does_not_touch(memory):
    """With retire-after-runs 2, a dashboard no run reports any more goes after two runs of
    other dashboards, though those legs never read it but for the index's summary."""
    idle = DashboardId(title="idle")
    run_leg(memory, 0, rows=2, dashboards=(*DASHBOARDS, idle), retire_after_runs=2)
    for offset in (1, 2):
        run_leg(memory, 0, rows=2, run=RUN + offset, retire_after_runs=2)
    assert idle not in branch_states(memory)
    assert "idle.md" not in memory.files(BRANCH)
    assert b"idle" not in memory.files(BRANCH)["README.md"]
    assert_markdown_is_a_render_of_the_state(memory)


def test_load_can_read_only_some_dashboards(memory):
    """load(dashboards) reads those dashboards' documents only (a pull request's baseline)."""
    store(memory).update(leg_change(0))
    calls = len(memory.calls)
    loaded = store(memory).load(DASHBOARDS[:1])
    assert list(loaded) == [DASHBOARDS[0]]
    assert memory.calls[calls:].count("get_blob_text") == 3  # the index, revision, document
    assert store(memory).load() == branch_states(memory)


def test_a_change_of_a_scope_gives_what_the_whole_change_gives(memory):
    """A leg that reads only its dashboards ends with the same branch state as an update of
    the same results that read everything."""
    run_leg(memory, 0)
    run_leg(memory, 1, dashboards=DASHBOARDS[:2])
    scoped = branch_states(memory)
    other = type(memory)()
    store(other).update(leg_change(0))
    batches = leg_batches(1, dashboards=DASHBOARDS[:2])
    store(other).update(lambda states: merge_batches(states, batches))
    assert branch_states(other) == scoped


def test_an_update_holds_one_dashboards_old_state_at_a_time(memory, monkeypatch):
    """The dashboards an update touches are decoded from their blobs as its change folds
    them, and each old state goes before the next is decoded (not all decoded first and held
    through the merge); the branch then holds what an update of every state held would."""
    dashboards = [DashboardId(title=f"d{n}", category="core") for n in range(6)]
    run_leg(memory, 0, run=1, dashboards=dashboards)
    decoded: list[tuple[int, DashboardId]] = []
    alive: list[int] = []

    def load_state(text: str, *, where: str) -> DashboardState:
        state = statefile.load_state(text, where=where)
        decoded.append((id(state), state.id))
        gc.collect()
        live = {
            (id(o), o.id) for o in gc.get_objects() if type(o) is DashboardState and o.runs == (1,)
        }
        alive.append(sum(read in live for read in decoded))
        return state

    monkeypatch.setattr(snapshot, "load_state", load_state)
    run_leg(memory, 1, run=2, dashboards=dashboards)
    monkeypatch.undo()

    assert len(alive) == len(dashboards)
    assert max(alive) == 1
    other = type(memory)()
    store(other).update(
        lambda states: merge_batches(states, leg_batches(0, run=1, dashboards=dashboards))
    )
    store(other).update(
        lambda states: merge_batches(states, leg_batches(1, run=2, dashboards=dashboards))
    )
    assert branch_states(other) == branch_states(memory)


def test_a_state_whose_runs_its_index_does_not_say_is_updated_and_the_index_mended(memory):
    """The runs of the dashboards an update touches are read from their documents' starts,
    not taken from the index: a state edited by hand to hold another run than the index says
    is updated as it stands (its own runs count in the retirement window), and the index
    written with it says what the state now holds."""
    dashboards = [DashboardId(title=f"d{n}", category="core") for n in range(2)]
    run_leg(memory, 0, run=1, dashboards=dashboards)
    path = f"{STATE_DIR}/core/d0.json"
    text = memory.read_file(path, BRANCH)
    assert '"runs":[1]' in text
    memory.push(BRANCH, {path: text.replace('"runs":[1]', '"runs":[1,0]', 1)})

    run_leg(memory, 1, run=2, dashboards=dashboards)

    assert branch_states(memory)[dashboards[0]].runs == (2, 1, 0)
    index = load_index(memory.read_file(f"{STATE_DIR}/INDEX", BRANCH))
    assert index is not None
    assert index[1][dashboards[0]].runs == (2, 1, 0)


def test_a_state_whose_start_and_whole_disagree_is_refused_naming_it(memory):
    """A document whose first keys say other runs than its whole (a key written twice by
    hand): the retirement window was worked out from its start, so the update stops, naming
    the file, and nothing is written."""
    dashboards = [DashboardId(title=f"d{n}", category="core") for n in range(2)]
    run_leg(memory, 0, run=1, dashboards=dashboards)
    path = f"{STATE_DIR}/core/d0.json"
    text = memory.read_file(path, BRANCH)
    assert text.count('"runs":[1]') == 1
    end = text.rindex("}")
    memory.push(BRANCH, {path: text[:end] + ',"runs":[1,0]' + text[end:]})
    tip = memory.ref_sha(f"refs/heads/{BRANCH}")

    with pytest.raises(StoreError, match=rf"{path}.*first keys say"):
        run_leg(memory, 1, run=2, dashboards=dashboards)

    assert memory.ref_sha(f"refs/heads/{BRANCH}") == tip
