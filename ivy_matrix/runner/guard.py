"""The last guard: nothing ivy-matrix writes holds the token it was given, nor a well-known
secret shape.

I/O: holds the secrets of the commands running in this process. Texts are redacted where they
enter (redaction.py); this is the guard behind that, at every write: local files
(runner/files.py), log lines, step outputs and the job summary (runner/log.py), the body of
every GitHub request (github/http.py) and the objects of the dashboard branch
(github/git_transport.py) pass through :func:`scrub` (a large text given in pieces, through
:func:`scrub_pieces`). ``cli.main`` names a command's secrets
with :func:`concealing` for as long as it runs; several commands at once in one process (the
tests') each add theirs, and the guard hides them all. A user's ``redact`` patterns are not
applied here (see redaction.py).
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence

from ivy_matrix.redaction import REDACT_SHAPES, Redactor, secret_forms

_lock = threading.Lock()
_concealed: Counter[str] = Counter()  # each form of a secret -> the commands concealing it
_active = REDACT_SHAPES


@contextlib.contextmanager
def concealing(secrets: Iterable[str]) -> Iterator[None]:
    """Keep ``secrets`` (in each of their forms) out of everything written inside."""
    forms = {form for secret in secrets for form in secret_forms(secret)}
    _change(forms, 1)
    try:
        yield
    finally:
        _change(forms, -1)


def _change(forms: set[str], step: int) -> None:
    global _active  # noqa: PLW0603  -- the one process-wide value this module keeps
    if not forms:
        return
    with _lock:
        _concealed.update(dict.fromkeys(forms, step))
        _active = Redactor(forms=tuple(+_concealed))


def scrub(text: str) -> str:
    """``text`` with the concealed secrets and the well-known shapes replaced by ``***``."""
    return _active(text)


def scrub_pieces(texts: Iterable[str]) -> Iterator[str]:
    """The text ``texts`` make joined, scrubbed as :func:`scrub` scrubs it whole, a part at a
    time (a large file is not held whole: redaction.Redactor.pieces)."""
    return _active.pieces(texts)


def scrub_json(value: object) -> object:
    """A JSON value (a request's body) with every string in it scrubbed."""
    if isinstance(value, str):
        return _active(value)
    if isinstance(value, Mapping):
        return {key: scrub_json(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [scrub_json(item) for item in value]
    return value
