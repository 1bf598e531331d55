"""End to end: update with hostile input: names holding workflow commands, unreadable encodings,
symlink loops and huge names."""

from __future__ import annotations

import os

import pytest

from ivy_matrix.cli import main
from ivy_matrix.model import Outcome
from tests.commands.results import (
    GRADIENTS,
    case_xml,
    latest,
    load,
    read_json,
    update_argv,
    write_junit,
)

_HOSTILE = [
    "\n::error title=X::pwned",
    "%0A::add-mask::secret",
    "\r::stop-commands::tok",
    "\n  ::warning::indented",
    "x ##[error]old-style",
    "\u2028::error::separator",
]
_OWN_COMMANDS = {"warning", "error", "notice", "group", "endgroup"}


def command_lines(out: str) -> list[str]:
    """Every line of a captured log that the runner would run as a workflow command.

    The runner splits at CR and LF, runs ``::name ...::`` after leading blanks, and the old
    ``##[name]`` anywhere in a line.
    """
    lines = [line for chunk in out.split("\n") for line in chunk.split("\r")]
    return [line for line in lines if line.lstrip().startswith("::") or "##[" in line]


def test_hostile_names_and_file_names_write_no_workflow_command(workdir, capsys):
    """Test names, classnames and file names holding workflow commands are printed neutralised."""
    results = workdir / "results"
    for index, payload in enumerate(_HOSTILE):
        cases = [(f"test_{index}{payload}", "failed"), (f"test_ok{payload}", "passed")]
        write_junit(results / f"r{index}{payload}.xml", cases, classname=f"mod{payload}")
    (results / f"broken{_HOSTILE[0]}.xml").write_text("<testsuite><testcase", encoding="utf-8")
    code = main(
        ["update", "--junit", "results/**/*.xml", "--backend", "torch"],
        {"GITHUB_ACTIONS": "true"},
    )
    out, err = capsys.readouterr()
    assert code == 0, out + err
    commands = command_lines(out + "\n" + err)
    for line in commands:
        name = line.lstrip()[2:].split("::", 1)[0].split(" ", 1)[0]
        assert name in _OWN_COMMANDS, line
        assert "##[" not in line, line
        # Only the failed tests' annotations are errors, and they are ours (file= first).
        assert not line.lstrip().startswith("::error::"), line
    # The names are still there, escaped: one annotation per failed test, the bad file named.
    annotations = [
        line for line in commands if line.startswith(("::warning file=", "::error file="))
    ]
    failed = [a for a in annotations if a.startswith("::error file=") and "failed on torch" in a]
    assert len(failed) == len(_HOSTILE)
    assert any("broken%0A%3A%3Aerror title=X%3A%3Apwned.xml" in a for a in annotations)
    assert "mod%0A::error title=X::pwned" not in err
    assert "\\n::error title=X::pwned" in err


@pytest.mark.parametrize("github_actions", ["true", "false"])
def test_no_plain_log_line_can_start_a_command(workdir, capsys, github_actions):
    """A plain line that would start with ``::`` (a file name here) gets a backslash in front;
    an invisible character that hid the ``::`` (a byte order mark) shows as its escape."""
    write_junit(workdir / "::error::x.xml", [("test_x", "passed")])
    write_junit(workdir / " \ufeff::add-mask::y.xml", [("test_y", "passed")])
    code = main(
        ["update", "--junit", "*.xml", "--backend", "torch"], {"GITHUB_ACTIONS": github_actions}
    )
    out = capsys.readouterr().err
    assert code == 0, out
    commands = command_lines(out)
    assert [line for line in commands if "::error::x" in line or "add-mask" in line] == []
    assert "\\::error::x.xml: 1 tests" in out
    assert " \\ufeff::add-mask::y.xml: 1 tests" in out


