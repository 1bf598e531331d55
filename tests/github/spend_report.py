"""A pytest plugin: what each test spent of GitHub's budgets, and who spent the most.

Every budget a test double opens (``tests/github/budget.py``: the HTTP fake's and the
in-memory model's) is read when the test ends: its requests, content-creating requests,
refusals, busiest minute and bytes, summed over the test's doubles. The terminal summary
shows the totals and the top spenders (``--github-spend-top``, default 10), marking each
figure over GitHub's limits for one repository's ``GITHUB_TOKEN`` (1,000 requests an hour;
80 content-creating requests a minute, 500 an hour). ``--github-spend FILE`` writes every
test's figures as JSON.

I/O: the terminal summary and the JSON file; loaded by ``tests/conftest.py``.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from dataclasses import asdict
from pathlib import Path

import pytest

from tests.github.budget import GITHUB_TOKEN, OPENED, Spend

SPENT = pytest.StashKey[dict[str, Spend]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("github-spend", "what tests spent of GitHub's budgets")
    group.addoption(
        "--github-spend", metavar="FILE", help="write each test's GitHub spend to FILE as JSON"
    )
    group.addoption(
        "--github-spend-top",
        type=int,
        default=10,
        metavar="N",
        help="show the N tests that spent the most requests (0: none)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SPENT] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Read the budgets the test opened (fixtures included) once it is torn down."""
    OPENED.clear()  # budgets of earlier tests' module fixtures are not this test's
    try:
        return (yield)
    finally:
        spend = sum((budget.spent() for budget in OPENED), Spend())
        OPENED.clear()
        if spend.requests:
            item.config.stash[SPENT][item.nodeid] = spend


def over_limits(spend: Spend) -> list[str]:
    """Which of GitHub's limits one run of this spend would pass (as a GITHUB_TOKEN)."""
    limits = GITHUB_TOKEN
    over = []
    if spend.requests > limits.requests_per_hour:
        over.append("requests/h")
    if spend.peak_content_per_minute > limits.content_per_minute:
        over.append("content/min")
    if spend.content_requests > limits.content_per_hour:
        over.append("content/h")
    return over


def spend_table(spent: Mapping[str, Spend], top: int) -> list[str]:
    """The summary lines: totals, then the ``top`` tests by requests."""
    total = sum(spent.values(), Spend())
    over = [nodeid for nodeid, spend in spent.items() if over_limits(spend)]
    lines = [
        (
            f"{len(spent)} test(s) used a GitHub double: {total.requests:,} requests, "
            f"{total.content_requests:,} content-creating, {total.refused:,} refused for a "
            f"rate limit; {len(over)} test(s) spent more than GitHub allows one GITHUB_TOKEN "
            f"({GITHUB_TOKEN.requests_per_hour:,} requests/h, "
            f"{GITHUB_TOKEN.content_per_minute} content-creating/min, "
            f"{GITHUB_TOKEN.content_per_hour}/h)"
        )
    ]
    ranked = sorted(spent.items(), key=lambda item: (-item[1].requests, item[0]))[: max(top, 0)]
    if ranked:
        lines.append(
            f"{'requests':>9} {'content':>8} {'peak/min':>8} {'refused':>8} {'sent KB':>8}  "
            "test (over GitHub's limits)"
        )
    for nodeid, spend in ranked:
        flags = over_limits(spend)
        lines.append(
            f"{spend.requests:>9,} {spend.content_requests:>8,} "
            f"{spend.peak_content_per_minute:>8,} {spend.refused:>8,} "
            f"{spend.bytes_sent / 1000:>8,.0f}  {nodeid}"
            + (f"  ({', '.join(flags)})" if flags else "")
        )
    return lines


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    spent = config.stash.get(SPENT, {})
    if not spent:
        return
    terminalreporter.section("GitHub spend (tests/github/spend_report.py)")
    for line in spend_table(spent, int(config.getoption("--github-spend-top"))):
        terminalreporter.write_line(line)
    path = config.getoption("--github-spend")
    if path:
        document = {
            nodeid: asdict(spend) | {"over": over_limits(spend)} for nodeid, spend in spent.items()
        }
        Path(path).write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        terminalreporter.write_line(f"every test's spend: {path}")
