"""Secrets kept out of everything ivy-matrix writes: the token it was given, well-known key
shapes, and the patterns a user adds (``redact``).

Pure: no I/O. A :class:`Redactor` replaces each secret it knows with :data:`MASK`. It is used
twice (docs/github.md, "Secrets"):

- where untrusted text enters (results/collector.py: failure lines, failed test ids,
  dashboard and row names; results/legs.py: leg files; the environment a command or a result
  file reports), with the token, the shapes and the user's patterns, so that nothing
  downstream holds a secret;
- at every write (runner/guard.py: local files, log lines, step outputs, the job summary,
  GitHub requests, git objects), with the token and the shapes only: a user's pattern could
  match across the structure of a JSON or markdown file, which these never do (their
  characters stop at quotes, backslashes, ``|`` and ``<``).

The token is caught as given and in the forms it would take in what is written: escaped for
JSON, markdown, HTML, a URL or Python's ``repr``, and base64-encoded as an ``Authorization:
basic`` header carries it (``x-access-token:TOKEN`` as git sends it, ``TOKEN:`` as ``curl -u
TOKEN:`` does). A "secret" shorter than :data:`SECRET_MIN` characters is no token (tests pass
``t``) and is left alone.
"""

from __future__ import annotations

import base64
import html
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ivy_matrix.escaping import escape_name

MASK = "***"
# GitHub's shortest tokens are 40 characters; anything under this is no secret worth hiding.
SECRET_MIN = 8
# Texts a cached redactor remembers (failure lines of at most 500 characters: about 50 MB).
_REMEMBERED = 100_000


@dataclass(frozen=True, slots=True)
class Shape:
    """A well-known kind of secret: its pattern, and what a match becomes."""

    name: str
    pattern: re.Pattern[str]
    replacement: str = MASK


def _shape(name: str, pattern: str, replacement: str = MASK) -> Shape:
    return Shape(name, re.compile(pattern), replacement)


