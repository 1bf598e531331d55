"""End to end, through the CLI and GitHub's REST API only: bad objects in the branch store's
inbox and matrix sizes no matrix can have (issue 15, items 4 and 5).

The inbox objects are planted with plain git-data calls, as anyone with write access could,
and the legs are ``ivy-matrix update`` with ``--matrix-size`` (over the REST API: the fake
serves no git, and its host is not the server URL's), so these tests run unchanged against
any version of the store: before issue 15 each of them failed (exit 4 naming the branch, a
traceback on ``²²``, memory exhausted by the huge size, no bound on ``--matrix-size``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ivy_matrix.github.client import GitHubClient
from tests.commands.test_update_github import (
    REPO,
    RUN,
    fast_client,
    run,
    runner_env,
    write_results,
)
from tests.github.fake_server import FakeGitHub

BRANCH = "ivy-matrix"
INBOX = f"refs/ivy-matrix/inbox/{BRANCH}/"
STATE = ".ivy-matrix/state/core/gradients.json"
GOOD = (
    '{"format":"ivy-matrix-dashboard","version":2,"title":"gradients","category":"core",'
    '"runs":[1],"sources":[[1,1,5,"https://github.com/acme/widgets/actions/runs/1/job/5",""]],'
    '"cells":[[[0,"success"]]],"backends":[["zz",[1,1,5],0]],"rows":[["test_zz",[1,1,5],0,'
    '{"zz":0}]]}\n'
)


def plant(client: GitHubClient, ref: str, files: dict[str, str]) -> None:
    """An inbox object as a root commit holding ``files``, under ``ref``."""
    tree = client.create_tree(REPO, None, files)
    commit = client.create_commit(REPO, "planted", tree, [])
    assert client.create_ref(REPO, ref, commit)


def leg(fake: FakeGitHub, work: Path, index: int, size: int, backend: str) -> tuple[int, str]:
    """One matrix leg of ``backend`` through the CLI: its exit code and its log."""
    write_results(work / "junit.xml", backend)
    env = runner_env(fake, work, IVY_MATRIX_JOB_ID=str(700 + index))
    argv = ["--junit", "*.xml", "--backend", backend]
    matrix = ["--matrix-size", str(size), "--matrix-index", str(index)]
    result = run(work, env, *argv, *matrix)
    return result.returncode, result.stderr


def branch_backends(fake: FakeGitHub) -> set[str]:
    """The backends whose results reach core/gradients on the branch (any layout)."""
    files = fake.files(BRANCH)
    text = "".join(d.decode() for p, d in files.items() if p.startswith(".ivy-matrix/state/core"))
    return {b for b in ("b0", "b1", "zz") if f'"{b}"' in text}


@pytest.mark.parametrize(
    ("name", "files", "reason"),
    [
        ("garbage", {STATE: "\x00\x01 not json at all"}, "not JSON"),
        ("truncated", {STATE: GOOD[: len(GOOD) // 2]}, "not JSON"),
        ("wrong path", {".ivy-matrix/state/core/random.json": GOOD}, "belongs in"),
    ],
)
def test_a_bad_inbox_object_is_a_warning_and_every_later_run_lands(
    fake, tmp_path, name, files, reason
):
    """A broken inbox object of another run is a warning naming its ref and why; it leaves
    the inbox, and this run's legs and a later run's land their cells (exit 0)."""
    bad = f"{INBOX}{RUN - 5}-4-1-{'ab' * 20}"
    with fast_client("fake-token", fake.base_url) as client:
        plant(client, bad, files)
    code, log = leg(fake, tmp_path / "leg0", 0, 2, "b0")
    assert code == 0, log
    assert any(bad in line and reason in line for line in log.splitlines()), log
    assert leg(fake, tmp_path / "leg1", 1, 2, "b1")[0] == 0
    assert fake.refs[REPO].get(bad) is None, name
    assert {"b0", "b1"} <= branch_backends(fake)


def test_a_non_ascii_digit_in_an_inbox_ref_name_is_a_warning_not_a_traceback(fake, tmp_path):
    """A ref named ``²²-4-0-...`` (digits to str.isdigit, not to int) is a warning naming it,
    not a traceback: it leaves the inbox and both legs of the run land their cells."""
    bad = f"{INBOX}²²-4-0-{'cd' * 20}"
    with fast_client("fake-token", fake.base_url) as client:
        plant(client, bad, {STATE: GOOD})
    code, log = leg(fake, tmp_path / "leg0", 0, 2, "b0")
    assert code == 0, log
    assert "Traceback" not in log
    assert any(bad in line for line in log.splitlines()), log
    assert leg(fake, tmp_path / "leg1", 1, 2, "b1")[0] == 0
    assert fake.refs[REPO].get(bad) is None
    assert {"b0", "b1"} <= branch_backends(fake)


def test_a_huge_matrix_size_in_a_ref_name_is_refused_before_the_legs_record(fake, tmp_path):
    """A ref naming a matrix of 99,999,999,999 legs is refused: the legs land, and the
    finished-legs record never holds that size."""
    bad = f"{INBOX}{RUN}-99999999999-5-{'ef' * 20}"
    with fast_client("fake-token", fake.base_url) as client:
        plant(client, bad, {STATE: GOOD})
    code, log = leg(fake, tmp_path / "leg0", 0, 2, "b0")
    assert code == 0, log
    assert leg(fake, tmp_path / "leg1", 1, 2, "b1")[0] == 0
    legs = fake.read_file(".ivy-matrix/state/LEGS", BRANCH)
    assert "99999999999" not in legs
    assert {"b0", "b1"} <= branch_backends(fake)


@pytest.mark.parametrize("size", ["257", "99999999999"])
def test_a_matrix_size_over_256_is_a_usage_error(fake, tmp_path, size):
    """--matrix-size above GitHub's 256 jobs a matrix is a usage error (exit 2) saying the
    bound, before anything is read or written."""
    write_results(tmp_path / "junit.xml", "b0")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="700")
    result = run(tmp_path, env, "--junit", "*.xml", "--matrix-size", size, "--matrix-index", "0")
    assert result.returncode == 2
    assert "a matrix has 1 to 256 legs" in result.stderr
    assert fake.requests == []
