"""Settings: command-line options, ``IVY_MATRIX_*`` variables, a YAML file, runner variables.

The only module that reads the environment. Each setting is one option ``--kebab-name``, one
variable ``IVY_MATRIX_UPPER_NAME`` (the action's input of the same kebab name reaches Python
through it) and one ``Settings`` field ``snake_name``. Where several give a value, the first of
these wins: the command line, the ``IVY_MATRIX_*`` variable, the config file, the GitHub runner
variable (``GITHUB_RUN_ID`` and friends), the default. Empty values count as not given, because
an action input that the workflow leaves out arrives as an empty string.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from ivy_matrix.config.event import EventInfo, parse_event
from ivy_matrix.config.file import compile_regex
from ivy_matrix.config.layers import resolve_layers
from ivy_matrix.config.options import (
    MAX_RETIRE_AFTER_RUNS,
    BranchTransport,
    FailOn,
    IfNoFilesFound,
    Target,
    option_default,
    parse_targets,
    retired_problem,
    spell,
)
from ivy_matrix.errors import UsageError
from ivy_matrix.github.token import token_problem
from ivy_matrix.model import DashboardId
from ivy_matrix.pr.when_green import WhenGreen
from ivy_matrix.redaction import SECRET_MIN, Redactor
from ivy_matrix.results.naming import DashboardRule, NamingRules
from ivy_matrix.results.signature import parse_aliases
from ivy_matrix.runner.files import STDOUT
from ivy_matrix.views.style import Style

_T = TypeVar("_T")

# The actor of Dependabot's runs, which get a read-only token as a fork's pull request does.
DEPENDABOT = "dependabot[bot]"
# Variables that hold the token or a credential of the runner: their values are concealed in
# everything written, and no command the user's code runs gets them (docs/github.md, "Secrets").
SECRET_VARIABLES = (
    "IVY_MATRIX_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "INPUT_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
)


def _defaults(name: str, kind: type[_T]) -> Callable[[], _T]:
    return lambda: option_default(name, kind)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything one command needs, resolved and checked."""

    junit: tuple[str, ...] = ()
    if_no_files_found: IfNoFilesFound = field(
        default_factory=lambda: IfNoFilesFound(option_default("if_no_files_found", str))
    )
    backend: str | None = None
    backend_from_path: str | None = None
    backend_from_test: str | None = None
    dashboard: str | None = None
    run_id: int | None = None
    run_attempt: int = field(default_factory=_defaults("run_attempt", int))
    job_id: int | None = None
    job_url: str | None = None
    repository: str | None = None
    server_url: str = field(default_factory=_defaults("server_url", str))
    store: Path = field(default_factory=_defaults("store", Path))
    lock_timeout: int = field(default_factory=_defaults("lock_timeout", int))
    output_dir: Path | None = None
    html: Path | None = None
    config: Path | None = None
    summary_json: Path | None = None
    fail_on: FailOn = field(default_factory=lambda: FailOn(option_default("fail_on", str)))
    style: Style = field(default_factory=lambda: Style(option_default("style", str)))
    history: int = field(default_factory=_defaults("history", int))
    retire_after_runs: int = field(default_factory=_defaults("retire_after_runs", int))
    trend_points: int = field(default_factory=_defaults("trend_points", int))
    backend_aliases: tuple[str, ...] = field(
        default_factory=lambda: parse_aliases(option_default("backend_aliases", tuple))
    )
    targets: tuple[Target, ...] = field(
        default_factory=lambda: parse_targets(option_default("targets", tuple))
    )
    # The environment recorded with the results (commands/environment.py) and the columns it
    # may name (naming's backend_version).
    env_command: str | None = None
    track_packages: tuple[str, ...] = ()
    backend_version: str | None = None
    branch: str = field(default_factory=_defaults("branch", str))
    branch_transport: BranchTransport = field(
        default_factory=lambda: BranchTransport(option_default("branch_transport", str))
    )
    # Never shown: not in the settings' repr (a traceback or a debug print), nor in a message.
    token: str | None = field(default=None, repr=False)
    # The token and the values of SECRET_VARIABLES: never written (redaction.py).
    secrets: tuple[str, ...] = field(default=(), repr=False, compare=False)
    # The user's own patterns of secrets (redaction.py).
    redact: tuple[str, ...] = ()
    api_url: str = field(default_factory=_defaults("api_url", str))
    budget_warning: int = field(default_factory=_defaults("budget_warning", int))
    job_name: str | None = None
    legs: tuple[str, ...] = ()
    leg_file: Path | None = None
    issue_label: str = field(default_factory=_defaults("issue_label", str))
    pin_index: bool = field(default_factory=_defaults("pin_index", bool))
    issue_writes_per_hour: int = field(default_factory=_defaults("issue_writes_per_hour", int))
    site_url: str = ""
    dry_run: bool = field(default_factory=_defaults("dry_run", bool))
    dashboard_rules: tuple[DashboardRule, ...] = ()
    # Provenance (issue 10): the commit and ref of the results; for a pull request its number,
    # head and base commits. ``pull_request`` says the results are a pull request's (so they
    # never enter the dashboards), ``default_branch`` is the repository's, from the event.
    sha: str | None = None
    ref: str | None = None
    pr: int | None = None
    head_sha: str | None = None
    base_sha: str | None = None
    pull_request: bool = False
    # A merge queue's merge_group event: compared like a pull request, with no number.
    merge_group: bool = False
    # The backends every run reports (the status target: one without results is an error).
    expected_backends: tuple[str, ...] = ()
    dashboard_branches: tuple[str, ...] = ()
    default_branch: str | None = None
    pr_head_label: str | None = None
    pr_comment_when_green: WhenGreen = field(
        default_factory=lambda: WhenGreen(option_default("pr_comment_when_green", str))
    )
    pr_comment_author: str = field(default_factory=_defaults("pr_comment_author", str))
    github_actions: bool = False
    # Files the runner names: the job summary and the step outputs.
    step_summary: Path | None = None
    github_output: Path | None = None
    runner_name: str | None = None
    event_name: str | None = None
    # The token can only read: a pull request from a fork, or one Dependabot runs (the event).
    read_only: bool = False
    graphql_url: str | None = None
    # Where each value came from ("option --fail-on", "input 'fail-on' (IVY_MATRIX_FAIL_ON)",
    # a config file's key, a runner variable), so messages name a setting as it was given.
    origins: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def named(self, name: str) -> str:
        """A setting as the user gave it, or as they would give it here (the action's input
        on a runner, the flag elsewhere)."""
        origin = self.origins.get(name, "default")
        if origin == "default":
            return spell(name, action=self.github_actions)
        if origin.startswith("input '"):  # "input 'x' (IVY_MATRIX_X)": the variable off a runner
            short, _, variable = origin.partition(" (")
            return short if self.github_actions else variable.rstrip(")")
        return origin

    @property
    def feeds_dashboards(self) -> bool:
        """Whether these results may enter the dashboards (not a pull request's, and from a
        dashboard branch: ``dashboard-branches``, else the default branch, else any)."""
        if self.pull_request:
            return False
        branches = self.feeding_branches
        if not branches or not self.ref:
            return True
        return self.ref.removeprefix("refs/heads/") in {
            b.removeprefix("refs/heads/") for b in branches
        }

    @property
    def feeding_branches(self) -> tuple[str, ...]:
        """The branches whose results feed the dashboards (none: every branch)."""
        if self.dashboard_branches:
            return self.dashboard_branches
        return (self.default_branch,) if self.default_branch else ()

    @property
    def commit(self) -> str:
        """The commit the results tested: a pull request's head, else the run's commit."""
        return (self.head_sha if self.pull_request else None) or self.sha or ""

    def redactor(self) -> Redactor:
        """What hides secrets in the text this command reads: the token and the runner's
        credentials, the well-known shapes and the ``redact`` patterns (compiled)."""
        named = self.named("redact")
        patterns = [compile_regex(value, named, group=False) for value in self.redact]
        for pattern in patterns:
            if pattern is not None and pattern.search(""):
                raise UsageError(
                    f"{named} got {pattern.pattern!r}: it matches an empty text, so it would "
                    f"put *** between every two characters; give a pattern of the secret itself"
                )
        return Redactor.of(self.secrets, (p for p in patterns if p is not None))

    def naming_rules(self) -> NamingRules:
        """The naming rules these settings describe (regexes compiled)."""
        return NamingRules(
            backend=self.backend,
            backend_from_path=compile_regex(
                self.backend_from_path, self.named("backend_from_path"), group=True
            ),
            backend_from_test=compile_regex(
                self.backend_from_test, self.named("backend_from_test"), group=True
            ),
            dashboard=parse_dashboard(self.dashboard) if self.dashboard else None,
            rules=self.dashboard_rules,
        )


