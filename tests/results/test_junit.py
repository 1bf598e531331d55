"""Tests for ivy_matrix.results.junit: classification, messages, encodings, safety and flat memory."""

from __future__ import annotations

import csv
import gc
import hashlib
import io
import itertools
import os
import tracemalloc
import weakref
from collections.abc import Iterator
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ivy_matrix.model import CaseResult, CaseStatus, FileCounts, ParseProblem
from ivy_matrix.results import junit
from ivy_matrix.results.encodings import BadInputError
from ivy_matrix.results.junit import (
    DEPTH_CAP,
    MARKUP_CAP,
    MESSAGE_CAP,
    MODULE_CASE,
    NAME_CAP,
    REFUSED_ENTITIES,
    cap_name,
    scan_junit,
)

pytestmark = pytest.mark.timeout(30)

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "junit-corpus"

P, F, E, S = CaseStatus.PASSED, CaseStatus.FAILED, CaseStatus.ERROR, CaseStatus.SKIPPED


def scan(
    xml: str | bytes, *, chunk_size: int = 1 << 20
) -> tuple[FileCounts, ParseProblem | None, list[CaseResult]]:
    """Scan ``xml`` (str is encoded as UTF-8) and return counts, problem and the cases seen."""
    data = xml.encode() if isinstance(xml, str) else xml
    cases: list[CaseResult] = []
    counts, problem = scan_junit(
        io.BytesIO(data), source="t.xml", on_case=cases.append, chunk_size=chunk_size
    )
    return counts, problem, cases


def one_case(children: str, attrs: str = 'name="t"') -> CaseResult:
    """Scan a file with one testcase holding ``children`` and return that case."""
    counts, problem, cases = scan(f"<testsuite><testcase {attrs}>{children}</testcase></testsuite>")
    assert problem is None
    assert counts.tests == 1
    (case,) = cases
    return case


def test_a_failed_cases_line_is_kept_for_its_annotation_and_a_passing_ones_is_not() -> None:
    """The ``line`` attribute (pytest's xunit1 family) of a failed or erroring case is kept as
    written (at most LINE_CAP characters); a passing or skipped case's is not read."""
    where = 'name="t" file="tests/test_x.py" line="42"'
    assert one_case('<failure message="m"/>', where).line == "42"
    assert one_case("<error/>", where).line == "42"
    assert one_case("", where).line == ""
    assert one_case("<skipped/>", where).line == ""
    assert one_case("<failure/>", 'name="t" line="1234567890123"').line == "123456789"


# --- the corpus ---------------------------------------------------------------------------


def _corpus_rows() -> list[dict[str, str]]:
    expected = CORPUS / "expected.tsv"
    if not expected.is_file():
        return []
    with expected.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def _require_corpus() -> None:
    if not (CORPUS / "expected.tsv").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"the JUnit corpus is missing at {CORPUS}")
        pytest.skip(f"the JUnit corpus is not checked out at {CORPUS}")


_ROWS = _corpus_rows()


@pytest.mark.corpus
@pytest.mark.parametrize(
    "row", _ROWS or [pytest.param(None, id="corpus-missing")], ids=lambda r: r and r["file"]
)
def test_corpus_file_counts_match_expected_tsv(row: dict[str, str] | None) -> None:
    """Every corpus file gives the counts in expected.tsv, or a problem and zero counts."""
    _require_corpus()
    assert row is not None
    cases: list[CaseResult] = []
    with (CORPUS / row["file"]).open("rb") as f:
        counts, problem = scan_junit(f, source=row["file"], on_case=cases.append)
    got = (counts.tests, counts.passed, counts.failed, counts.errors, counts.skipped)
    if row["parseable"] == "no":
        assert problem is not None
        assert problem.source == row["file"]
        assert counts.problem == problem.message
        assert got == (0, 0, 0, 0, 0)
    else:
        assert problem is None, problem
        assert got == tuple(int(row[k]) for k in ("tests", "passed", "failed", "errors", "skipped"))
        assert len(cases) == counts.tests
        assert counts.problem is None


@pytest.mark.corpus
def test_corpus_expected_tsv_lists_every_xml_file() -> None:
    """expected.tsv covers every XML file of the corpus, so none escapes the test above."""
    _require_corpus()
    on_disk = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.xml")}
    assert on_disk == {row["file"] for row in _ROWS}


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["testXxe-xxe.xml", "testXxe-oob.xml"])
def test_corpus_xxe_probes_are_refused(name: str) -> None:
    """The corpus XXE probes give a problem and resolve nothing."""
    _require_corpus()
    with (CORPUS / "malformed" / name).open("rb") as f:
        counts, problem = scan_junit(f, source=name, on_case=lambda _: None)
    assert problem is not None
    assert counts.tests == 0
    if name == "testXxe-xxe.xml":
        assert problem.message == REFUSED_ENTITIES
        assert problem.line == 4


@pytest.mark.corpus
def test_corpus_flaky_counts() -> None:
    """Surefire's flaky.xml has two flaky passes, counted in passed and in flaky."""
    _require_corpus()
    with (CORPUS / "surefire" / "flaky.xml").open("rb") as f:
        counts, _ = scan_junit(f, source="flaky.xml", on_case=lambda _: None)
    assert (counts.passed, counts.flaky, counts.failed, counts.errors) == (2, 2, 1, 1)


