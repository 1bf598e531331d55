"""End to end: render writes every stored dashboard and the index into the output folder."""

from __future__ import annotations

import pytest

from ivy_matrix.cli import main
from ivy_matrix.errors import ExitCode
from tests.commands.results import error_lines, tree, write_junit


@pytest.mark.usefixtures("workdir")
def test_render_without_an_output_dir_exits_2(capsys):
    """render needs --output-dir and says so."""
    assert main(["render"], {"GITHUB_ACTIONS": "true"}) == ExitCode.USAGE

    (line,) = error_lines(capsys.readouterr().err)
    assert "render needs --output-dir" in line


def test_render_refuses_a_store_that_does_not_exist(workdir, capsys):
    """render --store TYPO exits 4 naming the folder and leaves the existing index alone."""
    write_junit(workdir / "a.xml", [("test_grad", "passed")])
    argv = ["update", "--junit", "a.xml", "--backend", "torch", "--output-dir", "out"]
    assert main(argv, {"GITHUB_REPOSITORY": "o/r"}) == 0
    before = tree(workdir / "out")
    capsys.readouterr()

    code = main(["render", "--store", "TYPO", "--output-dir", "out"], {"GITHUB_ACTIONS": "true"})

    (line,) = error_lines(capsys.readouterr().err)
    assert code == ExitCode.STORE
    assert "the store TYPO does not exist" in line
    assert tree(workdir / "out") == before
    assert not (workdir / "TYPO").exists()
