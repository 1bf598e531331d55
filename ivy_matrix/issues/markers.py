"""Dashboard issues: the hidden markers, how a body is recognised and read, and how it is measured.

Pure: no I/O (``issues/writer.py`` and the modules around it do the GitHub side). In:
issue and comment bodies as GitHub returns them (or None); out: keys, part numbers, revisions,
the maintainer's text around the managed region, and sizes. Composing bodies is
``issues/bodies.py``. A dashboard issue body looks like::

    <!-- ivy-matrix:dashboard=core/gradients -->        how the action finds its own issue
    Anything a maintainer writes here is kept verbatim.
    <!-- ivy-matrix:begin -->                            the managed region starts
    <!-- ivy-matrix:revision=12 -->                      (with the branch store) what it shows
    ## core/gradients

    | table |

    _The table continues in 2 comments below._          (only when it had to be split)
    <!-- ivy-matrix:parts=2 -->
    <!-- ivy-matrix:end -->                              the managed region ends
    Anything a maintainer writes here is kept verbatim too.

Continuation comments start with ``<!-- ivy-matrix:dashboard=<key>:part=N -->`` and are wholly
owned by the action; the index issue starts with ``<!-- ivy-matrix:index -->``, and its managed
region records the revision it shows as a dashboard's does, and what runs wrote in the last
hour, ``<!-- ivy-matrix:writes=T+N+R,... -->`` (each run's content-creating requests N, at T
seconds since the epoch, R the run's own random number; ``issues/plan.py``). Keys are
percent-encoded in markers, so no dashboard name can end the comment or fake another marker.

**Size.** GitHub refuses issue and comment bodies over 65,536 characters (PLATFORM.md 1.1), and
whether it counts code points or UTF-16 units is unverified, so every body is measured in UTF-16
code units (:func:`utf16_len`, an emoji counts 2) against a budget with a margin below that
limit (:data:`DEFAULT_BUDGET`).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from typing import NamedTuple

BODY_LIMIT = 65_536
# Room for what the budget cannot see: GitHub may count differently than we do.
MARGIN = 1_000
DEFAULT_BUDGET = BODY_LIMIT - MARGIN

BEGIN = "<!-- ivy-matrix:begin -->"
END = "<!-- ivy-matrix:end -->"
INDEX_MARKER = "<!-- ivy-matrix:index -->"
INDEX_TITLE = "ivy-matrix: test dashboards"
TITLE_PREFIX = "ivy-matrix: "
TITLE_LIMIT = 256

_KEY = r"(?P<key>[^\s:>]+)"
_DASHBOARD_LINE = re.compile(rf"^<!-- ivy-matrix:dashboard={_KEY} -->\r?$", re.MULTILINE)
_MARKER_LINE = re.compile(
    r"^<!-- ivy-matrix:(?:dashboard=[^\s:>]+|index) -->(?:\r?\n|$)", re.MULTILINE
)
_INDEX_LINE = re.compile(r"^<!-- ivy-matrix:index -->\r?$", re.MULTILINE)
_PART_LINE = re.compile(
    rf"\A<!-- ivy-matrix:dashboard={_KEY}:part=(?P<part>\d+) -->\r?$", re.MULTILINE
)
_REVISION = re.compile(r"<!-- ivy-matrix:revision=(?P<n>\d{1,30}) -->")
_WRITES = re.compile(r"<!-- ivy-matrix:writes=(?P<entries>[0-9+,]{0,4000}) -->")
_WRITE = re.compile(r"(?P<at>\d{1,12})\+(?P<n>\d{1,9})(?:\+(?P<run>\d{1,9}))?")
_PARTS = re.compile(r"<!-- ivy-matrix:parts=(?P<n>\d{1,9}) -->")


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units: what a JavaScript ``length`` says (an emoji counts 2)."""
    return len(text.encode("utf-16-le")) // 2


def _quote(key: str) -> str:
    # No spaces, colons or ">" remain, so a key can neither end the comment nor fake ":part=".
    return urllib.parse.quote(key, safe="/._~-")


def dashboard_marker(key: str) -> str:
    """The first line of a dashboard issue's body."""
    return f"<!-- ivy-matrix:dashboard={_quote(key)} -->"


def continuation_marker(key: str, part: int) -> str:
    """The first line of continuation comment ``part`` (1, 2, ...) of a dashboard."""
    return f"<!-- ivy-matrix:dashboard={_quote(key)}:part={part} -->"


def issue_title(key: str) -> str:
    """The title a new dashboard issue gets (maintainers may rename it; it is never rewritten)."""
    title = " ".join(f"{TITLE_PREFIX}{key}".split())
    return title if len(title) <= TITLE_LIMIT else title[: TITLE_LIMIT - 1] + "…"


def _head(body: str) -> str:
    """The part of a body before the managed region (where the marker lives)."""
    begin = body.find(BEGIN)
    return body if begin < 0 else body[:begin]


def dashboard_key(body: str | None) -> str | None:
    """The dashboard key of the marker in a body, or None if it has no dashboard marker."""
    found = _DASHBOARD_LINE.search(_head(body or ""))
    return urllib.parse.unquote(found.group("key")) if found else None


