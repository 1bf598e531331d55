"""A re-run that finds nothing new does almost nothing: result files the store recorded for
this run and backend (same size and SHA-256) are not read again, and anything else is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.commands import recorded
from ivy_matrix.commands import update as update_command
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


def test_a_hand_edited_state_is_noticed_and_the_files_read_again(workdir, capsys):
    """A state changed by anything but ivy-matrix proves nothing: the re-run reads its files
    again, their results land again, and the folder equals a fresh render."""
    results(jax="failed")
    assert update("--run-id", "5") == 0
    state = next(Path(".ivy-matrix/state").rglob("*.json"))
    state.write_text(
        state.read_text(encoding="utf-8").replace('"failure"', '"success"'), encoding="utf-8"
    )
    capsys.readouterr()

    assert update("--run-id", "5") == 0

    assert NOT_READ not in capsys.readouterr().err
    assert latest(load(), "test_grad", "jax").outcome is Outcome.FAILURE
    assert main(["render", "--output-dir", "rendered"], {}) == 0
    assert tree(workdir / "out") == tree(workdir / "rendered")


@pytest.mark.usefixtures("workdir")
def test_a_restored_backup_has_the_files_read_again(capsys):
    """Run 5, a backup of the store, run 6, the backup restored under run 6's ledger (as
    `cp -a` restores it: sizes and times kept), then run 6 again: its files are read again
    and every cell shows run 6, never run 5 behind a ledger that says run 6 is stored."""
    results(torch="passed", jax="failed")
    assert update("--run-id", "5") == 0
    backup = tree(Path(".ivy-matrix"))
    stats = {p: (p.stat().st_atime_ns, p.stat().st_mtime_ns) for p in _data_files()}
    results(torch="failed", jax="passed")
    assert update("--run-id", "6") == 0
    for name, data in backup.items():
        if name != "ledger.json":
            Path(".ivy-matrix", name).write_bytes(data)
    for path, times in stats.items():
        os.utime(path, ns=times)
    assert latest(load(), "test_grad", "torch").source.run.run_id == 5
    capsys.readouterr()

    assert update("--run-id", "6") == 0

    log = capsys.readouterr().err
    assert NOT_READ not in log
    assert "4 cell(s) changed" in log  # each cell back at run 6
    for backend, outcome in (("torch", Outcome.FAILURE), ("jax", Outcome.SUCCESS)):
        entry = latest(load(), "test_grad", backend)
        assert (entry.outcome, entry.source.run.run_id) == (outcome, 6)


@pytest.mark.usefixtures("workdir")
def test_a_deleted_state_comes_back_when_its_results_are_given_again(capsys):
    """A corrupt state deleted, as the error invites: the same update again reads its files
    and the dashboard is back, with its results."""
    results()
    assert update("--run-id", "5") == 0
    (state,) = _data_files(trend=False)
    state.write_text("not a state", encoding="utf-8")
    assert update("--run-id", "5") != 0
    assert "cannot read dashboard state" in capsys.readouterr().err
    state.unlink()

    assert update("--run-id", "5") == 0

    assert NOT_READ not in capsys.readouterr().err
    assert latest(load(), "test_grad", "jax").outcome is Outcome.FAILURE
    assert "failure-red" in Path("out/core/gradients.md").read_text(encoding="utf-8")


@pytest.mark.usefixtures("workdir")
def test_a_store_changed_while_the_files_are_read_has_them_read_again(monkeypatch, capsys):
    """The files skipped on the ledger's word are checked again under the store's lock: a
    state deleted between the read and the lock has the update read every file again."""
    results()
    assert update("--run-id", "5") == 0
    (state,) = _data_files(trend=False)
    real = recorded.known_files

    def known_then_deleted(settings, reading):
        found = real(settings, reading)
        state.unlink(missing_ok=True)  # another process, between the read and the lock
        return found

    monkeypatch.setattr(update_command, "known_files", known_then_deleted)
    capsys.readouterr()

    assert update("--run-id", "5") == 0

    log = capsys.readouterr().err
    assert f"4 result file(s) {NOT_READ}" in log  # the first read trusted the ledger
    assert "reading every result file again" in log
    assert latest(load(), "test_grad", "jax").outcome is Outcome.FAILURE


def _data_files(*, trend: bool = True) -> list[Path]:
    """The store's data files: its states, and its trend."""
    found = sorted(Path(".ivy-matrix/state").rglob("*.json"))
    return [*found, Path(".ivy-matrix/trend.json")] if trend else found


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
