"""Tests for tests/github/budget.py, and for the HTTP fake answering its limits as GitHub does.

Time is a :class:`ManualClock`, so an hour passes in one call. The client's reactions to these
answers are in test_client.py; the in-memory model's in test_memory.py.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from typing import Any

import pytest

from tests.conftest import shared_dir
from tests.github.budget import (
    CONTENT_MESSAGE,
    PRIMARY_MESSAGE,
    SECONDARY_MESSAGE,
    Budget,
    Limits,
    ManualClock,
    Spend,
    peak_per_minute,
)
from tests.github.fake_server import FakeGitHub
from tests.github.openapi_check import find_operation, load_spec, response_schema, validate
from tests.github.test_fake_server import call

REPO = "acme/widgets"
R = f"/repos/{REPO}"
START = 1_800_000_000.0


def refusals(budget: Budget, token: str, methods: list[str]) -> list[int | None]:
    """Admit each request (answered at once); the refusal status of each, None if served."""
    statuses = []
    for method in methods:
        admission = budget.admit(token, method)
        budget.release(token)
        statuses.append(None if admission.refusal is None else admission.refusal.status)
    return statuses


# --------------------------------------------------------------------------- the budget


def test_primary_limit_counts_down_refuses_at_zero_and_refills_after_the_hour():
    """Each request spends one; at zero a 403 names the primary limit; the window resets an
    hour after its first request, and the headers say when."""
    clock = ManualClock(START)
    budget = Budget(Limits(requests_per_hour=3), clock=clock)
    first = budget.admit("t", "GET")
    budget.release("t")
    assert first.headers == {
        "X-RateLimit-Limit": "3",
        "X-RateLimit-Remaining": "2",
        "X-RateLimit-Used": "1",
        "X-RateLimit-Reset": str(int(START) + 3600),
        "X-RateLimit-Resource": "core",
    }
    clock.advance(100)
    assert refusals(budget, "t", ["GET", "POST", "GET"]) == [None, None, 403]
    refused = budget.admit("t", "GET")
    budget.release("t")
    assert refused.refusal is not None
    assert refused.refusal.message == PRIMARY_MESSAGE
    assert "Retry-After" not in refused.headers
    assert (refused.headers["X-RateLimit-Remaining"], refused.headers["X-RateLimit-Used"]) == (
        "0",
        "3",
    )
    clock.advance(3500)  # one hour after the first request
    assert refusals(budget, "t", ["GET"]) == [None]
    assert budget.reset("t") == int(START) + 3600 + 3600
    assert budget.remaining("t") == 2


def test_content_creation_is_80_a_minute_with_retry_after_60():
    """The 81st write within a minute is refused with retry-after 60; reads still pass; a
    minute after the first writes, writes pass again."""
    clock = ManualClock(START)
    budget = Budget(clock=clock)
    assert refusals(budget, "t", ["POST", "PATCH", "PUT", "DELETE"] * 20) == [None] * 80
    clock.advance(30)
    refused = budget.admit("t", "PATCH")
    budget.release("t")
    assert refused.refusal is not None
    assert (refused.refusal.status, refused.refusal.message) == (403, CONTENT_MESSAGE)
    assert refused.headers["Retry-After"] == "60"
    assert refusals(budget, "t", ["GET", "POST"]) == [None, 403]
    clock.advance(30)  # the first 80 were 60 s ago: they no longer count for the minute
    assert refusals(budget, "t", ["POST"]) == [None]
    assert budget.spent("t") == Spend(
        requests=84, content_requests=83, refused=2, peak_content_per_minute=82
    )


def test_content_creation_is_500_an_hour_even_when_every_minute_is_under_80():
    """Writes paced at 50 a minute are refused from the 501st within the hour."""
    clock = ManualClock(START)
    budget = Budget(Limits(requests_per_hour=10_000), clock=clock)
    statuses = []
    for _ in range(11):
        statuses += refusals(budget, "t", ["POST"] * 50)
        clock.advance(61)
    assert statuses == [None] * 500 + [403] * 50
    assert budget.spent("t").peak_content_per_minute == 50
    clock.advance(3600)
    assert refusals(budget, "t", ["POST"]) == [None]


def test_more_than_100_concurrent_requests_are_refused_without_retry_after():
    """The 101st request in flight gets the secondary-limit 403 without retry-after; once one
    is answered, the next is served."""
    budget = Budget(clock=ManualClock(START))
    for _ in range(100):
        assert budget.admit("t", "GET").refusal is None
    refused = budget.admit("t", "GET")
    assert refused.refusal is not None
    assert (refused.refusal.status, refused.refusal.message) == (403, SECONDARY_MESSAGE)
    assert "Retry-After" not in refused.headers
    budget.release("t")  # the refused one
    budget.release("t")  # one of the hundred
    assert budget.admit("t", "GET").refusal is None


def test_tokens_share_the_repositorys_budget_unless_each_has_its_own():
    """GITHUB_TOKENs of one repository pay into one budget; spend stays per token; with
    shared=False each token has its own limit, and 429 can be GitHub's answer."""
    clock = ManualClock(START)
    shared = Budget(Limits(requests_per_hour=2), clock=clock)
    assert refusals(shared, "leg-1", ["GET", "GET"]) + refusals(shared, "leg-2", ["GET"]) == [
        None,
        None,
        403,
    ]
    assert [shared.spent(t).requests for t in shared.tokens()] == [2, 1]
    assert shared.spent() == Spend(requests=3, refused=1)
    own = Budget(Limits(requests_per_hour=2, shared=False, status=429), clock=clock)
    assert refusals(own, "a", ["GET"] * 3) + refusals(own, "b", ["GET"] * 2) == [
        None,
        None,
        429,
        None,
        None,
    ]