def is_ours(body: str | None, key: str) -> bool:
    """Tell whether a body is the dashboard issue of ``key`` (its marker, not another's)."""
    return dashboard_key(body) == key


def is_index(body: str | None) -> bool:
    """Tell whether a body is the index issue's."""
    return _INDEX_LINE.search(_head(body or "")) is not None


def continuation_part(body: str | None, key: str) -> int | None:
    """The part number if ``body`` is a continuation comment of dashboard ``key``, else None."""
    found = _PART_LINE.search(body or "")
    if found is None or urllib.parse.unquote(found.group("key")) != key:
        return None
    return int(found.group("part"))


def region_bounds(body: str) -> tuple[int, int] | None:
    """Where the managed region of a body starts and ends, markers included (None when it has
    none; to the end when its end marker is missing). Two scans of the body, no copy."""
    begin = body.find(BEGIN)
    if begin < 0:
        return None
    end = body.find(END, begin)
    return begin, len(body) if end < 0 else end + len(END)


def managed_region(body: str) -> str:
    """The managed region of a body, markers included ("" when it has none; to the end when
    its end marker is missing)."""
    bounds = region_bounds(body)
    return "" if bounds is None else body[bounds[0] : bounds[1]]


def revision_marker(revision: int | None) -> str:
    """The line that records the revision a body shows ("" for None: none)."""
    return "" if revision is None else f"<!-- ivy-matrix:revision={revision} -->\n"


def parse_revision(body: str | None) -> int | None:
    """The revision recorded in the managed region, or None when it records none."""
    found = _REVISION.search(managed_region(body or ""))
    return int(found.group("n")) if found else None


def shows_newer(body: str | None, revision: int | None) -> bool:
    """Whether ``body`` records a revision newer than ``revision`` (a run's own, None: the run
    has none, so nothing it writes is older): a body another job wrote later, left as it is."""
    theirs = parse_revision(body) if revision is not None else None
    return theirs is not None and revision is not None and theirs > revision


def parse_parts(body: str | None) -> int:
    """How many continuation comments the body says the table continues in (0: none)."""
    found = _PARTS.search(managed_region(body or ""))
    return int(found.group("n")) if found else 0


def outside_region(existing: str | None) -> tuple[str, str]:
    """The maintainer's text before and after the managed region of an existing body.

    Our own marker line is taken out of the text before (it is written back as the first
    line); everything else is kept byte for byte. A body with no region keeps all its text
    before the new region.
    """
    if not existing:
        return "", "\n"
    begin = existing.find(BEGIN)
    if begin < 0:
        before, after = existing, "\n"
    else:
        end = existing.find(END, begin)
        before = existing[:begin]
        after = "\n" if end < 0 else existing[end + len(END) :]
    before = _MARKER_LINE.sub("", before, count=1)
    if before and not before.endswith("\n"):
        before += "\n"
    return before, after


class Write(NamedTuple):
    """One run's entry in the index issue's record: ``n`` content-creating requests, at ``at``
    seconds since the epoch; ``run`` tells one run's entry from another's (a random number a
    run draws once; 0 in a record written before runs drew one: such an entry is told apart
    by all three values)."""

    at: int
    n: int
    run: int = 0


def parse_writes(body: str | None) -> tuple[Write, ...]:
    """The runs' writes the index issue records; none when it records none, or a hand edit
    left them unreadable (the budget then trusts GitHub's own answer)."""
    found = _WRITES.search(managed_region(body or ""))
    if found is None:
        return ()
    entries = found.group("entries").split(",")
    matched = [_WRITE.fullmatch(entry) for entry in entries if entry]
    return tuple(
        Write(int(m.group("at")), int(m.group("n")), int(m.group("run") or 0)) for m in matched if m
    )


def writes_marker(entries: Iterable[Write]) -> str:
    """The index issue's record of the runs' writes (one line; "" for none)."""
    text = ",".join(f"{at}+{n}+{run}" if run else f"{at}+{n}" for at, n, run in entries)
    return f"<!-- ivy-matrix:writes={text} -->\n" if text else ""


def with_writes(body: str, writes: str) -> str:
    """``body`` with ``writes`` (a :func:`writes_marker` line, or "") for the record of writes
    in its managed region, the rest byte for byte as it was: how a run adds its writes to an
    index body that shows a newer revision than its own, leaving what it shows alone. The
    record goes where it was, else after the revision's marker (else first in the region)."""
    bounds = region_bounds(body)
    if bounds is None:
        return body
    begin, end = bounds
    region = body[begin:end]
    found = _WRITES.search(region)
    if found is not None:
        start, stop = found.start(), _past_newline(region, found.end())
    else:
        after = _REVISION.search(region)
        start = stop = _past_newline(region, after.end() if after else len(BEGIN))
    return body[:begin] + region[:start] + writes + region[stop:] + body[end:]


def _past_newline(text: str, at: int) -> int:
    """``at``, or just past the line break that starts there."""
    for newline in ("\r\n", "\n"):
        if text.startswith(newline, at):
            return at + len(newline)
    return at
