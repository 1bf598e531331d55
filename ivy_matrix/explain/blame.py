"""Two-axis blame of a failing cell: did the code change, the environment, or both?

Pure: no I/O. From a cell's results (one per run, newest first, as history.py gives them):
the **last pass** and the **first failure** of the current streak, each with its run, commit
and recorded environment (environment.py), and from them:

- the compare link ``{server}/{owner}/{repo}/compare/{last_pass_sha}...{first_fail_sha}``
  (the repository's address is given, or taken from the first failure's job link);
- the environment diff: only the packages whose versions changed;
- the hint: ``code only`` (other commit, same environment), ``environment only`` (same
  commit, other environment: an upstream break), ``both``; none when neither changed or one
  of them is unknown.

Edge cases, each said in ``note``: a flaky cell gets no blame (its failures are not a streak
that something started); a streak that reaches back past the oldest result kept has no last
pass ("no pass in the kept history", no link); a result without a commit (adopted cells,
local runs) gives no link; an environment not recorded on either side gives no diff. The notes
are in the JSON outputs; the markdown (:func:`describe_blame`) says only what is known.

The same two axes blame a cell that got slower (slowdowns.py): :func:`blame_between` the last
run of its usual duration and the first slow one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ivy_matrix.escaping import escape_name, escape_url, markdown_target, safe_link
from ivy_matrix.explain.history_text import history_facts, section_lines
from ivy_matrix.explain.reasons import Failing, render_reasons
from ivy_matrix.model import Entry, Outcome
from ivy_matrix.results.environment import Change, env_diff
from ivy_matrix.state.history import (
    DEFAULT_SECTION_LIMIT,
    CellHistory,
    CellReport,
    DashboardHistory,
    FlakyReason,
    RunRef,
    RunResult,
    history_of,
)

_PASSING = frozenset({Outcome.SUCCESS, Outcome.FLAKY})
# A job link as jobs.py builds it: the repository's address, then the run.
_REPOSITORY_OF_JOB = re.compile(r"(https?://[^/\s]+/[^/\s]+/[^/\s]+)/actions/runs/")


class Hint(StrEnum):
    """What changed between the last pass and the first failure."""

    CODE = "code only"
    ENVIRONMENT = "environment only"
    BOTH = "both"


@dataclass(frozen=True, slots=True, kw_only=True)
class Blame:
    """What a failing cell's history says about why it started failing (module docstring)."""

    last_pass: RunRef | None = None
    first_failure: RunRef | None = None
    compare_url: str | None = None
    changes: tuple[Change, ...] = ()
    env_recorded: bool = False
    hint: Hint | None = None
    notes: tuple[str, ...] = ()

    def to_json(self, names: tuple[str, str] = ("last_pass", "first_failure")) -> dict[str, object]:
        """The ``blame`` of a cell in the JSON outputs (``names``: what the two runs are
        called, the good one first)."""
        return {
            names[0]: None if self.last_pass is None else self.last_pass.to_json(),
            names[1]: None if self.first_failure is None else self.first_failure.to_json(),
            "compare": self.compare_url,
            "environment": (
                {c.package: [c.before, c.after] for c in self.changes}
                if self.env_recorded
                else None
            ),
            "hint": None if self.hint is None else self.hint.value,
            "notes": list(self.notes),
        }


def streak(results: Sequence[RunResult]) -> tuple[Entry | None, Entry | None]:
    """The first failure of the current streak and the last pass before it (history.py's
    rules: skipped results neither break nor extend a streak); ``results`` newest first."""
    first: Entry | None = None
    for result in results:
        if result.outcome is Outcome.SKIPPED:
            continue
        if result.outcome is Outcome.FAILURE:
            first = result.entry
            continue
        return first, result.entry if result.outcome in _PASSING else None
    return first, None


def repository_url(job_url: str) -> str:
    """The repository's address a job link is under ("" when it is not a job link)."""
    found = _REPOSITORY_OF_JOB.match(job_url)
    return found.group(1) if found else ""


def blame_of(
    results: Sequence[RunResult], *, repository: str = "", history: CellHistory | None = None
) -> Blame | None:
    """The blame of a cell whose newest result fails (None when it does not); ``results``
    newest first. ``repository``: ``{server}/{owner}/{repo}`` for the link (else taken from
    the first failure's job link); ``history``: ``history_of(results)`` when the caller has
    it already."""
    if history is None:
        history = history_of(results)
    if not history.failing:
        return None
    if history.flaky is not None:
        why = "reruns" if history.flaky is FlakyReason.RERUN else "flips between pass and fail"
        return Blame(notes=(f"flaky ({why}): no blame",))
    first, last = streak(results)
    assert first is not None  # a failing history has a streak
    first_ref = RunRef.of(first)
    if last is None:
        return Blame(
            first_failure=first_ref,
            notes=("no pass in the kept history: no compare link",),
        )
    return blame_between(last, first, repository=repository)


