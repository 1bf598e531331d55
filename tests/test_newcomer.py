"""The mistakes a newcomer makes, and the answers ivy-matrix gave silently wrong: each one now
exits non-zero (or warns visibly) with a message that names the fix.

The trial (issue 17): a fresh clone, the README, and a small real suite run by pytest twice
(``pytest --junitxml=results/torch/junit.xml`` and ``results/jax/junit.xml``: a parametrized
test, a failure, a skip), then ``python -m ivy_matrix`` typed as a newcomer would. The
mistakes, in the order they were made: forgetting the command; mistyping it; an unquoted glob
the shell expanded; no backend; a ``--junit`` pattern one folder too shallow; a regex without
its named group; ``--fail-on failure``; ``--targets pr-coment``; ``--dry-run yes``; the branch
target off a runner (no run id), then with a run id but no token; the repository as a URL;
pointing ``--junit`` at pytest's HTML report; a token in the config file; ``backends:`` for
``backend:`` in it; ``--output-dir -``; ``--matrix-size`` (retired); the run's URL as
``--run-id``; a mistyped dashboard to prune. Then the answers the issue lists as silent
(exit 0, nothing recorded or nothing compared): ``--backend`` with ``--backend-from-path``; a
path or test-id regex that matches nothing; files none of which can be read; ``compare``
against a mistyped or empty store; an interrupted run's nameless ``<testcase/>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.errors import ExitCode
from tests.commands.results import case_xml, write_junit

GOOD = [("test_add[1]", "passed"), ("test_add[2]", "passed"), ("test_fail", "failed")]
BOTH = ("results/torch/junit.xml", "results/jax/junit.xml")
HTML = "<!DOCTYPE html><html><head><title>Test Report</title></head><body></body></html>\n"
NAMELESS = (
    '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest">\n'
    + case_xml("test_ok")
    + '\n<testcase classname="" time="0.1"/>\n</testsuite></testsuites>\n'
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Mistake:
    """One command a newcomer types, and what ivy-matrix must answer."""

    argv: list[str]
    code: ExitCode
    phrases: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


def update(*args: str) -> list[str]:
    return ["update", "--junit", BOTH[0], *args]


MISTAKES = {
    "forgot-the-command": Mistake(
        argv=["--junit", BOTH[0], "--backend", "torch"],
        code=ExitCode.USAGE,
        phrases=("the command comes first: ivy-matrix update --junit GLOB",),
    ),
    "mistyped-command": Mistake(
        argv=["updte", "--junit", BOTH[0]], code=ExitCode.USAGE, phrases=("did you mean update?",)
    ),
    "glob-expanded-by-the-shell": Mistake(
        argv=["update", "--junit", *BOTH, "--backend", "torch"],
        code=ExitCode.USAGE,
        phrases=("unrecognized arguments: results/jax/junit.xml", "quote it"),
    ),
    "no-backend": Mistake(
        argv=update(), code=ExitCode.USAGE, phrases=("no backend given: pass --backend NAME",)
    ),
    "pattern-one-folder-short": Mistake(
        argv=["update", "--junit", "results/*.xml", "--backend", "torch"],
        code=ExitCode.INPUT,
        phrases=("no result files matched", "'results/*.xml'", "check the paths"),
    ),
    "regex-without-named-group": Mistake(
        argv=["update", "--junit", "results", "--backend-from-path", r"results/(\w+)/"],
        code=ExitCode.USAGE,
        phrases=("--backend-from-path got", "needs a named group (?P<backend>...)"),
    ),
    "fail-on-singular": Mistake(
        argv=update("--backend", "torch", "--fail-on", "failure"),
        code=ExitCode.USAGE,
        phrases=("--fail-on got 'failure'", "did you mean failures?"),
    ),
    "target-typo": Mistake(
        argv=update("--backend", "torch", "--targets", "summary,pr-coment"),
        code=ExitCode.USAGE,
        phrases=("--targets got 'pr-coment'", "did you mean pr-comment?"),
    ),
    "dry-run-yes": Mistake(
        argv=update("--backend", "torch", "--dry-run", "yes"),
        code=ExitCode.USAGE,
        phrases=("--dry-run got 'yes'", "allowed values: true, false"),
    ),
    "branch-target-without-run-id": Mistake(
        argv=update("--backend", "torch", "--targets", "branch", "--repository", "o/r"),
        code=ExitCode.USAGE,
        phrases=("need the run id: pass --run-id",),
    ),
    "branch-target-without-token": Mistake(
        argv=update("--backend", "torch", "--targets", "branch", "--run-id", "5"),
        env={"GITHUB_REPOSITORY": "o/r"},
        code=ExitCode.USAGE,
        phrases=("need a token: pass --token", "GITHUB_TOKEN or GH_TOKEN"),
    ),
    "repository-as-url": Mistake(
        argv=update("--backend", "torch", "--repository", "https://github.com/o/r"),
        code=ExitCode.USAGE,
        phrases=("expected OWNER/REPO",),
    ),
    "html-report-for-junit": Mistake(
        argv=["update", "--junit", "report.html", "--backend", "torch"],
        files={"report.html": HTML},
        code=ExitCode.INPUT,
        phrases=("none of the 1 result file(s) could be read", "pytest --junitxml=PATH"),
    ),
    "token-in-config-file": Mistake(
        argv=update("--backend", "torch", "--config", "ivy.yml"),
        files={"ivy.yml": "token: ghp_not_here\n"},
        code=ExitCode.USAGE,
        phrases=("'token' does not belong", "IVY_MATRIX_TOKEN, GITHUB_TOKEN or GH_TOKEN"),
    ),
    "config-key-typo": Mistake(
        argv=update("--config", "ivy.yml"),
        files={"ivy.yml": "backends: torch\n"},
        code=ExitCode.USAGE,
        phrases=("unknown setting 'backends'", "did you mean backend?"),
    ),
    "output-dir-dash": Mistake(
        argv=update("--backend", "torch", "--output-dir", "-"),
        code=ExitCode.USAGE,
        phrases=("--output-dir is a folder, so it cannot be '-'",),
    ),
    "matrix-size-retired": Mistake(
        argv=update("--backend", "torch", "--matrix-size", "4"),
        code=ExitCode.USAGE,
        phrases=("--matrix-size: retired in ivy-matrix 0.3.0", "command: fan-in"),
    ),
    "issue-target-without-branch": Mistake(
        # ivy-matrix 0.2.0 kept the state in the issue bodies here; now the issues show the
        # branch's state, and a local update says so before it reads or sends anything.
        argv=update("--backend", "torch", "--targets", "file, issue", "--run-id", "9"),
        code=ExitCode.USAGE,
        phrases=(
            "the issue target publishes the state kept on the dashboard branch",
            "add 'branch' to targets",
        ),
    ),
    "run-url-as-run-id": Mistake(
        argv=update("--backend", "torch", "--run-id", "https://github.com/o/r/actions/runs/9"),
        code=ExitCode.USAGE,
        phrases=("--run-id got", "not a whole number"),
    ),
    "prune-typo": Mistake(
        argv=["prune", "--dashboard", "tests/mat"],
        code=ExitCode.INPUT,
        phrases=("no dashboard 'tests/mat'", "did you mean tests/math?"),
    ),
    # The answers the issue found silently wrong (exit 0).
    "backend-and-backend-from-path": Mistake(
        argv=update("--backend", "torch", "--backend-from-path", "results/(?P<backend>[^/]+)/"),
        code=ExitCode.USAGE,
        phrases=("--backend and --backend-from-path do not go together", "give one of them"),
    ),
    "path-regex-matches-nothing": Mistake(
        argv=["update", "--junit", "results", "--backend-from-path", "results-(?P<backend>\\w+)/"],
        code=ExitCode.INPUT,
        phrases=(
            "matched none of the 2 result file path(s) it was tried on",
            "for example 'results/jax/junit.xml' and 'results/torch/junit.xml'",
            "Fix the regex",
        ),
    ),
    "test-regex-matches-nothing": Mistake(
        argv=["update", "--junit", BOTH[0], "--backend-from-test", r"\[(?P<backend>gpu)\]"],
        code=ExitCode.INPUT,
        phrases=(
            "matched none of the 3 test id(s) it was tried on",
            "for example 'tests.test_math_torch::test_add[1]' and 'tests.test_math_torch::test_add[2]'",
        ),
    ),
    "every-file-unreadable": Mistake(
        argv=["update", "--junit", "broken", "--backend", "torch"],
        files={"broken/a.xml": "", "broken/b.xml": "<testsuite><testcase"},
        code=ExitCode.INPUT,
        phrases=("none of the 2 result file(s) could be read", "broken/a.xml: file is empty"),
    ),
    "compare-against-a-mistyped-store": Mistake(
        argv=["compare", "--junit", BOTH[0], "--backend", "torch", "--store", ".ivy-matrx"],
        code=ExitCode.STORE,
        phrases=("there is no store at --store .ivy-matrx", "default .ivy-matrix"),
    ),
    "compare-against-an-empty-store-with-fail-on-new": Mistake(
        argv=["compare", "--junit", BOTH[0], "--backend", "torch", "--store", "empty"],
        files={"empty/.keep": ""},
        code=ExitCode.STORE,
        env={"IVY_MATRIX_FAIL_ON": "new"},
        phrases=("no default-branch results in store empty", "could never fail"),
    ),
}


def arrange(workdir: Path, mistake: Mistake) -> None:
    """The newcomer's project: two legs' results, a store with one dashboard, their files."""
    for path, backend in zip(BOTH, ("torch", "jax"), strict=True):
        write_junit(workdir / path, GOOD, classname=f"tests.test_math_{backend}")
    assert (
        main(["update", "--junit", BOTH[0], "--backend", "torch", "--dashboard", "tests/math"], {})
        == 0
    )
    for name, text in mistake.files.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("name", list(MISTAKES))
def test_each_mistake_exits_non_zero_with_one_message_naming_the_fix(workdir, capsys, name):
    """The mistake's exit code says what kind it is, one error line names the fix, nothing goes
    to stdout, and the store is as it was."""
    mistake = MISTAKES[name]
    arrange(workdir, mistake)
    state = sorted((workdir / ".ivy-matrix").rglob("*.json"))
    before = {path: path.read_bytes() for path in state}
    capsys.readouterr()

    code = main(mistake.argv, mistake.env)

    out, err = capsys.readouterr()
    assert (code, out) == (mistake.code, "")
    (line,) = [line for line in err.splitlines() if line.startswith("error: ")]
    assert err.splitlines()[-1] == line
    for phrase in mistake.phrases:
        assert phrase in line
    assert {path: path.read_bytes() for path in state} == before


def test_a_nameless_test_case_is_a_warning_naming_file_and_line_and_is_not_recorded(
    workdir, capsys
):
    """An interrupted run's <testcase/> warns with its file and line; the rest is recorded."""
    (workdir / "r.xml").write_text(NAMELESS, encoding="utf-8")

    code = main(["update", "--junit", "r.xml", "--backend", "torch"], {"GITHUB_ACTIONS": "true"})

    err = capsys.readouterr().err
    assert code == 0
    assert (
        "::warning file=r.xml,line=4::1 test case(s) without a name (the first at line 4; an "
        "interrupted test run writes them) were not recorded"
    ) in err.splitlines()
    states = sorted(p.name for p in (workdir / ".ivy-matrix" / "state").rglob("*.json"))
    assert states == ["gradients.json"]
    assert "(unnamed)" not in (
        workdir / ".ivy-matrix" / "state" / "core" / "gradients.json"
    ).read_text(encoding="utf-8")


