"""Things that are gone leave the dashboards: store-wide retirement, and ``ivy-matrix prune``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ivy_matrix.cli import main
from ivy_matrix.errors import ExitCode
from ivy_matrix.model import DashboardId
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.statefile import join_columns, load_state
from ivy_matrix.stores.branch import BranchStore
from ivy_matrix.stores.commit import Writing
from ivy_matrix.stores.layout import BranchPlace
from ivy_matrix.stores.local import LocalStore
from ivy_matrix.stores.remote import RestRemote
from tests.commands.results import GRADIENTS, LAYERS, read_json, tree
from tests.conftest import fake_client
from tests.github.fake_server import FakeGitHub

pytestmark = pytest.mark.timeout(60)

CORE = DashboardId(title="gradients", category="core")
NN = DashboardId(title="layers", category="nn")
REPO = "acme/widgets"
STATE_DIR = ".ivy-matrix/state"

# What pytest writes when a test module cannot even be imported: one error, no classname
# (read as row "(module)" of the module's dashboard, results/junit.py).
COLLECTION_ERROR = (
    '<testsuites><testsuite name="pytest" errors="1"><testcase classname="" '
    f'name="{LAYERS}"><error message="collection failure">ImportError</error>'
    "</testcase></testsuite></testsuites>"
)


def write_cases(path: Path, classname: str, *names: str) -> Path:
    """A JUnit file of passing cases of one test class."""
    cases = "".join(f'<testcase classname="{classname}" name="{name}"/>' for name in names)
    path.write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>", encoding="utf-8")
    return path


@pytest.fixture(name="store")
def store_fixture(workdir) -> LocalStore:
    """A local store with two dashboards (core/gradients on torch and jax, nn/layers on torch)
    and their rendered files in ``out``."""
    write_cases(workdir / "g.xml", GRADIENTS, "test_a", "test_b")
    write_cases(workdir / "l.xml", LAYERS, "test_linear")
    base = ["update", "--run-id", "1", "--output-dir", "out"]
    assert main([*base, "--backend", "torch", "--junit", "g.xml", "--junit", "l.xml"], {}) == 0
    assert main([*base, "--backend", "jax", "--junit", "g.xml"], {}) == 0
    return LocalStore(workdir / ".ivy-matrix")


# --- retirement reaches every dashboard of the store ----------------------------------------


def test_a_collection_error_dashboard_retires_after_n_runs_of_the_store(workdir, capsys):
    """A module that failed to import, on a dashboard no later run reports, goes after N store
    runs: state, file, index."""
    (workdir / "ce.xml").write_text(COLLECTION_ERROR, encoding="utf-8")
    write_cases(workdir / "g.xml", GRADIENTS, "test_a")
    common = ["update", "--backend", "torch", "--output-dir", "out", "--retire-after-runs", "3"]
    summary = ["--summary-json", "s.json"]
    assert main([*common, "--run-id", "1", "--junit", "ce.xml", "--junit", "g.xml"], {}) == 0
    assert (workdir / "out" / "nn" / "layers.md").is_file()
    assert "[0/1](nn/layers.md)" in (workdir / "out" / "README.md").read_text(encoding="utf-8")
    store = LocalStore(workdir / ".ivy-matrix")
    for run in (2, 3):
        assert main([*common, "--run-id", str(run), "--junit", "g.xml", *summary], {}) == 0
        assert store.load(NN) is not None  # run 1 is still one of the last three
    capsys.readouterr()

    assert main([*common, "--run-id", "4", "--junit", "g.xml", *summary], {}) == 0

    out = capsys.readouterr().err
    assert store.load(NN) is None
    assert not (workdir / "out" / "nn" / "layers.md").exists()
    index = (workdir / "out" / "README.md").read_text(encoding="utf-8")
    assert "nn/layers" not in index
    assert "core/gradients.md" in index
    assert "dashboard nn/layers:" in out
    assert "removed" in out
    removed = read_json(workdir / "s.json")["removed_dashboards"]
    assert removed == {
        "nn/layers": {
            "file": "nn/layers.md",
            "changed_cells": 0,
            "new_rows": 0,
            "new_backends": 0,
            "retired_rows": ["(module)"],
            "retired_backends": ["torch"],
            "removed": True,
        }
    }
    assert "nn/layers" not in read_json(workdir / "s.json")["dashboards"]


def test_a_backend_dropped_from_the_matrix_loses_its_column(store, workdir):
    """When no run of the last N reported a backend, its column leaves every dashboard."""
    common = ["update", "--backend", "torch", "--output-dir", "out", "--retire-after-runs", "2"]
    for run in (2, 3):
        args = [*common, "--run-id", str(run), "--junit", "g.xml", "--junit", "l.xml"]
        assert main(args, {}) == 0
    state = store.load(CORE)
    assert state is not None
    assert state.backend_names == ("torch",)
    assert all(set(row.cells) == {"torch"} for row in state.rows)
    assert [row.name for row in state.rows] == ["test_a", "test_b"]
    assert "jax" not in (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")
    assert "jax" not in (workdir / "out" / "README.md").read_text(encoding="utf-8")


# --- prune, local store -----------------------------------------------------------------------


def test_prune_removes_a_dashboard_its_file_and_its_index_entry(store, workdir, capsys):
    """prune --dashboard deletes the dashboard's state and file and rewrites the index."""
    code = main(["prune", "--dashboard", "nn/layers", "--output-dir", "out"], {})
    assert code == 0
    assert store.load(NN) is None
    assert store.load(CORE) is not None
    assert not (workdir / "out" / "nn" / "layers.md").exists()
    index = (workdir / "out" / "README.md").read_text(encoding="utf-8")
    assert "nn/layers" not in index
    assert "core/gradients" in index
    assert "removed dashboard nn/layers: 1 row(s), 1 backend(s)" in capsys.readouterr().err


