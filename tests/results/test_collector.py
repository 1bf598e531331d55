"""Tests for results/collector.py: cases gathered into cells, with their counts and first failure line."""

from __future__ import annotations

import io
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ivy_matrix.model import CaseCounts, DashboardId, Outcome, RunKey, Source
from ivy_matrix.redaction import Redactor
from ivy_matrix.results.cells import CellResult
from ivy_matrix.results.collector import Collector
from ivy_matrix.results.naming import Namer, NamingRules
from ivy_matrix.results.signature import Signer
from ivy_matrix.state.entries import build_batches

DASH = DashboardId(title="d")
SOURCE = Source(run=RunKey(1, 1, 1), url="https://github.com/o/r/actions/runs/1/job/1")


def junit(*cases: str) -> io.BytesIO:
    return io.BytesIO(f"<testsuite>{''.join(cases)}</testsuite>".encode())


def case(name: str, body: str = "") -> str:
    return f'<testcase classname="c" name="{name}">{body}</testcase>'


FAIL = '<failure message="AssertionError: {0} != 4">tb</failure>'


def collect(*files: io.BytesIO, backend: str = "torch") -> Collector:
    collector = Collector(Namer(NamingRules(backend=backend, dashboard=DASH)))
    for index, stream in enumerate(files):
        collector.add_file(stream, source=f"f{index}.xml")
    return collector


def test_parametrizations_collapse_into_one_cell_whose_counts_survive():
    """Six cases of one test are one failing cell that says 2 of 6 failed, 1 skipped, 1 flaky."""
    collector = collect(
        junit(
            case("test_add[a]"),
            case("test_add[b]", FAIL.format(1)),
            case("test_add[c]"),
            case("test_add[d]", '<skipped message="no"/>'),
            case("test_add[e]", FAIL.format(2)),
            case("test_add[f]", '<flakyFailure message="once"/>'),
        )
    )
    collected = collector.collected
    assert list(collected.dashboards[DASH]) == ["test_add"]
    assert collected.dashboards[DASH]["test_add"]["torch"] == CellResult(
        Outcome.FAILURE,
        CaseCounts(passed=2, failed=2, skipped=1, flaky=1),
        "AssertionError: 1 != 4",
    )


def test_a_failing_cell_keeps_where_its_first_failing_case_is_in_either_loop():
    """The file and line of a cell's first failing case (for its annotation), read by the
    usual file's loop and by the per-case loop alike; none without a file."""
    text = (
        '<testcase classname="c" name="test_a[1]" file="t.py" line="7"/>'
        f'<testcase classname="c" name="test_a[2]" file="t.py" line="9">{FAIL.format(1)}</testcase>'
        f'<testcase classname="c" name="test_a[3]" file="t.py" line="11">{FAIL.format(2)}</testcase>'
        f'<testcase classname="c" name="test_b" line="12">{FAIL.format(3)}</testcase>'
        f'<testcase classname="c" name="test_c" file="u.py" line="x">{FAIL.format(4)}</testcase>'
    )
    for rules in (
        NamingRules(backend="torch", dashboard=DASH),
        NamingRules(backend_from_test=re.compile(r"(?P<backend>test)_"), dashboard=DASH),
    ):
        collector = Collector(Namer(rules))
        collector.add_file(junit(text), source="torch/f.xml")
        cells = collector.collected.dashboards[DASH]
        assert {row: c.where for row, by in cells.items() for c in by.values()} == {
            "test_a": ("t.py", 9),
            "test_b": None,
            "test_c": ("u.py", 0),
        }


def test_a_cell_read_from_two_files_adds_their_counts_and_keeps_the_first_message():
    """Two shards of one test: counts add up, the worse outcome and the first line stay."""
    collector = collect(
        junit(case("test_x[a]")),
        junit(case("test_x[b]", FAIL.format(7)), case("test_x[c]", FAIL.format(8))),
        junit(case("test_x[d]", FAIL.format(9))),
    )
    assert collector.collected.dashboards[DASH]["test_x"]["torch"] == CellResult(
        Outcome.FAILURE, CaseCounts(passed=1, failed=3), "AssertionError: 7 != 4"
    )


