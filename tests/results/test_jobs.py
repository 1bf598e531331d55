"""Tests for jobs.py: matching the current job by runner and display name."""

from __future__ import annotations

from ivy_matrix.results.jobs import Job, find_job
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