# --- classification -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("children", "status"),
    [
        ("", P),
        ("<skipped/>", S),
        ("<failure/>", F),
        ("<error/>", E),
        ("<skipped/><failure/>", F),
        ("<failure/><skipped/>", F),
        ("<skipped/><failure/><error/>", E),
        ("<error/><failure/><skipped/>", E),
        ("<system-out>x</system-out><system-err>y</system-err>", P),
    ],
)
def test_the_worst_direct_result_child_decides(children: str, status: CaseStatus) -> None:
    """Error beats failure beats skipped beats passed, in any order."""
    assert one_case(children).status is status


def test_only_direct_children_of_the_testcase_count() -> None:
    """Result-named elements nested deeper (in system-out, properties) do not count."""
    case = one_case(
        "<system-out><failure/></system-out><properties><error/></properties>"
        "<flakyFailure><failure/></flakyFailure>"
    )
    assert case.status is P
    assert case.flaky


def test_status_attributes_are_ignored() -> None:
    """A googletest-style status="notrun" does not make a case skipped."""
    assert one_case("", 'name="t" status="notrun"').status is P


@pytest.mark.parametrize(
    ("children", "status", "flaky"),
    [
        ("<flakyFailure/>", P, True),
        ("<flakyError/>", P, True),
        ("<flakyFailure/><flakyError/>", P, True),
        ("<rerunFailure/>", P, False),
        ("<rerunFailure/><failure/>", F, False),
        ("<failure/><rerunError/><rerunError/>", F, False),
        ("<error/><rerunError/>", E, False),
        ("<flakyFailure/><failure/>", F, False),
        ("<flakyFailure/><skipped/>", S, False),
    ],
)
def test_flaky_passes_and_reruns(children: str, status: CaseStatus, flaky: object) -> None:
    """flaky* without a final failure is a flaky pass; rerun* never changes the bucket."""
    case = one_case(children)
    assert (case.status, case.flaky) == (status, flaky)


def test_counts_add_flaky_passes_to_passed_and_to_flaky() -> None:
    """A flaky pass counts once in passed and once in flaky."""
    counts, _, _ = scan(
        "<testsuite>"
        '<testcase name="a"><flakyFailure/></testcase>'
        '<testcase name="b"/>'
        '<testcase name="c"><failure/></testcase>'
        '<testcase name="d"><error/></testcase>'
        '<testcase name="e"><skipped/></testcase>'
        "</testsuite>"
    )
    assert counts == FileCounts(
        path="t.xml", tests=5, passed=2, failed=1, errors=1, skipped=1, flaky=1
    )


def test_nested_suites_give_the_innermost_suite_name() -> None:
    """Cases take the innermost enclosing testsuite's name, restored when a suite closes."""
    _, problem, cases = scan(
        '<testsuites name="all"><testsuite name="outer">'
        '<testcase name="a"/>'
        '<testsuite name="inner"><testcase name="b"/><testsuite><testcase name="c"/></testsuite>'
        "</testsuite>"
        '<testcase name="d"/>'
        '</testsuite><testcase name="e"/></testsuites>'
    )
    assert problem is None
    assert [(c.name, c.suite) for c in cases] == [
        ("a", "outer"),
        ("b", "inner"),
        ("c", ""),
        ("d", "outer"),
        ("e", ""),  # <testsuites> is not a suite
    ]


def test_a_testcase_inside_a_testcase_counts_too() -> None:
    """Nested testcases are each counted and classified by their own children."""
    counts, _, cases = scan(
        '<testsuite><testcase name="outer"><testcase name="inner"><failure/></testcase>'
        "<skipped/></testcase></testsuite>"
    )
    assert [(c.name, c.status) for c in cases] == [("inner", F), ("outer", S)]
    assert (counts.tests, counts.failed, counts.skipped) == (2, 1, 1)


def test_a_testsuite_inside_a_testcase_names_its_own_cases_only() -> None:
    """A suite nested in a testcase names the cases inside it, then the outer name returns."""
    _, problem, cases = scan(
        '<testsuite name="s"><testcase name="a"><testsuite name="x"><testcase name="b"/>'
        '</testsuite></testcase><testcase name="c"/></testsuite>'
    )
    assert problem is None
    assert [(c.name, c.suite) for c in cases] == [("b", "x"), ("a", "s"), ("c", "s")]


def test_case_attributes_and_missing_ones() -> None:
    """name, classname (or class) and file are read; missing ones are empty strings."""
    _, _, cases = scan(
        '<testsuite name="s">'
        '<testcase name="n" classname="c" file="f.py" time="1"/>'
        '<testcase name="n2" class="k"/>'
        '<testcase classname="" class="k"/>'
        "<testcase/>"
        "</testsuite>"
    )
    assert [(c.name, c.classname, c.file, c.suite) for c in cases] == [
        ("n", "c", "f.py", "s"),
        ("n2", "k", "", "s"),
        ("", "", "", "s"),
        ("", "", "", "s"),
    ]