def parse_dashboard(value: str) -> DashboardId:
    """``category/title`` or ``title`` -> a dashboard id."""
    category, _, title = value.strip().strip("/").rpartition("/")
    if not title:
        raise UsageError(f"dashboard name {value!r} is empty; give [category/]title")
    return DashboardId(title=title, category=category)


def environ() -> Mapping[str, str]:
    """The process environment (the one place it is read)."""
    return os.environ


def _get(values: Mapping[str, object], name: str, kind: type[_T]) -> _T | None:
    value = values.get(name)
    return value if isinstance(value, kind) else None


def _runner_file(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(value) if value else None


def _value(values: Mapping[str, object], name: str, kind: type[_T]) -> _T:
    """A setting that has a default: the value resolved, else the option's default."""
    value = _get(values, name, kind)
    return option_default(name, kind) if value is None else value


def is_github_actions(env: Mapping[str, str]) -> bool:
    """Whether this runs on GitHub Actions (the runner sets GITHUB_ACTIONS=true)."""
    return env.get("GITHUB_ACTIONS") == "true"


def load_settings(given: Mapping[str, object], env: Mapping[str, str] | None = None) -> Settings:
    """Resolve every setting from the command line, the environment and the config file."""
    env = environ() if env is None else env
    values, rules, origins = resolve_layers(given, env)
    settings = _from_options(values, rules, origins)
    settings = _with_runner(_with_event(settings, values, env), env)
    retired = retired_problem(values, settings.named)
    if retired is not None:
        raise UsageError(retired)
    settings = replace(settings, secrets=_secrets(settings.token, env))
    _check(settings)
    return settings


def _secrets(token: str | None, env: Mapping[str, str]) -> tuple[str, ...]:
    """The token and the values of SECRET_VARIABLES, in ``env`` and in this process's
    environment (which the commands it starts inherit)."""
    found = [token or ""]
    for variables in (env, environ()):
        found.extend(variables.get(name, "") for name in SECRET_VARIABLES)
    return tuple(dict.fromkeys(value.strip() for value in found if value.strip()))


def child_environment(settings: Settings) -> dict[str, str]:
    """The environment of a command the user's code runs (``env-command``, the
    ``track-packages`` python): this process's, without SECRET_VARIABLES and without any
    variable that holds one of the settings' secrets."""
    secrets = {secret for secret in settings.secrets if len(secret) >= SECRET_MIN}
    return {
        name: value
        for name, value in environ().items()
        if name not in SECRET_VARIABLES and value.strip() not in secrets
    }


def _from_options(
    values: Mapping[str, object], rules: tuple[DashboardRule, ...], origins: Mapping[str, str]
) -> Settings:
    """The settings the resolved options give (the event and the runner add the rest)."""
    return Settings(
        junit=_get(values, "junit", tuple) or (),
        if_no_files_found=IfNoFilesFound(_value(values, "if_no_files_found", str)),
        backend=_get(values, "backend", str),
        backend_from_path=_get(values, "backend_from_path", str),
        backend_from_test=_get(values, "backend_from_test", str),
        dashboard=_get(values, "dashboard", str),
        run_id=_get(values, "run_id", int),
        run_attempt=_value(values, "run_attempt", int),
        job_id=_get(values, "job_id", int),
        job_url=_get(values, "job_url", str),
        repository=_get(values, "repository", str),
        server_url=_value(values, "server_url", str),
        store=_value(values, "store", Path),
        lock_timeout=_value(values, "lock_timeout", int),
        output_dir=_get(values, "output_dir", Path),
        html=_get(values, "html", Path),
        config=_get(values, "config", Path),
        summary_json=_get(values, "summary_json", Path),
        fail_on=FailOn(_value(values, "fail_on", str)),
        style=Style(_value(values, "style", str)),
        history=_value(values, "history", int),
        retire_after_runs=_value(values, "retire_after_runs", int),
        trend_points=_value(values, "trend_points", int),
        backend_aliases=parse_aliases(_value(values, "backend_aliases", tuple)),
        env_command=_get(values, "env_command", str),
        track_packages=parse_aliases(_get(values, "track_packages", tuple) or ()),
        backend_version=_get(values, "backend_version", str),
        targets=parse_targets(_get(values, "targets", tuple) or (), origins.get("targets", "")),
        branch=_value(values, "branch", str),
        branch_transport=BranchTransport(_value(values, "branch_transport", str)),
        token=_get(values, "token", str),
        redact=_get(values, "redact", tuple) or (),
        api_url=_value(values, "api_url", str),
        budget_warning=_value(values, "budget_warning", int),
        job_name=_get(values, "job_name", str),
        legs=_get(values, "legs", tuple) or (),
        leg_file=_get(values, "leg_file", Path),
        issue_label=_value(values, "issue_label", str),
        pin_index=_value(values, "pin_index", bool),
        issue_writes_per_hour=_value(values, "issue_writes_per_hour", int),
        site_url=_get(values, "site_url", str) or "",
        dry_run=_value(values, "dry_run", bool),
        dashboard_rules=rules,
        sha=_get(values, "sha", str),
        ref=_get(values, "ref", str),
        dashboard_branches=_get(values, "dashboard_branches", tuple) or (),
        expected_backends=parse_aliases(_get(values, "expected_backends", tuple) or ()),
        pr_comment_when_green=WhenGreen(_value(values, "pr_comment_when_green", str)),
        pr_comment_author=_value(values, "pr_comment_author", str),
        origins=origins,
    )


def _with_event(
    settings: Settings, values: Mapping[str, object], env: Mapping[str, str]
) -> Settings:
    """``settings`` with the pull request and default branch (the options, else the event), and
    whether the token is read-only (the event, read once here)."""
    event_name = env.get("GITHUB_EVENT_NAME", "").strip() or None
    event_path = _runner_file(env, "GITHUB_EVENT_PATH")
    event = read_event(event_path, event_name)
    pr = _get(values, "pr", int)
    return replace(
        settings,
        pr=event.pr if pr is None else pr,
        head_sha=_get(values, "head_sha", str) or event.head_sha,
        base_sha=_get(values, "base_sha", str) or event.base_sha,
        pull_request=pr is not None or event.pull_request,
        merge_group=event.merge_group and pr is None,
        default_branch=event.default_branch,
        pr_head_label=event.head_label,
        event_name=event_name,
        read_only=event.from_fork or env.get("GITHUB_ACTOR", "").strip() == DEPENDABOT,
    )


def _with_runner(settings: Settings, env: Mapping[str, str]) -> Settings:
    """``settings`` with what the GitHub runner's variables name (files, runner, GraphQL)."""
    return replace(
        settings,
        github_actions=is_github_actions(env),
        step_summary=_runner_file(env, "GITHUB_STEP_SUMMARY"),
        github_output=_runner_file(env, "GITHUB_OUTPUT"),
        runner_name=env.get("RUNNER_NAME", "").strip() or None,
        graphql_url=env.get("GITHUB_GRAPHQL_URL", "").strip() or None,
    )


def read_event(path: Path | None, event_name: str | None) -> EventInfo:
    """What the event payload at ``path`` says (``config.event.parse_event``); an unreadable one,
    nothing."""
    if path is None:
        return EventInfo()
    try:
        payload: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return EventInfo()
    return parse_event(payload, event_name)


def _check_token(settings: Settings) -> None:
    """A token that cannot be sent is refused before any request, never quoted."""
    problem = None if settings.token is None else token_problem(settings.token)
    if problem is not None:
        raise UsageError(
            f"{settings.named('token')} contains {problem}, so it cannot be a GitHub token; it "
            f"is not sent (nor shown here): check the secret or expression that sets it (a "
            f"secret pasted with a line break inside, say)"
        )


def _check(settings: Settings) -> None:
    named = settings.named
    _check_numbers(settings)
    if settings.repository is not None and not re.fullmatch(
        r"[^/\s]+/[^/\s]+", settings.repository
    ):
        raise UsageError(f"{named('repository')} got {settings.repository!r}; expected OWNER/REPO")
    _check_token(settings)
    for name in ("run_id", "job_id", "pr"):
        value = getattr(settings, name)
        if value is not None and value < 0:
            raise UsageError(f"{named(name)} got {value}: ids are positive")
    for name in ("output_dir", "store"):
        if getattr(settings, name) == STDOUT:
            raise UsageError(
                f"{named(name)} is a folder, so it cannot be '-' (standard output is for one "
                f"file: --summary-json -, compare --json -)"
            )
    if settings.backend and (settings.backend_from_path or settings.backend_from_test):
        regex = "backend_from_path" if settings.backend_from_path else "backend_from_test"
        raise UsageError(
            f"{named('backend')} and {named(regex)} do not go together: {named('backend')} "
            f"puts every result of one matrix leg in one column, the regex finds each "
            f"result's backend (a fan-in job); give one of them"
        )
    settings.naming_rules()  # compiles and checks the regexes
    settings.redactor()


def _check_numbers(settings: Settings) -> None:
    """The numeric settings, each within its range."""
    named = settings.named
    if settings.run_attempt < 1:
        raise UsageError(f"{named('run_attempt')} got {settings.run_attempt}: attempts start at 1")
    if settings.lock_timeout < 0:
        raise UsageError(
            f"{named('lock_timeout')} got {settings.lock_timeout}: give seconds, 0 or more"
        )
    if settings.history < 1:
        raise UsageError(f"{named('history')} got {settings.history}: keep at least 1 result")
    if not 0 <= settings.retire_after_runs <= MAX_RETIRE_AFTER_RUNS:
        raise UsageError(
            f"{named('retire_after_runs')} got {settings.retire_after_runs}; "
            f"allowed: 0 (never) to {MAX_RETIRE_AFTER_RUNS}"
        )
    if not 0 <= settings.budget_warning <= 100:  # noqa: PLR2004  -- a percentage
        raise UsageError(
            f"{named('budget_warning')} got {settings.budget_warning}; give a percent, "
            f"0 (never) to 100"
        )
    if settings.trend_points < 1:
        raise UsageError(f"{named('trend_points')} got {settings.trend_points}: keep at least 1")
    if settings.issue_writes_per_hour < 1:
        raise UsageError(
            f"{named('issue_writes_per_hour')} got {settings.issue_writes_per_hour}: allow at "
            f"least 1 (github.com allows 500 an hour per repository)"
        )


def require_update_inputs(settings: Settings, *, legs: bool = False) -> None:
    """``update`` needs result files (or, with ``legs``, leg files) and a way to name the
    backend of result files."""
    if legs and settings.legs and not settings.junit:
        return  # leg files name their own cells
    if not settings.junit:
        also = " or leg files with --legs GLOB" if legs else ""
        raise UsageError(
            f"no result files given: pass --junit GLOB (or set the 'junit' input / "
            f"IVY_MATRIX_JUNIT){also}"
        )
    if not (settings.backend or settings.backend_from_path or settings.backend_from_test):
        raise UsageError(
            "no backend given: pass --backend NAME for one matrix leg, or --backend-from-path "
            "REGEX / --backend-from-test REGEX with a (?P<backend>...) group"
        )