def test_a_failure_without_a_message_attribute_keeps_its_first_text_line():
    """The message comes from the element's text when it has no attribute."""
    collector = collect(junit(case("test_y", "<error>\n\n  E   boom\nmore</error>")))
    assert collector.collected.dashboards[DASH]["test_y"]["torch"].message == "E   boom"


def test_a_broken_file_adds_no_counts():
    """A file that is not well-formed halfway leaves no cell and no count behind."""
    collector = collect(junit(case("test_z")), io.BytesIO(b"<testsuite>" + case("test_z").encode()))
    assert collector.collected.dashboards[DASH]["test_z"]["torch"].counts == CaseCounts(passed=1)


def test_batches_carry_counts_and_a_signed_message_for_failures_only():
    """A failing entry gets its line and signature; passing entries with equal results share one."""
    collector = collect(
        junit(case("test_a"), case("test_b"), case("test_c", FAIL.format(3))), backend="jax"
    )
    (batch,) = build_batches(collector.collected, lambda _backend: SOURCE, Signer())
    a, b, c = (batch.cells[f"test_{x}"]["jax"] for x in "abc")
    assert a is b
    assert (a.outcome, a.counts, a.message, a.signature) == (
        Outcome.SUCCESS,
        CaseCounts(passed=1),
        "",
        "",
    )
    assert (c.outcome, c.counts, c.message) == (
        Outcome.FAILURE,
        CaseCounts(failed=1),
        "AssertionError: 3 != 4",
    )
    assert c.signature == Signer().signature("AssertionError: 9 != 4", "torch")


def test_a_cell_holding_only_skipped_cases_is_skipped_and_flaky_beats_success():
    """The outcome follows from the counts: the worst kind of case the cell has."""
    collector = collect(
        junit(case("test_s[a]", "<skipped/>"), case("test_s[b]", "<skipped/>")),
        junit(case("test_f[a]"), case("test_f[b]", '<flakyFailure message="once"/>')),
    )
    skipped = collector.collected.dashboards[DASH]["test_s"]["torch"]
    flaky = collector.collected.dashboards[DASH]["test_f"]["torch"]
    assert (skipped.outcome, skipped.counts) == (Outcome.SKIPPED, CaseCounts(skipped=2))
    assert (flaky.outcome, flaky.counts) == (Outcome.FLAKY, CaseCounts(passed=1, flaky=1))


# Cases for the two loops: classnames (two map to one row), names with and without ids,
# statuses with and without a failure line.
_CLASSES = ("ivy.test_core.test_a", "ivy.test_core.test_b", "ivy.test_core.TestA")
_BODIES = ("", FAIL.format(1), FAIL.format(2), '<error message="">x</error>', "<skipped/>")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_CLASSES),
            st.sampled_from(("test_x", "test_y")),
            st.sampled_from(("", "[1]", "[2]")),
            st.sampled_from(_BODIES),
            st.sampled_from(("", ' file="t.py" line="3"', ' file="u.py"', ' line="5"')),
            st.sampled_from(("", ' time="0.5"', ' time="1.25"')),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_the_usual_files_quicker_loop_gathers_what_the_per_case_loop_does(cases):
    """A file whose backend its path names is read by a loop of its own: it gathers the same
    cells, in the same order, with the same counts, first failure lines, places and
    durations (places that come back after others, and two places of one row, included)."""
    text = "".join(
        f'<testcase classname="{c}" name="{n}{p}"{w}{t}>{b}</testcase>'
        for c, n, p, b, w, t in cases
    )

    def read(rules: NamingRules) -> dict[DashboardId, dict[str, dict[str, CellResult]]]:
        collector = Collector(Namer(rules))
        collector.add_file(junit(text), source="torch/f.xml")
        return collector.collected.dashboards

    quick = read(NamingRules(backend="torch"))
    per_case = read(NamingRules(backend_from_test=re.compile(r"(?P<backend>test)_")))

    def renamed(found: dict[DashboardId, dict[str, dict[str, CellResult]]]) -> list[object]:
        return [(d, [(r, list(c.values())) for r, c in rows.items()]) for d, rows in found.items()]

    assert renamed(quick) == renamed(per_case)


