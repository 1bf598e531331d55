"""Tests for stores/local.py: the local directory store, its errors, and concurrent writers."""

from __future__ import annotations

import gc
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.errors import ExitCode, StoreError
from ivy_matrix.model import (
    Cell,
    DashboardId,
    DashboardState,
    Entry,
    Outcome,
    Row,
    RunKey,
    Seen,
    Source,
)
from ivy_matrix.runner.files import write_atomic
from ivy_matrix.state.fold import merge_batches
from ivy_matrix.state.paths import relative_path
from ivy_matrix.state.records import FORMAT
from ivy_matrix.state.statefile import NEWEST, VERSION, dump_state
from ivy_matrix.stores.local import LocalStore
from tests.stores.helpers import leg_batches

pytestmark = pytest.mark.timeout(90)

ENTRYPOINT = Path(__file__).resolve().parents[2] / "entrypoint.py"
GRADIENTS = DashboardId(title="gradients", category="core")


def sample_state(dashboard: DashboardId = GRADIENTS) -> DashboardState:
    """A small dashboard with history, an adopted cell, an empty cell and two backends."""
    old = Source(run=RunKey(7, 1, 70), url="https://github.com/o/r/actions/runs/7/job/70")
    new = Source(
        run=RunKey(9, 2, 90),
        url="https://github.com/o/r/actions/runs/9/job/90",
        time="2026-11-21T10:00:00Z",
    )
    adopted = Source(run=RunKey(), url="null")
    first = Seen(RunKey(7, 1, 70), 0)
    return DashboardState(
        id=dashboard,
        backends=(("torch", first), ("numpy", Seen(RunKey(7, 1, 70), 1))),
        rows=(
            Row(
                name="test_grad",
                first_seen=first,
                cells={
                    "torch": Cell(
                        entries=(
                            Entry(source=new, outcome=Outcome.FAILURE),
                            Entry(source=old, outcome=Outcome.SUCCESS),
                        )
                    ),
                    "numpy": Cell(entries=(Entry(source=adopted, outcome=Outcome.SUCCESS),)),
                },
            ),
            Row(
                name="TestConv.test_forward",
                first_seen=Seen(RunKey(7, 1, 70), 1),
                cells={"torch": Cell(entries=(Entry(source=old, outcome=Outcome.FLAKY),))},
            ),
        ),
        runs=(9, 7),
    )


def state_document(**changes: object) -> str:
    """A valid serialized empty dashboard, with some keys replaced."""
    document: dict[str, object] = {
        "format": FORMAT,
        "version": VERSION,
        "title": "gradients",
        "category": "core",
        "runs": [],
        "sources": [],
        "cells": [],
        "backends": [],
        "rows": [],
        **changes,
    }
    return json.dumps(document)


# --- save and load ------------------------------------------------------------------------------


