"""``ivy-matrix update --legs``: a fan-in job folds every leg's file in at once.

Legs run ``collect`` (in-process here) into one folder; the fan-in job reads the folder. Each
cell must link its own leg's job, never the fan-in job's; a leg file that cannot be used is a
warning naming it, and every other leg still lands.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import ivy_matrix
from ivy_matrix.cli import main
from ivy_matrix.model import CaseCounts, Outcome, RunKey
from ivy_matrix.pr.body import comment_marker
from ivy_matrix.pr.verdict_ref import VerdictRef
from ivy_matrix.state.statefile import load_state
from ivy_matrix.stores.remote import RestRemote
from tests.commands.results import (
    CORE_GRADIENTS,
    GRADIENTS,
    error_lines,
    latest,
    load,
    read_json,
    write_junit,
    write_suite,
)
from tests.conftest import fake_client
from tests.github.fake_server import FakeGitHub

BACKENDS = ("torch", "numpy", "jax", "tensorflow")
JOB = {backend: 500 + index for index, backend in enumerate(BACKENDS)}
REPO = "acme/widgets"
FAN_IN = ["update", "--legs", "legs", "--run-id", "100", "--repository", REPO]


def collect(
    work: Path,
    backend: str,
    *,
    failing: str = "test_jac",
    run: int = 100,
    attempt: int = 1,
    job: int | None = None,
    legs: str = "legs",
) -> Path:
    """One leg: its result file and ``collect`` into ``legs``; return the new leg file."""
    results = work / "leg-results" / f"{backend}-{attempt}-{job}"
    cases = [("test_grad", "passed"), ("test_jac", "failed" if failing == "test_jac" else "passed")]
    write_junit(results / "junit.xml", cases)
    before = set((work / legs).glob("*.json"))
    argv = ["collect", "--junit", str(results), "--backend", backend, "--leg-file", legs]
    argv += ["--run-id", str(run), "--run-attempt", str(attempt), "--repository", REPO]
    argv += ["--job-id", str(JOB[backend] if job is None else job)]
    assert main(argv, {}) == 0
    (new,) = set((work / legs).glob("*.json")) - before
    return new


def url(job: int) -> str:
    return f"https://github.com/{REPO}/actions/runs/100/job/{job}"


def test_each_cell_links_its_own_legs_job_never_the_fan_in_jobs(workdir):
    """Four legs fold in at once, failure lines and case counts included; the fan-in job's own
    --job-id links no cell."""
    for backend in BACKENDS:
        collect(workdir, backend)
    argv = [*FAN_IN, "--job-id", "999", "--summary-json", "summary.json"]
    assert main(argv, {}) == 0
    state = load()
    assert [name for name, _ in state.backends] == list(BACKENDS)
    for backend in BACKENDS:
        for row in ("test_grad", "test_jac"):
            entry = latest(state, row, backend)
            assert entry.source.url == url(JOB[backend])
            assert entry.run == RunKey(100, 1, JOB[backend])
    failing = latest(state, "test_jac", "numpy")
    assert failing.outcome is Outcome.FAILURE
    assert (failing.message, failing.counts) == ("assert 1 == 2", CaseCounts(failed=1))
    assert failing.signature
    summary = read_json(workdir / "summary.json")
    assert summary["totals"]["tests"] == 8
    assert summary["totals"]["failed"] == 4
    assert "/job/999" not in json.dumps(summary)


def test_result_files_beside_leg_files_link_the_given_job(workdir):
    """XML the fan-in job reads itself links its --job-id; the legs' cells link theirs."""
    collect(workdir, "torch")
    write_junit(workdir / "own" / "junit.xml", [("test_grad", "passed")])
    argv = [*FAN_IN, "--junit", "own", "--backend", "cpu-only", "--job-id", "999"]
    assert main(argv, {}) == 0
    state = load()
    assert latest(state, "test_grad", "cpu-only").source.url == url(999)
    assert latest(state, "test_grad", "torch").source.url == url(JOB["torch"])


