"""Tests for jobs.py: matching the current job by runner and display name, and leg metadata."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ivy_matrix.commands.job_links import read_leg_metadata
from ivy_matrix.errors import InputError
from ivy_matrix.model import RunKey
from ivy_matrix.results.jobs import (
    LEG_METADATA_NAME,
    Job,
    LegMetadata,
    find_job,
    leg_metadata_json,
    leg_metadata_problem,
    parse_leg_metadata,
)
from tests.github.fake_server import job_display_name

URL = "https://github.com/acme/widgets/actions/runs/42/job/"


def job(job_id: int, name: str, *, runner: str | None = None, status: str = "in_progress") -> Job:
    return Job(
        id=job_id,
        name=name,
        runner_name=runner or f"GitHub Actions {job_id}",
        html_url=f"{URL}{job_id}",
        status=status,
        run_attempt=1,
    )


def matrix_jobs(*backends: str, caller: str | None = None, base: str = "tests") -> list[Job]:
    return [
        job(i, job_display_name(base, [b, "3.11"] if base == "tests-py" else [b], caller))
        for i, b in enumerate(backends, start=1)
    ]


def test_unique_running_runner_name_wins_over_names():
    """RUNNER_NAME picks the job when exactly one running job has it, whatever the pattern says."""
    jobs = [job(1, "tests (torch)", runner="r1"), job(2, "tests (jax)", runner="r2")]
    found = find_job(jobs, runner_name="r2", name_pattern="tests ({backend})", backend="torch")
    assert found == jobs[1]


def test_runner_name_of_a_finished_job_is_not_trusted():
    """A completed job that ran on the same runner earlier does not count; the name decides."""
    jobs = [
        job(1, "lint", runner="self-hosted-1", status="completed"),
        job(2, "tests (torch)", runner="self-hosted-2"),
    ]
    found = find_job(
        jobs, runner_name="self-hosted-1", name_pattern="tests ({backend})", backend="torch"
    )
    assert found == jobs[1]


def test_display_name_with_matrix_value_in_parentheses_matches():
    """The pattern tests ({backend}) finds the leg GitHub shows as 'tests (jax)'."""
    jobs = matrix_jobs("torch", "jax", "numpy")
    found = find_job(jobs, runner_name=None, name_pattern="tests ({backend})", backend="jax")
    assert found is not None
    assert found.name == "tests (jax)"


def test_pattern_without_placeholder_matches_any_position_of_the_matrix_values():
    """A bare job name matches 'tests-py (numpy, 3.11)' when the backend is one of the values."""
    jobs = matrix_jobs("torch", "numpy", base="tests-py")
    assert [j.name for j in jobs] == ["tests-py (torch, 3.11)", "tests-py (numpy, 3.11)"]
    found = find_job(jobs, runner_name=None, name_pattern="tests-py", backend="numpy")
    assert found == jobs[1]
    assert find_job(jobs, runner_name=None, name_pattern="tests-py", backend="3") is None


def test_reusable_workflow_caller_prefix_is_allowed():
    """'ci / tests (torch)' from a reusable workflow matches tests ({backend})."""
    jobs = matrix_jobs("torch", "jax", caller="ci")
    assert jobs[0].name == "ci / tests (torch)"
    found = find_job(jobs, runner_name=None, name_pattern="tests ({backend})", backend="torch")
    assert found == jobs[0]


def test_exact_name_beats_a_prefixed_one():
    """When both 'tests (torch)' and 'nightly / tests (torch)' exist, the exact one is taken."""
    jobs = [job(1, "nightly / tests (torch)"), job(2, "tests (torch)")]
    found = find_job(jobs, runner_name=None, name_pattern="tests ({backend})", backend="torch")
    assert found == jobs[1]


def test_truncated_long_names_are_compared_in_their_cut_form():
    """A name over 100 characters is shown as 97 + '...' and still matches when the backend shows."""
    pattern = "integration-tests ({backend}) " + "x" * 40 + " " + "y" * 40
    jobs = [
        job(1, job_display_name(pattern.replace("{backend}", "torch"))),
        job(2, job_display_name(pattern.replace("{backend}", "jax"))),
    ]
    assert len(jobs[0].name) == 100
    assert jobs[0].name.endswith("...")
    assert jobs[0].name == pattern.replace("{backend}", "torch")[:97] + "..."
    found = find_job(jobs, runner_name=None, name_pattern=pattern, backend="jax")
    assert found == jobs[1]


def test_truncation_that_hides_the_backend_is_ambiguous():
    """If the cut falls before the backend, the legs cannot be told apart and None comes back."""
    pattern = "t" * 120 + " ({backend})"
    jobs = [job(1, job_display_name(pattern.replace("{backend}", b))) for b in ("torch", "jax")]
    assert jobs[0].name == jobs[1].name
    assert find_job(jobs, runner_name=None, name_pattern=pattern, backend="torch") is None


def test_truncated_name_with_caller_prefix_matches():
    """A long caller prefix plus the callee name, cut at 97, still matches the callee's pattern."""
    caller = "release-candidate-validation-" + "c" * 30
    name = job_display_name("tests", ["tensorflow", "ubuntu-latest-with-gpu"], caller)
    assert name.endswith("...")
    jobs = [job(1, name), job(2, job_display_name("tests", ["jax"], caller))]
    found = find_job(
        jobs,
        runner_name=None,
        name_pattern="tests ({backend}, ubuntu-latest-with-gpu)",
        backend="tensorflow",
    )
    assert found == jobs[0]