# Each has a prefix or a frame no test name or message has by chance, and a length; their
# characters never include a quote, a backslash, "|", "<" or ">", so replacing a match cannot
# break the JSON, markdown or HTML around it. docs/github.md lists them. Applied in this order.
SHAPES: tuple[Shape, ...] = (
    _shape("GitHub token", r"(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}"),
    _shape("GitHub fine-grained token", r"github_pat_[A-Za-z0-9_]{22,}"),
    _shape("AWS access key id", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _shape("Google API key", r"AIza[0-9A-Za-z_-]{35}"),
    # The block to its end marker, its lines as read or as JSON writes them ("\n"), to the
    # last character that is not white space.
    _shape(
        "private key block",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[A-Za-z0-9+/=\s:,.-]|\\[nr]){0,8192}(?<!\s)",
    ),
    _shape("Slack token", r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}"),
    _shape(
        "Slack webhook",
        r"(hooks\.slack\.com/(?:services|workflows)/)[A-Za-z0-9/_-]+",
        r"\g<1>" + MASK,
    ),
    _shape(
        "JSON web token",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
    ),
    _shape(
        "Authorization header",
        r"([Aa](?:uthorization|UTHORIZATION)[\"']?\s*[:=]\s*[\"']?(?i:basic|bearer|token)"
        r"\s+)[A-Za-z0-9+/=._~-]+",
        r"\g<1>" + MASK,
    ),
    _shape(
        "password in a URL",
        r"(://[^\s/:@\"'<>\\|`]+:)[^\s/@\"'<>\\|`]+(@)",
        r"\g<1>" + MASK + r"\g<2>",
    ),
    _shape("PyPI token", r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    _shape("npm token", r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    _shape("Hugging Face token", r"(?<![A-Za-z0-9_])hf_[A-Za-z]{34}(?![A-Za-z0-9_])"),
    _shape("GitLab token", r"glpat-[0-9A-Za-z_-]{20,}"),
    _shape("Stripe live key", r"(?<![A-Za-z0-9])[sr]k_live_[0-9A-Za-z]{24,}"),
    _shape("OpenAI or Anthropic key", r"sk-(?:proj|ant)-[A-Za-z0-9_-]{20,}"),
)


@dataclass(frozen=True, slots=True)
class _Probe:
    """What every match of some shapes holds: the character ``rare`` and the ``marker``. A
    text is looked through for each probe, and only the shapes of those found are applied:
    ``rare`` first (one ``memchr``; most text written, test names and their pages, has no
    capital letter), then the marker (a string, or a pattern that starts with a literal
    character: ``re`` runs through a text for that one character about twice as fast as
    ``in`` finds a short string). The last guard looks through every byte written: 36 MB
    for a fresh update of 200k cases."""

    rare: str
    marker: str | re.Pattern[str]
    shapes: frozenset[str]

    def holds(self, text: str) -> bool:
        if self.rare not in text:
            return False
        marker = self.marker
        return marker in text if isinstance(marker, str) else marker.search(text) is not None


def _probe(rare: str, marker: str | re.Pattern[str], *shapes: str) -> _Probe:
    return _Probe(rare, marker, frozenset(shapes))


# A replacement never makes a marker (none holds "*", and what a match keeps was there), so
# the probes found in a text before any shape is applied are all those a shape could need.
# Shapes alike in their marker's first letter share a probe: one run through the text.
_PROBES: tuple[_Probe, ...] = (
    _probe(
        "g",
        re.compile(r"g(?:h[pousr]_|ithub_pat_|lpat-)"),
        "GitHub token",
        "GitHub fine-grained token",
        "GitLab token",
    ),
    _probe("A", re.compile(r"A(?:KIA|SIA|Iza)"), "AWS access key id", "Google API key"),
    _probe("K", "PRIVATE KEY", "private key block"),
    _probe("x", re.compile("xox"), "Slack token"),
    _probe("h", re.compile(r"h(?:ooks\.slack\.com/|f_)"), "Slack webhook", "Hugging Face token"),
    _probe("J", "eyJ", "JSON web token"),
    # Found as the shape writes them: a match holds one, whatever else the text holds (a
    # text in pieces finds the marker in the piece that has the match: Redactor.pieces).
    _probe("z", "uthorization", "Authorization header"),
    _probe("Z", "UTHORIZATION", "Authorization header"),
    _probe("@", "@", "password in a URL"),
    _probe("E", "pypi-AgE", "PyPI token"),
    _probe("_", re.compile("npm_"), "npm token"),
    _probe(
        "k", re.compile(r"k(?:-(?:proj|ant)-|_live_)"), "Stripe live key", "OpenAI or Anthropic key"
    ),
)

# What a text given in pieces (Redactor.pieces) may be cut after: a raw line break, where only
# two shapes can go on (their white space takes line breaks; no other shape's match holds
# one). These find the start of either that a cut would leave open: the text before the cut
# ends inside its match. A private key block's match is at most 16,456 characters long (its
# header and 8192 units of body, 2 characters at most each): it starts within the last
# _OPEN_REACH characters. An Authorization header's white space is unbounded, but its match
# holds at most 22 other characters: one that started earlier leaves that few in them.
_OPEN_REACH = 1 << 15
_OPEN_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[A-Za-z0-9+/=\s:,.-]|\\[nr]){0,8192}\Z"
)
_OPEN_HEADER = re.compile(
    r"(?i)authorization[\"']?\s*(?:[:=]\s*(?:[\"']?(?:basic|bearer|token)\s*)?)?\Z"
)
_FEW_MARKS = re.compile(r"\s*(?:\S\s*){0,22}\Z")  # what an earlier header's match leaves
# What an open header's match has before its last white space: the end of "authorization",
# "basic", "bearer" or "token", a quote, ":" or "=" (a cut after other text needs no search).
_HEADER_ENDS = frozenset("nNcCrR\"':=")
_CUT_AFTER = 1 << 16  # characters held before a cut is looked for


def _open(text: str, cut: int) -> bool:
    """Whether a match of a shape may start before ``cut`` (just after a line break) in
    ``text`` and go on past it: the private key block or the Authorization header whose
    match ``text[:cut]`` ends inside (see _OPEN_REACH)."""
    reach = max(0, cut - _OPEN_REACH)
    if _OPEN_KEY.search(text, reach, cut) is not None:
        return True
    end = cut  # the header's open match ends with white space after one of _HEADER_ENDS
    while end > reach and text[end - 1].isspace():
        end -= 1
    if end == reach or _FEW_MARKS.match(text, reach, cut) is not None:
        return True
    return text[end - 1] in _HEADER_ENDS and _OPEN_HEADER.search(text, reach, cut) is not None


