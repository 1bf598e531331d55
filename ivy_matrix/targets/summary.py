"""The summary target: the job summary, step outputs, ``--summary-json`` and the run's log.

I/O: appends to the files the runner names (``GITHUB_STEP_SUMMARY``, ``GITHUB_OUTPUT``),
writes the summary JSON atomically, and logs one line per dashboard. The markdown comes from
views/dashboards.py, and on a pull request from pr/body.py. The files it writes come as one
:class:`SummaryFiles` value. What the run spent of GitHub's budgets (``github/spend.py``) ends
the log (:func:`log_spend`, with a warning past ``budget-warning``), the job summary and the
summary JSON.

On a pull request with verdicts (:class:`PullRequestVerdicts`: the pr-comment target or
``fail-on: new``) the job summary starts with them (the comment's headline and counts, its
new failures grouped by failure line, a link to the comment), the step outputs count them
(``pr-new`` ... ``pr-no-baseline``, ``comment-url``), and the error annotations
(:func:`annotate_verdicts`) are spent on its new failures: one per failure line, new
failures before failing new tests, at most GitHub's 10 a step.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ivy_matrix.explain.grouping import RowGroups, signatures_json, state_groups
from ivy_matrix.explain.history_text import summary_cells
from ivy_matrix.explain.reasons import Failing, FailureGroup, group_failures
from ivy_matrix.explain.slowdowns import dashboard_slowdowns, slowest
from ivy_matrix.github.spend import over_budget
from ivy_matrix.github.types import Spend
from ivy_matrix.results.cells import Collected
from ivy_matrix.results.environment import Env, env_lines
from ivy_matrix.runner.files import write_file
from ivy_matrix.runner.log import Log, append_output, append_summary
from ivy_matrix.state.fold import DashboardReport, Merged
from ivy_matrix.state.history import dashboard_history
from ivy_matrix.state.paths import dashboard_file
from ivy_matrix.state.totals import BackendTotals, add_totals, backend_totals
from ivy_matrix.stores import Published
from ivy_matrix.views.dashboards import render_job_summary

if TYPE_CHECKING:
    from ivy_matrix.pr.comment_state import CommentState
    from ivy_matrix.pr.verdicts import CellVerdict, Comparison, Verdict

# The pull request's modules (pr/) are imported where its verdicts are used (noqa PLC0415
# below): only a pull request's run has verdicts (and has imported them to make them); every
# other update would pay for importing them at start-up.

RETIRED_SHOWN = 10  # retired rows named in the log line of a dashboard
# GitHub shows at most 10 error annotations per step; more only fill the log.
ANNOTATIONS = 10
TESTS_NAMED = 10  # tests an annotation names before "and N more"


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryFiles:
    """The files the job summary and step outputs go to, and the paths the outputs name."""

    step_summary: Path | None = None  # the runner's GITHUB_STEP_SUMMARY
    github_output: Path | None = None  # the runner's GITHUB_OUTPUT
    summary_json: Path | None = None  # named by the summary-json output
    output_dir: Path | None = None  # named by the output-dir output
    html: Path | None = None  # named by the html output (the site target's folder)


@dataclass(frozen=True, slots=True, kw_only=True)
class PullRequestVerdicts:
    """A pull request's verdicts as this job found them (``state``: what it records for the
    comment), whether it keeps the comment (the pr-comment target), where the comment is (None:
    not known), and whether the whole comment went to the job summary instead (a token that
    cannot write)."""

    comparison: Comparison
    state: CommentState
    commenting: bool = False
    comment_url: str | None = None
    comment_in_summary: bool = False

    def outputs(self) -> dict[str, str]:
        """The step outputs: each verdict's count (``pr-new`` ...) and ``comment-url``."""
        found = {f"pr-{v.value}": str(n) for v, n in self.state.counts().items()}
        if self.comment_url:
            found["comment-url"] = self.comment_url
        return found