def test_busiest_minute_and_bytes_are_recorded():
    """The peak counts writes within any 60 s (one 60 s after another is in the next
    minute); bytes sent add up."""
    assert peak_per_minute([0, 10, 59.9, 60, 119, 200]) == 3
    assert peak_per_minute([]) == 0
    budget = Budget(clock=ManualClock(START))
    budget.admit("t", "POST", size=1000)
    budget.release("t")
    assert budget.spent("t") == Spend(
        requests=1, content_requests=1, peak_content_per_minute=1, bytes_sent=1000
    )
    assert budget.spent("nobody") == Spend()


# --------------------------------------------------------------------------- the HTTP fake


def test_every_answer_carries_the_rate_limit_headers_and_the_primary_limit_ends_at_zero():
    """Successes and errors carry x-ratelimit-*; at zero the fake answers GitHub's 403."""
    with FakeGitHub(limits=Limits(requests_per_hour=3), clock=ManualClock(START)) as fake:
        url = f"{fake.base_url}{R}/git/ref/heads/main"
        status, headers, _ = call(url)
        assert status == 200
        assert {
            k.lower(): v for k, v in headers.items() if k.lower().startswith("x-ratelimit")
        } == {
            "x-ratelimit-limit": "3",
            "x-ratelimit-remaining": "2",
            "x-ratelimit-used": "1",
            "x-ratelimit-reset": str(int(START) + 3600),
            "x-ratelimit-resource": "core",
        }
        assert call(f"{fake.base_url}{R}/issues/999")[1]["X-RateLimit-Remaining"] == "1"
        assert [call(url)[0] for _ in range(2)] == [200, 403]
        _, headers, error = call(url)
        assert error["message"].startswith("API rate limit exceeded for installation ID")
        assert headers["X-RateLimit-Remaining"] == "0"
        assert fake.budget.spent("t") == Spend(requests=5, refused=2)