@pytest.mark.parametrize(
    ("data", "phrase"),
    [
        (
            b'<?xml version="1.0" encoding="rot13"?>\n<testsuite/>',
            "declares encoding 'rot13', which is not a text encoding",
        ),
        (
            b'<?xml version="1.0" encoding="no-such-codec"?>\n<testsuite/>',
            "declares encoding 'no-such-codec', which is not an encoding Python knows",
        ),
        (
            b'<?xml version="1.0" encoding="shift_jis"?>\n<testsuite name="\x81\x20"/>',
            "does not decode as shift_jis at byte 60",
        ),
    ],
)
def test_a_file_in_an_unreadable_encoding_is_a_warning_and_the_rest_is_saved(
    workdir, capsys, data, phrase
):
    """One file with a bad encoding is named in a warning; the other files' cells are saved."""
    results = workdir / "results"
    results.mkdir()
    (results / "bad.xml").write_bytes(data)
    write_junit(results / "good.xml", [("test_a", "passed")])
    japanese = case_xml("test_日本", "failed")
    (results / "sjis.xml").write_bytes(
        f'<?xml version="1.0" encoding="shift_jis"?>\n<testsuite>{japanese}</testsuite>'.encode(
            "shift_jis"
        )
    )

    code = main(update_argv(), {})

    out = capsys.readouterr().err
    assert code == 0
    (line,) = [line for line in out.splitlines() if "results/bad.xml" in line]
    assert line.startswith("warning: results/bad.xml")
    assert phrase in line
    state = load()
    assert latest(state, "test_a", "torch").outcome is Outcome.SUCCESS
    assert latest(state, "test_日本", "torch").outcome is Outcome.FAILURE
    assert read_json(workdir / "summary.json")["totals"]["problems"] == 1


@pytest.mark.timeout(20)
def test_a_symlink_loop_in_the_results_counts_each_file_once(workdir, capsys):
    """A link back to the results folder neither hangs the update nor counts a file twice."""
    results = workdir / "results"
    write_junit(results / "torch" / "r.xml", [("test_a", "failed")])
    (results / "torch" / "again").symlink_to("..", target_is_directory=True)

    code = main(update_argv(), {})

    assert code == 0, capsys.readouterr().err
    assert read_json(workdir / "summary.json")["totals"]["tests"] == 1
    assert latest(load(), "test_a", "torch").outcome is Outcome.FAILURE


def test_huge_names_are_capped_in_the_store_and_the_dashboards(workdir, capsys):
    """A 200,000-character name and classname are stored shortened, with a hash, and rendered."""
    long_name = "test_" + "n" * 200_000
    long_class = "ivy_tests.test_core.test_" + "m" * 200_000
    results = workdir / "results"
    write_junit(results / "long.xml", [(long_name, "failed"), ("test_b", "passed")], long_class)
    write_junit(results / "good.xml", [("test_a", "passed")])

    code = main(update_argv("--output-dir", "out"), {})

    assert code == 0, capsys.readouterr().err
    stored = list((workdir / ".ivy-matrix").rglob("*.json"))
    assert stored
    assert all(path.stat().st_size < 20_000 for path in stored)
    rendered = list((workdir / "out").rglob("*.md"))
    assert all(path.stat().st_size < 20_000 for path in rendered)
    assert all(len(path.name) < 255 for path in [*stored, *rendered])
    assert latest(load(), "test_a", "torch").outcome is Outcome.SUCCESS
    assert "test_b" in "".join(path.read_text(encoding="utf-8") for path in rendered)


def test_backends_taken_from_huge_names_are_capped(workdir, capsys):
    """A backend that a regex takes from a long test id (classname::name) is shortened too."""
    results = workdir / "results"
    write_junit(results / "r.xml", [("test_a[" + "b" * 5000 + "]", "passed")])
    argv = update_argv(backend=("--backend-from-test", r"(?P<backend>.+)"))

    code = main(argv, {})

    assert code == 0, capsys.readouterr().err
    (row,) = load().rows
    (backend,) = row.cells
    assert row.name == "test_a"
    assert len(backend) == 1000
    assert backend.startswith(f"{GRADIENTS}::test_a[bbbb")


@pytest.mark.timeout(60)  # opening a FIFO for reading would wait for a writer for ever
def test_a_fifo_or_a_folder_named_like_a_result_file_is_a_warning_and_the_rest_is_saved(
    workdir, capsys
):
    """Only regular files are read: a named pipe or a folder that a result folder's ``*.xml``
    selects is a warning naming it, never a wait."""
    results = workdir / "results"
    write_junit(results / "good.xml", [("test_a", "passed")])
    os.mkfifo(results / "pipe.xml")
    (results / "folder.xml").mkdir()
    (results / "folder.xml" / "inner.xml").write_text("<testsuite/>", encoding="utf-8")

    assert main(update_argv(), {}) == 0

    out = capsys.readouterr().err
    (pipe,) = [line for line in out.splitlines() if "results/pipe.xml" in line]
    assert pipe.startswith("warning: results/pipe.xml")
    assert "not a regular file: it is a FIFO (a named pipe)" in pipe
    assert latest(load(), "test_a", "torch").outcome is Outcome.SUCCESS
