"""The branch store over git's own protocol, against a real git remote on loopback
(tests/github/git_server.py: git http-backend): no REST request at all, a few git requests
per update, nothing lost when the writers of several runs race, with faults.

Each writer has its own transport and token, so the server's record of requests tells them
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
    assert_every_cell_landed,
    assert_markdown_is_a_render_of_the_state,
    git_transport,
    race_legs,
    run_leg,
)


def over_git(server: GitServer, leg: int, **options) -> Saved:
    """Writer ``leg``'s update through a store over git, as token ``leg-NN``."""
    transport = git_transport(server, f"leg-{leg:02d}")
    try:
        return run_leg(None, leg, stored={"remote": transport}, **options)
    finally:
        transport.close()


def test_an_update_fetches_once_pushes_once_and_sends_no_rest_request():
    """An update reads the branch with one fetch and commits with one push: at most 5 HTTP
    requests, none of them to the REST API (the store has no client at all), and the branch's
    markdown is a render of its state after it."""
    with GitServer() as server:
        over_git(server, 0)
        over_git(server, 1)
        saved = over_git(server, 2, dashboards=DASHBOARDS[:1])
        requests = server.requests_of("leg-02")
        assert saved.commit_sha == server.ref_sha(f"refs/heads/{BRANCH}")
        assert len(requests) <= 5
        assert [r.path.rsplit("/", 1)[-1] for r in requests if r.method == "POST"] == [
            "git-upload-pack",  # protocol v2: the refs
            "git-upload-pack",  # and the fetch
            "git-receive-pack",
        ]
        assert_markdown_is_a_render_of_the_state(server)


def test_an_identical_re_run_over_git_pushes_nothing():
    """An update whose results are already on the branch pushes nothing."""
    with GitServer() as server:
        over_git(server, 0)
        pushes = len(server.pushes())
        again = over_git(server, 0)
        assert again.commit_sha is None
        assert len(server.pushes()) == pushes


def race_over_git(server: GitServer, writers: int) -> dict[int, Saved]:
    transports = {leg: git_transport(server, f"leg-{leg:02d}") for leg in range(writers)}
    try:
        outcomes = race_legs(
            lambda leg: (None, {"remote": transports[leg]}), writers, clock=VirtualClock()
        )
    finally:
        for transport in transports.values():
            transport.close()
    failed = {leg: o for leg, o in outcomes.items() if not isinstance(o, Saved)}
    assert failed == {}
    return {leg: o for leg, o in outcomes.items() if isinstance(o, Saved)}


def test_the_writers_of_eight_runs_over_git_all_land():
    """The writers of 8 runs (workflows) that update at once race over git: every cell lands,
    the markdown is a render of the state, each writer commits once (a lost compare-and-swap
    reads again and retries), and none makes more than 4 times the median one's requests."""
    with GitServer() as server:
        saved = race_over_git(server, 8)
        requests = Counter(r.token for r in server.requests)
        assert_every_cell_landed(server, legs=8)
        assert_markdown_is_a_render_of_the_state(server)
        assert len(server.pushes()) >= 8
    assert len({s.commit_sha for s in saved.values()}) == 8
    counts = [requests[f"leg-{leg:02d}"] for leg in range(8)]
    assert max(counts) <= 4 * statistics.median(counts), counts


def test_writers_over_git_with_one_request_in_ten_failing_lose_nothing():
    """6 writers with 10% of git's requests answered 5xx, half of them after the work (a push
    that lands and still fails): every cell lands and the markdown is a render of the state."""
    with GitServer(fail_rate=0.1, seed=3) as server:
        race_over_git(server, 6)
        assert_every_cell_landed(server, legs=6)
        assert_markdown_is_a_render_of_the_state(server)