def test_a_module_pytest_skipped_or_failed_to_collect_is_its_modules_case() -> None:
    """pytest writes a module skipped (or broken) at collection as classname="" and the
    module's dotted path as name: it is read as that module's "(module)" case, so it lands on
    the module's dashboard, not a "pytest" dashboard of its own."""
    _, problem, cases = scan(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="" name="ivy_tests.test_core.test_gradients" time="0.000">'
        "<skipped message=\"collection skipped\">('t.py', 2, 'Skipped: GPU')</skipped>"
        "</testcase>"
        '<testcase classname="" name="ivy_tests.test_nn.test_layers" time="0.000">'
        '<error message="collection failure">ImportError</error></testcase>'
        '<testcase classname="" name="test_plain"><skipped message="not here"/></testcase>'
        "</testsuite></testsuites>"
    )
    assert problem is None
    assert [(c.classname, c.name, c.status, c.message) for c in cases] == [
        (
            "ivy_tests.test_core.test_gradients",
            MODULE_CASE,
            CaseStatus.SKIPPED,
            "collection skipped",
        ),
        ("ivy_tests.test_nn.test_layers", MODULE_CASE, CaseStatus.ERROR, "collection failure"),
        ("", "test_plain", CaseStatus.SKIPPED, "not here"),
    ]


# --- messages ------------------------------------------------------------------------------


def test_message_comes_from_the_message_attribute() -> None:
    """The deciding element's message attribute is the case's message, entities decoded."""
    case = one_case('<failure message="assert 1 == 2 &amp; &lt;x&gt;">long traceback</failure>')
    assert case.message == "assert 1 == 2 & <x>"


def test_a_multi_line_message_attribute_keeps_its_first_line() -> None:
    """A message attribute of several lines (pytest writes &#10;) keeps its first non-blank
    line, as the docs say, whatever the line break; one of blank lines only is no message."""
    case = one_case('<failure message="assert 1 == 2&#10;  where 1 = f()&#13;&#10;x">t</failure>')
    assert case.message == "assert 1 == 2"
    assert one_case('<error message="&#10;&#10;   second &#10;third"/>').message == "second"
    assert one_case('<failure message="a\u2028b"/>').message == "a"
    assert one_case('<failure message="&#13;">text\nmore</failure>').message == "text"
    assert one_case('<skipped message="why&#10;because"/>').message == "why"


def test_message_falls_back_to_the_first_line_of_the_text() -> None:
    """Without a message attribute, the first non-blank line of the text is used."""
    case = one_case('<error type="E">\n\n   Traceback (most recent call last):\n  File "x"</error>')
    assert case.message == "Traceback (most recent call last):"


def test_an_empty_message_attribute_falls_back_to_the_text() -> None:
    """message="" is no message: the text's first line is used."""
    assert one_case('<failure message="">boom\nmore</failure>').message == "boom"


def test_message_text_may_be_cdata() -> None:
    """CDATA text is read like any other text."""
    assert one_case("<failure><![CDATA[a < b\nc]]></failure>").message == "a < b"


def test_the_deciding_element_gives_the_message() -> None:
    """A later error replaces a failure's message; a later failure does not replace the first."""
    assert one_case('<failure message="f1"/><error message="e"/>').message == "e"
    assert one_case('<failure message="f1"/><failure message="f2"/>').message == "f1"
    assert one_case('<error message="e"/><failure message="f"/>').message == "e"
    assert one_case('<skipped message="why"/>').message == "why"
    assert one_case('<skipped message="why"/><failure>text</failure>').message == "text"


def test_text_of_non_deciding_elements_is_not_collected() -> None:
    """system-out and rerun texts never become the message."""
    case = one_case(
        "<system-out>out</system-out><rerunFailure>rerun</rerunFailure><failure>\n</failure>"
        "<system-err>err</system-err>"
    )
    assert case.message == ""


def test_messages_are_capped() -> None:
    """Long messages, from the attribute or the text, are cut to MESSAGE_CAP characters."""
    long = "x" * 5000
    assert one_case(f'<failure message="{long}"/>').message == "x" * MESSAGE_CAP
    assert one_case(f"<failure>{long}\nsecond line</failure>").message == "x" * MESSAGE_CAP


def test_message_text_survives_one_byte_chunks() -> None:
    """Text split over many parser feeds still gives the same message."""
    xml = '<testsuite><testcase name="t"><error>  first &amp; line\nsecond</error></testcase></testsuite>'
    _, problem, cases = scan(xml, chunk_size=1)
    assert problem is None
    assert cases[0].message == "first & line"


def test_a_huge_failure_text_keeps_memory_flat() -> None:
    """A 30 MB traceback without a message attribute is not buffered."""
    body = ("a" * 1023 + "\n").encode() * (30 * 1024)
    xml = b'<testsuite><testcase name="t"><failure>' + body + b"</failure></testcase></testsuite>"
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        # The input is already in memory; measure only what scanning adds.
        before = tracemalloc.get_traced_memory()[0]
        _, problem, cases = scan(xml)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert problem is None
    assert cases[0].message == "a" * 500
    assert peak < 8 * 1024 * 1024


