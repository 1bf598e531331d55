"""``ivy-matrix compare`` end to end: a default-branch store built by ``update`` runs, then a
pull request's results compared with it (the JSON, the markdown, ``fail-on: new``), and
``update`` on a pull request, which records nothing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import pytest

from ivy_matrix.cli import main
from ivy_matrix.explain.reasons import TIMES
from tests.commands.results import GRADIENTS, write_junit, write_suite
from tests.commands.test_update_github import FAST, runner_env, write_results
from tests.github.fake_server import FakeGitHub

pytestmark = pytest.mark.timeout(60)

REPO = "acme/widgets"
DASHBOARD = "core/gradients"
_FLAKY = f'<testcase classname="{GRADIENTS}" name="{{}}"><flakyFailure message="once"/></testcase>'


def results(path: Path, cases: Sequence[tuple[str, str]]) -> Path:
    """A result file of ``(name, status)`` cases; status ``flaky`` passed only after reruns."""
    plain = [(n, s) for n, s in cases if s != "flaky"]
    write_junit(path, plain)
    flaky = "".join(_FLAKY.format(n) for n, s in cases if s == "flaky")
    if flaky:
        text = path.read_text(encoding="utf-8").replace("</testsuite>", flaky + "</testsuite>")
        path.write_text(text, encoding="utf-8")
    return path


def run(*argv: str, env: dict[str, str] | None = None) -> int:
    return main(list(argv), env or {})


def update_main(run_id: int, backend: str, cases: Sequence[tuple[str, str]]) -> None:
    """One default-branch run of one backend, recorded with its commit and ref."""
    path = results(Path(f"main-{run_id}-{backend}/r.xml"), cases)
    code = run(
        "update", "--junit", str(path), "--backend", backend, "--run-id", str(run_id),
        "--job-id", str(run_id * 10), "--repository", REPO, "--sha", f"c{run_id}",
        "--ref", "refs/heads/main",
    )  # fmt: skip
    assert code == 0


def compare(backend: str, cases: Sequence[tuple[str, str]], *extra: str) -> tuple[int, Path]:
    """Compare one backend's pull-request results with the store; the exit code and JSON."""
    path = results(Path(f"pr-{backend}/r.xml"), cases)
    out = Path(f"verdicts-{backend}.json")
    code = run(
        "compare", "--junit", str(path), "--backend", backend, "--run-id", "900",
        "--job-id", "9000", "--repository", REPO, "--pr", "7", "--head-sha", "feedface",
        "--json", str(out), *extra,
    )  # fmt: skip
    return code, out


def document(path: Path) -> dict[str, Any]:
    found = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(found, dict)
    return found


