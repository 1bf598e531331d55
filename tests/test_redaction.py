"""Redaction: the token in every form it would be written in, each well-known key shape, the
user's patterns; nothing else changed, and no JSON, markdown or HTML broken (issue 24)."""

from __future__ import annotations

import base64
import csv
import html
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ivy_matrix.escaping import escape_name
from ivy_matrix.model import CaseResult
from ivy_matrix.redaction import (
    _CUT_AFTER,
    _OPEN_REACH,
    _PROBES,
    MASK,
    SHAPES,
    Redactor,
    redact_shapes,
    secret_forms,
)
from ivy_matrix.results.junit import scan_junit
from tests.conftest import shared_dir

TOKEN = "4f1d0c3e9b7a26c58e1f0d4b3a2c9e8f7d6b5a41"
# Keys of each shape: (shape, the key, what is left of it).
SAMPLES = [
    ("GitHub token", "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8", MASK),
    ("GitHub token", "gho_" + "Z9y8X7w6V5" * 3 + "u4T3s2", MASK),
    ("GitHub token", "ghu_" + "Q1w2E3r4T5" * 3 + "y6U7i8", MASK),
    ("GitHub token", "ghs_" + "P0o9I8u7Y6" * 3 + "t5R4e3", MASK),
    ("GitHub token", "ghr_" + "M1n2B3v4C5" * 3 + "x6Z7a8", MASK),
    ("GitHub fine-grained token", "github_pat_11ABCDEFG0" + "a1B2c3D4e5" * 8, MASK),
    ("AWS access key id", "AKIAIOSFODNN7EXAMPLE", MASK),
    ("AWS access key id", "ASIAY34FZKBOKMUTVV7A", MASK),
    (
        "private key block",
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n"
            "-----END OPENSSH PRIVATE KEY-----"
        ),
        MASK,
    ),
    ("Slack token", "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", MASK),
    (
        "Slack webhook",
        "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "https://hooks.slack.com/services/***",
    ),
    (
        "JSON web token",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJydW5uZXIifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
        MASK,
    ),
    ("Authorization header", "Authorization: Bearer abc.DEF-123_456", "Authorization: Bearer ***"),
    ("Authorization header", "AUTHORIZATION: basic eC1hY2Nlc3M6dA==", "AUTHORIZATION: basic ***"),
    (
        "password in a URL",
        "postgresql://app:s3cr3t-pa55@db.internal:5432/test",
        "postgresql://app:***@db.internal:5432/test",
    ),
    ("PyPI token", "pypi-AgEIcHlwaS5vcmc" + "Ab1_-" * 12, MASK),
    ("npm token", "npm_" + "a1B2c3D4e5F6" * 3, MASK),
    ("Hugging Face token", "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", MASK),
    ("Google API key", "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6q", MASK),
    ("GitLab token", "glpat-" + "a1B2c3D4e5F6g7H8i9J0", MASK),
    ("Stripe live key", "sk_live_" + "a1B2c3D4e5F6g7H8i9J0k1L2", MASK),
    ("OpenAI or Anthropic key", "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2", MASK),
    ("OpenAI or Anthropic key", "sk-ant-api03-" + "a1B2c3D4e5F6g7H8i9J0k1L2", MASK),
]
KEYS = [secret for _, secret, _ in SAMPLES]
# Texts of the kind test names and failure lines hold, near some shape, that are no secret.
NOT_SECRETS = [
    "ivy_tests.test_ivy.test_functional.test_core.test_gradients::test_adam[cpu-torch-False]",
    "test_ghp_prefix_parsing",
    "AssertionError: ghp_ is not a valid token prefix",
    "test_AKIA_prefix[AKIA]",
    "eyJ is the start of base64 JSON",
    "https://github.com/acme/widgets/actions/runs/1/job/2",
    "git@github.com:acme/widgets.git",
    "http://localhost:8080/api@v2",
    "-----BEGIN CERTIFICATE-----",
    "authorization failed: token expired",
    "test_hf_hub_download[hf_internal_testing]",
    "npm_config_cache is unset",
    "xoxo-gossip",
    "sk_live_mode_is_off",
]


@pytest.mark.parametrize(("secret", "left"), [s[1:] for s in SAMPLES], ids=[s[0] for s in SAMPLES])
def test_each_well_known_shape_is_redacted_in_a_line(secret, left):
    """A key of each shape is replaced by ***, and the text around it is kept."""
    assert redact_shapes(f"failed: {secret} (retry)") == f"failed: {left} (retry)"