class CountingStore(LocalStore):
    """A local store that notes, as it reads each state, how many of the states it read are
    still alive (found by the garbage collector: read objects of run ``OLD_RUN`` alone)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.read: list[tuple[int, DashboardId]] = []
        self.alive: list[int] = []

    def _read(self, path: Path) -> DashboardState:
        state = super()._read(path)
        self.read.append((id(state), state.id))
        gc.collect()
        live = {
            (id(o), o.id)
            for o in gc.get_objects()
            if type(o) is DashboardState and o.runs == (OLD_RUN,)
        }
        self.alive.append(sum(read in live for read in self.read))
        return state


OLD_RUN = 1


def test_an_update_holds_one_dashboards_old_state_at_a_time(tmp_path):
    """Each dashboard's old state is read as the update folds it and goes before the next
    is read (not all read first and held through the merge); what is saved is the same."""
    dashboards = [DashboardId(title=f"d{n}", category="core") for n in range(6)]
    LocalStore(tmp_path / "store").update(
        lambda states: merge_batches(states, leg_batches(0, run=OLD_RUN, dashboards=dashboards))
    )
    held = LocalStore(tmp_path / "store").load_all()
    store = CountingStore(tmp_path / "store")
    batches = leg_batches(1, run=2, dashboards=dashboards)

    saved = store.update(lambda states: merge_batches(states, batches))

    assert len(store.alive) == len(dashboards)
    assert max(store.alive) == 1
    assert saved.merged.states == merge_batches({s.id: s for s in held}, batches).states
    assert LocalStore(tmp_path / "store").load_all() == saved.merged.ordered()


def test_a_state_unreadable_midway_through_an_update_leaves_every_file_as_it_was(tmp_path):
    """The states folded before an unreadable one were written beside their files, not over
    them: the update fails naming the file, and the store is as it was, with no file left over."""
    dashboards = [DashboardId(title=f"d{n}", category="core") for n in range(3)]
    store = LocalStore(tmp_path / "store")
    store.update(lambda states: merge_batches(states, leg_batches(0, run=1, dashboards=dashboards)))
    broken = store.path_of(dashboards[2])
    text = broken.read_text(encoding="utf-8")
    broken.write_text(text.replace('"cells":[', '"cells":[7,', 1), encoding="utf-8")
    before = {p: p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file()}
    batches = leg_batches(1, run=2, dashboards=dashboards)

    with pytest.raises(StoreError, match=r"d2\.json"):
        LocalStore(tmp_path / "store").update(lambda states: merge_batches(states, batches))

    after = {p: p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file()}
    assert after.keys() - {tmp_path / "store" / ".lock"} == before.keys() - {
        tmp_path / "store" / ".lock"
    }
    assert all(after[p] == data for p, data in before.items() if p.name != ".lock")


def test_save_then_load_gives_back_the_same_state(tmp_path):
    """A saved dashboard loads back equal, from state/<category>/<title>.json."""
    store = LocalStore(tmp_path / "store")
    state = sample_state()

    store.save(state)

    assert store.load(GRADIENTS) == state
    assert store.load_all() == [state]
    assert store.path_of(GRADIENTS) == tmp_path / "store" / "state" / "core" / "gradients.json"
    assert sorted(p.name for p in store.path_of(GRADIENTS).parent.iterdir()) == ["gradients.json"]


def test_saving_the_same_state_twice_writes_the_same_bytes(tmp_path):
    """The serialized form is deterministic."""
    store = LocalStore(tmp_path)
    store.save(sample_state())
    first = store.path_of(GRADIENTS).read_bytes()

    store.save(LocalStore(tmp_path).load(GRADIENTS) or sample_state())

    assert store.path_of(GRADIENTS).read_bytes() == first


def test_unsafe_titles_get_distinct_safe_file_names(tmp_path):
    """Titles that are not file-name-safe round trip through files of their own."""
    store = LocalStore(tmp_path)
    ids = [
        DashboardId(title="a b"),
        DashboardId(title="a-b"),
        DashboardId(title="../escape", category="x/y"),
        DashboardId(title="layers", category="nn"),
    ]
    for dashboard in ids:
        store.save(sample_state(dashboard))

    assert [store.load(d) for d in ids] == [sample_state(d) for d in ids]
    assert len({store.path_of(d) for d in ids}) == len(ids)
    for dashboard in ids:
        assert (tmp_path / "state") in store.path_of(dashboard).parents
    assert [s.key for s in store.load_all()] == sorted(d.key for d in ids)


def test_titles_too_long_for_a_file_name_are_shortened_and_stay_distinct(tmp_path):
    """Titles and categories of 1,000 characters get short, distinct file names that round trip."""
    store = LocalStore(tmp_path)
    ids = [
        DashboardId(title="t" * 1000 + "a", category="c" * 1000),
        DashboardId(title="t" * 1000 + "b", category="c" * 1000),
        DashboardId(title="u" * 236),
        DashboardId(title="u" * 237),
    ]
    for dashboard in ids:
        store.save(sample_state(dashboard))

    assert [store.load(d) for d in ids] == [sample_state(d) for d in ids]
    assert len({store.path_of(d) for d in ids}) == len(ids)
    assert store.path_of(ids[2]).name == "u" * 236 + ".json"
    for dashboard in ids:
        assert all(len(part) <= 255 for part in store.path_of(dashboard).parts)


def test_an_empty_store_has_nothing(tmp_path):
    """A store folder that does not exist yet loads as empty."""
    store = LocalStore(tmp_path / "absent")

    assert store.load(GRADIENTS) is None
    assert store.load_all() == []


# --- broken and foreign state files ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("{", "not JSON"),
        ("", "not JSON"),
        ("[1, 2]", "not an ivy-matrix-dashboard document"),
        (json.dumps({"format": "something-else", "version": 1}), "not an ivy-matrix-dashboard"),
        (state_document(rows="many"), "malformed document"),
        (state_document(rows=[["t", [1, 1, 1], 0, {"torch": [[5, "success"]]}]]), "malformed"),
        (state_document(rows=[["t", [1, 1, 1], 0, {"torch": [[0, "maybe"]]}]]), "malformed"),
        (state_document(title=None), "malformed document"),
    ],
    ids=[
        "truncated",
        "empty",
        "list",
        "other-format",
        "rows",
        "bad-source",
        "bad-outcome",
        "title",
    ],
)
def test_a_corrupt_state_file_is_a_store_error_naming_the_file(tmp_path, text, phrase):
    """load and load_all refuse a broken file with a StoreError that names it."""
    store = LocalStore(tmp_path)
    path = store.path_of(GRADIENTS)
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")

    for load in (lambda: store.load(GRADIENTS), store.load_all):
        with pytest.raises(StoreError) as error:
            load()
        assert f"cannot read dashboard state {path}" in str(error.value)
        assert phrase in str(error.value)


def test_a_state_file_that_is_not_utf8_is_a_store_error(tmp_path):
    """A state file holding arbitrary bytes is a StoreError naming it, not a crash."""
    store = LocalStore(tmp_path)
    path = store.path_of(GRADIENTS)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe\x00garbage")

    with pytest.raises(StoreError, match=r"gradients\.json"):
        store.load(GRADIENTS)


def test_a_newer_format_version_is_refused_with_upgrade_advice(tmp_path):
    """A state written by a newer ivy-matrix is not read; the message says to upgrade."""
    store = LocalStore(tmp_path)
    path = store.path_of(GRADIENTS)
    path.parent.mkdir(parents=True)
    path.write_text(state_document(version=NEWEST + 1, future=[1]), encoding="utf-8")

    with pytest.raises(StoreError) as error:
        store.load(GRADIENTS)

    message = str(error.value)
    assert str(path) in message
    assert f"format version {NEWEST + 1} is newer than this ivy-matrix understands" in message
    assert message.endswith("upgrade ivy-matrix")


def test_update_over_a_newer_state_exits_4_and_leaves_it_alone(tmp_path, monkeypatch, capsys):
    """The command refuses a newer state file with exit 4 and does not overwrite it."""
    monkeypatch.chdir(tmp_path)
    store = LocalStore(Path(".ivy-matrix"))
    path = store.path_of(GRADIENTS)
    path.parent.mkdir(parents=True)
    newer = state_document(version=NEWEST + 1)
    path.write_text(newer, encoding="utf-8")
    (tmp_path / "r.xml").write_text(
        '<testsuite><testcase classname="x.test_core.test_gradients" name="test_grad"/>'
        "</testsuite>",
        encoding="utf-8",
    )

    code = main(["update", "--junit", "r.xml", "--backend", "t"], {"GITHUB_ACTIONS": "true"})

    last = capsys.readouterr().err.splitlines()[-1]
    assert code == ExitCode.STORE
    assert last.startswith("::error::cannot read dashboard state ")
    assert "upgrade ivy-matrix" in last
    assert path.read_text(encoding="utf-8") == newer


def test_a_file_holding_another_dashboard_is_refused(tmp_path):
    """load refuses a file whose content names a different dashboard."""
    store = LocalStore(tmp_path)
    other = DashboardId(title="random", category="core")
    store.path_of(GRADIENTS).parent.mkdir(parents=True)
    store.path_of(GRADIENTS).write_text(
        state_document(title="random", category="core"), encoding="utf-8"
    )

    with pytest.raises(StoreError, match="holds dashboard 'core/random', not 'core/gradients'"):
        store.load(GRADIENTS)
    assert store.load(other) is None


def test_load_all_refuses_a_file_whose_title_does_not_match_its_path(tmp_path):
    """A hand-edited title is a StoreError naming the file, never merged into another dashboard."""
    store = LocalStore(tmp_path)
    random = DashboardId(title="random", category="core")
    store.save(sample_state(random))
    edited = store.path_of(GRADIENTS)
    edited.write_text(state_document(title="random", category="core"), encoding="utf-8")

    with pytest.raises(StoreError) as error:
        store.load_all()

    assert f"cannot read dashboard state {edited}" in str(error.value)
    assert "'core/random'" in str(error.value)


def test_update_over_a_hand_edited_title_exits_4_and_changes_nothing(tmp_path, monkeypatch, capsys):
    """The command names the edited file, exits 4 and leaves both files as they were."""
    monkeypatch.chdir(tmp_path)
    store = LocalStore(Path(".ivy-matrix"))
    store.save(sample_state(DashboardId(title="random", category="core")))
    edited = store.path_of(GRADIENTS)
    edited.write_text(state_document(title="random", category="core"), encoding="utf-8")
    before = {path: path.read_bytes() for path in Path(".ivy-matrix/state").rglob("*.json")}
    (tmp_path / "r.xml").write_text(
        '<testsuite><testcase classname="x.test_core.test_random" name="test_rand"/></testsuite>',
        encoding="utf-8",
    )

    code = main(["update", "--junit", "r.xml", "--backend", "t"], {})

    assert code == ExitCode.STORE
    assert str(edited) in capsys.readouterr().err.splitlines()[-1]
    assert {path: path.read_bytes() for path in Path(".ivy-matrix/state").rglob("*.json")} == before


def test_a_deeply_nested_state_file_is_a_store_error_naming_it(tmp_path):
    """JSON nested a million deep is refused as a StoreError naming the file, not a crash."""
    store = LocalStore(tmp_path)
    path = store.path_of(GRADIENTS)
    path.parent.mkdir(parents=True)
    path.write_text("[" * 1_000_000, encoding="utf-8")

    for load in (lambda: store.load(GRADIENTS), store.load_all):
        with pytest.raises(StoreError) as error:
            load()
        assert f"cannot read dashboard state {path}: it is nested too deeply" in str(error.value)


def test_written_files_respect_the_umask(tmp_path):
    """State and output files get 0o666 less the umask, like files of any ordinary tool."""
    store = LocalStore(tmp_path / "store")
    old = os.umask(0o022)
    try:
        store.save(sample_state())
        write_atomic(tmp_path / "out.md", "x\n")
        os.umask(0o027)
        write_atomic(tmp_path / "out.md", "y\n")
    finally:
        os.umask(old)

    assert stat.S_IMODE(store.path_of(GRADIENTS).stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "out.md").stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.md", "store"]


def test_errors_inside_the_locked_block_are_not_blamed_on_the_lock(tmp_path):
    """An OSError raised by the work done under the lock passes through as itself."""
    store = LocalStore(tmp_path)

    with pytest.raises(BrokenPipeError), store.locked():
        raise BrokenPipeError(32, "Broken pipe")

    with store.locked():  # and the lock was released
        pass


# --- file names, and the layout of older versions ---------------------------------------------

CORE_GRAD = DashboardId(title="Grad", category="Core")
TWINS = [
    CORE_GRAD,
    DashboardId(title="grad", category="core"),
    DashboardId(title="Grad", category="core"),
    DashboardId(title="grad", category="CORE"),
    DashboardId(title="README"),
    DashboardId(title="readme"),
    DashboardId(title="x", category="core.json"),
    DashboardId(title="core"),
]


def write_old_layout(store: LocalStore, state: DashboardState) -> Path:
    """Write ``state`` where versions before the collision-safe names put it."""
    path = store.root / "state" / relative_path(state.id, ".json")
    write_atomic(path, dump_state(state))
    return path


def test_case_twins_get_state_files_that_differ_even_ignoring_case(tmp_path):
    """Dashboards whose names differ only in case get state files of their own, and round trip."""
    store = LocalStore(tmp_path)
    for dashboard in TWINS:
        store.save(sample_state(dashboard))

    paths = [store.path_of(d).relative_to(tmp_path).as_posix() for d in TWINS]
    assert len({path.lower() for path in paths}) == len(TWINS)
    # No file's path is a folder of another's (category ``core.json`` and title ``core``).
    assert not any(other.startswith(f"{path}/") for path in paths for other in paths)
    assert [store.load(d) for d in TWINS] == [sample_state(d) for d in TWINS]
    assert store.load_all() == sorted((sample_state(d) for d in TWINS), key=lambda s: s.key)


def test_lower_case_names_keep_the_state_path_of_older_versions(tmp_path):
    """Ivy's lower-case names stay where they were; other names get a hash of the exact name."""
    store = LocalStore(tmp_path)
    for dashboard in [GRADIENTS, DashboardId(title="test_module_depth"), DashboardId(title="a b")]:
        assert store.path_of(dashboard) == tmp_path / "state" / relative_path(dashboard, ".json")
    assert store.path_of(CORE_GRAD) == tmp_path / "state/Core-70ea1983/Grad-d1c58652.json"