def test_a_file_is_read_a_bounded_piece_at_a_time() -> None:
    """A file is asked for READ_CHUNK bytes at a time (128 KiB), never all of it nor a MiB:
    what reading holds of a file's bytes at once stays small beside its cells."""
    sizes: list[int] = []

    class Recorded(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            sizes.append(-1 if size is None else size)
            return super().read(size)

    case = '<testcase classname="c" name="test_{0}"/>'
    xml = "<testsuite>" + "".join(case.format(n) for n in range(40_000)) + "</testsuite>"
    cases: list[CaseResult] = []

    counts, problem = scan_junit(Recorded(xml.encode()), source="big.xml", on_case=cases.append)

    assert (problem, counts.tests, len(cases)) == (None, 40_000, 40_000)
    assert len(xml) > 8 * junit.READ_CHUNK
    assert junit.READ_CHUNK == 1 << 17
    assert set(sizes) == {junit.READ_CHUNK}
    assert len(sizes) == len(xml) // junit.READ_CHUNK + 2  # the last read finds the end


# --- encodings -----------------------------------------------------------------------------

_NAME = "tëst_ñame_Ω"
_DOC = f'<testsuite name="s"><testcase name="{_NAME}"><failure message="é"/></testcase></testsuite>'


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_DOC.encode(), id="utf-8"),
        pytest.param(b"\xef\xbb\xbf" + _DOC.encode(), id="utf-8-bom"),
        pytest.param(('<?xml version="1.0" encoding="UTF-8"?>' + _DOC).encode(), id="utf-8-decl"),
        pytest.param(("\ufeff" + _DOC).encode("utf-16-le"), id="utf-16-le-bom"),
        pytest.param(("\ufeff" + _DOC).encode("utf-16-be"), id="utf-16-be-bom"),
        pytest.param(
            ('<?xml version="1.0" encoding="UTF-16"?>\n' + _DOC).encode("utf-16"),
            id="utf-16-decl",
        ),
        pytest.param(
            ('<?xml version="1.0" encoding="ISO-8859-1"?>' + _DOC.replace("Ω", "")).encode(
                "latin-1"
            ),
            id="iso-8859-1",
        ),
        pytest.param(
            ('<?xml version="1.0" encoding="windows-1252"?>' + _DOC.replace("Ω", "€")).encode(
                "cp1252"
            ),
            id="windows-1252",
        ),
    ],
)
def test_encodings_are_detected_from_bom_and_declaration(data: bytes) -> None:
    """UTF-8 (BOM or not), UTF-16 LE/BE and declared single-byte encodings decode correctly."""
    counts, problem, cases = scan(data, chunk_size=7)
    assert problem is None
    assert counts.failed == 1
    assert cases[0].name in {_NAME, _NAME.replace("Ω", ""), _NAME.replace("Ω", "€")}
    assert cases[0].message == "é"


_JA_NAME = "テスト_名前"
_JA_DOC = (
    f'<testsuite name="s"><testcase name="{_JA_NAME}"><failure message="失敗"/></testcase>'
    "</testsuite>"
)


def _declared(encoding: str, doc: str = _JA_DOC) -> bytes:
    return f'<?xml version="1.0" encoding="{encoding}"?>\n{doc}'.encode(encoding)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_declared("shift_jis"), id="shift_jis"),
        pytest.param(_declared("Shift-JIS"), id="shift-jis-spelling"),
        pytest.param(_declared("euc-jp"), id="euc-jp"),
        pytest.param(_declared("gb18030"), id="gb18030"),
        pytest.param(_declared("utf-7"), id="utf-7"),
        pytest.param(_declared("utf-32"), id="utf-32-decl-bom"),
        pytest.param(_declared("utf-32-le"), id="utf-32-le-decl-no-bom"),
        pytest.param(_declared("utf-32-be"), id="utf-32-be-decl-no-bom"),
        pytest.param(("\ufeff" + _JA_DOC).encode("utf-32-le"), id="utf-32-le-bom-only"),
        pytest.param(("\ufeff" + _JA_DOC).encode("utf-32-be"), id="utf-32-be-bom-only"),
        pytest.param(_declared("utf-16"), id="utf-16-decl"),
        pytest.param(_declared("utf8"), id="utf8-python-spelling"),
        pytest.param(b"\xef\xbb\xbf" + _declared("utf_8"), id="utf-8-bom-python-spelling"),
    ],
)
def test_multi_byte_and_python_only_encodings_are_transcoded(data: bytes) -> None:
    """Encodings expat cannot read itself are decoded chunk by chunk and read like UTF-8."""
    for chunk_size in (1, 3, 1 << 20):
        counts, problem, cases = scan(data, chunk_size=chunk_size)
        assert problem is None
        assert counts.failed == 1
        assert (cases[0].name, cases[0].suite, cases[0].message) == (_JA_NAME, "s", "失敗")


def test_ebcdic_with_a_declaration_is_read() -> None:
    """An EBCDIC file is found by its first bytes and read in the encoding it declares."""
    doc = _DOC.replace("Ω", "")
    counts, problem, cases = scan(_declared("cp500", doc), chunk_size=5)
    assert problem is None
    assert counts.failed == 1
    assert cases[0].name == _NAME.replace("Ω", "")


@pytest.mark.parametrize(
    ("encoding", "why"),
    [
        ("no-such-encoding", "which is not an encoding Python knows"),
        ("x\u00e9", "which is not an encoding Python knows"),
        ("rot13", "which is not a text encoding"),
        ("rot_13", "which is not a text encoding"),
        ("base64", "which is not a text encoding"),
        ("zlib", "which is not a text encoding"),
        ("hex", "which is not a text encoding"),
        ("bz2", "which is not a text encoding"),
    ],
)
def test_an_unreadable_declared_encoding_is_a_problem(encoding: str, why: str) -> None:
    """Unknown names and codecs that are not text encodings are one named problem, no case."""
    data = f'<?xml version="1.0" encoding="{encoding}"?><testsuite><testcase name="t"/></testsuite>'
    counts, problem, cases = scan(data.encode("latin-1"))
    assert problem is not None
    assert problem.message.startswith(f"the file declares encoding {encoding!r}, {why}; ")
    assert problem.line == 1
    assert counts.problem == problem.message
    assert counts.tests == 0
    assert cases == []


