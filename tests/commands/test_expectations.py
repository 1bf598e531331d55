"""End to end: ``ivy-matrix expectations`` over a generated history of ten runs."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import pytest

from ivy_matrix.cli import main
from ivy_matrix.errors import ExitCode
from ivy_matrix.github.client import make_client
from ivy_matrix.github.connection import Remote
from tests.commands.results import error_lines, write_suite
from tests.github.fake_server import FakeGitHub
from tests.github.memory import MemoryGitHub

pytestmark = pytest.mark.timeout(120)

MODULE = "pkg.test_ops"
RUNS = range(1, 11)
BAD = "TypeError: unsupported dtype bfloat16"
OTHER = "KeyError: no axis named batch"


def statuses(run: int) -> dict[str, dict[str, tuple[str, str]]]:
    """Each backend's tests in run ``run``: (status, failure message)."""
    torch_two = BAD if run % 2 else OTHER
    return {
        "numpy": {
            "test_broken": ("passed", ""),
            "test_fixed": ("passed", ""),
            "test_still": ("skipped", ""),
            "test_narrow": ("passed", ""),
            "test_common_kept": ("skipped", ""),
        },
        "torch": {
            "test_broken": ("failed", BAD) if run >= 8 else ("passed", ""),
            "test_new": ("failed", BAD) if run == 10 else ("passed", ""),
            "test_two_signatures": ("failed", torch_two) if run >= 8 else ("passed", ""),
            "test_narrow": ("skipped", ""),
            "test_common_kept": ("skipped", ""),
        },
    }


def write_run(root: Path, run: int, backends: tuple[str, ...] = ("numpy", "torch")) -> None:
    for backend, tests in statuses(run).items():
        if backend not in backends:
            continue
        body = ""
        for name, (status, message) in tests.items():
            child = {
                "passed": "",
                "skipped": '<skipped type="pytest.xfail" message="expected"/>',
                "failed": f"<failure message={quoteattr(message)}>trace</failure>",
            }[status]
            body += (
                f"<testcase classname={quoteattr(MODULE)} name={quoteattr(name)}>{child}</testcase>"
            )
        write_suite(root / f"run{run}" / backend / "results.xml", body)


def update(run: int) -> None:
    argv = [
        *("update", "--junit", f"run{run}/*/results.xml"),
        *("--backend-from-path", r"run\d+/(?P<backend>[^/]+)/", "--run-id", str(run)),
    ]
    assert main(argv, {"GITHUB_REPOSITORY": "o/r"}) == ExitCode.OK


NUMPY = "# numpy\n\npkg/test_ops.py::test_fixed[a]\ntest_still  # upstream\n# end"
TORCH = "# torch xfails\r\n\r\ntest_gone\r\n"
COMMON = "# every backend\ntest_narrow\ntest_common_kept\n"
ARGS = ("expectations", "--lists", "xfails/{backend}.txt", "--common-list", "xfails/all.txt")


def write_lists(root: Path) -> None:
    (root / "xfails").mkdir()
    (root / "xfails" / "numpy.txt").write_bytes(NUMPY.encode())
    (root / "xfails" / "torch.txt").write_bytes(TORCH.encode())
    (root / "xfails" / "all.txt").write_bytes(COMMON.encode())


def lists(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "xfails").iterdir())}