def garbage(work: Path) -> Path:
    path = work / "legs" / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    return path


def another_run(work: Path) -> Path:
    return collect(work, "jax", run=101)


def a_later_attempt(work: Path) -> Path:
    return collect(work, "jax", attempt=2)


def metadata_only(work: Path) -> Path:
    path = work / "legs" / "ivy-matrix-leg.json"
    document = {"format": "ivy-matrix-leg", "version": 1, "backend": "jax", "run_id": 100}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def too_big(work: Path) -> Path:
    path = work / "legs" / "big.json"
    with path.open("wb") as handle:
        handle.truncate(32 * 1024 * 1024 + 1)
    return path


def forged(work: Path, change: Callable[[dict[str, Any]], object]) -> Path:
    """A genuine jax leg's file, changed by ``change`` (its document), written back as text."""
    path = collect(work, "jax")
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def a_huge_row_number(work: Path) -> Path:
    """A row number of 5,000 digits (Python refuses to read an int that long from text)."""
    return forged(work, lambda d: d["dashboards"][0].update(messages={"jax": {"1" * 5000: "x"}}))


def a_huge_count(work: Path) -> Path:
    """A count of 4,000 digits: JSON reads it, yet no leg ran that many cases."""
    counts = {"jax": {"0": [10**4000, 0, 0, 0]}}
    return forged(work, lambda d: d["dashboards"][0].update(counts=counts))


def a_lone_surrogate(work: Path) -> Path:
    """A failure line holding half a character (a JSON escape UTF-8 cannot write)."""
    path = forged(work, lambda d: d["dashboards"][0].update(messages={"jax": {"1": "@@"}}))
    path.write_text(path.read_text(encoding="utf-8").replace("@@", "\\ud800 boom"))
    return path


def a_fifo(work: Path) -> Path:
    """A named pipe named like a leg file: opening it would wait for a writer forever."""
    path = work / "legs" / "ivy-matrix-leg-100-1-1-fifo.json"
    os.mkfifo(path)
    return path


def a_directory(work: Path) -> Path:
    path = work / "legs" / "ivy-matrix-leg-100-1-2-dir.json"
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (garbage, "not JSON"),
        (another_run, "is not used: it is for run 101, not this run (100)"),
        (a_later_attempt, "is not used: it is for attempt 2, later than this one (1)"),
        (metadata_only, "version 1 is not 2"),
        (too_big, "larger than 32 MiB"),
        (a_huge_row_number, "keys must be row numbers"),
        (a_huge_count, "'counts': a number larger than 9007199254740991 (2^53 - 1)"),
        (a_lone_surrogate, "a string holds a lone surrogate"),
        (a_fifo, "not a regular file: it is a FIFO"),
        (a_directory, "not a regular file: it is a directory"),
    ],
)
@pytest.mark.timeout(60)  # a FIFO opened for reading would wait for ever
def test_a_bad_leg_file_is_a_warning_naming_it_and_every_other_leg_lands(
    workdir, capsys, make, reason
):
    """Unreadable, foreign, too big, or holding what no leg writes (numbers too long to be
    counts, half a character, a pipe instead of a file): a warning with the file and the
    reason, exit 0, and the trend's point counts only the legs that landed."""
    collect(workdir, "torch")
    bad = make(workdir)
    capsys.readouterr()
    assert main(FAN_IN, {"GITHUB_ACTIONS": "true"}) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "::warning" in line]
    assert any(f"file=legs/{bad.name}" in w and reason in w for w in warnings), warnings
    assert [name for name, _ in load().backends] == ["torch"]
    (point,) = read_json(workdir / ".ivy-matrix" / "trend.json")["points"]
    assert list(point["backends"]) == ["torch"]


def test_a_leg_file_read_twice_counts_once(workdir, capsys):
    """The same file downloaded into two folders is one leg: its tests count once."""
    first = collect(workdir, "torch")
    copy = workdir / "again" / first.name
    copy.parent.mkdir()
    copy.write_bytes(first.read_bytes())
    argv = [*FAN_IN, "--legs", "again", "--summary-json", "summary.json"]
    assert main(argv, {}) == 0
    assert read_json(workdir / "summary.json")["totals"]["tests"] == 2
    assert "the same leg file as" in capsys.readouterr().err


