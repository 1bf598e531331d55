"""The ``ivy-matrix`` command: the imperative shell around the pure pipeline.

I/O. Commands:

- ``update``: read result files, fold them into the stored dashboards, write the dashboards;
- ``adopt``: take an existing dashboard table into the store, cell by cell;
- ``render``: write every stored dashboard and the index.

Exit codes: 0 done (warnings included), 1 something the user must fix (the message says what),
2 a bug in ivy-matrix (a traceback is printed; please report it).
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from ivy_matrix import __version__
from ivy_matrix.adopt import adopt_table
from ivy_matrix.collect import Collected, Collector, build_batches
from ivy_matrix.config import (
    OPTIONS,
    FailOn,
    Settings,
    Target,
    environ,
    load_settings,
    parse_dashboard,
    require_update_inputs,
)
from ivy_matrix.errors import InputError, IvyMatrixError
from ivy_matrix.links import cell_url
from ivy_matrix.merge import apply_batch, retire_rows
from ivy_matrix.model import DashboardId, DashboardState, RunKey, Source
from ivy_matrix.naming import Namer
from ivy_matrix.publish import dashboard_file, missing_files, render_files, write_files
from ivy_matrix.render import backend_counts, render_job_summary
from ivy_matrix.sources import find_result_files
from ivy_matrix.store import LocalStore, write_atomic
from ivy_matrix.workflow_commands import Log, append_output, append_summary

EXIT_OK = 0
EXIT_USER = 1
EXIT_BUG = 2

_UPDATE_OPTIONS = tuple(o.name for o in OPTIONS)
_METAVARS = {
    "backend": "NAME",
    "backend_from_path": "REGEX",
    "backend_from_test": "REGEX",
    "dashboard": "[CATEGORY/]TITLE",
    "job_url": "URL",
    "repository": "OWNER/REPO",
    "server_url": "URL",
    "store": "DIR",
    "output_dir": "DIR",
    "config": "FILE",
    "summary_json": "FILE",
}
_KIND_METAVARS = {"list": "GLOB", "int": "N", "path": "PATH", "str": "VALUE"}
_STORE_OPTIONS = ("store", "output_dir", "config", "style")


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors raised as InputError (exit 1) instead of exit 2."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{self.prog}: {message} (see {self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ivy-matrix",
        description="Per-test, per-backend dashboards from JUnit XML results.",
        epilog="Every option can also be set as IVY_MATRIX_<OPTION> (e.g. IVY_MATRIX_BACKEND).",
    )
    parser.add_argument("--version", action="version", version=f"ivy-matrix {__version__}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    def add_options(sub: argparse.ArgumentParser, names: Sequence[str]) -> None:
        for option in OPTIONS:
            if option.name not in names:
                continue
            default = f" (default: {option.default})" if option.default else ""
            help_text = option.help + default
            if option.kind == "list":
                sub.add_argument(
                    option.flag, dest=option.name, action="append", metavar="GLOB", help=help_text
                )
            else:
                metavar = _METAVARS.get(option.name, _KIND_METAVARS[option.kind])
                sub.add_argument(
                    option.flag,
                    dest=option.name,
                    # Choices are checked by config.py, so that a bad value on the command line
                    # and in IVY_MATRIX_* gets the same message and exit code.
                    metavar="{" + ",".join(option.choices) + "}" if option.choices else metavar,
                    help=help_text,
                )

    update = commands.add_parser(
        "update", help="fold result files into the dashboards and write them"
    )
    add_options(update, _UPDATE_OPTIONS)
    adopt = commands.add_parser("adopt", help="take an existing dashboard table into the store")
    adopt.add_argument("--dashboard", required=True, help="[category/]title of the dashboard")
    adopt.add_argument("file", type=Path, help="the markdown file holding the table")
    adopt.add_argument("--force", action="store_true", help="replace a dashboard already stored")
    add_options(adopt, ("store", "config"))
    render = commands.add_parser("render", help="write every stored dashboard and the index")
    add_options(render, _STORE_OPTIONS)
    return parser


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run one command; return the exit code."""
    env = environ() if env is None else env
    log = Log(github_actions=env.get("GITHUB_ACTIONS") == "true")
    try:
        args = _parser().parse_args(argv)
        given = {k: v for k, v in vars(args).items() if k not in {"command", "file", "force"}}
        if args.command == "adopt":
            given.pop("dashboard")
        settings = load_settings(given, env)
        if args.command == "update":
            return _update(settings, log)
        if args.command == "adopt":
            return _adopt(settings, log, dashboard=args.dashboard, file=args.file, force=args.force)
        return _render(settings, log)
    except IvyMatrixError as error:
        log.error(str(error))
        return EXIT_USER
    except Exception:  # noqa: BLE001  -- the last line of defence: report the bug, exit 2
        traceback.print_exc()
        log.error("ivy-matrix crashed; please report this with the log above")
        return EXIT_BUG