def by_row(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {cell["row"]: cell for cell in doc["cells"]}


# Five default-branch runs of torch (c101 ... c105); the merge base is c103.
HISTORY = {
    "test_new": ["passed"] * 5,
    "test_pre": ["passed", "failed", "failed", "failed", "failed"],
    "test_fixed": ["failed"] * 5,
    "test_flips": ["failed", "passed", "failed", "passed", "passed"],
    "test_green": ["passed"] * 5,
    "test_rerun": ["passed"] * 5,
    "test_base": ["passed", "passed", "passed", "failed", "failed"],
}
PULL_REQUEST = [
    ("test_new", "failed"),
    ("test_pre", "failed"),
    ("test_fixed", "passed"),
    ("test_flips", "failed"),
    ("test_green", "passed"),
    ("test_rerun", "flaky"),
    ("test_base", "failed"),
    ("test_brand_new", "failed"),
]


def build_history() -> None:
    for index, run_id in enumerate(range(101, 106)):
        update_main(
            run_id, "torch", [(name, outcomes[index]) for name, outcomes in HISTORY.items()]
        )


@pytest.mark.usefixtures("workdir")
def test_compare_json_has_every_verdict_and_failing_since():
    """Each pull-request cell gets the verdict its history calls for, with failing-since."""
    build_history()
    code, out = compare("torch", PULL_REQUEST, "--base-sha", "c103")
    assert code == 0
    doc = document(out)
    cells = by_row(doc)
    assert {row: cell["verdict"] for row, cell in cells.items()} == {
        "test_new": "new",
        "test_pre": "pre-existing",
        "test_fixed": "fixed",
        "test_flips": "flaky",
        "test_rerun": "flaky",
        "test_base": "new",  # it passed at the merge base c103; it broke on main after that
        "test_brand_new": "new-test",  # the pull request adds it, and it fails
    }
    assert cells["test_pre"]["failing_since"] == {"run_id": 102, "sha": "c102"}
    assert all(c["failing_since"] is None for r, c in cells.items() if r != "test_pre")
    assert cells["test_new"]["link"] == f"https://github.com/{REPO}/actions/runs/900/job/9000"
    assert cells["test_new"]["baseline_link"] == (
        f"https://github.com/{REPO}/actions/runs/103/job/1030"
    )
    assert cells["test_brand_new"]["baseline_link"] is None
    assert all(
        cell["dashboard"] == DASHBOARD and cell["backend"] == "torch" for cell in doc["cells"]
    )
    counts = {"new": 2, "new-test": 1, "pre-existing": 1, "fixed": 1, "flaky": 2, "no-baseline": 0}
    assert doc == {
        "baseline": "merge-base",
        "counts": counts,
        "backends": {"torch": counts},
        "cells": doc["cells"],
        # One backend ran: each failing test is torch's own, all with one failure line.
        "signatures": [
            {
                "signature": cells["test_new"]["signature"],
                "message": "assert 1 == 2",
                "cells": 5,
                "backends": ["torch"],
                "tests": 5,
                "kind": "backend-specific",
            }
        ],
    }


@pytest.mark.usefixtures("workdir")
def test_without_the_merge_base_the_baseline_is_the_latest_result():
    """With no base commit known, each cell is compared with its newest default-branch result."""
    build_history()
    _, out = compare("torch", [("test_base", "failed"), ("test_pre", "failed")])
    doc = document(out)
    assert doc["baseline"] == "latest"
    cells = by_row(doc)
    assert cells["test_base"]["verdict"] == "pre-existing"
    assert cells["test_base"]["failing_since"] == {"run_id": 104, "sha": "c104"}


@pytest.mark.usefixtures("workdir")
def test_compare_records_nothing_and_writes_the_comment():
    """compare leaves the store as it was and writes the comment body as markdown."""
    build_history()
    before = {p: p.read_bytes() for p in Path(".ivy-matrix").rglob("*") if p.is_file()}
    path = results(Path("pr/r.xml"), PULL_REQUEST)
    code = run(
        "compare", "--junit", str(path), "--backend", "torch", "--pr", "7",
        "--head-sha", "feedface", "--markdown", "comment.md", "--base-sha", "c103",
    )  # fmt: skip
    assert code == 0
    after = {p: p.read_bytes() for p in Path(".ivy-matrix").rglob("*") if p.is_file()}
    assert after == before
    body = Path("comment.md").read_text(encoding="utf-8")
    assert body.startswith("<!-- ivy-matrix:pr=7 -->\n<!-- ivy-matrix:head=feedface -->")
    assert "## ivy-matrix: 3 new failures" in body
    assert "- **torch**: 2 new, 1 new-test, 1 fixed, 2 flaky, 1 pre-existing\n" in body
    new_tests = body[body.index("### New tests that fail (1)") :]
    assert "  - test_brand_new: torch\n" in new_tests


@pytest.mark.parametrize(
    ("backend", "cases", "expected"),
    [
        ("torch", [("test_new", "failed")], 1),
        ("torch", [("test_brand_new", "failed")], 1),  # new-test
        ("torch", [("test_pre", "failed"), ("test_brand_new", "passed")], 0),
        ("numpy", [("test_new", "failed"), ("test_brand_new", "failed")], 0),  # no-baseline
    ],
)
@pytest.mark.usefixtures("workdir")
def test_fail_on_new_fails_only_for_a_new_failure(backend, cases, expected):
    """fail-on new exits 1 when a cell newly fails or a test the pull request adds fails,
    and 0 for failures that are not new (pre-existing, or on a backend the baseline lacks)."""
    build_history()
    code, out = compare(backend, cases, "--fail-on", "new")
    assert code == expected
    new = {"new", "new-test"}
    assert any(c["verdict"] in new for c in document(out)["cells"]) == bool(expected)


@pytest.mark.usefixtures("workdir")
def test_update_on_a_pull_request_records_nothing(capsys):
    """update with a pull request's results leaves the dashboards' store untouched."""
    build_history()
    before = {p: p.read_bytes() for p in Path(".ivy-matrix").rglob("*") if p.is_file()}
    path = results(Path("pr/r.xml"), [("test_new", "failed")])
    code = run(
        "update", "--junit", str(path), "--backend", "torch", "--run-id", "900", "--pr", "7",
        "--output-dir", "out", "--fail-on", "new",
    )  # fmt: skip
    assert code == 1
    after = {p: p.read_bytes() for p in Path(".ivy-matrix").rglob("*") if p.is_file()}
    assert after == before
    assert not Path("out").exists()
    out = capsys.readouterr().err
    assert "results of pull request #7 are not recorded into the dashboards" in out
    assert "1 new" in out


@pytest.mark.usefixtures("workdir")
def test_a_pull_request_event_is_read_from_the_runner(tmp_path):
    """On a pull_request event the number, head and base come from GitHub's payload."""
    build_history()
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(
            {
                "pull_request": {
                    "number": 12,
                    "head": {"sha": "abc1234", "repo": {"full_name": REPO}},
                    "base": {"sha": "c103", "repo": {"full_name": REPO}},
                },
                "repository": {"default_branch": "main"},
            }
        ),
        encoding="utf-8",
    )
    path = results(Path("pr/r.xml"), [("test_base", "failed")])
    env = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SHA": "merge0000",
        "GITHUB_REF": "refs/pull/12/merge",
    }
    code = run("compare", "--junit", str(path), "--backend", "torch", "--markdown", "c.md",
               "--json", "v.json", env=env)  # fmt: skip
    assert code == 0
    assert by_row(document(Path("v.json")))["test_base"]["verdict"] == "new"
    body = Path("c.md").read_text(encoding="utf-8")
    assert body.startswith("<!-- ivy-matrix:pr=12 -->\n<!-- ivy-matrix:head=abc1234 -->")


