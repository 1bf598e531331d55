"""``compare --json`` end to end with recorded environments: a default-branch store built by
``ivy-matrix update`` runs (torch's environment from its result files' suite properties,
jax's from an ``--env-command`` that prints JSON), then a pull request's results; every
failing cell's ``blame``, ``kind`` and the ``signatures`` against what the histories imply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import pytest

from ivy_matrix.cli import main
from tests.commands.results import GRADIENTS, write_suite

pytestmark = pytest.mark.timeout(120)

REPO = "acme/widgets"
SERVER = f"https://github.com/{REPO}"
KEPT = 5  # --history: runs 101 and 102 fall out of the store
X, Y, Z = "1" * 40, "2" * 40, "3" * 40
HEAD = "4" * 40
# The commit of each default-branch run, and the environments.
SHAS = {101: X, 102: X, 103: X, 104: Y, 105: Y, 106: Z, 107: Z}
ENV_A = {"jax": "0.4.30", "numpy": "2.1.0"}
ENV_B = {"jax": "0.4.31", "numpy": "2.1.0"}
ENV_PR = {"jax": "0.4.31", "numpy": "2.2.0"}


def env_of(backend: str, run: int) -> dict[str, str]:
    """torch's jax moves to 0.4.31 with the commit Y (run 104); jax's a run later, on the same
    commit Y (run 105: an upstream release between two runs of one commit)."""
    return ENV_B if run >= (104 if backend == "torch" else 105) else ENV_A


# Per backend, each test's outcomes in runs 101..107 (P pass, F fail).
HISTORY = {
    "torch": {
        "test_both": "PPPFFFF",  # breaks in 104: new commit Y and new jax
        "test_code": "PPPPPFF",  # breaks in 106: new commit Z, same environment
        "test_flaky": "PPFPFPF",  # flips: no blame
        "test_new": "PPPPPPP",
        "test_shared": "PPPPPPP",
        "test_env": "PPPPPPP",
        "test_old": "PPPPPPP",
    },
    "jax": {
        "test_both": "PPPPPPP",
        "test_code": "PPPPPPP",
        "test_new": "PPPPPPP",
        "test_shared": "PPPPPPP",
        "test_env": "PPPPFFF",  # breaks in 105: same commit Y, jax 0.4.31
        "test_old": "PFFFFFF",  # its last pass (101) is older than the 5 runs kept
    },
}
ASSERT = "assert 1 == 2"
# The pull request's failure lines per backend (absent: it passes there).
PULL_REQUEST = {
    "torch": {
        "test_both": ASSERT,
        "test_code": ASSERT,
        "test_flaky": ASSERT,
        "test_new": ASSERT,
        "test_shared": "RuntimeError: torch.float32 tensor at 0x7f3a12 has 3 dims, expected 4",
    },
    "jax": {
        "test_code": "TypeError: not an array",
        "test_shared": "RuntimeError: jnp.float32 tensor at 0x1b2c has 5 dims, expected 2",
        "test_env": ASSERT,
        "test_old": ASSERT,
    },
}


def cases_xml(lines: dict[str, str | None]) -> str:
    """``<testcase>`` elements: each test with its failure line, or passing (None)."""
    return "".join(
        f'<testcase classname="{GRADIENTS}" name="{name}">'
        + ("" if line is None else f"<failure message={quoteattr(line)}>trace</failure>")
        + "</testcase>"
        for name, line in lines.items()
    )


def properties_xml(env: dict[str, str]) -> str:
    """A suite's ``<properties>`` (pytest's record_testsuite_property) recording ``env``."""
    found = "".join(f"<property name={quoteattr(k)} value={quoteattr(v)}/>" for k, v in env.items())
    return f"<properties>{found}</properties>"


def cli(*argv: str) -> None:
    """One ivy-matrix command, which must succeed."""
    assert main(list(argv), {}) == 0


def build_store() -> None:
    """Runs 101..107 on the default branch, one ``update`` per run and backend: torch's
    environment from its result file's properties, jax's printed by an env command."""
    for index, run in enumerate(range(101, 108)):
        for number, (backend, tests) in enumerate(HISTORY.items(), 1):
            lines = {name: None if o[index] == "P" else ASSERT for name, o in tests.items()}
            env = env_of(backend, run)
            recorded: tuple[str, ...] = ()
            body = cases_xml(lines)
            if backend == "torch":
                body = properties_xml(env) + body
            else:
                Path("env.json").write_text(json.dumps(env), encoding="utf-8")
                recorded = ("--env-command", "cat env.json")
            path = write_suite(Path(f"main-{run}/{backend}/r.xml"), body)
            cli(
                "update", "--junit", str(path), "--backend", backend, "--run-id", str(run),
                "--job-id", str(run * 10 + number), "--repository", REPO, "--sha", SHAS[run],
                "--ref", "refs/heads/main", "--history", str(KEPT), *recorded,
            )  # fmt: skip


def compare_pull_request() -> dict[str, Any]:
    """The pull request's results of both backends in one ``compare``; its JSON."""
    for backend, failing in PULL_REQUEST.items():
        lines = {name: failing.get(name) for name in HISTORY[backend]}
        write_suite(Path(f"pr/{backend}/r.xml"), cases_xml(lines))
    Path("pr-env.json").write_text(json.dumps(ENV_PR), encoding="utf-8")
    cli(
        "compare", "--junit", "pr/*/r.xml", "--backend-from-path", "pr/(?P<backend>[^/]+)/",
        "--run-id", "900", "--repository", REPO, "--pr", "7", "--head-sha", HEAD,
        "--base-sha", Z, "--env-command", "cat pr-env.json", "--json", "v.json",
    )  # fmt: skip
    found: dict[str, Any] = json.loads(Path("v.json").read_text(encoding="utf-8"))
    return found


