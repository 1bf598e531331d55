"""Read JUnit XML as a stream of CaseResults, safely and in flat memory.

Pure: works on a binary stream it is given and touches no filesystem and no network.

The reader is built directly on pyexpat, with the guards of ``defusedxml`` applied to the raw
parser: an entity declaration stops the parse (no billion laughs), external entities and the
external DTD subset are never loaded (no XXE, no network). Only the start and end of elements
are seen by Python; character data is handed over only while the text of a deciding
``<failure>``/``<error>`` is wanted for its message, and only up to a small cap, so that
``system-out`` and long tracebacks never sit in memory.

A case's ``time`` attribute is read as seconds (``CaseResult.time``): a value that is not a
finite number of 0 or more (``1,5``, ``-1``, ``nan``) counts as none, so that it is never
added to a duration (``-0`` is 0). Each distinct text is converted once: the cases of one
value share one number.

Classification follows ``shared/junit-corpus/README.md``: by the result elements that are
direct children of ``<testcase>``, error > failure > skipped > passed; ``<flakyFailure>`` or
``<flakyError>`` without a final failure or error is a flaky pass; ``<rerunFailure>`` and
``<rerunError>`` change nothing, and ``status=`` attributes are ignored. A case pytest writes
for a whole module skipped or broken at collection is read as that module's
:data:`MODULE_CASE`.

Encodings are found and, where expat cannot read them, transcoded to UTF-8 by
``encodings.py``; an encoding that cannot be read is a problem for the file, never an
exception.

Input limits, so that memory stays flat whatever the file holds: names (``name``,
``classname``, ``file``, suite names) longer than :data:`NAME_CAP` characters are shortened with
a hash of the whole name (:func:`cap_name`); a message keeps its first non-blank line (from
the ``message`` attribute, else the text), cut at :data:`MESSAGE_CAP`. Expat
buffers a whole tag before handing over its attributes, so a file in which a single tag,
comment or declaration grows past :data:`MARKUP_CAP` bytes is refused as a problem, and so is
one with elements nested deeper than :data:`DEPTH_CAP`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import BinaryIO, NoReturn
from xml.parsers import expat

from ivy_matrix.model import CaseResult, CaseStatus, FileCounts, ParseProblem
from ivy_matrix.results.encodings import (
    HEAD_BYTES,
    BadInputError,
    plan_decoding,
    raw_chunks,
    utf8_chunks,
)

MESSAGE_CAP = 500
"""Longest message kept for a case, in characters."""

NAME_CAP = 1000
"""Longest test name, classname, file or suite name kept, in characters (see cap_name)."""

LINE_CAP = 9
"""Longest ``line`` attribute kept, in characters (a line number; anything else is dropped
where it is used)."""

MARKUP_CAP = 1 << 20
"""Longest single tag, comment or declaration read, in bytes (as UTF-8): 1 MiB."""

READ_CHUNK = 1 << 17
"""Bytes of a file read and fed to expat at a time: 128 KiB. A MiB at a time left the C heap
several MiB larger for the rest of the update (once malloc's threshold for mapping a block of
its own rises past a freed MiB, every later one comes from its heap, and what the update
frees there is not given back while anything above it lives): the fresh update of 200k
cases peaked 1 MB higher. Smaller reads cost nothing measurable (260 of them for 33 MB)."""

DEPTH_CAP = 1000
"""Deepest element nesting read."""

PROPERTIES_CAP = 64
"""Most suite properties kept of one file."""

MODULE_CASE = "(module)"
"""The name of a case that stands for a whole test module: pytest writes a module skipped or
failed at collection as ``classname=""``, its dotted path as ``name``, and one of these
messages; it is read as class ``name``, case ``(module)``, so that it lands on the module's
dashboard like its tests."""
_COLLECTION = frozenset({"collection skipped", "collection failure"})

# Raw text buffered from a failure without a message attribute: enough to find its first
# non-blank line even after some leading blank lines, and never more.
_TEXT_CAP = 4 * MESSAGE_CAP

_JUNIT_ROOTS = frozenset({"testsuites", "testsuite"})
# Where a nameless testcase's line is kept among its attributes: no XML name has a space.
_LINE = " line"
_new_tuple = tuple.__new__

# Ranks of a testcase's direct result children; a higher rank decides the bucket.
_PASSED, _SKIPPED, _FAILED, _ERROR = 0, 1, 2, 3
_FLAKY = -1
_RANKS = {
    "skipped": _SKIPPED,
    "failure": _FAILED,
    "error": _ERROR,
    "flakyFailure": _FLAKY,
    "flakyError": _FLAKY,
}
_STATUS = (CaseStatus.PASSED, CaseStatus.SKIPPED, CaseStatus.FAILED, CaseStatus.ERROR)
_INF = float("inf")
# Each ``time`` attribute read, to its seconds (None: not a duration): runners write a few
# thousand values (pytest's milliseconds), each is converted once. At most _TIMES_KEPT.
_TIMES: dict[str, float | None] = {}
_TIMES_KEPT = 1 << 14
_UNREAD = -1.0  # what no time is read as (_TIMES holds no negative number)

REFUSED_ENTITIES = (
    "refused: the file declares XML entities (possible entity-expansion or XXE attack)"
)
REFUSED_EXTERNAL = "refused: the file references an external entity (possible XXE attack)"


def _refuse_external(*_args: object) -> NoReturn:
    # Unreachable while parameter-entity parsing is off and entity declarations are refused;
    # kept so that no future change can make expat fetch anything.
    raise BadInputError(REFUSED_EXTERNAL, None)


def cap_name(name: str) -> str:
    """Return ``name``, or when it is longer than NAME_CAP, its start, "…" and a hash of it.

    The result is NAME_CAP characters long, and different names stay different: the hash is
    the first 12 hex digits of the SHA-256 of the whole name. A parametrized name keeps its
    closing ``]``, so that it still collapses into its test function's row.
    """
    if len(name) <= NAME_CAP:
        return name
    import hashlib  # noqa: PLC0415  -- loads OpenSSL (~4 MB of memory): only long names need it

    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    if name.endswith("]"):
        return f"{name[: NAME_CAP - 14]}…{digest}]"
    return f"{name[: NAME_CAP - 13]}…{digest}"


def _refuse_long_markup(line: int) -> NoReturn:
    raise BadInputError(
        f"a single tag, comment or declaration is longer than {MARKUP_CAP >> 20} MiB "
        f"(from line {line}); ivy-matrix does not read markup that long",
        line,
    )


def _too_deep() -> str:
    return (
        f"elements are nested more than {DEPTH_CAP} deep; "
        "ivy-matrix does not read files nested that deep"
    )


# Whatever str.splitlines splits at: a message with none is one line already.
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]").search


def _seconds(text: str) -> float | None:
    """A case's ``time`` attribute as seconds: None unless a finite number of 0 or more."""
    try:
        seconds = float(text)
    except ValueError:
        return None
    if not 0.0 <= seconds < _INF:  # NaN fails both comparisons
        return None
    seconds = seconds or 0.0  # "-0" is 0
    if len(_TIMES) < _TIMES_KEPT:
        _TIMES[text] = seconds
    return seconds