def annotate_verdicts(log: Log, verdicts: PullRequestVerdicts, collected: Collected) -> None:
    """The pull request's new failures as error annotations: one per failure line (reasons.py:
    most cells first), new failures before failing new tests, at most ANNOTATIONS, titled
    ``new failure on jax: test_x`` (``new test failing on ...``), at the file and line of the
    group's first failing case when the results name them (``collected``: what this job
    read, the legs' files included); the rest counted."""
    from ivy_matrix.pr.verdicts import NEW_VERDICTS, Verdict  # noqa: PLC0415  -- see above

    groups: list[tuple[Verdict, FailureGroup, list[CellVerdict]]] = []
    for verdict in NEW_VERDICTS:
        cells = [c for c in verdicts.comparison.cells if c.verdict is verdict]
        failings = [
            Failing(test=c.row, backend=c.backend, message=c.message, signature=c.signature)
            for c in cells
        ]
        # The list keeps every Failing alive, so their ids stay theirs while this runs.
        cell_of = {id(failing): cell for failing, cell in zip(failings, cells, strict=True)}
        groups.extend(
            (verdict, group, [cell_of[id(f)] for f in group.cells])
            for group in group_failures(failings)
        )
    if groups:
        log.info("new failures of this pull request:")
    rows = {dashboard.key: cells for dashboard, cells in collected.dashboards.items()}
    for verdict, group, members in groups[:ANNOTATIONS]:
        tests = group.tests
        what = "new failure" if verdict is Verdict.NEW else "new test failing"
        more = len(tests) - 1
        title = f"{what} on {', '.join(group.backends)}: {tests[0]}"
        if more:
            title += f" and {more} more {'test' if more == 1 else 'tests'}"
        named = ", ".join(tests[:TESTS_NAMED])
        if len(tests) > TESTS_NAMED:
            named += f" and {len(tests) - TESTS_NAMED} more"
        line = group.sample or "failed, with no failure message"
        results = (rows.get(c.dashboard, {}).get(c.row, {}).get(c.backend) for c in members)
        place = next((r.where for r in results if r is not None and r.where), None)
        log.test_failure(
            title,
            f"{line}\n{named}" if more else line,
            file=None if place is None else place[0],
            line=None if place is None or not place[1] else place[1],
        )
    if len(groups) > ANNOTATIONS:
        log.info(
            f"... and {len(groups) - ANNOTATIONS} more failure lines among the new failures: "
            f"the pull request's comment and the job summary list them"
        )


def log_dashboards(log: Log, merged: Merged) -> None:
    """One line per dashboard the update reached: what changed in it."""
    for key, report in merged.reports.items():
        _log_dashboard(log, key, report)


def _log_dashboard(log: Log, key: str, report: DashboardReport) -> None:
    parts = [f"{report.changed_cells} cell(s) changed"]
    if report.new_rows:
        parts.append(f"{report.new_rows} new row(s)")
    retired = report.retired_rows
    if retired:
        shown = ", ".join(retired[:RETIRED_SHOWN]) + (
            " ..." if len(retired) > RETIRED_SHOWN else ""
        )
        parts.append(f"retired {len(retired)} row(s) no recent run reported: {shown}")
    if report.retired_backends:
        gone = ", ".join(report.retired_backends)
        parts.append(f"retired backend(s) no recent run reported: {gone}")
    if report.removed:
        parts.append("removed: every row retired, so its state, file and index entry are gone")
    log.info(f"dashboard {key}: " + "; ".join(parts))


def spend_line(spend: Spend) -> str:
    """What a run spent of GitHub's budgets, in one sentence (no full stop)."""
    text = (
        f"GitHub: {spend.requests:,} request(s), {spend.content_requests:,} of them "
        f"content-creating"
    )
    if spend.rate_limit_remaining is not None:
        of = f" of {spend.rate_limit:,}" if spend.rate_limit is not None else ""
        text += f"; {spend.rate_limit_remaining:,}{of} left this hour (x-ratelimit-remaining)"
    return text