def blame(
    last: tuple[int, str] | None,
    first: tuple[int, str],
    environment: dict[str, list[str]] | None,
    hint: str | None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """A blame as ``compare --json`` writes it; the compare link joins the two commits."""
    return {
        "last_pass": None if last is None else {"run_id": last[0], "sha": last[1]},
        "first_failure": {"run_id": first[0], "sha": first[1]},
        "compare": None if last is None else f"{SERVER}/compare/{last[1]}...{first[1]}",
        "environment": environment,
        "hint": hint,
        "notes": notes or [],
    }


NO_BLAME = {
    "last_pass": None,
    "first_failure": None,
    "compare": None,
    "environment": None,
    "hint": None,
    "notes": ["flaky (flips between pass and fail): no blame"],
}
# A new failure starts in the pull request (run 900, its head commit): its last pass is the
# newest default-branch run, 107 (commit Z, environment B), and only numpy differs.
NEW = blame((107, Z), (900, HEAD), {"numpy": ["2.1.0", "2.2.0"]}, "both")
# (row, backend) -> (verdict, blame, kind)
EXPECTED = {
    ("test_both", "torch"): (
        "pre-existing",
        blame((103, X), (104, Y), {"jax": ["0.4.30", "0.4.31"]}, "both"),
        "backend-specific",
    ),
    ("test_code", "torch"): (
        "pre-existing",
        blame((105, Y), (106, Z), {}, "code only"),
        "divergent",
    ),
    ("test_code", "jax"): ("new", NEW, "divergent"),
    ("test_flaky", "torch"): ("flaky", NO_BLAME, "backend-specific"),
    ("test_new", "torch"): ("new", NEW, "backend-specific"),
    ("test_shared", "torch"): ("new", NEW, "shared"),
    ("test_shared", "jax"): ("new", NEW, "shared"),
    ("test_env", "jax"): (
        "pre-existing",
        blame((104, Y), (105, Y), {"jax": ["0.4.30", "0.4.31"]}, "environment only"),
        "backend-specific",
    ),
    ("test_old", "jax"): (
        "pre-existing",
        blame(
            None,
            (103, X),
            None,
            None,
            ["no pass in the kept history: no compare link"],
        ),
        "backend-specific",
    ),
}


@pytest.mark.usefixtures("workdir")
def test_each_failing_cells_blame_and_kind_follow_from_the_histories():
    """Code only, environment only, both, a flaky streak with no blame and a last pass older
    than the kept history, each on the cell whose history says so; new failures start in
    the pull request; kinds and signatures from the pull request's failure lines."""
    build_store()

    document = compare_pull_request()

    failing = {
        (c["row"], c["backend"]): (c["verdict"], c["blame"], c["kind"])
        for c in document["cells"]
        if c["blame"] is not None or c["kind"] is not None
    }
    assert failing == EXPECTED
    passing = [c for c in document["cells"] if (c["row"], c["backend"]) not in EXPECTED]
    assert all(c["verdict"] not in {"new", "pre-existing", "flaky"} for c in passing)
    signature = {(c["row"], c["backend"]): c["signature"] for c in document["cells"]}
    assert document["signatures"] == [
        {
            "signature": signature["test_both", "torch"],
            "message": ASSERT,
            "cells": 6,
            "backends": ["torch", "jax"],
            "tests": 6,
            "kind": "backend-specific",
        },
        {
            "signature": signature["test_shared", "torch"],
            "message": PULL_REQUEST["torch"]["test_shared"],
            "cells": 2,
            "backends": ["torch", "jax"],
            "tests": 1,
            "kind": "shared",
        },
        {
            "signature": signature["test_code", "jax"],
            "message": "TypeError: not an array",
            "cells": 1,
            "backends": ["jax"],
            "tests": 1,
            "kind": "divergent",
        },
    ]
    assert signature["test_shared", "jax"] == signature["test_shared", "torch"]
