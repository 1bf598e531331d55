"""Every run says what it spent of GitHub's budgets: the log's last line, the summary JSON, the
job summary, and a warning past ``budget-warning`` (issue 14, item 5), against the HTTP fake."""

from __future__ import annotations

import json

from ivy_matrix.errors import ExitCode
from tests.commands.test_update_github import run, runner_env, write_results
from tests.github.budget import Limits

TOKEN = "fake-token"  # runner_env's


def test_a_run_says_what_it_spent_in_the_log_the_summary_json_and_the_job_summary(fake, tmp_path):
    """The figures are the fake's own count of the run's requests and what the token has left."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777")
    args = ("--junit", "results/*.xml", "--backend", "torch", "--summary-json", "s.json")
    result = run(tmp_path, env, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    spent = fake.budget.spent(TOKEN)
    remaining = fake.budget.remaining(TOKEN)
    line = (
        f"GitHub: {spent.requests} request(s), {spent.content_requests} of them "
        f"content-creating; {remaining} of 1,000 left this hour (x-ratelimit-remaining)"
    )
    assert result.stderr.splitlines()[-1] == line
    assert spent.requests > spent.content_requests > 0
    summary = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert [summary[k] for k in ("requests", "content_requests", "rate_limit_remaining")] == [
        spent.requests,
        spent.content_requests,
        remaining,
    ]
    assert f"{line}.\n" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "GitHub's budget" not in result.stderr


def test_a_run_past_the_budget_warning_share_warns_and_0_never_does(fake, tmp_path):
    """With a token of 100 requests an hour, a run of a few requests passes 1% and is named
    in a warning; at 0 it is only counted."""
    fake.configure(limits=Limits(requests_per_hour=100))  # a token with a small hour
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777")
    args = ("--junit", str(tmp_path / "results" / "*.xml"), "--backend", "torch")
    warned = run(tmp_path / "a", env, *args, "--budget-warning", "1")
    assert warned.returncode == 0, warned.stdout + warned.stderr
    [warning] = [line for line in warned.stderr.splitlines() if "GitHub's budget" in line]
    requests = fake.budget.spent(TOKEN).requests
    # (A workflow command writes "%" as "%25".)
    assert warning.startswith(
        f"::warning title=GitHub's budget::this run spent {requests} of the token's 100 "
        f"requests an hour ({requests}%25), more than budget-warning's 1%25."
    )
    quiet = run(tmp_path / "b", env, *args, "--budget-warning", "0")
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "GitHub's budget" not in quiet.stderr
    assert quiet.stderr.splitlines()[-1].startswith("GitHub: ")


def test_publish_says_what_it_spent(fake, tmp_path):
    """Commands other than update end their log with their own spend too."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777")
    assert run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch").returncode == 0
    before = fake.budget.spent(TOKEN).requests
    result = run(tmp_path, env, "--repository", "acme/widgets", command="publish")
    assert result.returncode == 0, result.stdout + result.stderr
    requests = fake.budget.spent(TOKEN).requests - before
    assert result.stderr.splitlines()[-1].startswith(f"GitHub: {requests} request(s), 0 of them")


def test_a_budget_warning_over_100_percent_is_refused(fake, tmp_path):
    """budget-warning is a percent: 101 is a usage error (exit 2) naming the variable that
    gave it (it is no input of the action)."""
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_BUDGET_WARNING="101")
    result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
    assert result.returncode == ExitCode.USAGE
    assert "IVY_MATRIX_BUDGET_WARNING got 101; give a percent, 0 (never) to 100" in result.stderr


def test_a_run_that_github_refuses_still_says_what_it_spent(fake, tmp_path):
    """With the hour's 2 requests spent, the update fails naming the rate limit, after the line
    that says what it spent (the refused request included)."""
    fake.configure(limits=Limits(requests_per_hour=2))  # an hour already nearly spent
    write_results(tmp_path / "results" / "junit.xml", "torch")
    env = runner_env(fake, tmp_path, IVY_MATRIX_JOB_ID="777")
    result = run(tmp_path, env, "--junit", "results/*.xml", "--backend", "torch")
    assert result.returncode != 0
    spent = fake.budget.spent(TOKEN)
    assert spent.refused == 1
    lines = result.stderr.splitlines()
    spend_line = (
        f"GitHub: {spent.requests} request(s), {spent.content_requests} of them "
        f"content-creating; 0 of 2 left this hour (x-ratelimit-remaining)"
    )
    assert spend_line in lines
    assert "rate limited the token" in "\n".join(lines[lines.index(spend_line) :])