def test_expectations_adds_removes_and_narrows_exactly_and_keeps_every_other_byte(workdir, capsys):
    for run in RUNS:
        write_run(workdir, run)
        update(run)
    write_lists(workdir)
    before = lists(workdir)
    capsys.readouterr()

    assert main([*ARGS, "--markdown", "body.md"], {}) == ExitCode.OK
    assert lists(workdir) == before  # without --write, nothing is rewritten
    assert "3 list(s) would change; pass --write" in capsys.readouterr().err

    assert main([*ARGS, "--write"], {}) == ExitCode.OK

    assert lists(workdir) == {
        # The narrowed entry left the common list; the rest of it is as it was.
        "all.txt": b"# every backend\ntest_common_kept\n",
        # The passing node id removed; comments, the inline comment, no final newline kept.
        "numpy.txt": b"# numpy\n\ntest_still  # upstream\n# end",
        # test_gone (no run has it) removed; test_narrow from the common list and test_broken
        # (3 runs, one signature) added, with the file's own CRLF endings.
        "torch.txt": b"# torch xfails\r\n\r\ntest_narrow\r\ntest_broken\r\n",
    }
    body = (workdir / "body.md").read_text()
    assert (
        "| torch | pkg/ops test_broken | [10 failure](https://github.com/o/r/actions/runs/10)"
        in body
    )
    assert "`TypeError: unsupported dtype bfloat16" not in body
    assert (
        "TypeError: unsupported dtype bfloat16 | [8](https://github.com/o/r/actions/runs/8) |"
        in body
    )
    assert "test_new" not in body  # new in the newest run alone
    assert "test_two_signatures" not in body  # two signatures in the last 3 runs

    # An identical run: nothing to change, nothing written.
    after = {p: p.stat().st_mtime_ns for p in (workdir / "xfails").iterdir()}
    capsys.readouterr()
    assert main([*ARGS, "--write"], {}) == ExitCode.OK
    assert "the lists are up to date" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in (workdir / "xfails").iterdir()} == after


def test_nothing_is_proposed_when_the_newest_run_lacks_a_backend(workdir, capsys):
    for run in RUNS:
        write_run(workdir, run, ("numpy", "torch") if run < 10 else ("numpy",))
        update(run)
    write_lists(workdir)
    before = lists(workdir)
    capsys.readouterr()

    assert main([*ARGS, "--write"], {}) == ExitCode.OK

    assert lists(workdir) == before
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "nothing proposed" in x]
    assert "no result for backend(s) torch" in line


def test_nothing_is_proposed_on_a_history_shorter_than_the_rules_look_at(workdir, capsys):
    for run in range(1, 10):
        write_run(workdir, run)
        update(run)
    write_lists(workdir)
    before = lists(workdir)
    capsys.readouterr()

    assert main([*ARGS, "--write"], {}) == ExitCode.OK

    assert lists(workdir) == before
    assert "the store holds 9 run(s); the rules look at the last 10" in capsys.readouterr().err


@pytest.mark.usefixtures("workdir")
@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--lists", "xfails.txt"), "needs {backend}"),
        (("--lists", "x/{backend}", "--add-after", "1"), "--add-after must be at least 2"),
        (("--lists", "x/{backend}", "--remove-after", "20"), "raise --history"),
    ],
)
def test_bad_rules_are_usage_errors(extra, said, capsys):
    assert main(["expectations", *extra], {"GITHUB_ACTIONS": "true"}) == ExitCode.USAGE
    (line,) = error_lines(capsys.readouterr().err)
    assert said in line


# ------------------------------------------------------------- the workflow's pull request


Double = MemoryGitHub | FakeGitHub


@pytest.fixture(params=["memory", "http"], name="double")
def double_fixture(request) -> Iterator[Double]:
    """The in-memory GitHub (our client's calls, no HTTP), then the HTTP fake that the real
    client (PyGithub's requester, our retries) talks to over 127.0.0.1."""
    if request.param == "memory":
        yield MemoryGitHub()
        return
    with FakeGitHub() as fake:
        yield fake


def branch_env(double: Double) -> dict[str, str]:
    env = {
        "GITHUB_REPOSITORY": "acme/widgets",
        "IVY_MATRIX_TOKEN": "fake-token",
        "IVY_MATRIX_TARGETS": "branch",
        "IVY_MATRIX_BRANCH_TRANSPORT": "rest",
    }
    if isinstance(double, FakeGitHub):
        env["GITHUB_API_URL"] = double.base_url
    return env


def update_branch(double: Double, run: int) -> None:
    argv = [
        *("update", "--junit", f"run{run}/*/results.xml"),
        *("--backend-from-path", r"run\d+/(?P<backend>[^/]+)/", "--run-id", str(run)),
    ]
    assert main(argv, branch_env(double), remote=_remote(double)) == ExitCode.OK


