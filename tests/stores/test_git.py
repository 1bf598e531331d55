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
from collections.abc import Iterable, Iterator

import pytest

from ivy_matrix.github.git_transport import GitTransport
from ivy_matrix.github.types import RefUpdate
from ivy_matrix.model import DashboardState
from ivy_matrix.results.timed_cases import TimedCases
from ivy_matrix.stores import Saved, commit, committer
from ivy_matrix.stores.tree import Content
from ivy_matrix.views import durations_file
from ivy_matrix.views.dashboards import RenderedFile, render_page
from ivy_matrix.views.durations_file import DurationsFile, durations_files
from ivy_matrix.views.style import Style
from tests.concurrency import VirtualClock
from tests.github.git_server import GitServer
from tests.stores.helpers import (
    BRANCH,
    DASHBOARDS,
    REPO,
    STATE_DIR,
    assert_every_cell_landed,
    assert_markdown_is_a_render_of_the_state,
    git_transport,
    race_legs,
    run_leg,
)
from tests.views.durations import watch_texts


def over_git(server: GitServer, leg: int, log: object = None, **options) -> Saved:
    """Writer ``leg``'s update through a store over git, as token ``leg-NN`` (``log``: the
    store's)."""
    transport = git_transport(server, f"leg-{leg:02d}")
    stored = {"remote": transport} if log is None else {"remote": transport, "log": log}
    try:
        return run_leg(None, leg, stored=stored, **options)
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


# ---------------------------------------------------------------- the branch's size (issue 24)


def test_the_branch_starts_afresh_every_n_commits_and_keeps_every_cell(monkeypatch):
    """Every FRESH_ROOT_EVERY revisions the commit is a root commit of the whole tree: the
    branch holds at most that many commits, every cell and the revision count carry on, and
    the markdown is a render of the state (the history grew by one commit a run, for ever)."""
    monkeypatch.setattr(committer, "FRESH_ROOT_EVERY", 3, raising=False)
    with GitServer() as server:
        for leg in range(7):
            over_git(server, leg)
        history = server.history(BRANCH)
        revision = server.read_file(f"{STATE_DIR}/REVISION", BRANCH)
        root = history[-1]
        assert server.parents(root) == []
        message = server.message(root)
        assert_every_cell_landed(server, legs=7)
        assert_markdown_is_a_render_of_the_state(server)
    assert revision.strip() == "7"
    assert len(history) == 2  # revision 6, the fresh root, and 7 on it
    assert "starts afresh at revision 6" in message


def test_writers_racing_fresh_starts_of_the_branch_lose_nothing(monkeypatch):
    """Every second commit a fresh root, and the writers of 8 runs racing: a fresh root moves
    by the same compare-and-swap as any commit, so every cell lands and the history stays
    short."""
    monkeypatch.setattr(committer, "FRESH_ROOT_EVERY", 2, raising=False)
    with GitServer() as server:
        race_over_git(server, 8)
        assert_every_cell_landed(server, legs=8)
        assert_markdown_is_a_render_of_the_state(server)
        assert len(server.history(BRANCH)) <= 2


def test_a_fresh_root_loses_to_a_writer_that_moved_the_branch_first():
    """A fresh root's push leases the tip it read: another writer's commit that landed first
    makes it a lost race (False), never an overwrite of that commit; read again, it lands."""
    ref = f"refs/heads/{BRANCH}"
    with GitServer() as server:
        tip = server.push_files(ref, {"a.md": "x"})
        first, second = git_transport(server, "one"), git_transport(server, "two")
        for transport in (first, second):
            transport.read_tip(BRANCH)
        mine = first.write_commit("on the tip", first.write_tree(None, [("a.md", "1")]), [tip])
        root = second.write_commit("a fresh root", second.write_tree(None, [("a.md", "2")]), [])
        landed = first.update_ref(RefUpdate(ref=ref, new=mine, old=tip))
        lost = second.update_ref(RefUpdate(ref=ref, new=root, old=tip))
        assert server.ref_sha(ref) == mine
        second.read_tip(BRANCH)
        again = second.write_commit("a fresh root", second.write_tree(None, [("a.md", "3")]), [])
        then = second.update_ref(RefUpdate(ref=ref, new=again, old=mine))
        assert server.ref_sha(ref) == again
        first.close()
        second.close()
    assert (landed, lost, then) == (True, False, True)


