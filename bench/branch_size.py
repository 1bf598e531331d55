"""The dashboard branch's size over many runs (issue 24 item 10), against a real git remote.

Each run is one ``ivy-matrix update`` (in-process ``cli.main``, as the action runs it) of every
backend's JUnit files, with the ``branch`` and ``site`` targets over git's own protocol, into a
``tests/github/git_server.py`` remote (``git http-backend`` on 127.0.0.1). The shape is the
issue's probe: ``--dashboards`` 40 x ``--tests`` 25 x 4 backends = 4,000 cells; each run flips
a seeded share of the outcomes (``--churn``), so every run changes states, pages and the site.

At each checkpoint it measures what a reader of the branch pays: a fresh ``git clone --bare
--single-branch --branch ivy-matrix`` of the remote (the packed size git reports,
``count-objects``'s ``size-pack``), the commits it holds, and the remote's own repository after
``git gc --prune=now`` (what is left once the host drops unreferenced objects).
``--fresh-root-every N`` sets how often the branch starts afresh (0: never, today's history
kept whole); by default the code's own setting.

    .venv/bin/python bench/branch_size.py [--runs 232] [--checkpoints 50 100 232] \
        [--fresh-root-every 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import io
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ivy_matrix.cli import main  # noqa: E402  -- after the path entry
from ivy_matrix.github.connection import Remote  # noqa: E402
from ivy_matrix.github.git_transport import GitTransport  # noqa: E402
from ivy_matrix.stores import committer  # noqa: E402
from tests.github.git_server import OWNER_REPO, GitServer  # noqa: E402

BACKENDS = ("torch", "numpy", "tensorflow", "jax")
FIRST_RUN = 9_000_000_000


def no_rest(_token: str, _api_url: str) -> object:
    raise AssertionError("the branch and site targets over git make no REST request")


def git_factory(server_url: str, repository: str, token: str) -> GitTransport:
    return GitTransport(server_url=server_url, repository=repository, token=token)


def write_results(folder: Path, run: int, args: argparse.Namespace) -> None:
    """Every backend's JUnit file of ``run``: a seeded share of outcomes flipped per run."""
    for backend in BACKENDS[: args.backends]:
        cases = []
        for d in range(args.dashboards):
            classname = f"ivy_tests.test_ivy.test_functional.test_mod{d // 10}.test_dash{d:02d}"
            for t in range(args.tests):
                base = random.Random(f"{d}-{t}-{backend}").random()
                flip = random.Random(f"{run}-{d}-{t}-{backend}").random() < args.churn
                failing = (base < 0.1) != flip
                body = (
                    f'<failure message="AssertionError: run {run} value {t}">trace {run}</failure>'
                    if failing
                    else ""
                )
                cases.append(
                    f'<testcase classname="{classname}" name="test_{t:02d}[{backend}]" '
                    f'time="0.01">{body}</testcase>'
                )
        path = folder / backend / "junit.xml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"<testsuites><testsuite>{''.join(cases)}</testsuite></testsuites>", encoding="utf-8"
        )


def update(server: GitServer, work: Path, run: int) -> None:
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_RUN_ID": str(FIRST_RUN + run),
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_REPOSITORY": OWNER_REPO,
        "GITHUB_SERVER_URL": server.url,
        "GITHUB_API_URL": server.url,
        "GITHUB_EVENT_NAME": "push",
        "IVY_MATRIX_TOKEN": "bench-token",
        "IVY_MATRIX_TARGETS": "branch\nsite",
        "IVY_MATRIX_JOB_ID": str(run),
    }
    argv = ["update", "--junit", "results/*/*.xml", "--backend-from-path",
            "results/(?P<backend>[^/]+)/"]  # fmt: skip
    err = io.StringIO()
    remote = Remote(client=no_rest, git=git_factory)  # type: ignore[arg-type]
    with contextlib.chdir(work):
        code = main(argv, env, remote=remote, stdout=io.StringIO(), stderr=err)
    if code != 0:
        raise SystemExit(f"run {run}: exit {code}\n{err.getvalue()}")


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, check=True, cwd=cwd)
    return done.stdout


def size_pack(repository: Path) -> int:
    """Bytes of packs of a repository (count-objects' size-pack, KiB)."""
    for line in git("--git-dir", str(repository), "count-objects", "-v").splitlines():
        name, _, value = line.partition(": ")
        if name == "size-pack":
            return int(value) * 1024
    return 0


def measure(server: GitServer, scratch: Path) -> dict[str, int]:
    clone = scratch / "clone.git"
    shutil.rmtree(clone, ignore_errors=True)
    url = f"{server.url}/{OWNER_REPO}"
    header = f"http.extraheader=AUTHORIZATION: basic {_basic('bench-token')}"
    git("-c", header, "clone", "-q", "--bare", "--single-branch", "--branch", "ivy-matrix",
        url, str(clone))  # fmt: skip
    commits = int(git("--git-dir", str(clone), "rev-list", "--count", "ivy-matrix").strip())
    remote = server.root / f"{OWNER_REPO}.git"
    copy = scratch / "remote.git"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(remote, copy)
    git("--git-dir", str(copy), "-c", "gc.reflogExpire=now", "-c",
        "gc.reflogExpireUnreachable=now", "gc", "-q", "--prune=now")  # fmt: skip
    tip = git("--git-dir", str(clone), "rev-parse", "ivy-matrix").strip()
    files = len(git("--git-dir", str(clone), "ls-tree", "-r", "--name-only", tip).splitlines())
    return {
        "clone_bytes": size_pack(clone),
        "commits": commits,
        "files": files,
        "remote_after_gc_bytes": size_pack(copy),
    }


def _basic(token: str) -> str:
    return base64.b64encode(f"x-access-token:{token}".encode()).decode()


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=232)
    parser.add_argument("--checkpoints", type=int, nargs="*", default=[50, 100, 232])
    parser.add_argument("--dashboards", type=int, default=40)
    parser.add_argument("--tests", type=int, default=25)
    parser.add_argument("--backends", type=int, default=4)
    parser.add_argument("--churn", type=float, default=0.05)
    parser.add_argument("--fresh-root-every", type=int, default=None)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.fresh_root_every is not None:
        committer.FRESH_ROOT_EVERY = args.fresh_root_every
    every = getattr(committer, "FRESH_ROOT_EVERY", 0)
    checkpoints = sorted({c for c in args.checkpoints if c <= args.runs} | {args.runs})
    rows = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="branch-size-") as temporary, GitServer() as server:
        work, scratch = Path(temporary, "work"), Path(temporary, "scratch")
        scratch.mkdir()
        for run in range(1, args.runs + 1):
            shutil.rmtree(work / "results", ignore_errors=True)
            write_results(work / "results", run, args)
            update(server, work, run)
            if run in checkpoints:
                row = {"runs": run, **measure(server, scratch)}
                rows.append(row)
                print(
                    f"after {run:4d} runs: fresh clone of the branch {row['clone_bytes'] / 1e6:6.2f} MB"
                    f" packed, {row['commits']:4d} commit(s), {row['files']} files; the remote after"
                    f" gc {row['remote_after_gc_bytes'] / 1e6:6.2f} MB "
                    f"({time.monotonic() - started:.0f} s)",
                    flush=True,
                )
    cells = args.dashboards * args.tests * args.backends
    result = {"cells": cells, "fresh_root_every": every, "churn": args.churn, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
