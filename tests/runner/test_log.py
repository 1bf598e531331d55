"""Tests for runner/log.py: what the log and the step outputs can never be made to do."""

from __future__ import annotations

import io

import pytest

from ivy_matrix.runner.log import Log, append_output, plain_line

pytestmark = pytest.mark.timeout(10)


def test_a_value_holding_the_delimiter_gets_another_one(tmp_path):
    """A multi-line output value never contains the delimiter that frames it."""
    delimiters = iter(["EOF", "EOF2", "SAFE"])
    output = tmp_path / "output"
    value = "line\nEOF\ninjected=1\nEOF2"
    append_output(output, "summary", value, new_delimiter=lambda: next(delimiters))
    assert output.read_text(encoding="utf-8") == f"summary<<SAFE\n{value}\nSAFE\n"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("a\nb", "a\\nb"),
        ("a\r::stop-commands::t", "a\\r::stop-commands::t"),
        ("::error::x", "\\::error::x"),
        ("\t \u00a0::error::x", "\\\t \u00a0::error::x"),
        ("name ##[add-mask]s", "name ##\\[add-mask]s"),
        ("esc \x1b[31m red", "esc \\x1b[31m red"),
        ("next\u2028line", "next\\u2028line"),
        ("plain text: fine", "plain text: fine"),
    ],
)
def test_plain_lines_are_one_line_and_never_a_command(message, expected):
    """A plain line shows breaks and controls as escapes and cannot start a workflow command."""
    assert plain_line(message) == expected


def test_commands_escape_their_data_and_properties():
    """Annotation data and properties, and group titles, are escaped as the runner expects."""
    stream = io.StringIO()
    log = Log(github_actions=True, stream=stream)
    log.warning("50%\n::error::x ##[add-mask]s", file="a,b:c\n.xml", title="t\r::x")
    with log.group("files\n::error::g"):
        log.info("::notice::inside")
    assert stream.getvalue().splitlines() == [
        "::warning file=a%2Cb%3Ac%0A.xml,title=t%0D%3A%3Ax::50%25%0A::error::x ##\\[add-mask]s",
        "::group::files%0A::error::g",
        "\\::notice::inside",
        "::endgroup::",
    ]


def test_a_traceback_is_printed_line_by_line_neutralised(capsys):
    """A crash report prints each line of the traceback, none of them a command."""
    Log(github_actions=True).traceback("Traceback:\n  ::error::boom\nValueError: ##[x]")
    assert capsys.readouterr().err.splitlines() == [
        "Traceback:",
        "\\  ::error::boom",
        "ValueError: ##\\[x]",
    ]


BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"


@pytest.mark.parametrize("char", list(BIDI + INVISIBLE), ids=lambda c: f"U+{ord(c):04X}")
def test_bidi_and_invisible_characters_show_as_escapes_in_every_line(char):
    """A bidi control or zero-width character never reaches the log raw: plain lines,
    annotation data, file and title properties and group titles show it as an escape."""
    stream = io.StringIO()
    log = Log(github_actions=True, stream=stream)
    text = f"test_{char}evil.py"
    log.info(text)
    log.warning(text, file=text, title=text)
    with log.group(text):
        pass
    printed = stream.getvalue()
    assert char not in printed
    assert printed.count(f"\\u{ord(char):04x}") == 5