def test_every_shape_has_its_keys_above():
    """Each shape the module knows is tested with keys of its own."""
    assert {shape.name for shape in SHAPES} == {shape for shape, _, _ in SAMPLES}


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_names_and_messages_near_a_shape_are_left_alone(text):
    """What only looks like the start of a key is not one."""
    assert redact_shapes(text) == text


def _every_shape(text: str) -> str:
    """``text`` with every shape applied in order, none passed over: what the probes skip."""
    for shape in SHAPES:
        text = shape.pattern.sub(shape.replacement, text)
    return text


def _probed(shape_name: str, match: str) -> bool:
    return any(shape_name in probe.shapes and probe.holds(match) for probe in _PROBES)


def test_every_match_of_a_shape_holds_a_probe_of_that_shape():
    """A shape is applied only when one of its probes is in the text: each key, and each
    match of any shape in the texts near one, holds a probe naming its shape (its rare
    character and its marker)."""
    assert {name for probe in _PROBES for name in probe.shapes} == {s.name for s in SHAPES}
    texts = [f"x {key} y" for key in KEYS] + [key.lower() for key in KEYS] + NOT_SECRETS
    matches = 0
    for text in texts:
        for shape in SHAPES:
            for match in shape.pattern.finditer(text):
                matches += 1
                assert _probed(shape.name, match.group()), (shape.name, match.group())
    assert matches >= len(KEYS)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                *KEYS,
                *(k[: len(k) // 2] for k in KEYS),
                *(k[len(k) // 2 :] for k in KEYS),
                *["gh", "p_", "hf", "_", "xo", "x", "k", "-", "sk", "_live", "AK", "IA", "eyJ"],
                *["Authorization: token ", "UTHORIZATION", "://u:", "@", "npm", "glpat", " "],
                *["https://", "hooks.slack.com/services/", "pypi-AgE", "PRIVATE KEY", "\n"],
            ]
        ),
        max_size=16,
    ).map("".join)
)
def test_the_shapes_found_by_the_probes_redact_as_every_shape_would(text):
    """Texts made of keys, their halves and their markers' parts: applying the shapes the
    probes found gives what applying every shape in order gives."""
    assert redact_shapes(text) == _every_shape(text)
    for shape in SHAPES:
        for match in shape.pattern.finditer(text):
            assert _probed(shape.name, match.group()), (shape.name, match.group())


@pytest.mark.corpus
def test_no_name_or_message_of_the_junit_corpus_is_redacted():
    """Not one test name, classname, file, suite or failure line of the corpus (78,000
    texts) changes: the shapes have no false positives there."""
    corpus = shared_dir("junit-corpus")
    with (corpus / "expected.tsv").open(encoding="utf-8", newline="") as listing:
        rows = list(csv.DictReader(listing, delimiter="\t", quoting=csv.QUOTE_NONE))
    texts = 0
    changed = []
    for row in rows:
        cases: list[CaseResult] = []
        with (corpus / row["file"]).open("rb") as stream:
            scan_junit(stream, source=row["file"], on_case=cases.append)
        for case in cases:
            for text in (case.name, case.classname, case.file, case.suite, case.message):
                texts += 1
                if redact_shapes(text) != text:
                    changed.append(text)
    assert texts > 10_000
    assert changed == []


def test_the_token_is_redacted_in_every_form_it_would_be_written_in():
    """As given, in JSON, markdown, HTML, a URL, Python's repr, and base64 as a basic-auth
    header carries it."""
    token = 'v1.4f1d0c3e"9b7a&26<c5>8e1f|0d4b'
    redact = Redactor.of([token])
    forms = [
        token,
        json.dumps(token)[1:-1],
        escape_name(token),
        html.escape(token),
        "v1.4f1d0c3e%229b7a%2626%3Cc5%3E8e1f%7C0d4b",
        repr(token)[1:-1],
        base64.b64encode(f"x-access-token:{token}".encode()).decode(),
        base64.b64encode(f"{token}:".encode()).decode(),
    ]
    for form in forms:
        assert redact(f"<{form}>") == f"<{MASK}>", form
    assert set(forms) <= secret_forms(token)


def test_a_short_secret_is_no_secret():
    """A value under 8 characters (tests use "t") is left alone: it would mangle every text."""
    assert secret_forms("t") == frozenset()
    assert Redactor.of(["tokn", " "])("a token") == "a token"