def test_a_rerun_attempt_replaces_its_legs_cells_and_keeps_the_others(workdir):
    """Attempt 2 re-ran the numpy leg: its cells show attempt 2, the others attempt 1."""
    for backend in BACKENDS:
        collect(workdir, backend)
    collect(workdir, "numpy", attempt=2, job=600, failing="")
    assert main([*FAN_IN, "--run-attempt", "2"], {}) == 0
    state = load()
    assert latest(state, "test_jac", "numpy").run == RunKey(100, 2, 600)
    assert latest(state, "test_jac", "numpy").outcome is Outcome.SUCCESS
    assert latest(state, "test_jac", "torch").run == RunKey(100, 1, JOB["torch"])


@pytest.mark.parametrize("layout", ["one folder", "a folder per artifact"])
def test_after_rerunning_failed_legs_only_their_newest_attempt_counts(workdir, capsys, layout):
    """Attempt 1: test_jac fails on torch and numpy; "re-run failed jobs" runs those two legs
    again (new job ids) and they pass. Attempt 2's fan-in downloads both attempts' artifacts:
    the re-run legs count once, in attempt 2, so every cell passes, fail-on: failures exits 0
    and the totals are those of four legs, not six.

    actions/download-artifact puts every artifact of the run in one folder with
    merge-multiple (the action's way), else each in a folder named like the artifact (the
    leg file's name without .json)."""
    for backend in BACKENDS:
        collect(workdir, backend, failing="test_jac" if backend in {"torch", "numpy"} else "")
    for backend in ("torch", "numpy"):
        collect(workdir, backend, attempt=2, job=JOB[backend] + 100, failing="")
    if layout == "a folder per artifact":
        for path in list((workdir / "legs").glob("*.json")):
            (workdir / "legs" / path.stem).mkdir()
            path.rename(workdir / "legs" / path.stem / path.name)
    argv = [*FAN_IN, "--run-attempt", "2", "--fail-on", "failures", "--summary-json", "s.json"]
    assert main(argv, {}) == 0
    totals = read_json(workdir / "s.json")["totals"]
    assert (totals["tests"], totals["passed"], totals["failed"]) == (8, 8, 0)
    state = load()
    for backend in BACKENDS:
        entry = latest(state, "test_jac", backend)
        assert entry.outcome is Outcome.SUCCESS
        assert entry.run.run_attempt == (2 if backend in {"torch", "numpy"} else 1)
    err = capsys.readouterr().err
    assert err.count("attempt 1 of a leg that attempt 2 ran again") == 2


def test_a_rerun_of_one_shard_leaves_the_other_shards_of_its_backend_counted(workdir):
    """Two shards of torch's tests (no cell in common) in attempt 1; attempt 2 ran only the
    first again: the second shard is another leg, and still counts."""
    collect(workdir, "torch", job=501)  # test_grad, test_jac
    shard = workdir / "shard-2" / "junit.xml"
    write_junit(shard, [("test_hess", "failed")])
    argv = ["collect", "--junit", str(shard), "--backend", "torch", "--leg-file", "legs"]
    argv += ["--run-id", "100", "--repository", REPO, "--job-id", "502"]
    assert main(argv, {}) == 0
    collect(workdir, "torch", attempt=2, job=601, failing="")
    argv = [*FAN_IN, "--run-attempt", "2", "--summary-json", "s.json"]
    assert main(argv, {}) == 0
    totals = read_json(workdir / "s.json")["totals"]
    assert (totals["tests"], totals["failed"]) == (3, 1)
    assert latest(load(), "test_hess", "torch").outcome is Outcome.FAILURE