def test_running_job_is_preferred_over_an_earlier_one_with_the_same_name():
    """Of two 'tests (torch)' jobs, the one in progress is the current leg."""
    jobs = [job(1, "tests (torch)", status="completed"), job(2, "tests (torch)")]
    found = find_job(jobs, runner_name=None, name_pattern="tests ({backend})", backend="torch")
    assert found == jobs[1]


def test_two_running_jobs_with_the_same_name_give_none():
    """Two running jobs that match equally well are ambiguous: no job is guessed."""
    jobs = [job(1, "tests (torch)"), job(2, "tests (torch)")]
    assert (
        find_job(jobs, runner_name=None, name_pattern="tests ({backend})", backend="torch") is None
    )


def test_no_pattern_and_no_runner_gives_none():
    """Without a runner name or a pattern there is nothing to match on."""
    jobs = matrix_jobs("torch")
    assert find_job(jobs, runner_name=None, name_pattern=None, backend="torch") is None
    assert find_job(jobs, runner_name="nope", name_pattern=None, backend="torch") is None


def test_pattern_with_placeholder_needs_a_backend():
    """A pattern with {backend} cannot match when no backend is known; a plain name can."""
    jobs = [job(1, "tests (torch)"), job(2, "render")]
    assert find_job(jobs, runner_name=None, name_pattern="tests ({backend})", backend=None) is None
    assert find_job(jobs, runner_name=None, name_pattern="render", backend=None) == jobs[1]


def test_backend_that_is_a_prefix_of_another_does_not_match_it():
    """'torch' does not match 'tests (torch-nightly)'."""
    jobs = [job(1, "tests (torch-nightly)")]
    assert (
        find_job(jobs, runner_name=None, name_pattern="tests ({backend})", backend="torch") is None
    )


# --------------------------------------------------------------------------- leg metadata

LEG = LegMetadata(
    backend="torch",
    run_id=4519946746,
    run_attempt=2,
    job_id=12345678901,
    job_url="https://github.com/acme/widgets/actions/runs/4519946746/job/12345678901",
)


def test_leg_metadata_round_trips_through_a_file(tmp_path: Path):
    """What a leg writes, the fan-in job reads back unchanged, with its run key."""
    path = tmp_path / LEG_METADATA_NAME
    path.write_text(leg_metadata_json(LEG), encoding="utf-8")
    assert read_leg_metadata(path) == LEG
    assert LEG.run == RunKey(4519946746, 2, 12345678901)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["format"] == "ivy-matrix-leg"
    assert {"backend", "run_id", "run_attempt", "job_id", "job_url"} <= set(document)