def blame_between(
    good: Entry,
    bad: Entry,
    *,
    repository: str = "",
    sides: tuple[str, str] = ("the last pass", "the first failure"),
) -> Blame:
    """What changed between a good result (a cell's last pass, or the last of its usual
    duration) and a bad one (the first failure or slow run after it): the compare link, the
    environment's changes and the hint (the module docstring). ``sides`` name the two in the
    notes."""
    last, first = good, bad
    notes: list[str] = []
    old_sha, new_sha = last.source.sha, first.source.sha
    url = None
    base = repository.rstrip("/") or repository_url(first.source.url)
    if not old_sha or not new_sha:
        notes.append("no commit recorded (adopted or local results): no compare link")
    elif base:
        url = f"{base}/compare/{old_sha}...{new_sha}"
    old_env, new_env = last.source.env, first.source.env
    recorded = bool(old_env and new_env)
    if not recorded:
        side = "either side" if not old_env and not new_env else sides[0 if not old_env else 1]
        notes.append(f"environment not recorded on {side}")
    changes = env_diff(old_env, new_env) if recorded else ()
    hint = None
    if recorded and old_sha and new_sha:
        code, env = old_sha != new_sha, bool(changes)
        hint = (
            Hint.BOTH if code and env else Hint.CODE if code else Hint.ENVIRONMENT if env else None
        )
        if hint is None:
            notes.append("same commit and environment")
    return Blame(
        last_pass=RunRef.of(last),
        first_failure=RunRef.of(first),
        compare_url=url,
        changes=changes,
        env_recorded=recorded,
        hint=hint,
        notes=tuple(notes),
    )


def describe_blame(blame: Blame) -> str:
    """A blame in a few words, each fact once: the hint, the compare link, what changed ("" when
    it knows none of them). The runs are said by the cell's own line (failing since, last
    pass), and what is unknown is left unsaid: the notes stay in the JSON (:meth:`Blame.to_json`)."""
    parts: list[str] = []
    if blame.hint is not None:
        parts.append(f"**{blame.hint.value}**")
    link = safe_link(blame.compare_url or "")
    if link:
        parts.append(f"[compare]({escape_url(link).replace(')', '%29')})")
    if blame.changes:
        changed = ", ".join(
            f"{escape_name(c.package)} {escape_name(c.before or '-')} → {escape_name(c.after or '-')}"
            for c in blame.changes
        )
        parts.append(f"changed: {changed}")
    return ", ".join(parts)


def render_issue_section(history: DashboardHistory, *, limit: int = DEFAULT_SECTION_LIMIT) -> str:
    """The section below the table of a dashboard issue: why its cells fail (failure lines
    grouped by signature, reasons.py), then its failing and flaky tests, one line per test
    with its backends (backends whose history says the same share one statement).

    "" when the dashboard has none. At most ``limit`` entries each (the issue's size budget).
    """
    failing = [r for r in history.cells if r.history.failing]
    reasons = render_reasons(
        (
            Failing(
                test=r.row,
                backend=r.backend,
                message=r.latest.message,
                signature=r.latest.signature,
            )
            for r in failing
        ),
        limit=limit,
    )
    flaky = [r for r in history.cells if not r.history.failing]
    return (
        reasons
        + section_lines("### Failing", _by_test(failing, _failing_facts), limit)
        + section_lines("### Flaky", _by_test(flaky, _flaky_facts), limit)
    )


def _flaky_facts(report: CellReport) -> list[str]:
    """A flaky cell's history in words, under the "Flaky" heading (which says it is flaky)."""
    return [fact.removeprefix("flaky: ") for fact in history_facts(report)]


def _failing_facts(report: CellReport) -> list[str]:
    """A failing cell's history in words, then why it fails: the code or the environment."""
    blame = blame_of(report.results)
    said = describe_blame(blame) if blame is not None else ""
    return [*history_facts(report), *([said] if said else [])]


def _by_test(reports: Sequence[CellReport], facts: Callable[[CellReport], list[str]]) -> list[str]:
    """One line per test: ``test · [jax](job), [torch](job): what their histories say``, the
    backends whose histories say the same in one statement."""
    tests: dict[str, dict[str, list[str]]] = {}
    for report in reports:
        url = safe_link(report.latest.source.url)
        name = escape_name(report.backend)
        backend = f"[{name}]({markdown_target(url)})" if url else name
        said = ", ".join(facts(report))
        tests.setdefault(report.row, {}).setdefault(said, []).append(backend)
    lines = []
    for row, statements in tests.items():
        parts = [
            ", ".join(backends) + (f": {said}" if said else "")
            for said, backends in statements.items()
        ]
        lines.append(f"{escape_name(row)} · " + "; ".join(parts))
    return lines