def test_an_old_layout_store_loads_and_moves_to_the_new_path_on_update(
    tmp_path, monkeypatch, capsys
):
    """A state at its old path is read, and an update saves it at the new path, losing no cell."""
    monkeypatch.chdir(tmp_path)
    store = LocalStore(Path(".ivy-matrix"))
    old = write_old_layout(store, sample_state(CORE_GRAD))
    assert old == Path(".ivy-matrix/state/Core/Grad.json")
    assert store.load(CORE_GRAD) == sample_state(CORE_GRAD)
    assert store.load_all() == [sample_state(CORE_GRAD)]
    (tmp_path / "r.xml").write_text(
        '<testsuite><testcase classname="x.test_Core.test_Grad" name="test_new"/></testsuite>',
        encoding="utf-8",
    )

    code = main(["update", "--junit", "r.xml", "--backend", "jax"], {})

    assert code == 0, capsys.readouterr().err
    assert not old.exists()
    assert not old.parent.exists()
    assert store.path_of(CORE_GRAD).is_file()
    assert [p.as_posix() for p in Path(".ivy-matrix/state").rglob("*.json")] == [
        ".ivy-matrix/state/Core-70ea1983/Grad-d1c58652.json"
    ]
    (state,) = store.load_all()
    rows = {row.name: row for row in state.rows}
    for row in sample_state(CORE_GRAD).rows:
        assert rows[row.name].cells == row.cells
    assert set(rows["test_new"].cells) == {"jax"}


