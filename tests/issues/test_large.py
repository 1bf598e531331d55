"""A dashboard of 50,000 rows published as an issue, on the in-memory model.

The work is bound by counts (rows and backends), never by the clock: how long rendering and
splitting take is measured in ``bench/`` (``bench/issue_requests.py --big``), never asserted
here, and the suite's hang guard (pytest's ``timeout``) is many times this test's duration.
"""

from __future__ import annotations

from ivy_matrix.issues.markers import BODY_LIMIT, continuation_part, parse_parts, utf16_len
from ivy_matrix.issues.requests import PACE_FROM, PACE_SECONDS
from ivy_matrix.views.style import Style
from tests.issues.helpers import GRADIENTS, make_state, publish

ROWS = 50_000
# One backend: the cost grows with the cells, and one column already splits the rows over
# more comments than GitHub's pace lets go at once (PACE_FROM), in a few seconds.
BACKENDS = ("torch",)


def test_fifty_thousand_rows_are_split_over_comments_each_row_once_and_paced(memory):
    """50,000 rows go out as compact tables split over the body and continuation comments,
    each under the limit, each row exactly once, the comment writes spaced to GitHub's
    content-creation pace, and the index links the dashboard's issue."""
    state = make_state(GRADIENTS, ROWS, BACKENDS)
    waits: list[float] = []
    report = publish(memory, [state], revision=1, sleep=waits.append, settle=(0.0, 0.0))
    result = report.result("core/gradients")
    assert result.number is not None
    assert result.style is Style.COMPACT
    with memory.lock:
        body = memory.issues[result.number]["body"]
        comments = [c["body"] for c in memory.comments[result.number]]
        index = next(i for i in memory.issues.values() if i["number"] != result.number)
    parts = parse_parts(body)
    assert parts == len(comments) == len(result.comment_ids)
    assert [continuation_part(c, "core/gradients") for c in comments] == list(range(1, parts + 1))
    assert all(utf16_len(text) <= BODY_LIMIT for text in [body, *comments])
    text = "\n".join([body, *comments])
    for row in (0, 1, 12_345, 25_000, ROWS - 1):
        assert text.count(f"| test_{row:05d} |") == 1
    assert sum(line.startswith("| test_") for line in text.splitlines()) == ROWS
    issue_writes = [w for w in memory.writes() if "issue" in w]  # issues and their comments
    assert len(issue_writes) == 2 + parts  # two issues (the dashboard, the index), the comments
    assert len(issue_writes) > PACE_FROM
    # Every content-creating request counts towards the pace, the label's included.
    assert waits.count(PACE_SECONDS) == len(memory.writes()) - PACE_FROM
    assert f"/issues/{result.number}" in index["body"]
    # Published again unchanged: nothing is written.
    writes = len(memory.writes())
    again = publish(memory, [state], revision=1, sleep=waits.append)
    assert again.result("core/gradients").comment_ids == result.comment_ids
    assert len(memory.writes()) == writes