@pytest.mark.parametrize("encoding", ["rot13", "nope"])
def test_an_unreadable_encoding_in_utf16_is_a_problem(encoding: str) -> None:
    """A bad name declared inside a UTF-16 file is a problem too, not an exception."""
    data = f'<?xml version="1.0" encoding="{encoding}"?><testsuite/>'.encode("utf-16")
    _, problem, _ = scan(data)
    assert problem is not None
    assert f"declares encoding {encoding!r}" in problem.message


@pytest.mark.parametrize("encoding", ["idna", "punycode"])
def test_exotic_text_codecs_never_raise(encoding: str) -> None:
    """Text codecs that are no file encodings give cases or a problem, never an exception."""
    data = _declared("ascii", '<testsuite><testcase name="t"/></testsuite>')
    counts, problem, _ = scan(data.replace(b"ascii", encoding.encode()))
    assert (problem is None) == (counts.tests == 1)


@pytest.mark.parametrize(
    ("data", "codec", "byte"),
    [
        pytest.param(
            _declared("shift_jis") + b"<!-- \x81\x20 -->",
            "shift_jis",
            len(_declared("shift_jis")) + 5,
            id="shift_jis",
        ),
        pytest.param(
            "\ufeff<testsuite/>".encode("utf-32-le") + b"\x00\x00\x11\x00",
            "utf-32-le",
            52,
            id="utf-32-out-of-range",
        ),
        pytest.param(
            "\ufeff<testsuite/>".encode("utf-32-le") + b"\x20",
            "utf-32-le",
            52,
            id="utf-32-truncated",
        ),
    ],
)
def test_bytes_that_do_not_decode_are_a_problem(data: bytes, codec: str, byte: int) -> None:
    """Bytes invalid in the file's encoding give a problem naming the codec and the offset."""
    for chunk_size in (1, 3, 1 << 20):
        _, problem, _ = scan(data, chunk_size=chunk_size)
        assert problem is not None
        assert problem.message.startswith(f"the file does not decode as {codec} at byte {byte} (")


def test_a_declaration_that_never_ends_is_a_problem() -> None:
    """An XML declaration not closed within the first 4 KiB is refused before expat sees it."""
    data = b'<?xml version="1.0" encoding="rot13"' + b" " * 5000 + b"?><testsuite/>"
    _, problem, _ = scan(data, chunk_size=100)
    assert problem is not None
    assert problem.message.startswith("the XML declaration does not end within the first")


@pytest.mark.timeout(60)
def test_a_transcoded_stream_is_read_in_flat_memory() -> None:
    """A ~100 MB UTF-32 file (read through a decoder) keeps the traced peak under 20 MB."""
    blocks = 25 * 1024 * 1024 // len(_GeneratedJUnit.BLOCK)
    pieces = (piece.decode().encode("utf-32-le") for piece in _GeneratedJUnit.pieces(blocks))
    seen = 0

    def on_case(_case: CaseResult) -> None:
        nonlocal seen
        seen += 1

    stream = io.BufferedReader(_Lazy(itertools.chain([b"\xff\xfe\x00\x00"], pieces)))
    tracemalloc.start()
    try:
        counts, problem = scan_junit(stream, source="wide.xml", on_case=on_case)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problem is None
    assert seen == counts.tests == 52 * blocks
    assert peak < 20 * 1024 * 1024


# --- input limits ----------------------------------------------------------------------------


def test_cap_name_keeps_short_names_and_shortens_long_ones_uniquely() -> None:
    """Names up to NAME_CAP are unchanged; longer ones are NAME_CAP long, distinct, hashed."""
    assert cap_name("t" * NAME_CAP) == "t" * NAME_CAP
    a, b = cap_name("t" * 5000 + "a"), cap_name("t" * 5000 + "b")
    assert len(a) == len(b) == NAME_CAP
    assert a != b
    assert a.startswith("t" * (NAME_CAP - 13) + "…")
    assert a[-12:] == hashlib.sha256(("t" * 5000 + "a").encode()).hexdigest()[:12]
    param = cap_name("test_x[" + "p" * 5000 + "]")
    assert len(param) == NAME_CAP
    assert param.startswith("test_x[pp")
    assert param.endswith("]")


def test_long_names_are_capped_when_read() -> None:
    """Test names, classnames, files and suite names longer than NAME_CAP are shortened."""
    long = "n" * 50_000
    xml = (
        f'<testsuite name="{long}s"><testcase name="{long}" classname="{long}c" file="{long}f">'
        f'<failure message="{long}"/></testcase><testcase name="ok" classname="c"/></testsuite>'
    )
    _, problem, cases = scan(xml)
    assert problem is None
    first, second = cases
    assert first.name == cap_name(long)
    assert first.classname == cap_name(long + "c")
    assert first.file == cap_name(long + "f")
    assert first.suite == cap_name(long + "s")
    assert first.message == "n" * MESSAGE_CAP
    assert all(len(value) == NAME_CAP for value in first[:4])
    assert (second.name, second.classname) == ("ok", "c")


