"""The git side of ``bench/github_scale.py``: the dashboard branch on a real git remote.

With ``--transport git`` the legs reach the branch through git's own protocol: a
``tests/github/git_server.py`` (``git http-backend`` on 127.0.0.1, answering each request after
the same random latency as the REST stand-in) holds the repository, the REST stand-in stays
for everything else (issues), and each leg's command gets ``--server-url`` pointing at the git
server, so ``branch-transport: auto`` picks git (the API's host is the server's). Both servers
record every request by token, so a leg's REST requests and git requests are counted apart.

I/O: a seeded bare repository under ``--work``, copied into each configuration's server.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.github.git_server import OWNER_REPO, GitRequest, GitServer

Json = dict[str, Any]


def seeded_server(seed_repo: Path, *, latency: tuple[float, float], seed: int) -> GitServer:
    """A git server (not started) whose repository is a copy of ``seed_repo``."""
    server = GitServer(latency=latency, seed=seed)
    target = server.root / f"{OWNER_REPO}.git"
    shutil.rmtree(target)
    shutil.copytree(seed_repo, target)
    return server


def keep_seed(server: GitServer, work: Path) -> Path:
    """Copy the server's repository as the seed of every configuration."""
    seed_repo = work / "seed-repo.git"
    shutil.rmtree(seed_repo, ignore_errors=True)
    shutil.copytree(server.root / f"{OWNER_REPO}.git", seed_repo)
    return seed_repo


def leg_git_figures(records: Iterable[GitRequest]) -> Json:
    """One leg's git traffic: HTTP requests, pushes, bytes sent and received."""
    mine = list(records)
    return {
        "git_requests": len(mine),
        "pushes": sum(r.is_push for r in mine),
        "git_sent_kb": round(sum(r.bytes_in for r in mine) / 1000, 1),
        "git_received_kb": round(sum(r.bytes_out for r in mine) / 1000, 1),
        "git_failed": sum(r.status >= 500 for r in mine),
    }


def pushes_per_minute(records: Iterable[GitRequest]) -> list[float]:
    """When each push was answered (monotonic seconds), sorted."""
    return sorted(r.at for r in records if r.is_push)