def test_user_patterns_are_applied_after_the_token_and_the_shapes():
    """A pattern of the project's own hides its secret; the token and shapes still are."""
    redact = Redactor.of([TOKEN], [re.compile(r"corp-\d{6}")])
    assert redact(f"{TOKEN} corp-204518 AKIAIOSFODNN7EXAMPLE") == "*** *** ***"


def test_may_hide_is_a_quick_look_that_misses_nothing():
    """may_hide is False only for texts that redaction leaves as they are."""
    redactor = Redactor.of([TOKEN])
    for text in [*NOT_SECRETS, "plain text"]:
        assert redactor.may_hide(text) or redactor(text) == text
    for secret in KEYS:
        assert redactor.may_hide(f"x {secret} y")
    assert redactor.may_hide(f"test_{TOKEN}")
    assert not redactor.may_hide("test_adam\ntest_sgd")
    assert Redactor(patterns=(re.compile("x"),)).may_hide("anything")


def test_a_redacted_json_document_stays_valid_and_holds_no_key():
    """Every key in a JSON document (ASCII or not) is replaced without breaking the JSON (no
    shape matches past a quote or a backslash): the document read back is the one its
    values, redacted, make."""

    def document(values: list[tuple[str, str]]) -> dict[str, object]:
        return {
            "messages": [f'error "{value}"\n\tat line 2' for _, value in values],
            **{f"key {value}": value for _, value in values},
        }

    given = [(secret, secret) for secret in KEYS] + [(TOKEN, TOKEN)]
    expected = [(secret, left) for _, secret, left in SAMPLES] + [(TOKEN, MASK)]
    for ascii_only in (True, False):
        text = json.dumps(document(given), ensure_ascii=ascii_only)
        assert json.loads(Redactor.of([TOKEN])(text)) == document(expected)


def test_a_redacted_markdown_table_keeps_its_cells():
    """Keys in escaped table cells are replaced; the cells and the table stay whole."""
    cells = [escape_name(f"{secret} | x") for secret in KEYS]
    table = "".join(f"| {cell} | ok |\n" for cell in cells)
    redacted = redact_shapes(table)
    assert [line.count(" | ") for line in redacted.splitlines()] == [
        line.count(" | ") for line in table.splitlines()
    ]
    assert all(line.endswith(" | ok |") for line in redacted.splitlines())


def test_a_cached_redactor_gives_the_same_texts():
    """The memory of a cached redactor changes nothing but the time."""
    redactor = Redactor.of([TOKEN])
    redact = redactor.cached()
    texts = [*NOT_SECRETS, *KEYS, TOKEN] * 2
    assert [redact(t) for t in texts] == [redactor(t) for t in texts]