def _read(settings: Settings, log: Log) -> Collected:
    files, warnings = find_result_files(settings.junit, root=Path.cwd())
    for warning in warnings:
        log.warning(warning)
    collector = Collector(Namer(settings.naming_rules()))
    with log.group(f"Reading {len(files)} result file(s)"):
        for path in files:
            shown = _shown(path)
            try:
                with path.open("rb") as stream:
                    counts = collector.add_file(stream, source=shown)
            except OSError as error:
                log.warning(f"cannot read result file: {error.strerror or error}", file=shown)
                continue
            if counts.problem is None:
                log.info(
                    f"{shown}: {counts.tests} tests, {counts.failed} failed, "
                    f"{counts.errors} errors, {counts.skipped} skipped"
                )
    collected = collector.collected
    for problem in collected.problems:
        log.warning(
            f"result file skipped: {problem.message}", file=problem.source, line=problem.line
        )
    for source, count in collected.unassigned.items():
        log.warning(
            f"{count} test case(s) have no backend: neither backend-from-path nor "
            f"backend-from-test matched; they were not recorded",
            file=source,
        )
    return collected


def _shown(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()


def _source_for(settings: Settings, run_id: int, now: str) -> Source:
    job_id = settings.job_id
    url = cell_url(
        server_url=settings.server_url,
        repository=settings.repository,
        run_id=settings.run_id,
        job_id=job_id,
        given=settings.job_url,
    )
    run = RunKey(run_id, settings.run_attempt, job_id if job_id is not None else -1)
    return Source(run=run, url=url, time=now)


def _update(settings: Settings, log: Log) -> int:
    started = time.monotonic()
    require_update_inputs(settings)
    collected = _read(settings, log)
    read_seconds = time.monotonic() - started
    store = LocalStore(settings.store)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    report: dict[str, dict[str, object]] = {}
    with store.locked():
        states = {state.id: state for state in store.load_all()}
        run_id = settings.run_id
        if run_id is None:
            # Not on GitHub Actions: number local runs after everything the store has seen.
            run_id = max((s.runs[0] for s in states.values() if s.runs), default=0) + 1
            log.info(f"no run id given: recording these results as local run {run_id}")
        source = _source_for(settings, run_id, now)
        changed_keys = []
        for batch in build_batches(collected, lambda _backend: source):
            result = apply_batch(states.get(batch.dashboard), batch, history=settings.history)
            state, retired = retire_rows(result.state, settings.retire_after_runs)
            if result.state_changed or retired:
                store.save(state)
                changed_keys.append(state.key)
            states[state.id] = state
            report[state.key] = {
                "changed_cells": result.changed_cells,
                "new_rows": result.new_rows,
                "new_backends": result.new_backends,
                "retired_rows": list(retired),
            }
            _log_dashboard(log, state, result.changed_cells, result.new_rows, retired)
        ordered = sorted(states.values(), key=lambda s: s.key)
        # Still under the lock: a slower process must not overwrite newer files.
        written = (
            _write_output(settings, ordered, changed_keys)
            if Target.FILE in settings.targets
            else []
        )
    totals = _totals(collected)
    changed_cells = sum(int(str(r["changed_cells"])) for r in report.values())
    _write_summary(settings, collected, totals, ordered, report)
    if Target.SUMMARY in settings.targets:
        touched = [s for s in ordered if s.key in report]
        _publish_job_summary(
            settings, collected, totals, touched, changed_cells=changed_cells, log=log
        )
    log.info(
        f"ivy-matrix: {totals['files']} file(s), {totals['tests']} test cases "
        f"({totals['failed']} failed, {totals['errors']} errors, {totals['skipped']} skipped) "
        f"into {len(report)} dashboard(s); {changed_cells} cell(s) changed; {len(written)} file(s) written; "
        f"read in {read_seconds:.2f} s, done in {time.monotonic() - started:.2f} s"
    )
    return _exit_code(settings.fail_on, totals, log)


def _log_dashboard(
    log: Log, state: DashboardState, changed: int, new_rows: int, retired: Sequence[str]
) -> None:
    parts = [f"{changed} cell(s) changed"]
    if new_rows:
        parts.append(f"{new_rows} new row(s)")
    if retired:
        shown = ", ".join(retired[:10]) + (" ..." if len(retired) > 10 else "")  # noqa: PLR2004  -- log brevity
        parts.append(f"retired {len(retired)} row(s) no recent run reported: {shown}")
    log.info(f"dashboard {state.key}: " + "; ".join(parts))


def _write_output(
    settings: Settings, states: Sequence[DashboardState], changed: Sequence[str]
) -> list[str]:
    if settings.output_dir is None:
        return []
    wanted = set(changed) | missing_files(settings.output_dir, states)
    return write_files(settings.output_dir, render_files(states, style=settings.style, only=wanted))


def _totals(collected: Collected) -> dict[str, int]:
    files = collected.files
    return {
        "files": len(files),
        "tests": sum(f.tests for f in files),
        "passed": sum(f.passed for f in files),
        "failed": sum(f.failed for f in files),
        "errors": sum(f.errors for f in files),
        "skipped": sum(f.skipped for f in files),
        "flaky": sum(f.flaky for f in files),
        "problems": len(collected.problems),
        "unassigned": sum(collected.unassigned.values()),
    }


def _write_summary(
    settings: Settings,
    collected: Collected,
    totals: Mapping[str, int],
    states: Sequence[DashboardState],
    report: Mapping[str, Mapping[str, object]],
) -> None:
    if settings.summary_json is None:
        return
    dashboards = {}
    for state in states:
        counts = backend_counts(state)
        dashboards[state.key] = {
            "file": dashboard_file(state),
            "rows": len(state.rows),
            "backends": {b: {"passing": p, "total": t} for b, (p, t) in counts.items()},
            "updated": state.key in report,
            **report.get(state.key, {}),
        }
    document = {
        "version": 1,
        "files": [asdict(f) for f in collected.files],
        "totals": dict(totals),
        "dashboards": dashboards,
    }
    try:
        write_atomic(settings.summary_json, json.dumps(document, indent=2) + "\n")
    except OSError as error:
        raise InputError(
            f"cannot write --summary-json {settings.summary_json}: {error.strerror or error}"
        ) from None


def _publish_job_summary(
    settings: Settings,
    collected: Collected,
    totals: Mapping[str, int],
    touched: Sequence[DashboardState],
    *,
    changed_cells: int,
    log: Log,
) -> None:
    """Write the job summary and the step outputs, when the runner provides their files."""
    try:
        if settings.step_summary is not None:
            problems = [(p.source, p.message) for p in collected.problems]
            append_summary(
                settings.step_summary,
                render_job_summary(touched, totals=totals, problems=problems),
            )
        if settings.github_output is not None:
            outputs = {name.replace("_", "-"): str(value) for name, value in totals.items()}
            outputs["changed-cells"] = str(changed_cells)
            if settings.summary_json is not None:
                outputs["summary-json"] = str(settings.summary_json)
            if settings.output_dir is not None:
                outputs["output-dir"] = str(settings.output_dir)
            for name, value in outputs.items():
                append_output(settings.github_output, name, value)
    except OSError as error:
        log.warning(f"cannot write the job summary or step outputs: {error.strerror or error}")


def _exit_code(fail_on: FailOn, totals: Mapping[str, int], log: Log) -> int:
    if fail_on is FailOn.FAILURES and totals["failed"] + totals["errors"]:
        log.error(
            f"{totals['failed']} test(s) failed and {totals['errors']} had errors (fail-on: failures)"
        )
        return EXIT_USER
    if fail_on is FailOn.ERRORS and totals["errors"]:
        log.error(f"{totals['errors']} test(s) had errors (fail-on: errors)")
        return EXIT_USER
    return EXIT_OK


def _adopt(settings: Settings, log: Log, *, dashboard: str, file: Path, force: bool) -> int:
    dashboard_id: DashboardId = parse_dashboard(dashboard)
    try:
        text = file.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise InputError(f"cannot read {file}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise InputError(f"cannot adopt {file}: it is not UTF-8 text ({error.reason})") from None
    state = adopt_table(text, dashboard_id)
    store = LocalStore(settings.store)
    with store.locked():
        if store.load(dashboard_id) is not None and not force:
            raise InputError(
                f"dashboard {dashboard_id.key!r} already has state in {settings.store}; "
                f"pass --force to replace it with {file}"
            )
        store.save(state)
    cells = sum(len(row.cells) for row in state.rows)
    log.info(
        f"adopted {file} as dashboard {dashboard_id.key}: {len(state.rows)} rows, "
        f"{len(state.backends)} backends, {cells} cells"
    )
    return EXIT_OK


def _render(settings: Settings, log: Log) -> int:
    if settings.output_dir is None:
        raise InputError("render needs --output-dir DIR (or IVY_MATRIX_OUTPUT_DIR)")
    states = LocalStore(settings.store).load_all()
    written = write_files(settings.output_dir, render_files(states, style=settings.style))
    log.info(
        f"rendered {len(states)} dashboard(s) into {settings.output_dir}; "
        f"{len(written)} file(s) changed"
    )
    return EXIT_OK