def _huge_attribute(size: int) -> Iterator[bytes]:
    yield b'<?xml version="1.0"?>\n<testsuite>\n<testcase classname="c" name="'
    piece = b"x" * (1 << 20)
    for _ in range(size >> 20):
        yield piece
    yield b'"/></testsuite>'


@pytest.mark.timeout(60)
def test_a_400_mb_attribute_is_refused_in_flat_memory() -> None:
    """Expat never holds more than about MARKUP_CAP of one tag: the file is a problem, quickly."""
    stream = io.BufferedReader(_Lazy(_huge_attribute(400 << 20)))
    cases: list[CaseResult] = []
    tracemalloc.start()
    try:
        counts, problem = scan_junit(stream, source="huge.xml", on_case=cases.append)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problem == ParseProblem(
        source="huge.xml",
        message="a single tag, comment or declaration is longer than 1 MiB (from line 3); "
        "ivy-matrix does not read markup that long",
        line=3,
    )
    assert counts.tests == 0
    assert cases == []
    assert peak < 12 * 1024 * 1024
    assert stream.read(1), "the scan stopped long before the end of the stream"


def test_a_tag_just_under_the_markup_cap_is_read() -> None:
    """A 0.9 MiB name is read, and shortened to NAME_CAP."""
    data = b"".join(_huge_attribute(0)).replace(
        b'name="', b'name="' + b"y" * (MARKUP_CAP - 100_000)
    )
    _, problem, cases = scan(data)
    assert problem is None
    assert cases[0].name == cap_name("y" * (MARKUP_CAP - 100_000))


@pytest.mark.parametrize(
    "markup",
    [b"<!-- ", b"<?pi ", b"<testcase ", b"<testcase name='n'", b'<testcase a="1" b="'],
)
def test_other_endless_markup_is_refused(markup: bytes) -> None:
    """An endless comment, processing instruction or run of attributes is refused the same way."""
    filler = b" " if markup.endswith(b"'") else b"z"
    data = b"<testsuites>\n" + markup + filler * (3 * MARKUP_CAP)
    _, problem, _ = scan(data)
    assert problem is not None
    assert problem.message.startswith("a single tag, comment or declaration is longer than 1 MiB")
    assert problem.line == 2


@pytest.mark.parametrize("opening", ["<a>", "<testcase>", "<testsuite>"])
def test_elements_nested_too_deep_are_refused(opening: str) -> None:
    """Nesting deeper than DEPTH_CAP is a problem; DEPTH_CAP itself is read."""
    xml = "<testsuites>" + opening * (DEPTH_CAP - 1)
    _, problem, _ = scan(xml)
    assert problem is not None
    assert problem.message.startswith("not well-formed XML")  # read to the end: ok so far
    _, problem, _ = scan(xml + opening * 1_000_000)
    assert problem is not None
    assert problem.message.startswith(f"elements are nested more than {DEPTH_CAP} deep")


# --- bad input -----------------------------------------------------------------------------


def test_an_empty_file_is_a_problem() -> None:
    """Zero bytes give "file is empty" and zero counts."""
    counts, problem, cases = scan(b"")
    assert problem == ParseProblem(source="t.xml", message="file is empty", line=None)
    assert counts == FileCounts(path="t.xml", problem="file is empty")
    assert cases == []


def test_a_whitespace_only_file_is_not_well_formed() -> None:
    """Blank lines alone are not XML; the problem gives expat's reason and the line."""
    _, problem, _ = scan(b"\n\n  \n")
    assert problem is not None
    assert problem.message == "not well-formed XML: no element found (line 4)"
    assert problem.line == 4


@pytest.mark.parametrize("root", ["test-results", "testcase", "html"])
def test_a_foreign_root_is_not_junit(root: str) -> None:
    """Only <testsuites> and <testsuite> roots are JUnit; the problem names the root."""
    counts, problem, cases = scan(f'<?xml version="1.0"?>\n\n<{root}><testcase name="x"/></{root}>')
    assert problem == ParseProblem(
        source="t.xml",
        message=f"not a JUnit XML file: root element is <{root}>, expected <testsuites> or <testsuite>",
        line=3,
    )
    assert counts.tests == 0
    assert cases == []


def test_a_truncated_file_is_a_problem_with_its_line() -> None:
    """A file cut off mid-way is not well-formed, at its last line."""
    _, problem, _ = scan('<testsuite>\n<testcase name="a"/>\n<testcase name="b')
    assert problem is not None
    assert problem.message.startswith("not well-formed XML: ")
    assert problem.line == 3


def test_cases_seen_before_the_file_breaks_are_reported_but_not_counted() -> None:
    """on_case has seen the early cases; the counts are zero and carry the problem."""
    counts, problem, cases = scan(
        '<testsuite>\n<testcase name="a"/>\n<testcase name="b"><failure/></testcase>\n<oops></testsuite>',
        chunk_size=16,
    )
    assert [c.name for c in cases] == ["a", "b"]
    assert problem is not None
    assert problem.message == "not well-formed XML: mismatched tag (line 4)"
    assert counts == FileCounts(path="t.xml", problem=problem.message)