@pytest.mark.parametrize(
    ("mode", "code", "said"),
    [("error", 3, "no leg files matched the legs pattern(s) 'legs'"), ("warn", 0, "")],
)
def test_no_leg_file_at_all_fails_unless_told_otherwise(workdir, capsys, mode, code, said):
    """A fan-in job that finds no leg file fails by default (if-no-files-found): exit 3, an
    input that is not usable."""
    (workdir / "legs").mkdir()
    assert main([*FAN_IN, "--if-no-files-found", mode], {"GITHUB_ACTIONS": "true"}) == code
    errors = error_lines(capsys.readouterr().err)
    assert (said in errors[0]) if said else errors == []


def test_leg_files_of_which_none_can_be_used_fail_the_fan_in(workdir, capsys):
    """Every leg file refused (here: of another server): exit 3 naming the count, not a quiet
    run that records nothing."""
    collect(workdir, "torch")
    collect(workdir, "jax")
    argv = [*FAN_IN, "--server-url", "https://ghe.example.com"]
    assert main(argv, {"GITHUB_ACTIONS": "true"}) == 3
    err = capsys.readouterr().err
    assert "none of the 2 leg file(s) could be used" in error_lines(err)[0]
    assert err.count("is for server 'https://github.com'") == 2
    assert not (workdir / ".ivy-matrix").exists()


def test_the_retired_matrix_size_stops_a_fan_in_job_too(workdir, capsys):
    """matrix-size and matrix-index (retired in 0.3.0) exit 2 wherever they are given, a
    fan-in job included, before anything is written."""
    collect(workdir, "torch")
    argv = [*FAN_IN, "--matrix-size", "4", "--matrix-index", "0"]
    assert main(argv, {"GITHUB_ACTIONS": "true"}) == 2
    message = error_lines(capsys.readouterr().err)[0]
    assert "--matrix-size and --matrix-index: retired in ivy-matrix 0.3.0" in message
    assert not (workdir / ".ivy-matrix").exists()


def branch_state(fake: FakeGitHub):
    """The state of core/gradients on the dashboard branch (one document, layout 2)."""
    path = ".ivy-matrix/state/core/gradients.json"
    return load_state(fake.files("ivy-matrix")[path].decode(), where=path)


def test_the_fan_in_job_commits_every_leg_once_and_a_rerun_writes_nothing(workdir, fake):
    """Against GitHub: one commit holds every leg's cells; the same fan-in again writes nothing."""
    for backend in BACKENDS:
        collect(workdir, backend)
    env = {"GITHUB_API_URL": fake.base_url, "IVY_MATRIX_TOKEN": "t"}
    argv = [*FAN_IN, "--targets", "branch", "--job-id", "999"]
    assert main(argv, env) == 0
    assert fake.read_file(".ivy-matrix/state/REVISION", "ivy-matrix") == "1\n"
    state = branch_state(fake)
    assert {latest(state, "test_jac", b).source.url for b in BACKENDS} == {
        url(JOB[b]) for b in BACKENDS
    }
    with fake.lock:
        before = len(fake.requests)
    assert main(argv, env) == 0
    with fake.lock:
        again = fake.requests[before:]
    assert [r for r in again if r.write] == []


def test_leg_files_feed_a_pull_requests_verdicts(workdir, capsys):
    """On a pull request the legs' cells are compared, not recorded: a new failure fails."""
    for backend in ("torch", "numpy"):
        collect(workdir, backend, failing="")
    assert main(FAN_IN, {}) == 0
    before = load()
    (workdir / "legs").rename(workdir / "main-legs")
    collect(workdir, "numpy", run=100, failing="test_jac")
    argv = [*FAN_IN, "--pr", "7", "--fail-on", "new"]
    assert main(argv, {"GITHUB_ACTIONS": "true"}) == 1
    assert "the pull request brings 1 new failure(s)" in capsys.readouterr().err
    assert load(CORE_GRADIENTS) == before


