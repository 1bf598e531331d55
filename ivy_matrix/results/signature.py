"""Failure signatures: one short hash for one kind of error, whatever the test or backend.

Pure: no I/O. A failing entry keeps the first line of its failure message; its signature is
a hash of that line *normalised*, so that the same error seen by several tests, runs or
backends gets the same signature and the views can group them ("one error on torch, jax,
tensorflow: 7 tests"). Normalising replaces, in this order:

1. hexadecimal addresses (``0x7f3a...``) by ``<hex>``;
2. quoted literals (``'...'``, ``"..."``, `````...`````) by ``<str>``;
3. paths (anything with a ``/`` or ``\\`` and a letter, or a file name with a source
   extension), with their ``:line[:column]``, by ``<path>``;
4. every backend word by ``<backend>``: the cell's own backend name and the configured
   names and module aliases (``backend-aliases``: ``np``, ``tf``, ``jnp`` ...), as whole
   words, ignoring case;
5. numbers (``3``, ``-0.5``, ``1e-08``; the digits inside ``float32`` too) by ``<n>``;

then collapses white space. The signature is the first :data:`SIGNATURE_LENGTH` hex digits
of the SHA-256 of the result. The configured words, not the backends an update happens to
see, decide what is replaced, so every matrix leg computes the same signature for the same
line.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

SIGNATURE_LENGTH = 10
DEFAULT_ALIASES = (
    "torch",
    "numpy",
    "np",
    "tensorflow",
    "tf",
    "jax",
    "jnp",
    "paddle",
    "mxnet",
    "cupy",
    "dask",
    "array_api_strict",
)

_HEX = re.compile(r"0[xX][0-9a-fA-F]+")
# A quote that starts a literal does not follow a word character ("can't" is no literal);
# each alternative stops at its own quote or the end of the line, so the scan is linear.
_QUOTED = re.compile(r"(?<![\w'\"`])(?:'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`)")
_SOURCE = r"py|pyx|pxd|c|cc|cpp|cu|h|hpp|js|ts|java|kt|scala|rs|go|rb|cs|swift"
# Each alternative starts only where a path can (not inside a word), so that a long word is
# scanned once, not once per character.
_PATH = re.compile(
    r"(?<![\w.~+:\\/-])(?:[A-Za-z]:)?[\w.~+-]*(?:[/\\][\w.~+-]+)+(?::\d+){0,2}"
    rf"|(?<![\w.-])[\w.-]+\.(?:{_SOURCE})\b(?::\d+){{0,2}}"
)
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_SPACE = re.compile(r"\s+")


def _path(match: re.Match[str]) -> str:
    text = match.group(0)
    # "44/256" is a fraction, not a path: it is left for the numbers.
    return "<path>" if any(c.isalpha() for c in text) else text


@dataclass(frozen=True, slots=True, kw_only=True)
class Signer:
    """Computes signatures with the configured backend words (see the module docstring).

    The patterns, one per backend, and the signatures of the lines seen are cached: a run
    has a few hundred distinct failure lines at most, and the same few backends.
    """

    aliases: tuple[str, ...] = DEFAULT_ALIASES
    _patterns: dict[str, re.Pattern[str]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _seen: dict[tuple[str, str], str] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def _backend_words(self, backend: str) -> re.Pattern[str]:
        pattern = self._patterns.get(backend)
        if pattern is None:
            words = sorted({w for w in (*self.aliases, backend) if w}, key=lambda w: (-len(w), w))
            alternatives = "|".join(re.escape(word) for word in words)
            pattern = self._patterns[backend] = re.compile(
                rf"(?<![\w.])(?:{alternatives})(?!\w)", re.IGNORECASE
            )
        return pattern

    def normalise(self, message: str, backend: str) -> str:
        """The message with everything that varies between tests and backends replaced."""
        text = _HEX.sub("<hex>", message)
        text = _QUOTED.sub("<str>", text)
        text = _PATH.sub(_path, text)
        text = self._backend_words(backend).sub("<backend>", text)
        text = _NUMBER.sub("<n>", text)
        return _SPACE.sub(" ", text).strip()

    def signature(self, message: str, backend: str) -> str:
        """The signature of a failure line seen on ``backend`` ("" for no message)."""
        if not message:
            return ""
        key = (message, backend)
        found = self._seen.get(key)
        if found is None:
            normal = self.normalise(message, backend).encode("utf-8", "surrogatepass")
            found = self._seen[key] = hashlib.sha256(normal).hexdigest()[:SIGNATURE_LENGTH]
        return found


def parse_aliases(values: Iterable[str]) -> tuple[str, ...]:
    """The configured backend words (each value may hold several, comma-separated), stripped,
    each once, in the given order."""
    words = (word.strip() for value in values for word in value.split(","))
    return tuple(dict.fromkeys(word for word in words if word))