def test_a_cells_duration_is_its_timed_cases_seconds_in_both_loops():
    """A row's parametrizations add their ``time`` up; cases without one (or with a bad one)
    are not counted, and the cell says how many were; the per-case loop agrees."""
    text = (
        '<testcase classname="m.test_a" name="test_x[1]" time="1.25"/>'
        '<testcase classname="m.test_a" name="test_x[2]" time="0.5"><failure message="no"/>'
        "</testcase>"
        '<testcase classname="m.test_a" name="test_x[3]"/>'
        '<testcase classname="m.test_a" name="test_x[4]" time="-1"/>'
        '<testcase classname="m.test_a" name="test_y" time="0.004"/>'
        '<testcase classname="m.test_a" name="test_z"/>'
    )
    for rules in (
        NamingRules(backend="torch"),
        NamingRules(backend_from_test=re.compile(r"::(?P<backend>test)_")),
    ):
        collector = Collector(Namer(rules))
        collector.add_file(junit(text), source="torch/f.xml")
        (rows,) = collector.collected.dashboards.values()
        backend = next(iter(rows["test_x"]))
        x, y, z = (rows[name][backend] for name in ("test_x", "test_y", "test_z"))
        assert (x.seconds, x.timed, x.counts.total) == (1.75, 2, 4)
        assert (y.seconds, y.timed) == (0.004, 1)
        assert (z.seconds, z.timed) == (0.0, 0)


def test_timed_cells_alike_share_one_result_in_both_loops():
    """Cells of the same counts and seconds (rows of two parametrizations, a skipped one
    among them or not) share one result, as untimed cells alike do: 300 rows, 4 results,
    whichever loop read them; a failing cell with its line keeps its own."""
    rows = "".join(
        f'<testcase classname="m.test_a" name="test_{i}[1]" time="0.25"/>'
        f'<testcase classname="m.test_a" name="test_{i}[2]" time="{0.5 if i % 3 else 0.75}">'
        f"{'<skipped/>' if i % 2 else ''}</testcase>"
        for i in range(300)
    )
    failing = '<testcase classname="m.test_a" name="test_f" time="1"><failure message="no"/>'
    for rules in (
        NamingRules(backend="torch"),
        NamingRules(backend_from_test=re.compile(r"::(?P<backend>test)_")),
    ):
        collector = Collector(Namer(rules))
        collector.add_file(junit(rows + failing + "</testcase>"), source="torch/f.xml")
        (cells,) = collector.collected.dashboards.values()
        results = [result for row in cells.values() for result in row.values()]
        assert len(results) == 301
        assert len({id(result) for result in results}) == 4 + 1
        seconds = sorted((r.seconds, r.counts.skipped) for r in results if r.message == "")
        assert seconds[0] == (0.75, 0)
        assert seconds[-1] == (1.0, 1)
        (failed,) = (r for r in results if r.message)
        assert (failed.message, failed.seconds, failed.timed) == ("no", 1.0, 1)


def test_a_cell_read_from_two_files_adds_their_durations():
    """Two files holding one cell add their seconds and timed cases, as they add counts."""
    collector = collect(
        junit(case("test_a[1]").replace("<testcase ", '<testcase time="2.5" ')),
        junit(case("test_a[2]").replace("<testcase ", '<testcase time="0.5" '), case("test_a[3]")),
    )
    cell = collector.collected.dashboards[DASH]["test_a"]["torch"]
    assert (cell.seconds, cell.timed, cell.counts.total) == (3.0, 2, 3)


def test_batches_share_entries_of_cells_alike_and_keep_durations_beside_them():
    """Two passing cells of different durations share one entry; each duration is in the
    batch's times."""
    collector = collect(
        junit(
            case("test_a").replace("<testcase ", '<testcase time="0.25" '),
            case("test_b").replace("<testcase ", '<testcase time="7.5" '),
            case("test_c"),
        )
    )
    (batch,) = build_batches(collector.collected, lambda _: SOURCE)
    cells = batch.cells
    assert cells["test_a"]["torch"] is cells["test_b"]["torch"] is cells["test_c"]["torch"]
    assert {row: (by["torch"].seconds, by["torch"].timed) for row, by in batch.times.items()} == {
        "test_a": (0.25, 1),
        "test_b": (7.5, 1),
        "test_c": (0.0, 0),
    }


