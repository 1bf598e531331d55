"""A re-run that finds nothing new does almost nothing: result files the store recorded for
this run and backend (same size and SHA-256) are not read again, and anything else is."""

from __future__ import annotations

from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.model import Outcome
from tests.commands.results import latest, load, tree, write_junit

pytestmark = pytest.mark.timeout(60)

ENV = {"GITHUB_REPOSITORY": "o/r", "IVY_MATRIX_JOB_ID": "3"}
NOT_READ = "already in the store for this run (same size and SHA-256): not read again"


def update(*argv: str) -> int:
    """``ivy-matrix update`` of the torch and jax folders with their path's backend."""
    return main(
        [
            "update",
            "--junit",
            "results/**/*.xml",
            "--backend-from-path",
            r"results/(?P<backend>[^/]+)/",
            "--output-dir",
            "out",
            *argv,
        ],
        ENV,
    )


def results(torch: str = "passed", jax: str = "failed") -> None:
    """Two backends, two files each: test_grad's outcome per backend, test_jac passing."""
    for backend, status in (("torch", torch), ("jax", jax)):
        write_junit(Path("results", backend, "a.xml"), [("test_grad", status)])
        write_junit(Path("results", backend, "b.xml"), [("test_jac", "passed")])


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the store and of the output folder, with its bytes."""
    return {**tree(root / ".ivy-matrix"), **{f"out/{k}": v for k, v in tree(root / "out").items()}}


def test_an_identical_rerun_reads_no_file_and_writes_nothing(workdir, capsys):
    """The same files for the same run again: none is read, no file changes, the log says so."""
    results()
    assert update("--run-id", "5") == 0
    before = snapshot(workdir)
    capsys.readouterr()

    assert update("--run-id", "5") == 0

    log = capsys.readouterr().err
    assert f"4 result file(s) {NOT_READ}" in log
    assert "4 file(s), 4 test cases (1 failed, 0 errors, 0 skipped)" in log
    assert "0 cell(s) changed; 0 file(s) written" in log
    assert snapshot(workdir) == before


@pytest.mark.usefixtures("workdir")
def test_a_changed_file_of_the_same_size_is_read_again(capsys):
    """A file whose bytes changed but not its size is read, and its new result lands."""
    results(jax="failed")
    assert update("--run-id", "5") == 0
    path = Path("results/jax/a.xml")
    text = path.read_text(encoding="utf-8")
    # The same size: another message of the same length on the failure.
    path.write_text(text.replace("assert 1 == 2", "assert 3 == 4"), encoding="utf-8")
    assert path.stat().st_size == len(text.encode())
    capsys.readouterr()

    assert update("--run-id", "5") == 0

    log = capsys.readouterr().err
    # jax's two files are read again; torch's are not.
    assert f"2 result file(s) {NOT_READ}" in log
    assert "results/jax/a.xml: 1 tests, 1 failed, 0 errors, 0 skipped\n" in log
    assert "results/torch/a.xml: 1 tests, 0 failed, 0 errors, 0 skipped (in the store" in log


@pytest.mark.usefixtures("workdir")
def test_a_changed_result_reaches_its_cell():
    """A file recorded before, changed, is read: the cell shows what it says now."""
    results(torch="passed")
    assert update("--run-id", "5") == 0
    results(torch="failed")

    assert update("--run-id", "6") == 0

    assert latest(load(), "test_grad", "torch").outcome is Outcome.FAILURE


@pytest.mark.usefixtures("workdir")
def test_files_recorded_for_another_run_are_read_again(capsys):
    """The same bytes under another run id are that run's results: every file is read."""
    results()
    assert update("--run-id", "5") == 0
    capsys.readouterr()

    assert update("--run-id", "6") == 0

    log = capsys.readouterr().err
    assert NOT_READ not in log
    assert latest(load(), "test_grad", "jax").source.run.run_id == 6