def test_no_results_with_if_no_files_found_warn_says_so_in_a_warning_and_the_outputs(
    workdir, capsys
):
    """Legitimately nothing to read: a visible warning, exit 0, and conclusion 'neutral'."""
    output = workdir / "output.txt"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output)}

    code = main(
        ["update", "--junit", "none/*.xml", "--backend", "t", "--if-no-files-found", "warn"], env
    )

    err = capsys.readouterr().err
    assert code == 0
    assert "::warning::no result files matched" in err
    lines = output.read_text(encoding="utf-8").splitlines()
    assert "conclusion=neutral" in lines
    assert "tests=0" in lines


def test_a_pull_requests_results_say_they_were_not_recorded(workdir, capsys):
    """update --pr records nothing, says so, and reports no changed cells."""
    write_junit(workdir / "r.xml", GOOD)
    output = workdir / "output.txt"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output)}

    code = main(["update", "--junit", "r.xml", "--backend", "torch", "--pr", "7"], env)

    err = capsys.readouterr().err
    assert code == 0
    assert "results of pull request #7 are not recorded into the dashboards" in err
    assert "cell(s) changed" not in err
    assert "local run" not in err
    lines = output.read_text(encoding="utf-8").splitlines()
    assert {"recorded=false", "changed-cells=0", "conclusion=failure"} <= set(lines)
    assert not (workdir / ".ivy-matrix").exists()