@pytest.mark.usefixtures("workdir")
def test_a_branch_that_does_not_feed_the_dashboards_records_nothing(capsys):
    """Results from a branch outside dashboard-branches are not recorded."""
    build_history()
    before = {p: p.read_bytes() for p in Path(".ivy-matrix").rglob("*") if p.is_file()}
    path = results(Path("dev/r.xml"), [("test_new", "failed")])
    code = run(
        "update", "--junit", str(path), "--backend", "torch", "--run-id", "950",
        "--ref", "refs/heads/dev", "--dashboard-branches", "main",
    )  # fmt: skip
    assert code == 0
    after = {p: p.read_bytes() for p in Path(".ivy-matrix").rglob("*") if p.is_file()}
    assert after == before
    assert "results of refs/heads/dev are not recorded" in capsys.readouterr().err


@pytest.mark.usefixtures("workdir")
def test_a_push_to_another_branch_than_the_default_records_nothing(tmp_path, capsys):
    """With no dashboard-branches, the event's default branch alone feeds the dashboards."""
    build_history()
    before = {p: p.read_bytes() for p in Path(".ivy-matrix").rglob("*") if p.is_file()}
    event = tmp_path / "push.json"
    event.write_text(json.dumps({"repository": {"default_branch": "main"}}), encoding="utf-8")
    env = {"GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": str(event)}
    path = results(Path("dev/r.xml"), [("test_new", "failed")])
    argv = ["update", "--junit", str(path), "--backend", "torch", "--run-id", "960"]
    assert run(*argv, "--ref", "refs/heads/feature", env=env) == 0
    after = {p: p.read_bytes() for p in Path(".ivy-matrix").rglob("*") if p.is_file()}
    assert after == before
    assert "only main feed them" in capsys.readouterr().err
    assert run(*argv, "--ref", "refs/heads/main", env=env) == 0
    after = {p: p.read_bytes() for p in Path(".ivy-matrix").rglob("*") if p.is_file()}
    assert after != before