def test_a_state_at_both_paths_loads_from_the_new_one(tmp_path):
    """After a save stopped between its two steps, the new file wins and the next save tidies."""
    store = LocalStore(tmp_path)
    stale = sample_state(CORE_GRAD)
    newer = DashboardState(id=CORE_GRAD, runs=(11,))
    old = write_old_layout(store, stale)
    write_atomic(store.path_of(CORE_GRAD), dump_state(newer))

    assert store.load(CORE_GRAD) == newer
    assert store.load_all() == [newer]

    store.save(newer)

    assert not old.exists()
    assert store.load_all() == [newer]


def test_deleting_a_dashboard_removes_its_state_at_both_paths(tmp_path):
    """delete (prune, retirement) leaves the state neither at the new nor at the old path."""
    store = LocalStore(tmp_path)
    old = write_old_layout(store, sample_state(CORE_GRAD))
    store.save(sample_state(CORE_GRAD))
    write_old_layout(store, sample_state(CORE_GRAD))

    store.delete(CORE_GRAD)

    assert not old.exists()
    assert not store.path_of(CORE_GRAD).exists()
    assert store.load(CORE_GRAD) is None
    assert store.load_all() == []


@pytest.mark.parametrize(
    ("path", "holds"),
    [
        ("state/Core/Grad.json", DashboardId(title="Random", category="Core")),
        ("state/Core-70ea1983/Grad-d1c58652.json", DashboardId(title="Random", category="Core")),
        ("state/core/grad.json", CORE_GRAD),
        ("state/Core/Grad-d1c58652.json", CORE_GRAD),
    ],
    ids=["old-path", "new-path", "a-twin's-path", "half-old"],
)
def test_a_state_only_loads_from_its_own_old_or_new_path(tmp_path, path, holds):
    """A file naming another dashboard than either of its path's owners is refused."""
    store = LocalStore(tmp_path)
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_text(dump_state(sample_state(holds)), encoding="utf-8")

    with pytest.raises(StoreError) as error:
        store.load_all()

    assert f"cannot read dashboard state {tmp_path / path}: it holds dashboard" in str(error.value)
    assert f"{holds.key!r}, whose state belongs in {store.path_of(holds)}" in str(error.value)