def test_junk_after_the_root_is_a_problem() -> None:
    """A second root element (two files concatenated) is not well-formed."""
    _, problem, _ = scan("<testsuite/>\n<testsuite/>")
    assert problem is not None
    assert "junk after document element" in problem.message


def test_read_errors_from_the_stream_propagate() -> None:
    """Only bad input becomes a problem; an I/O error is the caller's to handle."""

    class Broken(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, _buffer: object) -> int:
            raise OSError("disk on fire")

    with pytest.raises(OSError, match="disk on fire"):
        scan_junit(io.BufferedReader(Broken()), source="t.xml", on_case=lambda _: None)


def test_errors_raised_by_on_case_propagate() -> None:
    """A failing callback is a bug in the caller and is not turned into a ParseProblem."""

    def on_case(_case: CaseResult) -> None:
        raise RuntimeError("caller bug")

    with pytest.raises(RuntimeError, match="caller bug"):
        scan_junit(
            io.BytesIO(b'<testsuite><testcase name="a"/></testsuite>'), source="t", on_case=on_case
        )


def test_a_chunk_size_below_one_is_a_caller_error() -> None:
    """chunk_size=0 would read nothing and look like an empty file, so it raises instead."""
    with pytest.raises(ValueError, match="chunk_size"):
        scan_junit(io.BytesIO(b"<testsuite/>"), source="t", on_case=lambda _: None, chunk_size=0)


# --- safety --------------------------------------------------------------------------------

_BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE testsuite [\n<!ENTITY lol "lol">\n'
    + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'
        for i in range(1, 10)
    )
    + ']>\n<testsuite><testcase name="&lol9;"/></testsuite>'
)


def test_billion_laughs_is_refused_before_any_expansion_in_little_memory() -> None:
    """An entity-expansion bomb is refused at its first declaration, before any expansion."""
    tracemalloc.start()
    try:
        counts, problem, cases = scan(_BILLION_LAUGHS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problem == ParseProblem(source="t.xml", message=REFUSED_ENTITIES, line=3)
    assert counts.tests == 0
    assert cases == []
    assert peak < 1024 * 1024  # the expansion would take about 3 GB


@pytest.mark.parametrize(
    "doctype",
    [
        pytest.param('<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]>', id="external"),
        pytest.param('<!DOCTYPE t [<!ENTITY % p SYSTEM "http://127.0.0.1:9/x">%p;]>', id="param"),
        pytest.param('<!DOCTYPE t [<!ENTITY x SYSTEM "x.gif" NDATA gif>]>', id="unparsed"),
        pytest.param('<!DOCTYPE t [<!ENTITY big "' + "A" * 1000 + '">]>', id="quadratic"),
    ],
)
def test_every_entity_declaration_is_refused(doctype: str) -> None:
    """External, parameter, unparsed and internal entity declarations are all refused."""
    counts, problem, _ = scan(f'{doctype}<testsuite><testcase name="&x;"/></testsuite>')
    assert problem is not None
    assert problem.message == REFUSED_ENTITIES
    assert counts.tests == 0


@pytest.mark.parametrize("kind", ["SYSTEM", "PUBLIC"])
def test_an_external_dtd_is_never_loaded(tmp_path: Path, kind: str) -> None:
    """A DOCTYPE pointing at a real DTD file is not read: its default attributes never apply."""
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ATTLIST testcase classname CDATA "FROM-DTD">\n<!ENTITY x "FROM-DTD">\n')
    ident = f'"{dtd.as_uri()}"' if kind == "SYSTEM" else f'"-//x//y" "{dtd.as_uri()}"'
    _, problem, cases = scan(
        f'<!DOCTYPE testsuite {kind} {ident}><testsuite><testcase name="a"/></testsuite>'
    )
    assert problem is None
    assert cases[0].classname == ""


def test_the_external_entity_handler_refuses() -> None:
    """The last-resort external entity handler raises instead of fetching anything."""
    with pytest.raises(BadInputError, match="external entity"):
        junit._refuse_external("ctx", None, "file:///etc/passwd", None)


def test_a_doctype_without_entities_is_allowed() -> None:
    """An internal subset with only element declarations is harmless and parses."""
    counts, problem, _ = scan(
        "<!DOCTYPE testsuite [<!ELEMENT testsuite ANY>]><testsuite><testcase/></testsuite>"
    )
    assert problem is None
    assert counts.tests == 1


# --- property: random case mixes -------------------------------------------------------------

_CHILDREN = st.lists(
    st.sampled_from(
        [
            "failure",
            "error",
            "skipped",
            "flakyFailure",
            "flakyError",
            "rerunFailure",
            "rerunError",
            "system-out",
            "properties",
        ]
    ),
    max_size=4,
)
_NAMES = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12
)


def _expected(children: list[str]) -> tuple[CaseStatus, bool]:
    if "error" in children:
        return E, False
    if "failure" in children:
        return F, False
    if "skipped" in children:
        return S, False
    return P, "flakyFailure" in children or "flakyError" in children