def _first_line(text: str) -> str:
    """Return the first non-blank line of ``text``, stripped and capped."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped:
            return stripped[:MESSAGE_CAP]
    return ""


# Longer than the usual 60 lines: the expat hot loop. Every callback is a closure over the
# same local state, run once per XML element of files of up to gigabytes; splitting it into
# methods would cost an attribute lookup per element.
def scan_junit(  # noqa: C901, PLR0915  -- one closure per expat callback, kept together for speed
    stream: BinaryIO,
    *,
    source: str,
    on_case: Callable[[CaseResult], None],
    on_nameless: Callable[[int], None] | None = None,
    chunk_size: int = READ_CHUNK,
    properties: dict[str, str] | None = None,
) -> tuple[FileCounts, ParseProblem | None]:
    """Stream one JUnit XML file, calling ``on_case`` for every ``<testcase>`` as it ends.

    With ``on_nameless``, a ``<testcase>`` without a name (an interrupted run writes them) is
    passed to it instead, as the line it starts on; it is still counted.

    With ``properties``, each ``<property name= value=>`` outside any test case (a suite's
    ``<properties>``: pytest's ``record_testsuite_property``) is put in it, at most
    :data:`PROPERTIES_CAP` names (a later one of a name wins).

    ``source`` names the file in the counts and in any problem. Returns the file's counts and
    ``None``, or, when the file is empty, not well-formed, not JUnit or refused as unsafe,
    zero counts carrying the problem's message, and the problem (with a line when known).
    Bad input never raises; only errors from ``stream.read`` propagate.

    A file can turn out to be broken after some of its cases were already passed to
    ``on_case``. Those cases are the caller's to discard: accumulate per file and drop the
    file's contribution when a problem is returned.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, not {chunk_size}")
    parser = expat.ParserCreate()
    parser.buffer_text = True
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def refuse_entities(*_args: object) -> NoReturn:
        raise BadInputError(REFUSED_ENTITIES, parser.CurrentLineNumber)

    parser.EntityDeclHandler = refuse_entities
    parser.UnparsedEntityDeclHandler = refuse_entities
    parser.ExternalEntityRefHandler = _refuse_external

    tally = [0, 0, 0, 0]  # indexed by rank: passed, skipped, failed, error
    known_seconds = _TIMES.get
    flaky_count = 0
    suite = ""  # name of the innermost open testsuite
    outer_suites: list[str] = []
    depth = 0
    # The open testcase: its attributes, depth, best rank so far, flaky flag and message.
    case: dict[str, str] | None = None
    case_depth = -2  # so that no element is a "direct child" while no case is open
    rank = _PASSED
    flaky = False
    message = ""
    outer: list[tuple[dict[str, str] | None, int, int, bool, str]] = []  # testcase in testcase
    # Text of a deciding failure/error that has no message attribute.
    capture_depth = -1
    text: list[str] = []
    text_len = 0

    def on_text(data: str) -> None:
        # Only appends until the cap; unsetting the handler from inside it would make pyexpat
        # flush its text buffer into this very handler again.
        nonlocal text_len
        if text_len < _TEXT_CAP:
            text.append(data[:_TEXT_CAP])
            text_len += len(data)

    def start(name: str, attrs: dict[str, str]) -> None:  # noqa: C901, PLR0912  -- the hot loop, kept flat
        nonlocal depth, case, case_depth, rank, flaky, message, capture_depth, text_len, suite
        depth += 1
        if name == "testcase":
            if case is not None:
                if depth > DEPTH_CAP:
                    raise BadInputError(_too_deep(), parser.CurrentLineNumber)
                outer.append((case, case_depth, rank, flaky, message))
            if on_nameless is not None and not attrs.get("name"):
                attrs[_LINE] = str(parser.CurrentLineNumber)
            case = attrs
            case_depth = depth
            rank = _PASSED
            flaky = False
            message = ""
            return
        if depth != case_depth + 1:
            if depth > DEPTH_CAP:
                raise BadInputError(_too_deep(), parser.CurrentLineNumber)
            if name == "testsuite":
                outer_suites.append(suite)
                suite = cap_name(attrs.get("name", ""))
            elif name == "property" and case is None and properties is not None:
                key = attrs.get("name", "")[:NAME_CAP]
                if key and (key in properties or len(properties) < PROPERTIES_CAP):
                    properties[key] = attrs.get("value", "")[:MESSAGE_CAP]
            return
        kind = _RANKS.get(name)
        if kind is None:
            if name == "testsuite":
                outer_suites.append(suite)
                suite = cap_name(attrs.get("name", ""))
            return
        if kind == _FLAKY:
            flaky = True
        elif kind > rank:
            rank = kind
            message = attrs.get("message", "")
            # Only the first line is kept, as a message without the attribute (the text).
            message = _first_line(message) if _LINE_BREAK(message) else message[:MESSAGE_CAP]
            if not message and kind != _SKIPPED:
                capture_depth = depth
                text.clear()
                text_len = 0
                parser.CharacterDataHandler = on_text

    def end(name: str) -> None:  # noqa: PLR0912  -- the hot loop, kept flat
        nonlocal depth, case, case_depth, rank, flaky, message, capture_depth, flaky_count, suite
        if name == "testcase":
            assert case is not None
            is_flaky = flaky and not rank
            case_name = case.get("name", "")
            classname = case.get("classname")
            if classname is None:
                classname = case.get("class", "")
            file = case.get("file", "")
            seconds: float | None = None
            text_time = case.get("time")
            if text_time is not None:
                seconds = known_seconds(text_time, _UNREAD)
                if seconds == _UNREAD:
                    seconds = _seconds(text_time)
            if len(case_name) > NAME_CAP or len(classname) > NAME_CAP or len(file) > NAME_CAP:
                case_name, classname, file = (
                    cap_name(case_name),
                    cap_name(classname),
                    cap_name(file),
                )
            if not classname and message in _COLLECTION and rank in (_SKIPPED, _ERROR):
                # pytest's report of a whole module (a module-level skip, an import error):
                # the module as the class, so that it lands on the module's dashboard.
                classname, case_name = case_name, MODULE_CASE
            if not case_name and on_nameless is not None:
                on_nameless(int(case.get(_LINE, "0")))
            else:
                # tuple.__new__ straight from C: the NamedTuple's own __new__ is a Python
                # function, one more call per case.
                on_case(
                    _new_tuple(
                        CaseResult,
                        (
                            case_name,
                            classname,
                            file,
                            suite,
                            _STATUS[rank],
                            is_flaky,
                            message,
                            # Where the test is, for a failure's annotation only.
                            case.get("line", "")[:LINE_CAP] if rank >= _FAILED else "",
                            seconds,
                        ),
                    )
                )
            tally[rank] += 1
            if is_flaky:
                flaky_count += 1
            if outer:
                case, case_depth, rank, flaky, message = outer.pop()
            else:
                case = None
                case_depth = -2
        elif depth == capture_depth:
            parser.CharacterDataHandler = None
            capture_depth = -1
            message = _first_line("".join(text))
            text.clear()
        elif name == "testsuite":
            suite = outer_suites.pop()
        depth -= 1

    def start_root(name: str, attrs: dict[str, str]) -> None:
        if name not in _JUNIT_ROOTS:
            raise BadInputError(
                f"not a JUnit XML file: root element is <{name}>, "
                "expected <testsuites> or <testsuite>",
                parser.CurrentLineNumber,
            )
        parser.StartElementHandler = start
        start(name, attrs)

    parser.StartElementHandler = start_root
    parser.EndElementHandler = end

    try:
        problem = _parse(parser, stream, source, chunk_size)
    finally:
        # The handlers close over the parser and the caller's ``on_case`` (and what it
        # gathers): without them the parser is no cycle, and all of it goes as soon as this
        # returns, not at the garbage collector's next full pass.
        parser.StartElementHandler = parser.EndElementHandler = None
        parser.CharacterDataHandler = parser.EntityDeclHandler = None
        parser.UnparsedEntityDeclHandler = None
    if problem is not None:
        return FileCounts(path=source, problem=problem.message), problem
    passed, skipped, failed, errors = tally
    counts = FileCounts(
        path=source,
        tests=passed + skipped + failed + errors,
        passed=passed,
        failed=failed,
        errors=errors,
        skipped=skipped,
        flaky=flaky_count,
    )
    return counts, None


def _parse(
    parser: expat.XMLParserType, stream: BinaryIO, source: str, chunk_size: int
) -> ParseProblem | None:
    """Feed ``stream`` to ``parser`` (its handlers set); the problem that stopped it, if any."""
    head = stream.read(chunk_size)
    if not head:
        return ParseProblem(source=source, message="file is empty", line=None)
    try:
        more = head
        while more and len(head) < HEAD_BYTES:
            more = stream.read(chunk_size)
            head += more
        codec, skip = plan_decoding(head, complete=not more)
        chunks = (
            raw_chunks(head, stream, chunk_size)
            if codec is None
            else utf8_chunks(head, stream, chunk_size, codec, skip)
        )
        del head, more  # the generator holds the start of the file until it is fed
        fed = 0
        for chunk in chunks:
            parser.Parse(chunk, False)  # noqa: FBT003  -- pyexpat takes isfinal positionally
            # Expat keeps an unfinished tag, comment or declaration whole: never let it grow.
            fed += len(chunk)
            if fed - parser.CurrentByteIndex > MARKUP_CAP:
                _refuse_long_markup(parser.CurrentLineNumber)
        parser.Parse(b"", True)  # noqa: FBT003  -- as above
    except expat.ExpatError as exc:
        return ParseProblem(
            source=source,
            message=f"not well-formed XML: {expat.ErrorString(exc.code)} (line {exc.lineno})",
            line=exc.lineno,
        )
    except BadInputError as exc:
        return ParseProblem(source=source, message=exc.message, line=exc.line)
    return None
