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
from pathlib import Path

from tests.github.git_server import OWNER_REPO, GitServer


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