def test_compare_reads_the_baseline_from_the_dashboard_branch(tmp_path):
    """compare --targets branch reads the dashboard branch's state and writes nothing there."""
    with FakeGitHub() as fake:
        work = tmp_path / "main"
        write_results(work / "junit.xml", "torch", tests=3, failing="test_02")
        env = runner_env(fake, work, GITHUB_RUN_ID="500", IVY_MATRIX_JOB_ID="5")
        argv = ["update", "--junit", str(work / "junit.xml"), "--backend", "torch"]
        assert main(argv, env, remote=FAST) == 0
        writes = len(fake.writes())
        pr_work = tmp_path / "pr"
        write_results(pr_work / "junit.xml", "torch", tests=3, failing="test_01")
        env = runner_env(fake, pr_work, GITHUB_RUN_ID="600", IVY_MATRIX_JOB_ID="6")
        out = tmp_path / "v.json"
        argv = ["compare", "--junit", str(pr_work / "junit.xml"), "--backend", "torch"]
        assert main([*argv, "--pr", "4", "--json", str(out)], env, remote=FAST) == 0
        assert len(fake.writes()) == writes
    verdicts = {c["row"].split("[")[0]: c["verdict"] for c in document(out)["cells"]}
    assert verdicts == {"test_01": "new", "test_02": "fixed"}


@pytest.mark.usefixtures("workdir")
def test_fail_on_new_never_fails_a_default_branch_update(capsys):
    """On the default branch nothing is new, so fail-on new exits 0 and says why."""
    path = results(Path("main/r.xml"), [("test_a", "failed")])
    code = run("update", "--junit", str(path), "--backend", "torch", "--fail-on", "new")
    assert code == 0
    assert "fail-on: new have nothing to do" in capsys.readouterr().err


# ----------------------------------------------------------------------------- grouping

BACKENDS = ("torch", "jax", "tensorflow")
# Per test, per backend: the failure line (None: it passes). The test_shared* lines differ
# only in the backend's name or alias, numbers and addresses.
GROUPED: dict[str, dict[str, str | None]] = {
    "test_shared": {
        "torch": "RuntimeError: torch.float32 tensor at 0x7f3a12 has 3 dims, expected 4",
        "jax": "RuntimeError: jax.float32 tensor at 0x1b2c has 5 dims, expected 2",
        "tensorflow": "RuntimeError: tf.float64 tensor at 0xdeadbeef has 1 dims, expected 7",
    },
    "test_shared_too": {
        "torch": "RuntimeError: torch.float16 tensor at 0x1 has 0 dims, expected 1",
        "jax": "RuntimeError: jnp.float16 tensor at 0x2 has 2 dims, expected 3",
        "tensorflow": "RuntimeError: tensorflow.float8 tensor at 0x3 has 9 dims, expected 8",
    },
    "test_jax_only": {
        "torch": None,
        "jax": "KeyError: no rule for jnp.bfloat16",
        "tensorflow": None,
    },
    "test_divergent": {
        "torch": "ValueError: shapes (2, 3) and (3, 4) differ",
        "jax": "TypeError: not an array",
        "tensorflow": "IndexError: list index out of range",
    },
    "test_own_errors": {
        "torch": "OverflowError: int too large to convert",
        "jax": "NotImplementedError: no lowering for this primitive",
        "tensorflow": None,
    },
}


def grouped_results(folder: Path, backend: str) -> Path:
    """The pull request's JUnit file of one backend, with GROUPED's failure lines."""
    cases = []
    for name, lines in GROUPED.items():
        line = lines[backend]
        child = "" if line is None else f"<failure message={quoteattr(line)}>trace</failure>"
        cases.append(f'<testcase classname="{GRADIENTS}" name="{name}">{child}</testcase>')
    return write_suite(folder / backend / "r.xml", "".join(cases))