def _remote(double: Double) -> Remote:
    if isinstance(double, FakeGitHub):
        client = partial(make_client, timeout=10, sleep=lambda _s: None)
        return Remote(client=lambda token, url: client(token=token, api_url=url), git=None)
    return Remote(client=lambda _token, _url: double, sleep=lambda _s: None, git=None)


def content_requests(double: Double) -> int:
    spent = double.budget.spent() if isinstance(double, FakeGitHub) else double.spent()
    return spent.content_requests


def expectations_in_workflow(double: Double) -> int:
    """Run the command as a workflow does; the content-creating requests it made."""
    before = content_requests(double)
    assert main(list(ARGS), branch_env(double), remote=_remote(double)) == ExitCode.OK
    return content_requests(double) - before


def pulls(double: Double) -> list[dict[str, Any]]:
    return [i for i in double.issues.values() if i["pull_request"]]


def test_a_workflow_opens_one_pull_request_then_writes_nothing_then_updates_it(
    double, workdir, capsys
):
    double.push("main", {"xfails/numpy.txt": NUMPY, "xfails/torch.txt": TORCH})
    double.push("main", {"xfails/all.txt": COMMON, "README.md": "hello\n"})
    for run in RUNS:
        write_run(workdir, run)
        update_branch(double, run)
    main_head = double.ref_sha("refs/heads/main")
    capsys.readouterr()

    # The first run: one commit on main's head, one pull request, 4 writes (at most 6).
    assert expectations_in_workflow(double) == 4
    (pull,) = pulls(double)
    assert pull["head"][0].removeprefix("acme:") == "ivy-matrix-expectations"
    tip = double.ref_sha("refs/heads/ivy-matrix-expectations")
    assert tip is not None
    assert double.commits[tip]["parents"] == [main_head]
    assert double.read_file("xfails/torch.txt", "ivy-matrix-expectations") == (
        "# torch xfails\r\n\r\ntest_narrow\r\ntest_broken\r\n"
    )
    assert double.read_file("README.md", "ivy-matrix-expectations") == "hello\n"
    assert double.ref_sha("refs/heads/main") == main_head  # the default branch untouched
    assert "| torch | pkg/ops test_broken |" in pull["body"]
    assert "opened pull request #" in capsys.readouterr().err

    # An identical run: nothing written at all.
    assert expectations_in_workflow(double) == 0
    assert "is up to date; nothing written" in capsys.readouterr().err
    assert double.ref_sha("refs/heads/ivy-matrix-expectations") == tip

    # Someone edits main's numpy list: the change differs, the same pull request follows.
    double.push("main", {"xfails/numpy.txt": NUMPY + "\n# reviewed\n"})
    new_main = double.ref_sha("refs/heads/main")
    assert expectations_in_workflow(double) == 3  # tree, commit, branch; the same body
    (same,) = pulls(double)
    assert same["number"] == pull["number"]
    tip = double.ref_sha("refs/heads/ivy-matrix-expectations")
    assert tip is not None
    assert double.commits[tip]["parents"] == [new_main]
    assert "# end\n# reviewed\n" in double.read_file("xfails/numpy.txt", "ivy-matrix-expectations")
    assert "updated pull request #" in capsys.readouterr().err


def test_a_workflow_writes_nothing_when_the_newest_run_lacks_a_backend(double, workdir, capsys):
    double.push("main", {"xfails/numpy.txt": NUMPY, "xfails/torch.txt": TORCH})
    for run in RUNS:
        write_run(workdir, run, ("numpy",) if run == RUNS[-1] else ("numpy", "torch"))
        update_branch(double, run)
    capsys.readouterr()
    assert expectations_in_workflow(double) == 0
    assert "nothing proposed" in capsys.readouterr().err
    assert double.ref_sha("refs/heads/ivy-matrix-expectations") is None
    assert not pulls(double)