def log_spend(log: Log, spend: Spend | None, *, warn_percent: int) -> None:
    """The run's spend (nothing without a GitHub connection), and a warning when it used more
    than ``warn_percent`` of an hourly budget."""
    if spend is None:
        return
    log.info(spend_line(spend))
    over = over_budget(spend, warn_percent)
    if over:
        log.warning(
            f"this run spent {' and '.join(over)}, more than budget-warning's {warn_percent}%. "
            f"The hour's budget is the repository's, shared by every workflow: runs like this "
            f"one exhaust it, and GitHub then refuses the token until the hour is over. Publish "
            f"from one fan-in job a run (docs/github.md says what each target costs)",
            title="GitHub's budget",
        )


@contextmanager
def spend_on_failure(
    log: Log, spent: Callable[[], Spend | None], *, warn_percent: int
) -> Iterator[None]:
    """A command that fails (GitHub refused the token, say) still says what it spent."""
    try:
        yield
    except Exception:
        log_spend(log, spent(), warn_percent=warn_percent)
        raise


@dataclass(frozen=True, slots=True, kw_only=True)
class Results:
    """What one update read, merged and published, whether it recorded the results, and what
    it spent of GitHub's budgets (None: it made no request)."""

    collected: Collected
    merged: Merged
    published: Published
    recorded: bool = True
    spend: Spend | None = None
    # The environments recorded (environment.py), each with what it belongs to.
    envs: tuple[tuple[str, Env], ...] = ()
    verdicts: PullRequestVerdicts | None = None  # a pull request's, when worked out

    @property
    def conclusion(self) -> str:
        """``failure`` (a test failed or had an error), ``success``, or ``neutral`` (no test
        case read): the ``conclusion`` step output."""
        totals = self.collected.totals()
        if totals.failed or totals.errors:
            return "failure"
        return "success" if totals.tests else "neutral"

    def backends(self) -> dict[str, dict[str, int]]:
        """Per backend: test cases, failed, errors, skipped."""
        keys = ("tests", "failed", "errors", "skipped")
        return {
            backend: dict(zip(keys, tally, strict=True))
            for backend, tally in sorted(self.collected.by_backend.items())
        }

    def outline(self) -> dict[str, object]:
        """The short JSON of the ``json`` step output: conclusion, totals, backends, links."""
        return {
            "conclusion": self.conclusion,
            "recorded": self.recorded,
            "totals": asdict(self.collected.totals()),
            "backends": self.backends(),
            "changed_cells": self.merged.changed_cells if self.recorded else 0,
            "dashboard_urls": dict(self.published.urls),
            "index_url": self.published.index_url,
        }