@pytest.mark.usefixtures("workdir")
def test_files_recorded_for_another_backend_are_read_again(capsys):
    """The same path and bytes read as another backend's are read again, into that backend."""
    write_junit(Path("results/x.xml"), [("test_grad", "passed")])
    argv = ["update", "--junit", "results/x.xml", "--run-id", "5"]
    assert main([*argv, "--backend", "torch"], ENV) == 0
    capsys.readouterr()

    assert main([*argv, "--backend", "jax"], ENV) == 0

    log = capsys.readouterr().err
    assert NOT_READ not in log
    assert sorted(load().backend_names) == ["jax", "torch"]


@pytest.mark.usefixtures("workdir")
def test_a_backend_with_one_new_file_has_all_its_files_read(capsys):
    """A new file of one backend gets that backend's every file read (its cells combine as one
    read of them all combines them); the other backend is not read again."""
    results()
    assert update("--run-id", "5") == 0
    write_junit(Path("results/jax/c.xml"), [("test_grad", "passed")])
    capsys.readouterr()

    assert update("--run-id", "5") == 0

    log = capsys.readouterr().err
    assert f"2 result file(s) {NOT_READ}" in log
    assert "results/jax/a.xml: 1 tests, 1 failed, 0 errors, 0 skipped\n" in log
    assert "results/jax/c.xml: 1 tests, 0 failed, 0 errors, 0 skipped\n" in log


@pytest.mark.usefixtures("workdir")
def test_without_a_run_id_every_update_reads_its_files(capsys):
    """Local runs number themselves: the same files are the next run's results, and are read."""
    results()
    assert main(["update", "--junit", "results/torch/*.xml", "--backend", "torch"], {}) == 0
    capsys.readouterr()

    assert main(["update", "--junit", "results/torch/*.xml", "--backend", "torch"], {}) == 0

    assert NOT_READ not in capsys.readouterr().err
    assert load().runs == (2, 1)


@pytest.mark.usefixtures("workdir")
def test_a_deleted_page_is_written_again_by_a_rerun(capsys):
    """The folder no longer shows the store: the re-run reads no file but renders the page."""
    results()
    assert update("--run-id", "5") == 0
    page = Path("out/core/gradients.md")
    text = page.read_bytes()
    page.unlink()
    capsys.readouterr()

    assert update("--run-id", "5") == 0

    log = capsys.readouterr().err
    assert f"4 result file(s) {NOT_READ}" in log
    assert page.read_bytes() == text


def test_a_hand_edited_state_is_noticed_and_the_folder_rendered_from_it(workdir):
    """A state changed by anything but ivy-matrix is read: the pages show it after a re-run."""
    results(jax="failed")
    assert update("--run-id", "5") == 0
    state = next(Path(".ivy-matrix/state").rglob("*.json"))
    state.write_text(
        state.read_text(encoding="utf-8").replace('"failure"', '"success"'), encoding="utf-8"
    )

    assert update("--run-id", "5") == 0

    assert main(["render", "--output-dir", "rendered"], {}) == 0
    assert tree(workdir / "out") == tree(workdir / "rendered")
    assert "failure-red" not in Path("out/core/gradients.md").read_text(encoding="utf-8")


@pytest.mark.usefixtures("workdir")
def test_a_summary_json_rerun_still_reports_every_dashboard():
    """With --summary-json the re-run reads the states it reports, and says each is unchanged."""
    results()
    assert update("--run-id", "5", "--summary-json", "first.json") == 0

    assert update("--run-id", "5", "--summary-json", "again.json") == 0

    first = Path("first.json").read_text(encoding="utf-8")
    again = Path("again.json").read_text(encoding="utf-8")
    assert '"changed_cells": 0' in again
    assert again.count('"updated": true') == first.count('"updated": true') == 1


@pytest.mark.usefixtures("workdir")
def test_render_check_says_whether_the_folder_is_a_fresh_render(capsys):
    """render --check writes nothing: exit 0 when the folder equals a fresh render, else 1
    with each file that differs named."""
    results()
    assert update("--run-id", "5") == 0
    capsys.readouterr()
    assert main(["render", "--output-dir", "out", "--check"], {}) == 0
    index = Path("out/README.md")
    index.write_text("edited\n", encoding="utf-8")

    assert main(["render", "--output-dir", "out", "--check"], {}) == 1

    assert "README.md differs from a fresh render of the store" in capsys.readouterr().err
    assert index.read_text(encoding="utf-8") == "edited\n"
