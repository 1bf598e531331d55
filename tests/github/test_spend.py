"""Tests for github/spend.py and the client's count of what it spent, against the HTTP fake."""

from __future__ import annotations

import threading

from ivy_matrix.github.spend import SpendMeter, over_budget
from ivy_matrix.github.types import Spend
from tests.conftest import fake_client
from tests.github.budget import Limits, ManualClock
from tests.github.fake_server import FakeGitHub

REPO = "acme/widgets"


def test_the_meter_counts_every_request_and_keeps_githubs_last_figures():
    """Writes are POST, PATCH, PUT and DELETE in any case; an answer without rate-limit headers
    (or with garbage in them) leaves the last figures GitHub sent."""
    meter = SpendMeter()
    assert meter.spent() == Spend()
    meter.count("GET", {"x-ratelimit-remaining": "998", "x-ratelimit-limit": "1000"})
    for verb in ("post", "PATCH", "PUT", "DELETE", "GET"):
        meter.count(verb, None)
    meter.count("GET", {"x-ratelimit-remaining": "soon"})
    assert meter.spent() == Spend(
        requests=7, content_requests=4, rate_limit_remaining=998, rate_limit=1000
    )


def test_threads_sharing_a_meter_lose_no_count():
    """Eight threads counting 500 requests each add up to 4,000."""
    meter = SpendMeter()

    def count() -> None:
        for _ in range(500):
            meter.count("POST", None)

    threads = [threading.Thread(target=count) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert meter.spent().requests == meter.spent().content_requests == 4000


def test_over_budget_names_each_hourly_budget_past_the_share():
    """Requests are measured against the token's limit, writes against GitHub's 500 an hour;
    an unknown limit and a share of 0 never warn; the share itself does not."""
    spend = Spend(requests=101, content_requests=51, rate_limit=1000)
    assert over_budget(spend, 10) == [
        "101 of the token's 1,000 requests an hour (10%)",
        "51 of GitHub's 500 content-creating requests an hour (10%)",
    ]
    assert over_budget(Spend(requests=100, content_requests=50, rate_limit=1000), 10) == []
    assert over_budget(Spend(requests=5000, content_requests=10), 10) == []
    assert over_budget(spend, 0) == []


def test_the_client_counts_each_try_as_the_fake_received_it():
    """A read retried after a 502 counts twice; the count and what is left of the hour agree
    with the fake's own ledger."""
    with FakeGitHub(limits=Limits(requests_per_hour=50), clock=ManualClock()) as fake:
        fake.inject(method="GET", path=r"/git/ref/", status=502)
        with fake_client(fake) as gh:
            tip = gh.get_branch_head(REPO, "main")
            assert tip is not None
            tree = gh.create_tree(REPO, gh.get_tree(REPO, tip).sha, {"a.md": "a"})
            gh.update_branch(REPO, "main", gh.create_commit(REPO, "a", tree, [tip]))
            spent = gh.spent()
        ledger = fake.budget.spent("t")
    assert (spent.requests, spent.content_requests) == (ledger.requests, ledger.content_requests)
    assert (spent.requests, spent.content_requests) == (6, 3)
    assert (spent.rate_limit_remaining, spent.rate_limit) == (44, 50)