# --- concurrent writers ----------------------------------------------------------------------------

PROCESSES = 8
SHARED_TESTS = 50
UNIQUE_ROWS = 3
STATUSES = ("passed", "failed", "skipped")
OUTCOMES = {"passed": Outcome.SUCCESS, "failed": Outcome.FAILURE, "skipped": Outcome.SKIPPED}
_CHILD = {"passed": "", "failed": "<failure/>", "skipped": "<skipped/>"}


def leg_cases(leg: int) -> dict[tuple[DashboardId, str], str]:
    """What matrix leg ``leg`` reports: (dashboard, row) -> status."""
    shared = DashboardId(title="shared", category="core")
    cases = {(shared, f"test_{k:02d}"): STATUSES[(k + leg) % 3] for k in range(SHARED_TESTS)}
    for k in range(UNIQUE_ROWS):
        cases[shared, f"test_only_b{leg}_{k}"] = STATUSES[(k + leg + 1) % 3]
    cases[DashboardId(title=f"own_b{leg}", category="core"), "test_own"] = "failed"
    return cases


def write_leg(path: Path, leg: int) -> None:
    """Write leg ``leg``'s JUnit file."""
    body = "".join(
        f'<testcase classname="pkg.test_{d.category}.test_{d.title}" name="{row}">'
        f"{_CHILD[status]}</testcase>"
        for (d, row), status in leg_cases(leg).items()
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'<testsuite name="pytest">{body}</testsuite>', encoding="utf-8")