def test_a_write_over_the_content_limit_is_refused_unapplied_with_retry_after():
    """With a limit of 2 writes a minute the third issue is not created: 403, retry-after 60,
    GitHub's message; the queued fault waits for a request that is served."""
    clock = ManualClock(START)
    with FakeGitHub(limits=Limits(content_per_minute=2), clock=clock) as fake:
        fake.inject(method="POST", path=r"/issues$", status=502, after_write=True)
        url = f"{fake.base_url}{R}/issues"
        assert [call(url, "POST", {"title": str(i)})[0] for i in range(2)] == [502, 201]
        status, headers, error = call(url, "POST", {"title": "third"})
        assert (status, headers["Retry-After"], error["message"]) == (403, "60", CONTENT_MESSAGE)
        assert sorted(i["title"] for i in fake.issues.values()) == ["0", "1"]
        clock.advance(60)
        assert call(url, "POST", {"title": "third"})[0] == 201
        assert fake.budget.spent("t").content_requests == 4


def test_requests_without_a_token_spend_nothing(fake):
    """A 401 answer is not counted against any budget."""
    request = urllib.request.Request(f"{fake.base_url}{R}/issues")
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(request, timeout=5)
    assert fake.budget.tokens() == []


def test_limits_can_be_set_over_http_and_refusals_match_the_openapi_subset():
    """POST /_fake/config takes the limits as JSON; a refusal's body validates against the
    403 schema of the operation it answers."""
    spec = load_spec(shared_dir("github-api") / "openapi-subset.json")
    with FakeGitHub(clock=ManualClock(START)) as fake:
        limits = {"requests_per_hour": 10, "content_per_minute": 0}
        request = urllib.request.Request(
            f"{fake.base_url}/_fake/config", data=json.dumps({"limits": limits}).encode()
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert json.loads(answer.read())["limits"]["content_per_minute"] == 0
        status, _, error = call(f"{fake.base_url}{R}/issues", "POST", {"title": "x"})
        assert status == 403
        found = find_operation(spec, "POST", f"{R}/issues")
        assert found is not None
        schema = response_schema(spec, found[1], 403)
        assert schema is not None
        assert validate(error, schema) == []
        assert fake.budget.remaining("t") == 9


def test_a_request_held_in_flight_counts_against_the_concurrency_limit():
    """With one concurrent request allowed, a second one while the first is held is refused."""
    release = threading.Event()
    with FakeGitHub(limits=Limits(concurrent=1), clock=ManualClock(START)) as fake:
        hold = fake.inject(method="GET", path=r"/git/ref/", status=None, wait=release)
        held = threading.Thread(target=call, args=(f"{fake.base_url}{R}/git/ref/heads/main",))
        held.start()
        for _ in range(6000):  # until the held request took its fault (in flight then)
            if hold.hits:
                break
            threading.Event().wait(0.005)
        assert hold.hits == 1
        status, headers, error = call(f"{fake.base_url}{R}/issues")
        release.set()
        held.join()
        assert (status, error["message"]) == (403, SECONDARY_MESSAGE)
        assert "Retry-After" not in headers
        assert call(f"{fake.base_url}{R}/issues")[0] == 200


def test_a_request_answered_no_longer_counts_against_the_concurrency_limit(monkeypatch):
    """Once a client has its answer its request is not in flight, however late the server's
    thread runs again. (The slot used to be freed after the answer was sent: a loaded machine
    could refuse a client's next request for its own answered one, and a test that counts the
    client's waits saw two where GitHub asks one.)"""
    send = FakeGitHub._send
    resume = threading.Event()
    answers = []

    def send_then_stall(h: Any, *answer: Any) -> None:
        send(h, *answer)
        answers.append(answer)
        if len(answers) == 1:
            resume.wait(timeout=30)  # the first answer's thread, descheduled after sending

    monkeypatch.setattr(FakeGitHub, "_send", staticmethod(send_then_stall))
    with FakeGitHub(limits=Limits(concurrent=1), clock=ManualClock(START)) as fake:
        url = f"{fake.base_url}{R}/git/ref/heads/main"
        try:
            statuses = [call(url)[0], call(url)[0]]
        finally:
            resume.set()
        assert statuses == [200, 200]
        assert fake.budget.spent("t").refused == 0