def test_the_fan_in_job_alone_comments_on_a_pull_request_from_the_legs_files(workdir, fake):
    """On a pull request the fan-in job compares every leg's cells with the dashboard branch
    (read for the legs' dashboards and backends) and writes the one comment."""
    for backend in ("torch", "numpy"):
        collect(workdir, backend, failing="")
    env = {"GITHUB_API_URL": fake.base_url, "IVY_MATRIX_TOKEN": "t"}
    assert main([*FAN_IN, "--targets", "branch"], env) == 0
    number = int(fake.add_issue(title="a change", pull_request=True)["number"])
    (workdir / "legs").rename(workdir / "main-legs")
    for backend in ("torch", "numpy"):
        collect(workdir, backend, run=101, failing="test_jac" if backend == "numpy" else "")
    argv = ["update", "--legs", "legs", "--run-id", "101", "--repository", REPO]
    argv += ["--targets", "branch,pr-comment", "--pr", str(number), "--fail-on", "new"]
    assert main(argv, env) == 1
    with fake.lock:
        (comment,) = fake.comments[number]
    assert comment_marker(number) in comment["body"]
    assert "test_jac" in comment["body"]
    assert url(JOB["numpy"]).replace("/100/", "/101/") in comment["body"]


def test_a_forks_oversized_leg_file_is_refused_and_pushes_nothing(workdir, fake, capsys):
    """A pull request's fan-in (the workflow_run recipe reads a fork's artifacts) with one
    hostile leg file beside the genuine ones: 2 backends x 60,000 failing rows, more cells than
    a leg file may hold. It is a warning naming it; the genuine legs' verdicts are compared and
    recorded, and the verdict ref holds only theirs (before: every hostile cell, pushed)."""
    for backend in ("torch", "numpy"):
        collect(workdir, backend, failing="")
    env = {"GITHUB_API_URL": fake.base_url, "IVY_MATRIX_TOKEN": "t", "GITHUB_ACTIONS": "true"}
    assert main([*FAN_IN, "--targets", "branch"], env) == 0
    number = int(fake.add_issue(title="a change", pull_request=True)["number"])
    (workdir / "legs").rename(workdir / "main-legs")
    for backend in ("torch", "numpy"):
        collect(workdir, backend, run=101, failing="test_jac" if backend == "numpy" else "")
    rows = [f"test_{index}" for index in range(60_000)]
    hostile = forged(
        workdir,
        lambda d: d.update(
            run_id=101,
            dashboards=[
                {"title": "x", "rows": rows, "cells": dict.fromkeys(("a", "b"), "f" * 60_000)}
            ],
        ),
    )
    capsys.readouterr()
    argv = ["update", "--legs", "legs", "--run-id", "101", "--repository", REPO]
    argv += ["--targets", "branch,pr-comment", "--pr", str(number), "--fail-on", "new"]
    assert main(argv, env) == 1
    warnings = [line for line in capsys.readouterr().err.splitlines() if "::warning" in line]
    assert any(
        f"file=legs/{hostile.name}" in w and "120,000 cells, more than the 100,000" in w
        for w in warnings
    ), warnings
    record = VerdictRef(RestRemote(fake_client(fake), REPO), number).read().state
    assert record is not None
    assert {(c.row, c.backend) for c in record.verdicts.cells} == {("test_jac", "numpy")}