@settings(max_examples=60, deadline=None)
@given(
    cases=st.lists(st.tuples(_NAMES, _CHILDREN), max_size=25),
    chunk_size=st.integers(min_value=1, max_value=64),
)
def test_random_case_mixes_are_counted_and_classified(
    cases: list[tuple[str, list[str]]], chunk_size: int
) -> None:
    """Any mix of result children, fed in any chunk size, is classified by the precedence rule."""
    body = "".join(
        f"<testcase name={quoteattr(name)}>"
        + "".join(f'<{c} message="{c}">{escape(name)}</{c}>' for c in children)
        + "</testcase>"
        for name, children in cases
    )
    counts, problem, seen = scan(
        f'<testsuites><testsuite name="s">{body}</testsuite></testsuites>', chunk_size=chunk_size
    )
    assert problem is None
    expected = [_expected(children) for _, children in cases]
    assert [(c.status, c.flaky) for c in seen] == expected
    assert [c.name for c in seen] == [name for name, _ in cases]
    statuses = [status for status, _ in expected]
    assert (counts.tests, counts.passed, counts.failed, counts.errors, counts.skipped) == (
        len(cases),
        statuses.count(P),
        statuses.count(F),
        statuses.count(E),
        statuses.count(S),
    )
    assert counts.flaky == sum(flaky for _, flaky in expected)


# --- flat memory on a big stream -------------------------------------------------------------


class _Lazy(io.RawIOBase):
    """A binary stream of the given pieces, produced on demand and never stored."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        super().__init__()
        self._pieces = pieces
        self._current = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]  # -- typeshed wants Buffer
        while not self._current:
            piece = next(self._pieces, None)
            if piece is None:
                return 0
            self._current = memoryview(piece)
        n = min(len(buffer), len(self._current))
        buffer[:n] = self._current[:n]
        self._current = self._current[n:]
        return n


class _GeneratedJUnit(_Lazy):
    """A JUnit file of ``blocks`` repeated blocks, produced on demand and never stored."""

    BLOCK = (
        b'<testsuite name="gen">'
        + b'<testcase classname="m" name="test_pass[cpu-torch]" time="0.01"/>' * 50
        + b'<testcase name="f"><failure>'
        + b"E   Traceback line that goes on and on\n" * 2000
        + b"</failure><system-out>"
        + b"captured output line\n" * 5000
        + b'</system-out></testcase><testcase name="s"><skipped message="no"/></testcase>'
        + b"</testsuite>"
    )

    def __init__(self, blocks: int) -> None:
        super().__init__(self.pieces(blocks))

    @classmethod
    def pieces(cls, blocks: int) -> Iterator[bytes]:
        yield b'<?xml version="1.0" encoding="utf-8"?>\n<testsuites>'
        for _ in range(blocks):
            yield cls.BLOCK
        yield b"</testsuites>\n"


@pytest.mark.timeout(60)
def test_a_200_mb_stream_is_scanned_in_flat_memory() -> None:
    """Scanning ~200 MB of generated JUnit keeps the traced peak under 20 MB."""
    blocks = 200 * 1024 * 1024 // len(_GeneratedJUnit.BLOCK)
    seen = 0

    def on_case(_case: CaseResult) -> None:
        nonlocal seen
        seen += 1

    stream = io.BufferedReader(_GeneratedJUnit(blocks))
    tracemalloc.start()
    try:
        counts, problem = scan_junit(stream, source="big.xml", on_case=on_case)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problem is None
    assert seen == counts.tests == 52 * blocks
    assert (counts.failed, counts.skipped) == (blocks, blocks)
    assert peak < 20 * 1024 * 1024


@pytest.mark.parametrize(
    ("attribute", "seconds"),
    [
        ('time="1.5"', 1.5),
        ('time="0"', 0.0),
        ('time="-0"', 0.0),
        ('time=" 22.073 "', 22.073),
        ('time="1e3"', 1000.0),
        ("", None),
        ('time=""', None),
        ('time="1,5"', None),
        ('time="-0.5"', None),
        ('time="nan"', None),
        ('time="inf"', None),
        ('time="1.5s"', None),
    ],
)
def test_a_cases_time_is_its_seconds_or_none_when_not_a_finite_number(attribute, seconds):
    """``time`` is read as seconds; a value that is not a finite number of 0 or more is none,
    never a number added to a duration (read again, from the times read before, the same;
    "-0" is 0, not -0.0, which a sum of durations would not keep)."""
    assert repr(one_case("", f'name="t" {attribute}').time) == repr(seconds)
    assert repr(one_case("", f'name="t" {attribute}').time) == repr(seconds)


@pytest.mark.parametrize(
    "xml", [b"<testsuite><testcase name='a'/></testsuite>", b"<testsuite><testcase name='a'>"]
)
def test_what_the_caller_gathers_goes_when_the_scan_returns(xml: bytes) -> None:
    """The parser's handlers close over it and over ``on_case``: they are let go on return,
    read or broken, so what a file's cases were gathered into is freed then (by its count of
    references), not held until the garbage collector's next full pass."""

    class Gatherer:
        def __init__(self) -> None:
            self.names: list[str] = []

        def __call__(self, case: CaseResult) -> None:
            self.names.append(case.name)

    enabled = gc.isenabled()
    gc.disable()
    try:
        gatherer = Gatherer()
        gone = weakref.ref(gatherer)
        scan_junit(io.BytesIO(xml), source="x.xml", on_case=gatherer)
        del gatherer
        assert gone() is None
    finally:
        if enabled:
            gc.enable()
