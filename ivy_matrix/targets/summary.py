"""The summary target: the job summary, step outputs, ``--summary-json`` and the run's log.

I/O: appends to the files the runner names (``GITHUB_STEP_SUMMARY``, ``GITHUB_OUTPUT``),
writes the summary JSON atomically, and logs one line per dashboard plus an annotation per
failed test (the first few). The markdown comes from render.py. The files it writes come as
one :class:`SummaryFiles` value.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ivy_matrix.collect import Collected
from ivy_matrix.errors import InputError
from ivy_matrix.fold import DashboardReport, Merged
from ivy_matrix.history import dashboard_history, summary_cells
from ivy_matrix.paths import dashboard_file
from ivy_matrix.render import backend_counts, render_job_summary
from ivy_matrix.runner.files import write_atomic
from ivy_matrix.runner.log import Log, append_output, append_summary
from ivy_matrix.targets import Published

# GitHub shows at most 10 warning annotations per step; more only fill the log.
ANNOTATIONS = 10
RETIRED_SHOWN = 10  # retired rows named in the log line of a dashboard


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryFiles:
    """The files the job summary and step outputs go to, and the paths the outputs name."""

    step_summary: Path | None = None  # the runner's GITHUB_STEP_SUMMARY
    github_output: Path | None = None  # the runner's GITHUB_OUTPUT
    summary_json: Path | None = None  # named by the summary-json output
    output_dir: Path | None = None  # named by the output-dir output
    html: Path | None = None  # named by the html output (the site target's folder)


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


def annotate_failures(collected: Collected, log: Log) -> None:
    """One annotation per failed test, for the first few; the rest are counted.

    Warnings, not errors: failing tests are what a dashboard shows, and they fail the step
    only with ``fail-on``.
    """
    failed = sum(f.failed + f.errors for f in collected.files if f.problem is None)
    shown = collected.failures[:ANNOTATIONS]
    for failure in shown:
        message = failure.message or "failed"
        log.warning(
            message,
            file=failure.test_file or failure.result_file,
            title=f"{failure.test} failed on {failure.backend}",
        )
    if failed > len(shown):
        log.notice(
            f"{failed - len(shown)} more failed test case(s) are not annotated; the dashboards "
            f"and the job summary have them all"
        )


def write_summary_json(
    path: Path, collected: Collected, merged: Merged, published: Published
) -> None:
    """``--summary-json``: totals, files, and every dashboard's counts, link and changes, and
    its failing and flaky cells' history (failing since, last pass, flaky)."""
    dashboards = {}
    for state in merged.ordered():
        counts = backend_counts(state)
        report = merged.reports.get(state.key)
        dashboards[state.key] = {
            "file": dashboard_file(state),
            "rows": len(state.rows),
            "backends": {b: {"passing": p, "total": t} for b, (p, t) in counts.items()},
            "updated": report is not None,
            "history": summary_cells(dashboard_history(state)),
            **({"url": published.urls[state.key]} if state.key in published.urls else {}),
            **(_report_json(report) if report is not None else {}),
        }
    document = {
        "version": 1,
        "index_url": published.index_url,
        "files": [asdict(f) for f in collected.files],
        "totals": asdict(collected.totals()),
        "dashboards": dashboards,
        "removed_dashboards": {
            state.key: {
                "file": dashboard_file(state),
                **_report_json(merged.reports.get(state.key, DashboardReport())),
            }
            for state in merged.removed
        },
    }
    try:
        write_atomic(path, json.dumps(document, indent=2) + "\n")
    except OSError as error:
        raise InputError(f"cannot write --summary-json {path}: {error.strerror or error}") from None


def _report_json(report: DashboardReport) -> dict[str, object]:
    """A dashboard's report as the summary JSON shows it (``removed`` only when it was)."""
    document = asdict(report)
    if not report.removed:
        del document["removed"]
    return document


def publish_job_summary(
    files: SummaryFiles, collected: Collected, merged: Merged, published: Published, log: Log
) -> None:
    """Write the job summary and the step outputs, when the runner provides their files."""
    totals = collected.totals()
    touched = [s for s in merged.ordered() if s.key in merged.reports]
    try:
        if files.step_summary is not None:
            problems = [(p.source, p.message) for p in collected.problems]
            markdown = render_job_summary(
                touched,
                totals=totals,
                problems=problems,
                links=published.urls,
                index_url=published.index_url,
            )
            append_summary(files.step_summary, markdown)
        if files.github_output is not None:
            outputs = {name.replace("_", "-"): str(v) for name, v in asdict(totals).items()}
            outputs["changed-cells"] = str(merged.changed_cells)
            outputs["dashboard-urls"] = json.dumps(dict(published.urls), sort_keys=True)
            if published.index_url:
                outputs["index-url"] = published.index_url
            if files.summary_json is not None:
                outputs["summary-json"] = str(files.summary_json)
            if files.output_dir is not None:
                outputs["output-dir"] = str(files.output_dir)
            if files.html is not None:
                outputs["html"] = str(files.html)
            for name, value in outputs.items():
                append_output(files.github_output, name, value)
    except OSError as error:
        log.warning(f"cannot write the job summary or step outputs: {error.strerror or error}")