# A text in pieces (Redactor.pieces, the guard's scrub_pieces): lines enough for a cut.
_LINES = "x = 1,\n" * (_CUT_AFTER // 7 + 1)
# Secrets that hold line breaks: the two shapes whose white space takes them, and a token.
_SPANNING = [
    "-----BEGIN RSA PRIVATE KEY-----\r\n"
    + "MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2+/=\r\n" * 40
    + "-----END RSA PRIVATE KEY-----",
    "Authorization:\nBearer abc.DEF-123_456",
    "authorization\n=\n'token\n\tabc",
    "Authorization: Bearer\n\nabc",
    "Authorization:" + "\n" * (_OPEN_REACH + 10) + "  basic\n eC1hY2Nlc3M6dA==",
]


@pytest.mark.parametrize(
    "secret",
    [*KEYS, *sorted(secret_forms(TOKEN)), *_SPANNING],
    ids=[s[0] for s in SAMPLES] + ["token form"] * len(secret_forms(TOKEN)) + ["spanning"] * 5,
)
def test_a_text_in_pieces_is_redacted_as_it_is_whole(secret):
    """Cut anywhere in or around a secret of each shape, each form of the token, and secrets
    across line breaks (a private key block, an Authorization header, one whose white space
    is longer than the reach looked back at): the pieces redacted give the text redacted
    whole (no secret straddles two parts)."""
    redactor = Redactor.of([TOKEN])
    text = f"{_LINES}failed: {secret} (retry)\n{_LINES}"
    whole = redactor(text)
    assert secret not in whole
    begin = len(_LINES)
    step = max(1, len(secret) // 200)  # the long ones: 200 places or so
    for at in range(begin - 2, begin + len(secret) + 12, step):
        assert "".join(redactor.pieces([text[:at], text[at:]])) == whole, at
    # Small pieces: a cut is looked for after each once enough is held.
    pieces = [text[at : at + 1000] for at in range(0, len(text), 1000)]
    assert "".join(redactor.pieces(pieces)) == whole


def test_a_text_in_pieces_is_redacted_a_part_at_a_time():
    """Lines without a secret are given back in parts of about _CUT_AFTER characters, each
    ending at a line break; a token that holds a line break, or a user's pattern, takes the
    text whole."""
    pieces = ["y\n" * 5000] * 100
    parts = list(Redactor.of([TOKEN]).pieces(pieces))
    assert "".join(parts) == "".join(pieces)
    assert len(parts) >= 100 * 10_000 // (_CUT_AFTER + 10_000)
    assert max(map(len, parts)) <= _CUT_AFTER + 10_000
    assert all(part.endswith("\n") for part in parts)
    assert len(list(Redactor.of(["abcdefgh\nijklmnop"]).pieces(pieces))) == 1
    assert len(list(Redactor.of(patterns=[re.compile("q")]).pieces(pieces))) == 1


def test_no_other_shape_matches_across_a_line_break():
    """The pieces are cut after line breaks: only the two shapes _SPANNING tests (looked for
    by redaction._open) may match one; a line break put anywhere in another's key leaves no
    match that holds it."""
    spanning = {"private key block", "Authorization header"}
    for name, secret, _ in SAMPLES:
        shape = next(s for s in SHAPES if s.name == name)
        if name in spanning:
            continue
        for at in range(len(secret) + 1):
            broken = f"x {secret[:at]}\n{secret[at:]} y"
            assert all("\n" not in m.group() for m in shape.pattern.finditer(broken)), name


def test_a_header_is_redacted_alike_whatever_the_rest_of_the_text_holds():
    """A header is found by its own marker, not one elsewhere in the text: whole and in
    pieces, a header written in mixed case is left alike (the known gap), where the
    whole text once redacted it when another line held "Authorization" and a piece
    without that line did not."""
    redactor = Redactor()
    mixed = "authorizaTion: bearer abc123\n"
    text = f"{_LINES}see the Authorization docs\n{_LINES}{mixed}"
    at = len(text) - len(mixed)
    assert "".join(redactor.pieces([text[:at], text[at:]])) == redactor(text) == text
    assert redactor(f"Authorization: Bearer x\n{mixed}") == f"Authorization: Bearer ***\n{mixed}"


# Fragments of every shape and token form, what their frames are made of, and the line
# breaks and white space a cut may fall in or after.
_FRAGMENTS = [
    *KEYS,
    *sorted(secret_forms(TOKEN)),
    TOKEN[:20],
    TOKEN[20:],
    *(piece for name, key, _ in SAMPLES for piece in (key[: len(key) // 2], key[len(key) // 2 :])),
    *["\n", "\r\n", " ", "\t", " " * 40, "\\n", ",", "'", '"', ":", "=", "@", "*", MASK, "x"],
    *["Authorization", "AUTHORIZATION", "authorizaTion", "bearer", "Basic", "TOKEN", " abc.DE"],
    *["-----BEGIN RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA3Tz2", "-----END RSA PRIVATE KEY-----"],
    *["://u:", "hooks.slack.com/services/", "eyJ", "é", "\u2028"],
]
_FILLERS = [_LINES, " " * _OPEN_REACH, "\n" * _OPEN_REACH, "AAAA\n" * (_CUT_AFTER // 5)]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=12).map("".join),
            st.sampled_from(_FILLERS),
        ),
        min_size=1,
        max_size=8,
    ).map("".join),
    st.lists(st.floats(min_value=0, max_value=1), max_size=10),
)
def test_any_text_cut_anywhere_is_redacted_in_pieces_as_it_is_whole(text, places):
    """Texts made of fragments of every shape and token form, with enough between them for
    the pieces to be cut, given in pieces cut at random places: the pieces redacted join to
    the text redacted whole."""
    redactor = Redactor.of([TOKEN])
    cuts = sorted({round(place * len(text)) for place in places})
    pieces = [text[begin:end] for begin, end in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert "".join(redactor.pieces(pieces)) == redactor(text)