def test_leg_metadata_without_format_or_job_id_is_accepted():
    """The minimal documented object, with job_id null, reads as version 1 with job -1."""
    text = json.dumps(
        {
            "backend": "jax",
            "run_id": 7,
            "run_attempt": 1,
            "job_id": None,
            "job_url": "https://github.com/o/r/actions/runs/7",
            "extra": "ignored",
        }
    )
    metadata = parse_leg_metadata(text, where="leg.json")
    assert metadata.job_id is None
    assert metadata.run == RunKey(7, 1, -1)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"backend": ""}, "'backend' is empty"),
        ({"backend": 3}, "'backend' must be a string"),
        ({"run_id": "7"}, "'run_id' must be an integer"),
        ({"run_id": True}, "'run_id' must be an integer"),
        ({"run_attempt": 0}, "'run_attempt' must be 1 or more"),
        ({"job_id": -4}, "'job_id' must be positive or null"),
        ({"job_url": "javascript:alert(1)"}, "'job_url' must be an http(s) URL"),
        ({"job_url": 'https://x" onmouseover="y'}, "'job_url' must be an http(s) URL"),
        ({"format": "other"}, "is not 'ivy-matrix-leg'"),
        ({"version": 2}, "newer than this ivy-matrix understands"),
    ],
)
def test_bad_leg_metadata_is_refused_naming_the_file(change, expected):
    """Untrusted metadata with a wrong type, value or URL is refused with the file's name."""
    document = json.loads(leg_metadata_json(LEG)) | change
    with pytest.raises(InputError, match=r"leg-7\.json") as caught:
        parse_leg_metadata(json.dumps(document), where="leg-7.json")
    assert expected in str(caught.value)


def test_unreadable_and_oversized_and_non_json_leg_files_are_refused(tmp_path: Path):
    """A missing file, a file over 64 KiB, non-UTF-8 bytes and non-JSON text each give InputError."""
    with pytest.raises(InputError, match="cannot read leg metadata"):
        read_leg_metadata(tmp_path / "missing.json")
    big = tmp_path / "big.json"
    big.write_text(" " * (64 * 1024 + 1), encoding="utf-8")
    with pytest.raises(InputError, match="larger than"):
        read_leg_metadata(big)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="not UTF-8"):
        read_leg_metadata(binary)
    with pytest.raises(InputError, match="not JSON"):
        parse_leg_metadata("{", where="x")
    with pytest.raises(InputError, match="expected a JSON object"):
        parse_leg_metadata("[]", where="x")


def test_writing_invalid_leg_metadata_is_refused():
    """leg_metadata_json checks what it writes just as the reader would."""
    with pytest.raises(InputError, match="'run_id' must be positive"):
        leg_metadata_json(
            LegMetadata(backend="x", run_id=0, run_attempt=1, job_id=None, job_url=LEG.job_url)
        )


def check(
    metadata: LegMetadata, run_id: int | None = 4519946746, repository: str | None = "acme/widgets"
) -> str | None:
    """Check leg metadata against attempt 3 of run 4519946746 of acme/widgets on github.com."""
    return leg_metadata_problem(
        metadata,
        run_id=run_id,
        run_attempt=3,
        repository=repository,
        server_url="https://github.com",
    )


RUN_PAGE = "https://github.com/acme/widgets/actions/runs/4519946746"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"run_id": 999_999_999_999_999_999}, "is for run 999999999999999999, not this run"),
        ({"run_attempt": 4}, "is for attempt 4, later than this one (3)"),
        (
            {
                "job_url": "https://evil.example/acme/widgets/actions/runs/4519946746/job/12345678901"
            },
            "job_url",
        ),
        (
            {"job_url": "https://github.com/other/widgets/actions/runs/4519946746/job/12345678901"},
            "job_url",
        ),
        ({"job_url": "https://evil.example/phish"}, "job_url"),
        ({"job_id": 12345678902}, "is not " + RUN_PAGE + "/job/12345678902"),
        ({"job_id": None}, "is not " + RUN_PAGE),
        ({"job_url": LEG.job_url + "/../../../9/job/1"}, "job_url"),
    ],
)
def test_leg_metadata_of_another_run_repository_or_link_is_refused(change, reason):
    """Leg metadata must name this run, an attempt up to this one, and this repository's job."""
    problem = check(replace(LEG, **change))
    assert problem is not None
    assert reason in problem


def test_leg_metadata_of_this_run_and_earlier_attempts_is_accepted():
    """A leg of this run, of this attempt or an earlier one, with its job's page, is accepted."""
    assert check(LEG) is None
    assert check(replace(LEG, run_attempt=1)) is None
    no_job = replace(LEG, job_id=None, job_url=RUN_PAGE)
    assert check(no_job) is None
    upper = replace(LEG, job_url=LEG.job_url.replace("acme/widgets", "Acme/Widgets"))
    assert check(upper) is None


def test_leg_metadata_cannot_be_checked_without_this_run():
    """Without this job's run id or repository, leg metadata is not trusted."""
    assert check(LEG, run_id=None) is not None
    assert check(LEG, repository=None) is not None