def write_summary_json(path: Path, results: Results, *, stdout: Callable[[str], None]) -> None:
    """``--summary-json`` (``-``: to ``stdout``): totals, files, and every dashboard's counts
    (totals.py: per backend, rows by latest outcome and their cases; and added up over every
    dashboard), link and changes, its failing and flaky cells' history (failing since,
    last pass, flaky) and its cells that got slower (slowdowns.py); each backend's slowest
    cells; every failing row's signatures, ranked (grouping.py); what the run spent of
    GitHub's budgets."""
    merged, published, collected = results.merged, results.published, results.collected
    spend = results.spend or Spend()
    dashboards = {}
    every: list[dict[str, BackendTotals]] = []
    groups: list[RowGroups] = []
    for state in merged.ordered():
        groups.extend(state_groups(state))
        counts = backend_totals(state)
        every.append(counts)
        report = merged.reports.get(state.key)
        dashboards[state.key] = {
            "file": dashboard_file(state),
            "rows": len(state.rows),
            "backends": {b: totals.to_json() for b, totals in counts.items()},
            "updated": report is not None,
            "history": summary_cells(dashboard_history(state)),
            "slower": [slower.to_json() for slower in dashboard_slowdowns(state)],
            **({"url": published.urls[state.key]} if state.key in published.urls else {}),
            **(_report_json(report) if report is not None else {}),
        }
    document = {
        "version": 1,
        "conclusion": results.conclusion,
        "recorded": results.recorded,
        "index_url": published.index_url,
        "requests": spend.requests,
        "content_requests": spend.content_requests,
        "rate_limit_remaining": spend.rate_limit_remaining,
        "files": [asdict(f) for f in collected.files],
        "totals": asdict(collected.totals()),
        "backends": results.backends(),
        "all_dashboards": {b: t.to_json() for b, t in add_totals(every).items()},
        "slowest": {
            backend: [cell.to_json() for cell in cells]
            for backend, cells in slowest(merged.ordered()).items()
        },
        "dashboards": dashboards,
        "signatures": signatures_json(groups),
        "removed_dashboards": {
            state.key: {
                "file": dashboard_file(state),
                **_report_json(merged.reports.get(state.key, DashboardReport())),
            }
            for state in merged.removed
        },
    }
    write_file(path, json.dumps(document, indent=2) + "\n", stdout=stdout, what="--summary-json")


def _report_json(report: DashboardReport) -> dict[str, object]:
    """A dashboard's report as the summary JSON shows it (``removed`` only when it was)."""
    document = asdict(report)
    if not report.removed:
        del document["removed"]
    return document


def publish_job_summary(files: SummaryFiles, results: Results, log: Log) -> None:
    """Write the job summary and the step outputs, when the runner provides their files."""
    collected, merged, published = results.collected, results.merged, results.published
    totals = collected.totals()
    touched = [s for s in merged.ordered() if s.key in merged.reports] if results.recorded else []
    verdicts = results.verdicts
    try:
        if files.step_summary is not None:
            problems = [(p.source, p.message) for p in collected.problems]
            markdown = ""
            if verdicts is not None and not verdicts.comment_in_summary:
                from ivy_matrix.pr.body import render_summary  # noqa: PLC0415  -- see above

                markdown = render_summary(
                    verdicts.state,
                    comment_url=verdicts.comment_url,
                    commenting=verdicts.commenting,
                )
            markdown += render_job_summary(
                touched,
                totals=totals,
                problems=problems,
                links=published.urls,
                index_url=published.index_url,
                notes=published.notes,
                site_url=published.site_url,
            )
            markdown += env_lines(results.envs)
            if results.spend is not None:
                markdown += f"{spend_line(results.spend)}.\n\n"
            append_summary(files.step_summary, markdown)
        if files.github_output is not None:
            for name, value in step_outputs(files, results).items():
                append_output(files.github_output, name, value)
    except OSError as error:
        log.warning(f"cannot write the job summary or step outputs: {error.strerror or error}")


def step_outputs(files: SummaryFiles, results: Results) -> dict[str, str]:
    """The step outputs (docs/outputs.md), by name."""
    published, merged = results.published, results.merged
    outputs = {
        name.replace("_", "-"): str(v) for name, v in asdict(results.collected.totals()).items()
    }
    outputs["conclusion"] = results.conclusion
    outputs["recorded"] = str(results.recorded).lower()
    outputs["changed-cells"] = str(merged.changed_cells if results.recorded else 0)
    outputs["dashboard-urls"] = json.dumps(dict(published.urls), sort_keys=True)
    outputs["json"] = json.dumps(results.outline(), sort_keys=True)
    optional = {
        "index-url": published.index_url,
        "site-url": published.site_url,
        "summary-json": files.summary_json,
        "output-dir": files.output_dir,
        "html": files.html,
    }
    outputs.update({name: str(value) for name, value in optional.items() if value})
    if results.verdicts is not None:
        outputs.update(results.verdicts.outputs())
    return outputs