def test_a_server_that_refuses_a_fresh_start_gets_the_commit_on_the_tip(monkeypatch):
    """A rule that blocks force pushes (a real pre-receive hook refusing any move that is not
    a fast-forward, in a GitHub ruleset's words): the fresh root is refused, the same commit
    lands on the tip, and a warning says how to keep the branch small."""
    monkeypatch.setattr(committer, "FRESH_ROOT_EVERY", 2, raising=False)
    warnings: list[str] = []

    class Log:
        def info(self, message: str) -> None:
            del message

        def warning(self, message: str) -> None:
            warnings.append(message)

    with GitServer() as server:
        server.pre_receive(
            "while read old new ref; do\n"
            '  if [ "$old" != 0000000000000000000000000000000000000000 ] &&'
            ' ! git merge-base --is-ancestor "$old" "$new"; then\n'
            '    echo "error: GH013: Repository rule violations found for $ref." >&2\n'
            '    echo "- Cannot force-push to this branch" >&2\n'
            "    exit 1\n"
            "  fi\n"
            "done\n"
        )
        for leg in range(3):
            over_git(server, leg, log=Log())
        history = server.history(BRANCH)
        assert_every_cell_landed(server, legs=3)
    assert len(history) == 3
    assert len(warnings) == 1
    assert "Cannot force-push to this branch" in warnings[0]
    assert "docs/state.md" in warnings[0]


class CountingTransport(GitTransport):
    """The git transport, noting how many pages had been rendered (``rendered``) when its
    ``write_tree`` was called and when each file reached it."""

    def __init__(self, server: GitServer, rendered: list[int]) -> None:
        super().__init__(server_url=server.url, repository=REPO, token="leg-00")
        self.rendered = rendered
        self.seen: list[int] = []

    def write_tree(self, base_tree: str | None, files: Iterable[tuple[str, Content | None]]) -> str:
        self.seen.append(self.rendered[0])

        def noted() -> Iterator[tuple[str, Content | None]]:
            for item in files:
                self.seen.append(self.rendered[0])
                yield item

        return super().write_tree(base_tree, noted())


def test_a_commit_renders_each_page_as_it_writes_it(monkeypatch: pytest.MonkeyPatch):
    """The branch store streams a commit (issue 26): no page is rendered before the remote
    starts writing, and each is rendered as the remote takes it, so one page's text at a time
    is held, not every page's (the old code rendered all three before writing any)."""
    rendered = [0]

    def counted(state: DashboardState, style: Style) -> RenderedFile:
        rendered[0] += 1
        return render_page(state, style)

    monkeypatch.setattr(commit, "render_page", counted)
    with GitServer() as server:
        transport = CountingTransport(server, rendered)
        try:
            saved = run_leg(None, 0, stored={"remote": transport})
        finally:
            transport.close()
        assert_markdown_is_a_render_of_the_state(server)
    pages = [path for path in saved.written if path.endswith(".md") and path != "README.md"]
    assert rendered[0] == len(DASHBOARDS) == len(pages)
    assert transport.seen[0] == 0  # write_tree began before any page was rendered
    assert sorted(set(transport.seen)) == list(range(len(DASHBOARDS) + 1))


def test_a_durations_file_is_hashed_scrubbed_and_written_a_piece_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
):
    """Over git, no durations file's whole text is ever made (5 MB each at 200k tests; the
    old commit made each whole to hash and to write it): on a new branch each is made once,
    a piece at a time, as it is scrubbed and written; where the branch has it, twice more
    before (its size, then its blob id), and written only when it differs. The blobs are
    git's own (the real remote takes the push) and hold the text whole."""
    monkeypatch.setattr(durations_file, "PIECE", 40)  # several pieces a file
    made: list[tuple[str, str]] = []

    def seen(file: DurationsFile, text: str) -> str:
        made.append((file.path, text))
        return text

    watch_texts(monkeypatch, seen)

    def files(seconds: float) -> tuple[DurationsFile, ...]:
        timed = {
            name: {"t.py::": {f"test_{name}[{i}]": seconds + i for i in range(20)}} for name in "ab"
        }
        return tuple(durations_files(TimedCases.of(timed)))

    with GitServer() as server:
        for leg, seconds in enumerate([0.5, 0.25, 0.25]):  # new, changed, the same
            durations = files(seconds)
            texts = {file.path: "".join(file.pieces()) for file in durations}
            pieces = len(list(durations[0].pieces()))
            made.clear()
            transport = git_transport(server, f"leg-{leg:02d}")
            try:
                saved = run_leg(None, leg, stored={"remote": transport, "extra": durations})
            finally:
                transport.close()
            on_branch = server.files(BRANCH)
            assert {path: on_branch[path].decode() for path in texts} == texts
            assert not any(text == texts[path] for path, text in made)  # never whole
            hashed, sent = 2 * (leg > 0), leg < 2  # the branch has them; leg 2 brings the same
            assert Counter(path for path, _ in made) == dict.fromkeys(
                texts, pieces * (hashed + sent)
            )
            assert [path for path in saved.written if path in texts] == sorted(texts) * sent
            assert pieces > 3