def run_race(work: Path, first_run: int) -> list[tuple[int, str]]:
    """Start every leg's update at once; return each one's exit code and output."""
    procs = []
    try:
        for leg in range(PROCESSES):
            write_leg(work / "results" / f"b{leg}.xml", leg)
        for leg in range(PROCESSES):
            argv = ["update", "--junit", f"results/b{leg}.xml", "--backend", f"b{leg}"]
            argv += ["--run-id", str(first_run + leg), "--job-id", str(5000 + leg)]
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(ENTRYPOINT), *argv, "--repository", "o/r"],
                    cwd=work,
                    env={"PYTHONUTF8": "1"},
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        return [(proc.wait(timeout=60), proc.communicate()[0]) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def test_eight_concurrent_updates_lose_nothing(tmp_path):
    """Eight update processes racing on one store each keep every cell they wrote."""
    for round_ in range(3):
        work = tmp_path / f"round{round_}"
        first_run = 1000 + 100 * round_

        results = run_race(work, first_run)

        assert [code for code, _ in results] == [0] * PROCESSES, results
        states = {s.id: s for s in LocalStore(work / ".ivy-matrix").load_all()}
        shared = states[DashboardId(title="shared", category="core")]
        assert len(shared.rows) == SHARED_TESTS + PROCESSES * UNIQUE_ROWS
        assert sorted(shared.backend_names) == [f"b{leg}" for leg in range(PROCESSES)]
        assert len(states) == 1 + PROCESSES
        found = {
            (dashboard, row.name, backend): (cell.latest.outcome, cell.latest.source.url)
            for dashboard, state in states.items()
            for row in state.rows
            for backend, cell in row.cells.items()
        }
        expected = {
            (dashboard, row, f"b{leg}"): (
                OUTCOMES[status],
                f"https://github.com/o/r/actions/runs/{first_run + leg}/job/{5000 + leg}",
            )
            for leg in range(PROCESSES)
            for (dashboard, row), status in leg_cases(leg).items()
        }
        assert found == expected