# ------------------------------------------------------------ secrets (issue 24)

TOKEN = "4f1d0c3e9b7a26c58e1f0d4b3a2c9e8f7d6b5a41"
KEY = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"


def test_what_is_kept_of_a_case_never_holds_the_token_or_a_key():
    """Failure lines, the failures kept for annotations (ids with their parametrization),
    dashboard and row names and the durations' node ids are redacted as they are kept; two
    rows that differ only in a secret are one row, their cases added up."""
    stream = io.BytesIO(
        (
            f'<testsuite><testcase classname="{KEY}.test_m" name="test_a[{TOKEN}]" time="1">'
            f'<failure message="401 for {TOKEN} and {KEY}">tb</failure></testcase>'
            f'<testcase classname="c" name="test_{TOKEN}" time="2"/>'
            f'<testcase classname="c" name="test_{KEY}" time="3"/></testsuite>'
        ).encode()
    )
    # A file's backend (the quicker loop), and each case's own (the other).
    per_case = NamingRules(backend_from_test=re.compile(r"::(?P<backend>test)_"))
    for rules in (NamingRules(backend="test"), per_case):
        collector = Collector(Namer(rules), redactor=Redactor.of([TOKEN]))
        collector.add_file(io.BytesIO(stream.getvalue()), source="r.xml")
        collected = collector.collected
        shown = repr((collected.dashboards, collected.failures, collected.durations))
        assert TOKEN not in shown
        assert KEY not in shown
        rows = {row: cells for d in collected.dashboards.values() for row, cells in d.items()}
        assert rows["test_***"]["test"].counts == CaseCounts(passed=2)
        assert rows["test_a"]["test"].message == "401 for *** and ***"
        assert [f.test for f in collected.failures] == ["***.test_m::test_a[***]"]
        assert collected.durations.seconds() == {
            "test": {"***/test_m.py::": {"test_a[***]": 1.0}, "c.py::": {"test_***": 5.0}}
        }


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(("m.test_a", "m.test_a.TestK", f"m.test_a.Test{TOKEN}")),
            st.sampled_from(("test_x", f"test_{TOKEN}")),
            st.sampled_from(("", "[1]", f"[{TOKEN}]", f"[{KEY}]")),
            st.sampled_from(("", ' time="0.5"')),
        ),
        min_size=1,
        max_size=8,
    ),
    st.booleans(),
)
def test_a_secret_in_a_row_or_a_timed_cases_name_alone_is_hidden(cases, timed):
    """The quicker loop looks at a file's rows and timed cases' names at once when all its
    cases are timed (each row's name is the start of one of its cases'): a secret only in a
    class, a test's name or a parametrization, in a file all or partly timed, is hidden
    from the rows and the durations all the same."""
    every = ' time="2"'
    text = "".join(
        f'<testcase classname="{c}" name="{n}{p}"{every if timed else t}/>' for c, n, p, t in cases
    )
    collector = Collector(Namer(NamingRules(backend="torch")), redactor=Redactor.of([TOKEN]))
    collector.add_file(junit(text), source="torch/f.xml")
    collected = collector.collected
    shown = repr((collected.dashboards, collected.durations))
    assert TOKEN not in shown
    assert KEY not in shown


def test_two_places_of_one_row_keep_its_failure_line_after_other_rows_failures():
    """One row from two places (one classname, two files), its only failure after many
    failing cases of another row: the cell keeps that failure's line and place (the quicker
    loop once took "after every failure" for a smaller number there, and kept neither)."""
    text = "".join(
        [
            *(
                f'<testcase classname="ivy.test_core.test_a" file="t.py" name="test_x[{i}]">'
                f"{FAIL.format(i)}</testcase>"
                for i in range(20)
            ),
            '<testcase classname="ivy.test_core.test_a" file="t.py" name="test_y[1]"/>',
            (
                '<testcase classname="ivy.test_core.test_a" file="u.py" line="7" '
                f'name="test_y[2]">{FAIL.format(99)}</testcase>'
            ),
        ]
    )
    collector = Collector(Namer(NamingRules(backend="torch")))
    collector.add_file(junit(text), source="torch/f.xml")
    (rows,) = collector.collected.dashboards.values()
    cell = rows["test_y"]["torch"]
    assert (cell.counts, cell.message, cell.where) == (
        CaseCounts(passed=1, failed=1),
        "AssertionError: 99 != 4",
        ("u.py", 7),
    )