def test_the_fan_in_job_annotates_a_pull_requests_new_failures_where_the_tests_are(workdir, capsys):
    """The job that publishes a pull request's verdicts (here the fan-in job, which annotated
    nothing before) spends its annotations on the new failures, one per failure line, new
    before new tests, at the file and line the legs' result files gave (leg files carry
    them)."""
    for backend in ("torch", "numpy"):
        collect(workdir, backend, failing="")
    assert main(FAN_IN, {}) == 0
    (workdir / "legs").rename(workdir / "main-legs")
    test_file = "ivy_tests/test_core/test_gradients.py"
    for backend, job in (("torch", 600), ("numpy", 601)):
        body = (
            f'<testcase classname="{GRADIENTS}" name="test_grad" file="{test_file}" line="7"/>'
            f'<testcase classname="{GRADIENTS}" name="test_jac" file="{test_file}" line="42">'
            '<failure message="AssertionError: 1 != 2">tb</failure></testcase>'
            f'<testcase classname="{GRADIENTS}" name="test_lion" file="{test_file}" line="90">'
            f'<failure message="AttributeError: no lion on {backend}">tb</failure></testcase>'
        )
        results = write_suite(workdir / "pr-results" / backend / "junit.xml", body)
        argv = ["collect", "--junit", str(results), "--backend", backend, "--leg-file", "legs"]
        argv += ["--run-id", "101", "--repository", REPO, "--job-id", str(job)]
        assert main(argv, {}) == 0
    capsys.readouterr()
    argv = ["update", "--legs", "legs", "--run-id", "101", "--repository", REPO]
    assert main([*argv, "--pr", "7", "--fail-on", "new"], {"GITHUB_ACTIONS": "true"}) == 1
    log = capsys.readouterr().err.splitlines()
    errors = [line for line in log if line.startswith("::error ")]
    where = f"file={test_file},line="
    assert errors == [
        f"::error {where}42,title=new failure on torch%2C numpy%3A test_jac::AssertionError: 1 != 2",
        (
            f"::error {where}90,title=new test failing on torch%2C numpy%3A test_lion::"
            "AttributeError: no lion on torch"
        ),
    ]


def lines_run(legs: int, work: Path) -> int:
    """The lines of ivy-matrix's own code one fan-in of ``legs`` small leg files runs (4
    dashboards, 2 new rows per leg): a count of work that no machine's speed changes."""
    folder = work / f"legs-{legs}"
    folder.mkdir()
    for index in range(legs):
        document = {
            "format": "ivy-matrix-leg",
            "version": 2,
            "run_id": 100,
            "run_attempt": 1,
            "job_id": 1000 + index,
            "repository": REPO,
            "server_url": "https://github.com",
            "files": [{"path": f"r/{index}.xml", "tests": 2, "passed": 1, "failed": 1}],
            "backends": {"torch": [2, 1, 0, 0]},
            "dashboards": [
                {
                    "category": "core",
                    "title": f"module{index % 4}",
                    "rows": [f"test_a{index}", f"test_b{index}"],
                    "cells": {"torch": "sf"},
                }
            ],
        }
        name = f"ivy-matrix-leg-100-1-{1000 + index}-{index:012x}.json"
        (folder / name).write_text(json.dumps(document), encoding="utf-8")
    package = str(Path(ivy_matrix.__file__).parent)
    lines = 0

    def count(_frame: FrameType, event: str, _arg: object) -> Any:
        nonlocal lines
        lines += event == "line"
        return count

    def enter(frame: FrameType, _event: str, _arg: object) -> Any:
        return count if frame.f_code.co_filename.startswith(package) else None

    argv = [*FAN_IN, "--legs", folder.name, "--store", f"store-{legs}"]
    sys.settrace(enter)
    try:
        code = main(argv, {}, stdout=io.StringIO(), stderr=io.StringIO())
    finally:
        sys.settrace(None)
    assert code == 0
    return lines


@pytest.mark.timeout(120)
def test_a_fan_in_does_as_much_work_per_leg_file_however_many_there_are(workdir):
    """Twice the leg files, at most twice the lines run: no step of the fan-in compares every
    leg file with every other (100,000 leg files took 312 s when one did)."""
    once, twice = lines_run(100, workdir), lines_run(200, workdir)
    assert twice - 2 * once < 200, (once, twice)


def test_a_fan_in_never_says_more_failed_cases_than_it_listed(workdir, capsys):
    """The legs annotated their own failures: the fan-in job counts them without "... and N
    more" below a list it never wrote (it said "... and 4 more failed test case(s)" alone)."""
    for backend in BACKENDS:
        collect(workdir, backend)
    capsys.readouterr()

    assert main(FAN_IN, {}) == 0

    log = capsys.readouterr().err
    assert "more failed test case(s)" not in log
    assert "failed tests:" not in log
    assert "4 failed test case(s) of the leg files, annotated in their legs' jobs" in log
