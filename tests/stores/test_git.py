"""The branch store over git's own protocol, against a real git remote on loopback
(tests/github/git_server.py: git http-backend): no REST request at all, a few git requests
per leg, nothing lost in races with faults.

Each leg has its own transport and token, so the server's record of requests tells the legs
apart; their waits are on a VirtualClock, so what they count does not depend on how fast
this machine runs git.
"""

from __future__ import annotations

import statistics
from collections import Counter

from ivy_matrix.stores import Saved
from tests.concurrency import VirtualClock
from tests.github.git_server import GitServer
from tests.stores.helpers import (
    BRANCH,
    DASHBOARDS,
    INBOX,
    assert_every_cell_landed,
    assert_markdown_is_a_render_of_the_state,
    git_transport,
    race_legs,
    run_leg,
)


def over_git(server: GitServer, leg: int, size: int | None = None, **options) -> Saved:
    """Leg ``leg``'s update through a store over git, as token ``leg-NN``."""
    transport = git_transport(server, f"leg-{leg:02d}")
    try:
        return run_leg(None, leg, size, stored={"remote": transport}, **options)
    finally:
        transport.close()


def test_a_lone_leg_fetches_once_pushes_once_and_sends_no_rest_request():
    """A leg alone (no matrix) reads the branch with one fetch and commits with one push: at
    most 5 HTTP requests, none of them to the REST API (the store has no client at all), and
    the branch's markdown is a render of its state after it."""
    with GitServer() as server:
        over_git(server, 0)
        over_git(server, 1)
        saved = over_git(server, 2, dashboards=DASHBOARDS[:1])
        requests = server.requests_of("leg-02")
        assert saved.rendered
        assert saved.commit_sha == server.ref_sha(f"refs/heads/{BRANCH}")
        assert len(requests) <= 5
        assert [r.path.rsplit("/", 1)[-1] for r in requests if r.method == "POST"] == [
            "git-upload-pack",
            "git-upload-pack",
            "git-receive-pack",
        ]
        assert server.refs(INBOX) == {}
        assert_markdown_is_a_render_of_the_state(server)


def test_an_identical_re_run_over_git_pushes_nothing():
    """A leg whose results are already on the branch fetches and pushes nothing."""
    with GitServer() as server:
        over_git(server, 0)
        pushes = len(server.pushes())
        again = over_git(server, 0)
        assert again.commit_sha is None
        assert len(server.pushes()) == pushes


def race_over_git(server: GitServer, legs: int, size: int | None) -> dict[int, Saved]:
    transports = {leg: git_transport(server, f"leg-{leg:02d}") for leg in range(legs)}
    try:
        outcomes = race_legs(
            lambda leg: (None, {"remote": transports[leg]}), legs, size, clock=VirtualClock()
        )
    finally:
        for transport in transports.values():
            transport.close()
    failed = {leg: o for leg, o in outcomes.items() if not isinstance(o, Saved)}
    assert failed == {}
    return {leg: o for leg, o in outcomes.items() if isinstance(o, Saved)}


def test_sixteen_matrix_legs_over_git_land_within_five_tries_and_twice_the_median():
    """16 legs of a matrix race over git: every cell lands, the markdown is a render of the
    state, no leg tries more than 5 times and none makes more than twice the median leg's
    requests (one folds at a time; the others wait and list the inbox)."""
    with GitServer() as server:
        saved = race_over_git(server, 16, 16)
        requests = Counter(r.token for r in server.requests)
        assert_every_cell_landed(server, legs=16)
        assert_markdown_is_a_render_of_the_state(server)
        assert server.refs(INBOX) == {}
    assert max(s.attempts for s in saved.values()) <= 5
    counts = [requests[f"leg-{leg:02d}"] for leg in range(16)]
    assert max(counts) <= 2 * statistics.median(counts), counts


def test_legs_over_git_with_one_request_in_ten_failing_lose_nothing():
    """12 legs with 10% of git's requests answered 5xx, half of them after the work (a push
    that lands and still fails): every cell lands and the markdown is a render of the state."""
    with GitServer(fail_rate=0.1, seed=3) as server:
        race_over_git(server, 12, 12)
        assert_every_cell_landed(server, legs=12)
        assert_markdown_is_a_render_of_the_state(server)
        assert server.refs(INBOX) == {}
