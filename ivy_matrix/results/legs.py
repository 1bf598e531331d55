"""The leg file: one matrix leg's named cells, counts and metadata, for the job after the matrix.

Pure: no I/O. ``ivy-matrix collect`` (commands/collect.py) writes one per leg with no network
at all; ``ivy-matrix update --legs GLOB`` (commands/leg_files.py) reads them in one fan-in job,
which commits once for the whole run. The leg did the naming (backend, dashboard, row), so the
fan-in job needs neither the XML nor the naming options.

**Format** (UTF-8 JSON, one object on one line; shown spread out)::

    {"format": "ivy-matrix-leg", "version": 2,
     "run_id": 4519946746, "run_attempt": 1, "job_id": 12345678901,
     "repository": "unifyai/ivy", "server_url": "https://github.com",
     "sha": "9f2c...", "ref": "refs/heads/main", "event": "push",
     "env": {"jax": "0.4.31", "numpy": "2.1.0"},
     "files": [{"path": "results/junit.xml", "tests": 219, "passed": 210, "failed": 7,
                "errors": 0, "skipped": 2, "flaky": 0, "problem": null}],
     "problems": [{"source": "results/bad.xml", "message": "file is empty", "line": null}],
     "unassigned": {"results/other.xml": 2}, "nameless": {"results/cut.xml": [1, 40]},
     "backends": {"torch": [219, 7, 0, 2]},
     "dashboards": [{"category": "core", "title": "gradients",
                     "rows": ["test_adam", "test_jac", "test_grad"],
                     "cells": {"torch": "fs.", "numpy": "ssk"},
                     "messages": {"torch": {"0": "AssertionError: the results do not match"}}}]}

- ``run_id`` (positive), ``run_attempt`` (1 or more), ``job_id`` (positive, or null when the
  leg did not know its job: its cells then link the run), ``repository`` (``OWNER/REPO``),
  ``server_url`` (``http(s)://``), and the provenance ``sha``, ``ref``, ``event`` (``""`` when
  unknown): where the results come from; ``env`` (only when recorded) the leg's package
  versions (environment.py), which the fan-in job records with the leg's cells.
- ``files``, ``problems``, ``unassigned``, ``nameless``: the leg's result files, as ``update``
  counts them (``--summary-json``), the files it could not read, cases no backend rule named,
  and cases without a name (how many, and the line of the first) per file;
- ``backends``: per backend its test cases, failed, errors and skipped (the log's tally).
- ``dashboards``: each dashboard the leg's results touch, its rows in first-seen order, and
  per backend one character per row (``s`` success, ``f`` failure, ``k`` skipped, ``y`` flaky,
  ``.`` no result), with the cases of cells that hold more than one and the first line of each
  failure (leg_cells.py has the details). 28,000 cells are about 28 KB plus the row names.

Keys this version does not know are ignored, so later versions can add some; another version
is refused (version 1 was the metadata-only file of the retired ``leg-metadata`` option).

**Untrusted input.** A leg file may come from a fork's artifact, so every value is checked
(types; sizes: at most :data:`MAX_LEG_FILE_BYTES` and the ``MAX_LEG_*`` counts of cells,
rows, dashboards, backends and files, names of at most :data:`NAME_LIMIT` characters; counts
that agree with each cell's outcome) and a file that fails is refused whole,
naming it. The fan-in job checks a file
that parsed against the run it processes with :func:`leg_problem` (same repository, server and
run, an attempt no later than its own, the same commit), and builds each cell's link itself
from its own server and repository and the leg's run and job ids: a forged file can neither
link a cell elsewhere nor pin it to a run from the future.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace

from ivy_matrix.errors import InputError
from ivy_matrix.jsonshape import MalformedError, expect_list, expect_object
from ivy_matrix.model import DashboardId, FileCounts, ParseProblem, RunKey
from ivy_matrix.redaction import Redactor
from ivy_matrix.results.cells import CellResult, Collected, combine_results
from ivy_matrix.results.environment import Env, env_of, redacted_env
from ivy_matrix.results.junit import MESSAGE_CAP
from ivy_matrix.results.leg_cells import (
    NO_RESULT,
    add_dashboard,
    bounded_int,
    bounded_text,
    checked_seconds,
    dashboard_json,
    keyed,
)
from ivy_matrix.results.timed_cases import TimedCases

LEG_FORMAT = "ivy-matrix-leg"
LEG_FILE_VERSION = 2
# What one leg file may hold, about ten times what a large leg writes: a leg of 7,000 test
# cases (Ivy's matrix: 128 legs, 28,000 cells) writes 7,000 cells and rows in 0.1 to 1 MB
# (4 MB if every case fails with a failure line of 500 characters), in a few dozen dashboards.
# A file past one of these is refused whole, naming it; the fan-in job then reads, holds and
# pushes (a pull request's verdicts) nothing of it.
MAX_LEG_FILE_BYTES = 32 * 1024 * 1024
MAX_LEG_CELLS = 100_000  # cells with a result, over every dashboard and backend
MAX_LEG_ROWS = 100_000  # rows, over every dashboard
MAX_LEG_DASHBOARDS = 5_000
MAX_LEG_BACKENDS = 256
MAX_LEG_FILES = 10_000  # entries of files, problems, unassigned and nameless, each
# Every leg file's name (and artifact name) starts so: the fan-in job downloads "<prefix>*".
LEG_NAME_PREFIX = "ivy-matrix-leg-"
_COUNTS = ("tests", "passed", "failed", "errors", "skipped", "flaky", "nameless")
_TALLY = 4  # a backend's tally: test cases, failed, errors, skipped
_REPOSITORY = re.compile(r"[^/\s]+/[^/\s]+")
# A JSON escape of a surrogate (paired ones make a character; a lone one makes no text).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SERVER = re.compile(r"https?://[^\s\"'<>`\\/]+(?:/[^\s\"'<>`\\]*)?")


@dataclass(frozen=True, slots=True, kw_only=True)
class LegInfo:
    """Which run, attempt and job a leg file's results come from, and where they were tested."""

    run_id: int
    run_attempt: int
    job_id: int | None
    repository: str
    server_url: str
    sha: str = ""
    ref: str = ""
    event: str = ""
    # The leg's recorded environment (environment.py), () when none was.
    env: Env = ()

    @property
    def run(self) -> RunKey:
        """Where the leg's results stand in run order (job id ``-1`` when unknown)."""
        return RunKey(self.run_id, self.run_attempt, -1 if self.job_id is None else self.job_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class LegResults:
    """One leg file, read: its metadata and its results (as ``collect.Collected``)."""

    info: LegInfo
    collected: Collected


def dump_leg(info: LegInfo, collected: Collected) -> str:
    """The text of a leg file (deterministic: the same results give the same text)."""
    _check_info(info, where="this leg")
    fields = asdict(info)
    del fields["env"]
    document: dict[str, object] = {
        "format": LEG_FORMAT,
        "version": LEG_FILE_VERSION,
        **fields,
        **({"env": dict(info.env)} if info.env else {}),
        "files": [asdict(counts) for counts in collected.files],
        "problems": [asdict(problem) for problem in collected.problems],
        "unassigned": dict(collected.unassigned),
        "nameless": {source: list(seen) for source, seen in collected.nameless.items()},
        "backends": dict(collected.by_backend),
        "dashboards": [
            dashboard_json(dashboard, rows) for dashboard, rows in collected.dashboards.items()
        ],
    }
    if collected.durations:
        document["durations"] = {
            backend: {
                prefix: {name: round(seconds, 6) for name, seconds in named.items()}
                for prefix, named in prefixes.items()
            }
            for backend, prefixes in collected.durations.seconds().items()
        }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def leg_name(info: LegInfo, text: str) -> str:
    """A name for the leg file (and its artifact) that no other leg of the run has: the run,
    attempt and job, and a digest of the text (two collect steps in one job differ by it)."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    job = "nojob" if info.job_id is None else str(info.job_id)
    return f"{LEG_NAME_PREFIX}{info.run_id}-{info.run_attempt}-{job}-{digest}"


def load_leg(text: str, *, where: str) -> LegResults:
    """Read a leg file; :class:`InputError` naming ``where`` when it is not a usable one."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:  # RecursionError: nesting too deep
        raise InputError(f"leg file {where}: not JSON ({error})") from None
    if not isinstance(document, dict):
        raise InputError(f"leg file {where}: expected a JSON object")
    if _SURROGATE_ESCAPE.search(text) and not _is_text(document):
        raise InputError(
            f"leg file {where}: a string holds a lone surrogate (an escape such as \\ud800, half "
            f"of a character), which is not text"
        )
    _check_version(document, where)
    try:
        _check_sizes(document)
        info = _info(document)
        _check_info(info, where=where)
        collected = Collected(
            files=[
                _file_counts(item)
                for item in keyed(expect_list, document.get("files", []), "files")
            ],
            problems=[
                _problem(item)
                for item in keyed(expect_list, document.get("problems", []), "problems")
            ],
            unassigned=_unassigned(document.get("unassigned", {})),
            nameless={  # per file: how many cases, and the line of the first
                source: (count, line)
                for source, (count, line) in _numbers_by(
                    document.get("nameless", {}), "nameless", 2
                ).items()
            },
            by_backend=_numbers_by(document.get("backends", {}), "backends", _TALLY),
        )
        for item in keyed(expect_list, document.get("dashboards", []), "dashboards"):
            add_dashboard(collected, item)
        collected.durations = TimedCases.of(_durations(document.get("durations", {})))
    except MalformedError as error:
        raise InputError(f"leg file {where}: {error}") from None
    return LegResults(info=info, collected=collected)


def _is_text(document: object) -> bool:
    """Whether every string in ``document`` is text that can be written again (a JSON escape
    can make a lone surrogate, which UTF-8 cannot encode)."""
    try:
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_version(document: dict[str, object], where: str) -> None:
    found = document.get("format")
    if found != LEG_FORMAT:
        raise InputError(f"leg file {where}: format {found!r:.60} is not {LEG_FORMAT!r}")
    version = document.get("version")
    if version != LEG_FILE_VERSION:
        raise InputError(
            f"leg file {where}: version {version!r:.20} is not {LEG_FILE_VERSION}, the version "
            f"this ivy-matrix reads; use the same ivy-matrix version in the legs and the fan-in job"
        )


def _check_sizes(document: Mapping[str, object]) -> None:
    """The limits above, counted before anything is read into cells (types are checked later:
    what has the wrong type counts nothing here)."""
    found: list[tuple[str, int, int, str]] = []
    for key in ("files", "problems", "unassigned", "nameless"):
        value = document.get(key)
        if isinstance(value, list | dict):
            found.append((key, len(value), MAX_LEG_FILES, "entries"))
    dashboards = document.get("dashboards")
    items = dashboards if isinstance(dashboards, list) else []
    found.append(("dashboards", len(items), MAX_LEG_DASHBOARDS, "dashboards"))
    backends = set(_keys(document.get("backends")))
    rows = cells = 0
    for item in items:
        values = item if isinstance(item, dict) else {}
        listed = values.get("rows")
        rows += len(listed) if isinstance(listed, list) else 0
        codes = values.get("cells")
        backends.update(_keys(codes))
        for line in codes.values() if isinstance(codes, dict) else ():
            cells += len(line) - line.count(NO_RESULT) if isinstance(line, str) else 0
    found.append(("dashboards", rows, MAX_LEG_ROWS, "rows"))
    found.append(("dashboards", cells, MAX_LEG_CELLS, "cells"))
    found.append(("backends", len(backends), MAX_LEG_BACKENDS, "backends"))
    for key, count, limit, what in found:
        if count > limit:
            raise MalformedError(
                f"'{key}': {count:,} {what}, more than the {limit:,} a leg file may hold"
            )


def _keys(value: object) -> list[str]:
    return list(value) if isinstance(value, dict) else []


def run_ids_problem(run_id: int, run_attempt: int, job_id: int | None) -> str | None:
    """What is wrong with a leg's run, attempt and job ids as a file gives them, or None."""
    if run_id <= 0:
        return f"'run_id' must be positive, got {run_id}"
    if run_attempt < 1:
        return f"'run_attempt' must be 1 or more, got {run_attempt}"
    if job_id is not None and job_id <= 0:
        return f"'job_id' must be positive or null, got {job_id}"
    return None


def _info(document: Mapping[str, object]) -> LegInfo:
    job_id = document.get("job_id")
    return LegInfo(
        run_id=bounded_int(document.get("run_id"), "run_id"),
        run_attempt=bounded_int(document.get("run_attempt"), "run_attempt"),
        job_id=None if job_id is None else bounded_int(job_id, "job_id"),
        repository=bounded_text(document.get("repository"), "repository"),
        server_url=bounded_text(document.get("server_url"), "server_url"),
        sha=bounded_text(document.get("sha", ""), "sha"),
        ref=bounded_text(document.get("ref", ""), "ref"),
        event=bounded_text(document.get("event", ""), "event"),
        env=env_of(document.get("env")),
    )


def _check_info(info: LegInfo, *, where: str) -> None:
    problem = run_ids_problem(info.run_id, info.run_attempt, info.job_id)
    if problem is None and not _REPOSITORY.fullmatch(info.repository):
        problem = f"'repository' must be OWNER/REPO, got {info.repository!r:.80}"
    if problem is None and not _SERVER.fullmatch(info.server_url):
        problem = f"'server_url' must be an http(s) URL, got {info.server_url!r:.80}"
    if problem is not None:
        raise InputError(f"leg file {where}: {problem}")


def _file_counts(item: object) -> FileCounts:
    values = keyed(expect_object, item, "files")
    problem = values.get("problem")
    counts = {name: bounded_int(values.get(name, 0), f"files.{name}") for name in _COUNTS}
    if any(count < 0 for count in counts.values()):
        raise MalformedError("'files' counts must not be negative")
    return FileCounts(
        path=bounded_text(values.get("path"), "files.path"),
        problem=None
        if problem is None
        else bounded_text(problem, "files.problem", MESSAGE_CAP * 4),
        **counts,
    )


def _problem(item: object) -> ParseProblem:
    values = keyed(expect_object, item, "problems")
    line = values.get("line")
    return ParseProblem(
        source=bounded_text(values.get("source"), "problems.source"),
        message=bounded_text(values.get("message"), "problems.message", MESSAGE_CAP * 4),
        line=None if line is None else bounded_int(line, "problems.line"),
    )


def _numbers_by(value: object, what: str, size: int) -> dict[str, list[int]]:
    """``{name: [n, ...]}`` with ``size`` numbers each, 0 or more."""
    found: dict[str, list[int]] = {}
    for name, numbers in keyed(expect_object, value, what).items():
        listed = [bounded_int(n, what) for n in keyed(expect_list, numbers, what)]
        if len(listed) != size or min(listed) < 0:
            raise MalformedError(f"'{what}' of {name!r:.100}: expected {size} numbers, 0 or more")
        found[bounded_text(name, what)] = listed
    return found


def _durations(value: object) -> dict[str, dict[str, dict[str, float]]]:
    """``durations``: by backend, the start of a node id, then each case's seconds."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    for backend, prefixes in keyed(expect_object, value, "durations").items():
        mine = found[bounded_text(backend, "durations")] = {}
        for prefix, named in keyed(expect_object, prefixes, "durations").items():
            cases = mine[bounded_text(prefix, "durations")] = {}
            for name, seconds in keyed(expect_object, named, "durations").items():
                cases[bounded_text(name, "durations")] = checked_seconds(seconds, "'durations'")
    return found


def _unassigned(value: object) -> dict[str, int]:
    by_file = keyed(expect_object, value, "unassigned")
    found = {
        bounded_text(k, "unassigned"): bounded_int(v, "unassigned") for k, v in by_file.items()
    }
    if any(count < 0 for count in found.values()):
        raise MalformedError("'unassigned' counts must not be negative")
    return found


def rerun(legs: Sequence[LegResults]) -> dict[int, int]:
    """The legs a later attempt of their run ran again, by index: the index of a leg of that
    later attempt (the newest) which holds one of their cells.

    A leg is known by the cells it ran (dashboard, row and backend): "re-run failed jobs" runs
    a failed leg's job again, which writes a leg file of the new attempt, with a new job id,
    holding the same cells. Legs that share no cell (other backends, other shards of one
    backend's tests) are other legs, and a leg that no later attempt ran again keeps its
    results. The stored cells already show each cell's newest attempt (merge.py); leaving the
    older attempt's leg out makes the counts and ``fail-on`` agree with them.
    """
    newest: dict[tuple[int, DashboardId, str, str], tuple[int, int]] = {}
    for index, leg in enumerate(legs):
        attempt = leg.info.run_attempt
        for cell in _cells(leg):
            known = newest.get(cell)
            if known is None or attempt > known[0]:
                newest[cell] = (attempt, index)
    found: dict[int, int] = {}
    for index, leg in enumerate(legs):
        later = max(
            (newest[cell] for cell in _cells(leg) if newest[cell][0] > leg.info.run_attempt),
            default=None,
        )
        if later is not None:
            found[index] = later[1]
    return found


def _cells(leg: LegResults) -> Iterator[tuple[int, DashboardId, str, str]]:
    """Every cell a leg ran: its run, dashboard, row and backend."""
    run_id = leg.info.run_id
    for dashboard, rows in leg.collected.dashboards.items():
        for row, cells in rows.items():
            for backend in cells:
                yield run_id, dashboard, row, backend


def redacted_leg(leg: LegResults, redactor: Redactor) -> LegResults:
    """``leg`` with the secrets ``redactor`` hides (redaction.py) out of what a leg's tests
    could put in it: its failure lines, dashboard and row names (two that differ only in a
    secret become one), problems and environment."""
    redact = redactor.cached()
    collected = leg.collected
    names = "\n".join(
        f"{dashboard.category}\n{dashboard.title}\n" + "\n".join(rows)
        for dashboard, rows in collected.dashboards.items()
    )
    if redactor.may_hide(names):
        collected.dashboards = _renamed(collected.dashboards, redact)
    for rows in collected.dashboards.values():
        for cells in rows.values():
            for backend, cell in cells.items():
                if cell.message:
                    cells[backend] = cell._replace(message=redact(cell.message))
    collected.problems = [
        replace(problem, message=redact(problem.message)) for problem in collected.problems
    ]
    durations = collected.durations.seconds()
    ids = "\n".join(
        prefix + "\n" + "\n".join(named)
        for prefixes in durations.values()
        for prefix, named in prefixes.items()
    )
    if redactor.may_hide(ids):
        collected.durations = TimedCases.of(
            {backend: _redacted_cases(prefixes, redact) for backend, prefixes in durations.items()}
        )
    collected.files = [
        counts if counts.problem is None else replace(counts, problem=redact(counts.problem))
        for counts in collected.files
    ]
    info = replace(leg.info, env=redacted_env(leg.info.env, redact))
    return LegResults(info=info, collected=collected)


def _renamed(
    dashboards: Mapping[DashboardId, Mapping[str, Mapping[str, CellResult]]],
    redact: Callable[[str], str],
) -> dict[DashboardId, dict[str, dict[str, CellResult]]]:
    """``dashboards`` with their names and their rows' redacted; what two names that differ
    only in a secret held becomes one dashboard, or one row (its cells combined)."""
    renamed: dict[DashboardId, dict[str, dict[str, CellResult]]] = {}
    for dashboard, rows in dashboards.items():
        clean = DashboardId(title=redact(dashboard.title), category=redact(dashboard.category))
        mine = renamed.setdefault(clean, {})
        for row, cells in rows.items():
            have = mine.setdefault(redact(row), {})
            for backend, cell in cells.items():
                old = have.get(backend)
                have[backend] = cell if old is None else combine_results(old, cell)
    return renamed


def _redacted_cases(
    prefixes: Mapping[str, Mapping[str, float]], redact: Callable[[str], str]
) -> dict[str, dict[str, float]]:
    """A backend's node ids with their secrets hidden (two that differ only in one: added)."""
    found: dict[str, dict[str, float]] = {}
    for prefix, named in prefixes.items():
        mine = found.setdefault(redact(prefix), {})
        for name, seconds in named.items():
            clean = redact(name)
            mine[clean] = mine.get(clean, 0.0) + seconds
    return found


def add_durations(into: TimedCases, durations: TimedCases) -> None:
    """``durations`` added into ``into`` (a node id in both: its seconds added)."""
    for backend, prefixes in durations.seconds().items():
        for prefix, named in prefixes.items():
            into.add(backend, prefix, named)


def with_legs(collected: Collected, legs: Sequence[LegResults]) -> Collected:
    """Everything one update read, for its counts, summaries and commit message: its result
    files and its leg files (a cell two of them fill shows the worse outcome).

    The failures to annotate stay the result files' own: each leg annotated its failures in
    its own job (``collect``).
    """
    if not legs:
        return collected
    joined = Collected(failures=list(collected.failures))
    for part in (collected, *(leg.collected for leg in legs)):
        joined.files.extend(part.files)
        joined.problems.extend(part.problems)
        for source, count in part.unassigned.items():
            joined.unassigned[source] = joined.unassigned.get(source, 0) + count
        joined.nameless.update(part.nameless)
        for backend, tally in part.by_backend.items():
            total = joined.by_backend.setdefault(backend, [0] * len(tally))
            for slot, count in enumerate(tally):
                total[slot] += count
        add_durations(joined.durations, part.durations)
        for dashboard, rows in part.dashboards.items():
            mine = joined.dashboards.setdefault(dashboard, {})
            for row, cells in rows.items():
                have = mine.setdefault(row, {})
                for backend, outcome in cells.items():
                    old = have.get(backend)
                    have[backend] = outcome if old is None else combine_results(old, outcome)
    return joined


def leg_problem(
    info: LegInfo,
    *,
    run_id: int | None,
    run_attempt: int,
    repository: str | None,
    server_url: str,
    sha: str,
) -> str | None:
    """Why a leg file does not belong to the run being processed, or None if it does.

    The same repository and server (host and names are not case-sensitive), the same run, an
    attempt no later than this one (a re-run's fan-in job reads legs of earlier attempts too),
    and, when both are known, the same commit.
    """
    if run_id is None or not repository:
        return "this job's run and repository are unknown (give --run-id and --repository)"
    checks = (
        (
            info.repository.casefold() != repository.casefold(),
            f"it is for repository {info.repository!r:.100}, not {repository}",
        ),
        (
            info.server_url.rstrip("/").casefold() != server_url.rstrip("/").casefold(),
            f"it is for server {info.server_url!r:.100}, not {server_url}",
        ),
        (info.run_id != run_id, f"it is for run {info.run_id}, not this run ({run_id})"),
        (
            info.run_attempt > run_attempt,
            f"it is for attempt {info.run_attempt}, later than this one ({run_attempt})",
        ),
        (
            bool(info.sha and sha and info.sha != sha),
            f"it tested commit {info.sha[:40]!r}, not this run's {sha[:40]}",
        ),
    )
    return next((reason for failed, reason in checks if failed), None)
