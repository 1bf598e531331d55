"""Expectation lists: read and rewritten with every unchanged line kept byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from ivy_matrix.expect.lists import ExpectationList, Line, Selector, split_lines
from ivy_matrix.model import DashboardId

DATA = Path(__file__).resolve().parents[1] / "data" / "expectations"
# Real lists, as their projects keep them (licences beside them): array-api-compat's numpy
# list (comments, blank lines, a blank last line), Keras's OpenVINO list now (no final
# newline) and at its peak (711 entries, each line ending "\r\r\n").
REAL = sorted(DATA.glob("*.txt"))


def test_the_real_lists_are_there():
    assert len(REAL) == 3


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_a_real_list_round_trips_byte_for_byte(path):
    raw = path.read_bytes()
    listed = ExpectationList.parse(raw.decode("utf-8"))
    assert listed.text().encode("utf-8") == raw
    assert listed.entries


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_removing_an_entry_from_a_real_list_changes_only_its_line(path):
    raw = path.read_bytes().decode("utf-8")
    listed = ExpectationList.parse(raw)
    gone = listed.entries[1]
    after = listed.without([gone]).text()
    before_lines = raw.splitlines(keepends=True)
    after_lines = after.splitlines(keepends=True)
    assert len(before_lines) - len(after_lines) == 1
    assert gone not in ExpectationList.parse(after).entries
    dropped = [line for line in before_lines if line not in after_lines]
    assert [line.strip() for line in dropped] == [gone]


def test_the_real_lists_entries_are_read_as_their_projects_read_them():
    numpy = ExpectationList.parse((DATA / "array-api-compat-numpy-xfails.txt").read_text())
    assert numpy.entries[0] == "array_api_tests/test_data_type_functions.py::test_finfo[float32]"
    assert not any(e.startswith("#") for e in numpy.entries)
    peak = (DATA / "keras-openvino-excluded_concrete_tests-peak.txt").read_bytes().decode()
    keras = ExpectationList.parse(peak)
    # Universal newlines, as Keras's conftest reads it: "\r\r\n" is an entry then a blank line.
    assert len(keras.entries) == 711
    assert keras.entries[0] == "AdadeltaTest::test_correctness_with_golden"


def test_line_endings_are_kept_per_line():
    text = "a\r\nb\nc\r# note\r\n\r\nd"
    lines = split_lines(text)
    assert lines == (
        Line("a", "\r\n"),
        Line("b", "\n"),
        Line("c", "\r"),
        Line("# note", "\r\n"),
        Line("", "\r\n"),
        Line("d", ""),
    )
    assert ExpectationList.parse(text).text() == text
    assert ExpectationList.parse(text).entries == ("a", "b", "c", "d")


def test_an_addition_uses_the_files_line_ending_and_ends_the_last_line():
    listed = ExpectationList.parse("# xfails\r\nA::test_a\r\nB::test_b")
    assert listed.plus(["C::test_c", "A::test_a"]).text() == (
        "# xfails\r\nA::test_a\r\nB::test_b\r\nC::test_c\r\n"
    )
    assert listed.plus(["A::test_a"]) is listed
    assert ExpectationList.parse("").plus(["x"]).text() == "x\n"


def test_an_inline_comment_is_not_part_of_the_entry():
    listed = ExpectationList.parse("A::test_a  # flaky upstream\nB::test_#1\n")
    assert listed.entries == ("A::test_a", "B::test_#1")
    assert listed.without(["A::test_a"]).text() == "B::test_#1\n"


def test_a_node_id_selects_its_row_in_the_module_dashboard_only():
    node = Selector.of("array_api_tests/test_data_type_functions.py::test_finfo[float32]")
    module = DashboardId(title="data_type_functions", category="array_api")
    assert node.selects(module, "test_finfo")
    assert not node.selects(module, "test_finfo_dtype")
    assert not node.selects(DashboardId(title="other"), "test_finfo")
    klass = Selector.of("tests/test_x.py::TestC")
    assert klass.selects(DashboardId(title="x"), "TestC.test_m")
    assert not klass.selects(DashboardId(title="x"), "TestCD.test_m")


def test_an_entry_without_a_file_selects_by_substring_as_keras_does():
    entry = Selector.of("LinalgOpsCorrectnessTest::test_eig")
    anywhere = DashboardId(title="linalg", category="ops")
    assert entry.selects(anywhere, "LinalgOpsCorrectnessTest.test_eig")
    assert entry.selects(anywhere, "LinalgOpsCorrectnessTest.test_eigh")  # as Keras's conftest
    assert not entry.selects(anywhere, "MathOpsTest.test_eig")
    assert Selector.of("NNOpsDtypeTest").selects(anywhere, "NNOpsDtypeTest.test_ctc_decode")
