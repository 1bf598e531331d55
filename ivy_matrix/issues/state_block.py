"""The hidden state block of a dashboard issue (the issue-body store keeps its state there).

Pure: no I/O (``issues/store.py`` reads and writes the issues). In: a
:class:`~ivy_matrix.model.DashboardState`, or a body as GitHub returns it; out: the block text
(``issues/bodies.py`` puts it in the managed region), or the state read back. The block is the
statefile JSON (``statefile.py``), zlib-compressed, base64-encoded and wrapped::

    <!-- ivy-matrix:state
    eJy...
    -->

It must fit in the issue body itself (the budget of ``issues/markers.py``); when it does not,
:class:`IssueStateTooLargeError` says to keep the state on a branch instead. A block that is
damaged (not base64 and zlib, or with no ``-->`` after it), or would inflate past
:data:`STATE_INFLATE_LIMIT`, is a :class:`~ivy_matrix.errors.StoreError` that says how to start
the dashboard afresh.

Anyone who may edit the issue can put any text in its body, so the block is found without a
regular expression: the first ``<!-- ivy-matrix:state`` followed by white space, then the first
``-->`` after it (two forward scans of the body, whatever it holds); the text between is checked
by the base64 decoder itself. A body of any size and shape is read in time linear in its length
(a pattern with nested white-space repeats took seconds on a few thousand spaces).
"""

from __future__ import annotations

import base64
import zlib

from ivy_matrix.errors import StoreError
from ivy_matrix.issues.markers import region_bounds
from ivy_matrix.model import DashboardState
from ivy_matrix.state.statefile import dump_state, load_state

# A state block may inflate to at most this much JSON (a guard against a hostile edit).
STATE_INFLATE_LIMIT = 64 * 1024 * 1024
_STATE_OPEN = "<!-- ivy-matrix:state"
_STATE_CLOSE = "-->"
_STATE_WRAP = 100


class IssueStateTooLargeError(StoreError):
    """The hidden state block alone does not fit in an issue body."""


def state_block(state: DashboardState) -> str:
    """The hidden block holding a dashboard's state: statefile JSON, zlib, base64, wrapped."""
    packed = base64.b64encode(zlib.compress(dump_state(state).encode("utf-8"), 9)).decode()
    lines = [packed[i : i + _STATE_WRAP] for i in range(0, len(packed), _STATE_WRAP)]
    return f"{_STATE_OPEN}\n" + "\n".join(lines) + "\n-->\n"


def state_too_large(key: str, size: int, budget: int) -> IssueStateTooLargeError:
    """The error for a state block of ``size`` units that cannot fit in ``budget``."""
    return IssueStateTooLargeError(
        f"cannot keep the state of dashboard {key!r} in its issue: even compressed it needs "
        f"{size:,} of the {budget:,} characters an issue body may hold here; give the job "
        f"'permissions: contents: write' and add 'branch' to the 'targets' input, so the state "
        f"is kept on a branch instead"
    )


def block_text(body: str) -> str | None:
    """The text of the state block in a body's managed region, between its opening line and
    ``-->``; None when the region has no block, :class:`ValueError` when the block has no end.

    Only ``body.find`` scans the body (each part of it at most once), so the work is linear in
    its length whatever it holds; the result is one slice of it.
    """
    bounds = region_bounds(body)
    if bounds is None:
        return None
    begin, end = bounds
    start = body.find(_STATE_OPEN, begin, end)
    while start >= 0:
        data = start + len(_STATE_OPEN)
        if data < end and body[data].isspace():
            close = body.find(_STATE_CLOSE, data, end)
            if close < 0:
                raise ValueError("it has no closing -->")
            return body[data:close]
        start = body.find(_STATE_OPEN, data, end)  # "<!-- ivy-matrix:stateX": not the block
    return None


def extract_state(body: str | None, *, where: str = "the issue body") -> DashboardState | None:
    """The state in a body's hidden block; None when it has none.

    A block that is not readable raises :class:`~ivy_matrix.errors.StoreError` naming ``where``.
    """
    advice = "delete the ivy-matrix:state block from the issue to start the dashboard afresh"
    try:
        data = block_text(body or "")
        if data is None:
            return None
        packed = base64.b64decode("".join(data.split()), validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, STATE_INFLATE_LIMIT)
        if inflater.unconsumed_tail:
            raise StoreError(f"cannot read dashboard state in {where}: it is too large; {advice}")
        text = raw.decode("utf-8")
    except (ValueError, zlib.error) as error:  # binascii.Error and UnicodeDecodeError included
        raise StoreError(
            f"cannot read dashboard state in {where}: the hidden block is damaged ({error}); "
            f"{advice}"
        ) from None
    return load_state(text, where=where)
