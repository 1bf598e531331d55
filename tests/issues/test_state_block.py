"""Tests for issues/state_block.py: the hidden state block of the issue-body store."""

from __future__ import annotations

import base64
import zlib

import pytest

from ivy_matrix.errors import StoreError
from ivy_matrix.issues.bodies import compose_issue
from ivy_matrix.issues.markers import BEGIN, END
from ivy_matrix.issues.state_block import IssueStateTooLargeError, extract_state
from tests.issues.helpers import GRADIENTS, make_state

KEY = GRADIENTS


def test_state_block_round_trips_inside_the_region():
    """The embedded state reads back equal, hidden in the region, and is replaced in place."""
    state = make_state(KEY, 20)
    body = compose_issue(state, existing_body=None, revision=None, with_state=True).body
    assert extract_state(body) == state
    block_at = body.index("<!-- ivy-matrix:state")
    assert body.index(BEGIN) < block_at < body.index(END)
    newer = make_state(KEY, 25)
    again = compose_issue(newer, existing_body=body, revision=None, with_state=True).body
    assert again.count("<!-- ivy-matrix:state") == 1
    assert extract_state(again) == newer


def test_a_body_without_a_state_block_has_no_state():
    """Bodies written without state (the branch mode) read as None."""
    body = compose_issue(make_state(KEY, 2), existing_body=None, revision=None).body
    assert extract_state(body) is None
    assert extract_state(None) is None


def test_a_damaged_state_block_is_a_store_error_that_says_what_to_do():
    """A block that is not base64/zlib names the issue and tells how to start afresh."""
    body = compose_issue(
        make_state(KEY, 2), existing_body=None, revision=None, with_state=True
    ).body
    start = body.index("<!-- ivy-matrix:state") + len("<!-- ivy-matrix:state\n")
    broken = body[:start] + "AAAA" + body[start + 4 :]
    with pytest.raises(StoreError, match=r"issue #3.*delete the ivy-matrix:state block"):
        extract_state(broken, where="issue #3")


def test_a_state_block_that_inflates_too_far_is_refused():
    """A block that would inflate past the cap is refused instead of eating memory."""
    bomb = base64.b64encode(zlib.compress(b" " * (65 * 1024 * 1024))).decode()
    body = f"{BEGIN}\n<!-- ivy-matrix:state\n{bomb}\n-->\n{END}\n"
    with pytest.raises(StoreError, match="too large"):
        extract_state(body)


def test_state_that_does_not_fit_says_to_use_the_branch_target():
    """When the state alone passes the budget, the error names contents: write and the branch."""
    names = [f"test_{i}_{i * 7919 % 104729}" for i in range(400)]
    state = make_state(KEY, names, ("torch", "jax", "numpy", "tensorflow", "paddle"))
    with pytest.raises(IssueStateTooLargeError) as caught:
        compose_issue(state, existing_body=None, revision=None, budget=3_000, with_state=True)
    message = str(caught.value)
    assert "contents: write" in message
    assert "'branch'" in message
    body = compose_issue(make_state(KEY, 1), existing_body=None, revision=None).body
    with pytest.raises(IssueStateTooLargeError):
        compose_issue(state, existing_body=body, revision=None, budget=3_000, with_state=True)


class CountingText(str):
    """A body that counts the characters its ``find`` calls scan (what the block search does)."""

    __slots__ = ("scanned",)

    def __init__(self, _text: str) -> None:
        self.scanned = 0

    def find(self, sub, start=None, end=None, /):
        start = 0 if start is None else start
        stop = len(self) if end is None else min(end, len(self))
        found = super().find(sub, start, stop)
        self.scanned += (found + len(sub) if found >= 0 else stop) - start
        return found


MB = 1 << 20
OPEN = "<!-- ivy-matrix:state"
FILL = MB - len(BEGIN) - len(END) - 64
# 1 MB hand edits shaped against a backtracking pattern: runs of white space with no end,
# openers repeated, look-alike openers, base64 and spaces interleaved before a broken end.
DAMAGED = {
    "spaces, no end": f"{BEGIN}\n{OPEN} " + " " * FILL,
    "spaces, then the region's end": f"{BEGIN}\n{OPEN}\n" + " \n" * (FILL // 2) + END,
    "openers repeated": BEGIN + f"{OPEN} " * (FILL // (len(OPEN) + 1)),
    "look-alikes, then a block": BEGIN
    + f"{OPEN}x" * (FILL // (len(OPEN) + 1))
    + f"{OPEN} e30= -->",
    "base64 and spaces, a broken end": f"{BEGIN}{OPEN} " + "QUFB \t" * (FILL // 6) + "-- >",
    "closed, not base64": f"{BEGIN}{OPEN} " + "!? " * (FILL // 3) + "-->" + END,
}
ABSENT = {
    "look-alikes only": BEGIN + f"{OPEN}x" * (FILL // (len(OPEN) + 1)) + END,
    "openers outside the region": f"{OPEN} " * (FILL // (len(OPEN) + 1)) + BEGIN + END,
}


@pytest.mark.parametrize("shape", sorted(DAMAGED))
def test_a_one_megabyte_damaged_block_is_found_in_linear_work(shape):
    """Whatever 1 MB a hand edit puts in a block, finding it scans each character at most
    three times (the region's end, the opening line, its -->), and it reads as damaged."""
    body = CountingText(DAMAGED[shape])
    assert len(body) <= MB
    with pytest.raises(StoreError, match="delete the ivy-matrix:state block"):
        extract_state(body)
    assert body.scanned <= 3 * len(body)


@pytest.mark.parametrize("shape", sorted(ABSENT))
def test_a_one_megabyte_body_without_a_block_is_read_in_linear_work(shape):
    """1 MB of look-alike or misplaced openers is a body with no state, read in linear work."""
    body = CountingText(ABSENT[shape])
    assert len(body) <= MB
    assert extract_state(body) is None
    assert body.scanned <= 3 * len(body)


def test_a_state_block_with_no_end_is_damaged_not_absent():
    """A block whose closing --> was edited away is a StoreError, so the next write cannot
    silently start the dashboard afresh over the state it holds."""
    body = compose_issue(
        make_state(KEY, 2), existing_body=None, revision=None, with_state=True
    ).body
    start = body.index(OPEN)
    broken = body[:start] + body[start:].replace("-->", "", 1)
    with pytest.raises(StoreError, match=r"issue #3: the hidden block is damaged"):
        extract_state(broken, where="issue #3")