def redact_shapes(text: str) -> str:
    """``text`` with every match of :data:`SHAPES` replaced."""
    found = [probe.shapes for probe in _PROBES if probe.holds(text)]
    if found:
        needed = frozenset().union(*found)
        for shape in SHAPES:
            if shape.name in needed:
                text = shape.pattern.sub(shape.replacement, text)
    return text


def secret_forms(secret: str) -> frozenset[str]:
    """``secret`` as given and as it would show in what ivy-matrix writes (module docstring);
    none when it is shorter than :data:`SECRET_MIN`."""
    secret = secret.strip()
    if len(secret) < SECRET_MIN:
        return frozenset()
    encoded = [
        base64.b64encode(f"{prefix}{secret}{suffix}".encode()).decode()
        for prefix, suffix in (("x-access-token:", ""), ("", ":"))
    ]
    return frozenset(
        {
            secret,
            json.dumps(secret)[1:-1],
            json.dumps(secret, ensure_ascii=False)[1:-1],
            escape_name(secret),
            html.escape(secret),
            urllib.parse.quote(secret, safe=""),
            repr(secret)[1:-1],
            *encoded,
        }
    )


@dataclass(frozen=True, slots=True)
class Redactor:
    """Replaces the secret ``forms`` (:func:`secret_forms`), the well-known :data:`SHAPES` and
    the ``patterns`` with :data:`MASK`; ``Redactor()`` the shapes alone."""

    forms: tuple[str, ...] = ()
    patterns: tuple[re.Pattern[str], ...] = ()

    def __post_init__(self) -> None:
        # Longest first, so that no shorter form leaves part of a longer one in sight.
        ordered = tuple(sorted(set(self.forms), key=lambda form: (-len(form), form)))
        object.__setattr__(self, "forms", ordered)

    @classmethod
    def of(cls, secrets: Iterable[str] = (), patterns: Iterable[re.Pattern[str]] = ()) -> Redactor:
        """A redactor of these secrets (as given: their forms are added) and patterns."""
        forms = (form for secret in secrets for form in secret_forms(secret))
        return cls(forms=tuple(forms), patterns=tuple(patterns))

    def __call__(self, text: str) -> str:
        """``text`` with every secret, shape and pattern replaced by :data:`MASK`."""
        if not text:
            return text
        for form in self.forms:
            if form in text:
                text = text.replace(form, MASK)
        text = redact_shapes(text)
        for pattern in self.patterns:
            text = pattern.sub(MASK, text)
        return text

    def pieces(self, texts: Iterable[str]) -> Iterator[str]:
        """The text ``texts`` make joined, redacted as :meth:`__call__` redacts it whole, a
        part at a time (a large file need not be held whole): cut only after a line break
        that no secret can go on past (:func:`_open`). A secret form holding a line break, or
        a user's pattern (it may match anything), takes the whole text at once."""
        if self.patterns or any("\n" in form for form in self.forms):
            yield self("".join(texts))
            return
        held = ""
        cut = 0  # just after the last line break in ``held`` (0: none): each part looked at once
        for text in texts:
            found = text.rfind("\n") + 1
            if found:
                cut = len(held) + found
            held += text
            if len(held) < _CUT_AFTER:
                continue
            if cut and not _open(held, cut):
                yield self(held[:cut])
                held, cut = held[cut:], 0
        if held:
            yield self(held)

    def may_hide(self, text: str) -> bool:
        """Whether :meth:`__call__` may change ``text`` (a quick look: it holds a secret's
        form or a shape's marker; any text may match a pattern)."""
        return (
            bool(self.patterns)
            or any(form in text for form in self.forms)
            or any(probe.holds(text) for probe in _PROBES)
        )

    def cached(self) -> Callable[[str], str]:
        """This redactor with a memory of the texts it saw: failure lines repeat (one
        assertion in many tests), and each is redacted once."""
        seen: dict[str, str] = {}

        def redact(text: str) -> str:
            found = seen.get(text)
            if found is None:
                found = self(text)
                if len(seen) < _REMEMBERED:
                    seen[text] = found
            return found

        return redact


REDACT_SHAPES = Redactor()
"""The shapes alone: what a command without a token or patterns redacts."""