class _Spill(io.BytesIO):
    """The update's temporary file, noting how far the result file being read was read at
    each write (``reading``: that file's stream)."""

    def __init__(self) -> None:
        super().__init__()
        self.reading: io.BytesIO | None = None
        self.read_at: list[int] = []

    def write(self, data: object) -> int:
        assert self.reading is not None
        self.read_at.append(self.reading.tell())
        return super().write(data)  # type: ignore[arg-type]


def _runs(*places: tuple[str, int], size: int = 20_000) -> io.BytesIO:
    """A timed file of runs of one place each (classname, how many cases), padded with a
    long first line so that it is read in several chunks."""
    pad = f"<!-- {'x' * size} -->"
    cases = "".join(
        f'<testcase classname="{c}" name="test_{c}_{i}[{i % 2}]" time="0.{i % 10}"/>'
        for c, count in places
        for i in range(count)
    )
    return io.BytesIO(f"<testsuite>{pad}{cases}{pad}{pad}{pad}{pad}</testsuite>".encode())


def test_each_run_of_one_place_is_held_as_text_when_it_ends_not_at_the_files_end():
    """The quicker loop writes a run's timed cases to the temporary file as the run ends (its
    names are not held to the file's end): a file of three runs (one place twice) makes
    three writes, the first while most of the file is still to be read; the durations are
    those of one dict for the whole file (a name in both runs of its place: added)."""
    spill = _Spill()
    collector = Collector(Namer(NamingRules(backend="torch")), spill=spill)
    stream = _runs(("m.a", 3), ("m.b", 2), ("m.a", 3), size=200_000)
    spill.reading = stream
    collector.add_file(stream, source="torch/f.xml")
    assert len(spill.read_at) == 3
    assert spill.read_at[0] < len(stream.getvalue()) // 2
    assert collector.collected.durations.seconds() == {
        "torch": {
            "m/a.py::": {"test_m.a_0[0]": 0.0, "test_m.a_1[1]": 0.2, "test_m.a_2[0]": 0.4},
            "m/b.py::": {"test_m.b_0[0]": 0.0, "test_m.b_1[1]": 0.1},
        }
    }


def test_a_file_broken_after_runs_were_held_adds_none_of_their_cases():
    """Runs held as they ended are added only once the whole file was read: a file broken
    after two of them adds no duration (what it wrote to the temporary file is never read)."""
    spill = _Spill()
    collector = Collector(Namer(NamingRules(backend="torch")), spill=spill)
    whole = _runs(("m.a", 3), ("m.b", 2), ("m.c", 2)).getvalue()
    stream = io.BytesIO(whole[: whole.index(b"m.c_1")])
    spill.reading = stream
    collector.add_file(stream, source="torch/f.xml")
    assert len(spill.read_at) == 2
    assert collector.collected.problems
    assert not collector.collected.durations
    assert not collector.collected.dashboards


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(['"', "\\", "\n", "\u00e9"]), st.booleans())
def test_a_secret_in_a_timed_name_that_json_escapes_is_hidden(mark, second_run):
    """The look at a run's names is at their held text, which escapes a quote, a backslash
    or a line break: a secret that holds one, in a case's name (in the first run of a place
    or a later one), is hidden all the same."""
    secret = f"ab{mark}cdefghijklmnop"
    named = secret.replace('"', "&quot;").replace("\\n", "&#10;")
    cases = [f'<testcase classname="m.a" name="test_x[{named}]" time="1"/>']
    if second_run:
        cases.insert(0, '<testcase classname="m.b" name="test_y" time="1"/>')
        cases.insert(0, '<testcase classname="m.a" name="test_z" time="1"/>')
    collector = Collector(Namer(NamingRules(backend="torch")), redactor=Redactor.of([secret]))
    collector.add_file(junit("".join(cases)), source="torch/f.xml")
    held = collector.collected.durations.seconds()
    assert held
    assert secret not in repr(held)
    assert "test_x[***]" in held["torch"]["m/a.py::"]