@pytest.mark.usefixtures("workdir")
def test_compare_groups_failing_backends_by_signature_and_kind():
    """Three result files whose lines differ only in backend names, numbers and addresses give
    one signature, shared across the 3 backends; a jax-only error is backend-specific (jax);
    two errors of their own on one test, beside a pass, are each its backend's own; three
    errors on three backends are divergent; the comment shows the shared group's reach."""
    for run_id, backend in enumerate(BACKENDS, 101):  # the dashboard shows them in this order
        update_main(run_id, backend, [(name, "passed") for name in GROUPED])
    for backend in BACKENDS:
        grouped_results(Path("pr"), backend)
    code = run(
        "compare", "--junit", "pr/*/r.xml", "--backend-from-path", "pr/(?P<backend>[^/]+)/",
        "--run-id", "900", "--repository", REPO, "--pr", "7", "--head-sha", "feedface",
        "--json", "v.json", "--markdown", "c.md",
    )  # fmt: skip
    assert code == 0
    doc = document(Path("v.json"))
    kinds = {(c["row"], c["backend"]): c["kind"] for c in doc["cells"]}
    assert kinds == {
        **{("test_shared", b): "shared" for b in BACKENDS},
        **{("test_shared_too", b): "shared" for b in BACKENDS},
        ("test_jax_only", "jax"): "backend-specific",
        ("test_divergent", "torch"): "divergent",
        ("test_divergent", "jax"): "divergent",
        ("test_divergent", "tensorflow"): "divergent",
        ("test_own_errors", "torch"): "backend-specific",
        ("test_own_errors", "jax"): "backend-specific",
    }
    signature = {(c["row"], c["backend"]): c["signature"] for c in doc["cells"]}
    assert len({signature["test_shared", b] for b in BACKENDS}) == 1
    shared = signature["test_shared", "torch"]
    assert signature["test_shared_too", "jax"] == shared
    assert doc["signatures"] == [
        {
            "signature": shared,
            "message": GROUPED["test_shared"]["torch"],
            "cells": 6,
            "backends": list(BACKENDS),
            "tests": 2,
            "kind": "shared",
        },
        {
            "signature": signature["test_jax_only", "jax"],
            "message": "KeyError: no rule for jnp.bfloat16",
            "cells": 1,
            "backends": ["jax"],
            "tests": 1,
            "kind": "backend-specific",
        },
        {
            "signature": signature["test_divergent", "torch"],
            "message": "ValueError: shapes (2, 3) and (3, 4) differ",
            "cells": 1,
            "backends": ["torch"],
            "tests": 1,
            "kind": "divergent",
        },
        {
            "signature": signature["test_divergent", "jax"],
            "message": "TypeError: not an array",
            "cells": 1,
            "backends": ["jax"],
            "tests": 1,
            "kind": "divergent",
        },
        {
            "signature": signature["test_divergent", "tensorflow"],
            "message": "IndexError: list index out of range",
            "cells": 1,
            "backends": ["tensorflow"],
            "tests": 1,
            "kind": "divergent",
        },
        {
            "signature": signature["test_own_errors", "torch"],
            "message": "OverflowError: int too large to convert",
            "cells": 1,
            "backends": ["torch"],
            "tests": 1,
            "kind": "backend-specific",
        },
        {
            "signature": signature["test_own_errors", "jax"],
            "message": "NotImplementedError: no lowering for this primitive",
            "cells": 1,
            "backends": ["jax"],
            "tests": 1,
            "kind": "backend-specific",
        },
    ]
    body = Path("c.md").read_text(encoding="utf-8")
    headline = f"- {GROUPED['test_shared']['torch']}: **2 tests {TIMES} 3 backends ({', '.join(BACKENDS)})**\n"
    assert headline in body


@pytest.mark.usefixtures("workdir")
def test_update_groups_the_dashboards_failing_rows_in_the_summary_json():
    """On the default branch, the summary JSON ranks the signatures of every failing row by
    each cell's newest result, with the same kinds compare gives; the index counts the rows
    by kind."""
    for backend in BACKENDS:
        grouped_results(Path("main"), backend)
    code = run(
        "update", "--junit", "main/*/r.xml", "--backend-from-path", "main/(?P<backend>[^/]+)/",
        "--run-id", "101", "--repository", REPO, "--summary-json", "s.json",
        "--output-dir", "out",
    )  # fmt: skip
    assert code == 0
    found = document(Path("s.json"))["signatures"]
    # One run brought every backend: the dashboard shows them in name order, jax first.
    assert [(s["message"], s["cells"], s["tests"], s["kind"]) for s in found] == [
        (GROUPED["test_shared"]["jax"], 6, 2, "shared"),
        ("KeyError: no rule for jnp.bfloat16", 1, 1, "backend-specific"),
        ("TypeError: not an array", 1, 1, "divergent"),
        ("IndexError: list index out of range", 1, 1, "divergent"),
        ("ValueError: shapes (2, 3) and (3, 4) differ", 1, 1, "divergent"),
        ("NotImplementedError: no lowering for this primitive", 1, 1, "backend-specific"),
        ("OverflowError: int too large to convert", 1, 1, "backend-specific"),
    ]
    assert found[0]["backends"] == sorted(BACKENDS)
    index = Path("out/README.md").read_text(encoding="utf-8")
    assert (
        "\nFailing tests across backends: 2 shared failures, 2 jax-only, 1 torch-only, 1 divergent.\n"
        in index
    )