def test_prune_removes_a_backend_from_every_dashboard(store, workdir):
    """prune --backend alone removes that column everywhere and re-renders what changed."""
    assert main(["prune", "--backend", "jax", "--output-dir", "out"], {}) == 0
    state = store.load(CORE)
    assert state is not None
    assert state.backend_names == ("torch",)
    assert "jax" not in (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")


def test_prune_removes_a_backend_only_from_the_named_dashboard(store):
    """prune --backend with --dashboard leaves the other dashboards' columns alone."""
    assert main(["prune", "--backend", "torch", "--dashboard", "core/gradients"], {}) == 0
    core, layers = store.load(CORE), store.load(NN)
    assert core is not None
    assert layers is not None
    assert core.backend_names == ("jax",)
    assert layers.backend_names == ("torch",)


def test_prune_removes_a_row_and_a_dashboard_left_empty_goes_too(store, workdir, capsys):
    """prune --row removes the row; a dashboard with no row left is removed with its file."""
    args = ["prune", "--dashboard", "core/gradients", "--row", "test_a", "--output-dir", "out"]
    assert main(args, {}) == 0
    state = store.load(CORE)
    assert state is not None
    assert [row.name for row in state.rows] == ["test_b"]
    assert "test_a" not in (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")

    assert main(["prune", "--dashboard", "nn/layers", "--row", "test_linear"], {}) == 0
    assert store.load(NN) is None
    assert "nothing is left, so the dashboard goes too" in capsys.readouterr().err


@pytest.mark.usefixtures("store")
def test_prune_dry_run_says_what_would_go_and_writes_nothing(workdir, capsys):
    """--dry-run true lists the removals and the files, and changes no byte anywhere."""
    before = tree(workdir)
    args = [
        "prune",
        "--backend",
        "jax",
        "--dashboard",
        "nn/layers",
        "--dashboard",
        "core/gradients",
    ]
    assert main([*args, "--output-dir", "out", "--dry-run", "true"], {}) == 0
    out = capsys.readouterr().err
    assert tree(workdir) == before
    assert "would remove from dashboard core/gradients: backend(s) jax" in out
    assert "nn/layers" not in out.replace("--dashboard nn/layers", "")
    assert "would write out/core/gradients.md" in out

    assert main(["prune", "--dashboard", "core/gradients", "--dry-run", "true"], {}) == 0
    assert tree(workdir) == before
    assert (
        "would remove dashboard core/gradients: 2 row(s), 2 backend(s)" in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("args", "phrases"),
    [
        (["--dashboard", "core/gradient"], ["no dashboard 'core/gradient'", "core/gradients"]),
        (["--backend", "jaxx"], ["no backend 'jaxx'", "did you mean jax?", "jax, torch"]),
        (
            ["--dashboard", "nn/layers", "--backend", "jax"],
            ["no backend 'jax' in the store .ivy-matrix (nn/layers)", "it has: torch"],
        ),
        (["--dashboard", "core/gradients", "--row", "test_z"], ["no row 'test_z'", "test_a"]),
        (["--row", "test_a"], ["--row needs --dashboard"]),
        ([], ["nothing to remove"]),
    ],
)
def test_prune_of_something_that_does_not_exist_exits_3_naming_what_does(
    store, workdir, capsys, args, phrases
):
    """Unknown names exit 3 (an input), list what exists (nearest first), and change nothing."""
    before = tree(workdir)
    assert main(["prune", *args], {}) == ExitCode.INPUT
    out = capsys.readouterr().err
    for phrase in phrases:
        assert phrase in out
    assert tree(workdir) == before
    assert store.load(CORE) is not None


def test_prune_of_a_store_that_does_not_exist_exits_4_and_creates_nothing(workdir, capsys):
    """A mistyped --store is an error, and no folder or lock is created for it."""
    assert main(["prune", "--store", "TYPO", "--dashboard", "core/gradients"], {}) == ExitCode.STORE
    assert "no store there" in capsys.readouterr().err
    assert not (workdir / "TYPO").exists()


# --- the branch -------------------------------------------------------------------------------


def branch_env(fake: FakeGitHub, run: int) -> dict[str, str]:
    """A runner-like environment whose targets are the branch of the fake's repository."""
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_RUN_ID": str(run),
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": fake.base_url,
        "IVY_MATRIX_TOKEN": "fake-token",
        "IVY_MATRIX_TARGETS": "branch",
    }


def branch_states(fake: FakeGitHub) -> dict[str, Any]:
    """The dashboards' states on the branch, by key."""
    columns: dict[str, list[Any]] = {}
    for path, data in fake.files("ivy-matrix").items():
        if path.startswith(STATE_DIR + "/") and path.endswith(".json"):
            state = load_state(data.decode(), where=path)
            columns.setdefault(state.key, []).append(state)
    return {key: join_columns(parts) for key, parts in columns.items()}


@pytest.fixture(name="seeded")
def seeded_fixture(fake: FakeGitHub, store: LocalStore) -> FakeGitHub:
    """The branch holding the local store's dashboards (written directly, without throttling):
    core/gradients (torch, jax) and nn/layers (torch) from run 1."""
    states = {state.id: state for state in store.load_all()}
    client = fake_client(fake)
    try:
        BranchStore(
            RestRemote(client, REPO),
            BranchPlace(repo=REPO, branch="ivy-matrix"),
            writing=Writing(message="seed"),
        ).update(lambda _: Merged(states=states, changed=tuple(s.key for s in states.values())))
    finally:
        client.close()
    return fake


def test_prune_on_the_branch_is_one_commit_of_state_markdown_and_index(seeded, capsys):
    """prune --targets branch removes state, markdown and index entry in one commit."""
    fake = seeded
    env = branch_env(fake, 1)
    commits = len(fake.requests_to("POST", r"/git/commits"))
    before = fake.files("ivy-matrix")

    assert main(["prune", "--dashboard", "nn/layers", "--dry-run", "true"], env) == 0
    assert fake.files("ivy-matrix") == before
    dry = capsys.readouterr().err
    assert "would remove dashboard nn/layers" in dry
    assert f"{STATE_DIR}/nn/layers.json" in dry
    assert "nn/layers.md" in dry

    assert main(["prune", "--dashboard", "nn/layers", "--backend", "jax"], env) == ExitCode.INPUT
    assert "no backend 'jax'" in capsys.readouterr().err
    assert main(["prune", "--dashboard", "nn/layers"], env) == 0
    files = fake.files("ivy-matrix")
    assert f"{STATE_DIR}/nn/layers.json" not in files
    assert "nn/layers.md" not in files
    assert b"nn/layers" not in files["README.md"]
    assert set(branch_states(fake)) == {"core/gradients"}

    assert main(["prune", "--backend", "jax"], env) == 0
    files = fake.files("ivy-matrix")
    assert b"jax" not in files["core/gradients.md"]
    # The index's table; the trend below it keeps the runs that had jax (prune leaves the
    # past alone).
    assert b"jax" not in files["README.md"].partition(b"## Trend")[0]
    assert branch_states(fake)["core/gradients"].backend_names == ("torch",)
    assert f"{STATE_DIR}/core/gradients.json" in files
    assert len(fake.requests_to("POST", r"/git/commits")) == commits + 2


def test_an_idle_dashboard_on_the_branch_retires_with_its_files(seeded):
    """A dashboard no leg reports any more leaves the branch after N runs of the store."""
    fake = seeded
    for run in (2, 3):
        env = branch_env(fake, run)
        args = ["update", "--backend", "torch", "--junit", "g.xml", "--retire-after-runs", "2"]
        assert main(args, env) == 0
    files = fake.files("ivy-matrix")
    assert f"{STATE_DIR}/nn/layers.json" not in files
    assert "nn/layers.md" not in files
    assert b"nn/layers" not in files["README.md"]
    assert branch_states(fake)["core/gradients"].backend_names == ("torch",)


def test_did_you_mean_shows_bidi_controls_as_escapes(workdir, capsys):
    """Names offered by prune's "did you mean" (and listed with it) never carry a raw bidi
    control into the log: a right-to-left override shows as its escape."""
    hostile = "test_\u202eyp.lave"
    write_cases(workdir / "g.xml", GRADIENTS, hostile, "test_b")
    assert main(["update", "--run-id", "1", "--backend", "torch", "--junit", "g.xml"], {}) == 0
    capsys.readouterr()

    env = {"GITHUB_ACTIONS": "true"}
    argv = ["prune", "--dashboard", "core/gradients", "--row", "test_\u202eyp.lavf"]
    assert main(argv, env) == ExitCode.INPUT

    out = capsys.readouterr().err
    assert "did you mean test_\\u202eyp.lave, test_b?" in out
    assert "\u202e" not in out
