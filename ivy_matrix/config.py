"""Settings: command-line options, ``IVY_MATRIX_*`` variables, a YAML file, runner variables.

The only module that reads the environment. Each setting is one option ``--kebab-name``, one
variable ``IVY_MATRIX_UPPER_NAME`` (the action's input of the same kebab name reaches Python
through it) and one ``Settings`` field ``snake_name``. Where several give a value, the first of
these wins: the command line, the ``IVY_MATRIX_*`` variable, the config file, the GitHub runner
variable (``GITHUB_RUN_ID`` and friends), the default. Empty values count as not given, because
an action input that the workflow leaves out arrives as an empty string.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

import yaml

from ivy_matrix.errors import InputError
from ivy_matrix.issue_bodies import DEFAULT_LABEL
from ivy_matrix.links import DEFAULT_SERVER_URL
from ivy_matrix.merge import DEFAULT_HISTORY, RUNS_KEPT
from ivy_matrix.model import DashboardId
from ivy_matrix.naming import DashboardRule, NamingRules
from ivy_matrix.render import Style
from ivy_matrix.stores.local import DEFAULT_LOCK_TIMEOUT

_T = TypeVar("_T")

ENV_PREFIX = "IVY_MATRIX_"
DEFAULT_STORE = ".ivy-matrix"
DEFAULT_RETIRE_AFTER_RUNS = 100
MAX_RETIRE_AFTER_RUNS = RUNS_KEPT


class FailOn(StrEnum):
    """When ``update`` exits 1 because of what the results say."""

    FAILURES = "failures"
    ERRORS = "errors"
    NOTHING = "nothing"


class IfNoFilesFound(StrEnum):
    """What ``update`` does when the ``junit`` patterns select no file at all."""

    ERROR = "error"
    WARN = "warn"
    IGNORE = "ignore"


class Target(StrEnum):
    """Where ``update`` publishes the dashboards."""

    SUMMARY = "summary"
    FILE = "file"
    BRANCH = "branch"
    ISSUE = "issue"


class Kind(StrEnum):
    """What an option's value is, once read."""

    STR = "str"
    INT = "int"
    LIST = "list"
    PATH = "path"
    BOOL = "bool"  # "true" or "false"


@dataclass(frozen=True, slots=True)
class Option:
    """One setting: its name, kind, where runner variables can fill it, and its help."""

    name: str
    kind: Kind
    help: str
    runner_env: str | None = None
    default: str | None = None
    choices: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


OPTIONS: tuple[Option, ...] = (
    Option("junit", Kind.LIST, "result files: glob, directory or !exclude; repeatable"),
    Option(
        "if_no_files_found",
        Kind.STR,
        "when the junit patterns select no file: error (exit 1), warn, or ignore",
        default="error",
        choices=tuple(IfNoFilesFound),
    ),
    Option("backend", Kind.STR, "the backend (column) of every result, for one matrix leg"),
    Option(
        "backend_from_path", Kind.STR, "regex with a group (?P<backend>...) searched in file paths"
    ),
    Option(
        "backend_from_test", Kind.STR, "regex with a group (?P<backend>...) searched in test ids"
    ),
    Option("dashboard", Kind.STR, "put every result in this dashboard ([category/]title)"),
    Option("run_id", Kind.INT, "the workflow run id", runner_env="GITHUB_RUN_ID"),
    Option(
        "run_attempt", Kind.INT, "the run attempt", runner_env="GITHUB_RUN_ATTEMPT", default="1"
    ),
    Option("job_id", Kind.INT, "the job id (the action passes job.check_run_id)"),
    Option("job_url", Kind.STR, "link cells to this URL instead of building one"),
    Option("repository", Kind.STR, "OWNER/REPO for links", runner_env="GITHUB_REPOSITORY"),
    Option(
        "server_url",
        Kind.STR,
        "GitHub's web address",
        runner_env="GITHUB_SERVER_URL",
        default=DEFAULT_SERVER_URL,
    ),
    Option("store", Kind.PATH, "the local state directory", default=DEFAULT_STORE),
    Option(
        "lock_timeout",
        Kind.INT,
        "seconds to wait for the store's lock while another update holds it, then exit 1 "
        "naming the holder (0: do not wait)",
        default=str(DEFAULT_LOCK_TIMEOUT),
    ),
    Option("output_dir", Kind.PATH, "write the dashboards and the index here"),
    Option("config", Kind.PATH, "a YAML config file"),
    Option("summary_json", Kind.PATH, "write a JSON summary of the update here"),
    Option(
        "fail_on",
        Kind.STR,
        "exit 1 when results have failures/errors",
        default="nothing",
        choices=tuple(FailOn),
    ),
    Option(
        "targets",
        Kind.LIST,
        "where to publish: summary (job summary and step outputs), file (--output-dir), "
        "branch (state and dashboards committed to --branch), issue (one issue per dashboard)",
        default="summary\nfile",
    ),
    Option("branch", Kind.STR, "the branch the branch target commits to", default="ivy-matrix"),
    Option("token", Kind.STR, "GitHub token for the branch and issue targets and job lookup"),
    Option(
        "api_url",
        Kind.STR,
        "GitHub's REST API address",
        runner_env="GITHUB_API_URL",
        default="https://api.github.com",
    ),
    Option(
        "job_name",
        Kind.STR,
        "display name of the matrix jobs, with {backend}, e.g. 'tests ({backend})', to find "
        "each backend's job when no job id is given",
    ),
    Option(
        "leg_metadata",
        Kind.PATH,
        "write this leg's backend, run and job to this file (upload it with the results; a "
        "fan-in job reads ivy-matrix-leg.json files beside result files)",
    ),
    Option("issue_label", Kind.STR, "the label that marks dashboard issues", default=DEFAULT_LABEL),
    Option(
        "pin_index",
        Kind.BOOL,
        "pin the index issue (GitHub allows 3 pinned issues; a failure is only a warning)",
        default="false",
        choices=("true", "false"),
    ),
    Option(
        "dry_run",
        Kind.BOOL,
        "do everything but write (store, files, branch, issues); show what would be written",
        default="false",
        choices=("true", "false"),
    ),
    Option("style", Kind.STR, "cell style of the dashboards", default="ivy", choices=tuple(Style)),
    Option("history", Kind.INT, "results kept per cell", default=str(DEFAULT_HISTORY)),
    Option(
        "retire_after_runs",
        Kind.INT,
        "drop rows no run reported in this many runs (0: never)",
        default=str(DEFAULT_RETIRE_AFTER_RUNS),
    ),
)
OPTION_BY_NAME = {option.name: option for option in OPTIONS}


def option_default(name: str, kind: type[_T]) -> _T:
    """An option's default (as OPTIONS states it), converted like a given value."""
    option = OPTION_BY_NAME[name]
    value = _convert(option, option.default, "default")
    if not isinstance(value, kind):
        raise TypeError(f"the default of option {name!r} is not a {kind.__name__}: {value!r}")
    return value


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
    config: Path | None = None
    summary_json: Path | None = None
    fail_on: FailOn = field(default_factory=lambda: FailOn(option_default("fail_on", str)))
    style: Style = field(default_factory=lambda: Style(option_default("style", str)))
    history: int = field(default_factory=_defaults("history", int))
    retire_after_runs: int = field(default_factory=_defaults("retire_after_runs", int))
    targets: tuple[Target, ...] = field(
        default_factory=lambda: _targets(option_default("targets", tuple))
    )
    branch: str = field(default_factory=_defaults("branch", str))
    token: str | None = None
    api_url: str = field(default_factory=_defaults("api_url", str))
    job_name: str | None = None
    leg_metadata: Path | None = None
    issue_label: str = field(default_factory=_defaults("issue_label", str))
    pin_index: bool = field(default_factory=_defaults("pin_index", bool))
    dry_run: bool = field(default_factory=_defaults("dry_run", bool))
    dashboard_rules: tuple[DashboardRule, ...] = ()
    github_actions: bool = False
    # Files the runner names: the job summary and the step outputs.
    step_summary: Path | None = None
    github_output: Path | None = None
    runner_name: str | None = None
    actor: str | None = None
    event_name: str | None = None
    event_path: Path | None = None
    graphql_url: str | None = None

    def naming_rules(self) -> NamingRules:
        """The naming rules these settings describe (regexes compiled)."""
        return NamingRules(
            backend=self.backend,
            backend_from_path=_regex(self.backend_from_path, "backend-from-path", group=True),
            backend_from_test=_regex(self.backend_from_test, "backend-from-test", group=True),
            dashboard=parse_dashboard(self.dashboard) if self.dashboard else None,
            rules=self.dashboard_rules,
        )


def parse_dashboard(value: str) -> DashboardId:
    """``category/title`` or ``title`` -> a dashboard id."""
    category, _, title = value.strip().strip("/").rpartition("/")
    if not title:
        raise InputError(f"dashboard name {value!r} is empty; give [category/]title")
    return DashboardId(title=title, category=category)


def _regex(value: str | None, name: str, *, group: bool) -> re.Pattern[str] | None:
    if not value:
        return None
    try:
        pattern = re.compile(value)
    except re.error as error:
        raise InputError(f"input '{name}' got {value!r}: not a valid regex ({error})") from None
    if group and "backend" not in pattern.groupindex:
        raise InputError(
            f"input '{name}' got {value!r}: it needs a named group (?P<backend>...) "
            f"that captures the backend name"
        )
    return pattern


def environ() -> Mapping[str, str]:
    """The process environment (the one place it is read)."""
    return os.environ


def _split_list(value: str) -> list[str]:
    # Action inputs are multi-line strings; one pattern per line (commas may be part of a glob).
    return [line.strip() for line in value.splitlines() if line.strip()]


MAX_CONFIG_BYTES = 1024 * 1024


class _AliasError(yaml.YAMLError):
    """The config file uses a YAML alias (``*name``)."""

    def __init__(self, anchor: str, line: int) -> None:
        super().__init__(anchor, line)
        self.anchor = anchor
        self.line = line


class _NoAliasLoader(yaml.SafeLoader):
    """YAML's safe loader without aliases: ``*name`` is refused, so no alias bomb can expand."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in PyYAML's stubs
            raise _AliasError(str(event.anchor), event.start_mark.line + 1)
        return super().compose_node(parent, index)


def _read_config(path: Path) -> str:
    """The config file's text: at most MAX_CONFIG_BYTES of UTF-8, whatever kind of file it is."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise InputError(
            f"input 'config' got {str(path)!r}: cannot read it ({error.strerror or error})"
        ) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise InputError(
            f"config file {path} is larger than {MAX_CONFIG_BYTES // 1024} KiB; a config file "
            f"holds settings and dashboard rules: give a smaller file"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"config file {path} is not UTF-8 text ({error.reason})") from None


def _from_file(path: Path) -> tuple[dict[str, object], tuple[DashboardRule, ...]]:
    text = _read_config(path)
    try:
        raw = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506  -- a SafeLoader subclass
    except _AliasError as error:
        raise InputError(
            f"config file {path} line {error.line}: the YAML alias *{error.anchor} is not "
            f"allowed (a config file has no need for anchors and aliases); write the value out"
        ) from None
    except yaml.YAMLError as error:
        raise InputError(f"config file {path} is not valid YAML: {error}") from None
    except RecursionError:
        raise InputError(
            f"config file {path} is nested too deeply to be an ivy-matrix config; "
            f"a config file is a mapping of settings"
        ) from None
    if raw is None:
        return {}, ()
    if not isinstance(raw, dict):
        raise InputError(f"config file {path} must be a mapping of settings")
    values: dict[str, object] = {}
    rules: tuple[DashboardRule, ...] = ()
    for key, value in raw.items():
        name = str(key).replace("-", "_")
        if name == "dashboards":
            rules = _rules(value, path)
        elif name in OPTION_BY_NAME and name != "config":
            values[name] = value
        else:
            known = ", ".join([*sorted(o.name.replace("_", "-") for o in OPTIONS), "dashboards"])
            raise InputError(f"config file {path}: unknown setting {key!r}; known: {known}")
    return values, rules


_RULE_KEYS = {"match", "title", "category"}


def _check_placeholders(
    template: str, pattern: re.Pattern[str], path: Path, index: int, key: str
) -> None:
    """Every ``{name}`` in a rule's title or category must be a named group of its regex."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as error:
        raise InputError(
            f"config file {path}: dashboards rule {index} {key} {template!r}: {error}"
        ) from None
    for name in fields:
        if name not in pattern.groupindex:
            groups = ", ".join(pattern.groupindex) or "none"
            raise InputError(
                f"config file {path}: dashboards rule {index} {key} uses {{{name}}}, which is "
                f"not a named group of its 'match' regex (named groups: {groups})"
            )


def _rules(value: object, path: Path) -> tuple[DashboardRule, ...]:
    if not isinstance(value, list):
        raise InputError(f"config file {path}: 'dashboards' must be a list of rules")
    rules = []
    for index, item in enumerate(value, start=1):
        if not isinstance(item, dict) or "match" not in item or "title" not in item:
            raise InputError(
                f"config file {path}: dashboards rule {index} needs 'match' (a regex on the "
                f"test id) and 'title' (and may have 'category')"
            )
        unknown = sorted(str(key) for key in item if key not in _RULE_KEYS)
        if unknown:
            raise InputError(
                f"config file {path}: dashboards rule {index} has unknown key(s) "
                f"{', '.join(map(repr, unknown))}; known: match, title, category"
            )
        pattern = _regex(str(item["match"]), f"dashboards[{index}].match", group=False)
        assert pattern is not None
        for key in ("title", "category"):
            _check_placeholders(str(item.get(key) or ""), pattern, path, index, key)
        rules.append(
            DashboardRule(
                pattern=pattern,
                title=str(item["title"]),
                category=str(item.get("category") or ""),
            )
        )
    return tuple(rules)


def _convert(option: Option, value: object, origin: str) -> object:
    if option.kind is Kind.LIST:
        if isinstance(value, str):
            return tuple(_split_list(value))
        if isinstance(value, list | tuple):
            return tuple(str(v) for v in value)
        raise InputError(f"{origin} must be a list of strings, got {value!r}")
    text = str(value).strip().lower() if isinstance(value, bool) else str(value).strip()
    if option.choices and text not in option.choices:
        raise InputError(f"{origin} got {text!r}; allowed values: {', '.join(option.choices)}")
    if option.kind is Kind.INT:
        try:
            return int(text)
        except ValueError:
            raise InputError(f"{origin} got {text!r}: not a whole number") from None
    if option.kind is Kind.PATH:
        return Path(text)
    if option.kind is Kind.BOOL:
        return text == "true"
    return text


def _get(values: Mapping[str, object], name: str, kind: type[_T]) -> _T | None:
    value = values.get(name)
    return value if isinstance(value, kind) else None


def _targets(values: tuple[str, ...]) -> tuple[Target, ...]:
    names = [v.strip().lower() for value in values for v in value.split(",") if v.strip()]
    allowed = ", ".join(t.value for t in Target)
    for name in names:
        if name not in {t.value for t in Target}:
            raise InputError(f"input 'targets' got {name!r}; allowed values: {allowed}")
    return tuple(dict.fromkeys(Target(n) for n in names))


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
    chosen: dict[str, tuple[object, str]] = {}
    for name, value in given.items():
        if value not in (None, "", [], ()):
            chosen[name] = (value, f"option {OPTION_BY_NAME[name].flag}")
    for option in OPTIONS:
        value = env.get(option.env, "")
        if option.name not in chosen and value.strip():
            chosen[option.name] = (value, f"input '{option.name.replace('_', '-')}' ({option.env})")
    rules: tuple[DashboardRule, ...] = ()
    if "config" in chosen:
        config_path = Path(str(chosen["config"][0]))
        from_file, rules = _from_file(config_path)
        for name, value in from_file.items():
            if name not in chosen and value not in (None, ""):
                chosen[name] = (value, f"setting '{name.replace('_', '-')}' in {config_path}")
    for option in OPTIONS:
        if option.name in chosen:
            continue
        runner = env.get(option.runner_env, "").strip() if option.runner_env else ""
        if runner:
            chosen[option.name] = (runner, option.runner_env or "")
        elif option.default is not None:
            chosen[option.name] = (option.default, "default")
    values = {
        name: _convert(OPTION_BY_NAME[name], value, origin)
        for name, (value, origin) in chosen.items()
    }
    settings = Settings(
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
        config=_get(values, "config", Path),
        summary_json=_get(values, "summary_json", Path),
        fail_on=FailOn(_value(values, "fail_on", str)),
        style=Style(_value(values, "style", str)),
        history=_value(values, "history", int),
        retire_after_runs=_value(values, "retire_after_runs", int),
        targets=_targets(_get(values, "targets", tuple) or ()),
        branch=_value(values, "branch", str),
        token=_get(values, "token", str),
        api_url=_value(values, "api_url", str),
        job_name=_get(values, "job_name", str),
        leg_metadata=_get(values, "leg_metadata", Path),
        issue_label=_value(values, "issue_label", str),
        pin_index=_value(values, "pin_index", bool),
        dry_run=_value(values, "dry_run", bool),
        dashboard_rules=rules,
        github_actions=is_github_actions(env),
        step_summary=_runner_file(env, "GITHUB_STEP_SUMMARY"),
        github_output=_runner_file(env, "GITHUB_OUTPUT"),
        runner_name=env.get("RUNNER_NAME", "").strip() or None,
        actor=env.get("GITHUB_ACTOR", "").strip() or None,
        event_name=env.get("GITHUB_EVENT_NAME", "").strip() or None,
        event_path=_runner_file(env, "GITHUB_EVENT_PATH"),
        graphql_url=env.get("GITHUB_GRAPHQL_URL", "").strip() or None,
    )
    _check(settings)
    return settings


def _check(settings: Settings) -> None:
    if settings.run_attempt < 1:
        raise InputError(f"input 'run-attempt' got {settings.run_attempt}: attempts start at 1")
    if settings.lock_timeout < 0:
        raise InputError(
            f"input 'lock-timeout' got {settings.lock_timeout}: give seconds, 0 or more"
        )
    if settings.history < 1:
        raise InputError(f"input 'history' got {settings.history}: keep at least 1 result per cell")
    if not 0 <= settings.retire_after_runs <= MAX_RETIRE_AFTER_RUNS:
        raise InputError(
            f"input 'retire-after-runs' got {settings.retire_after_runs}; "
            f"allowed: 0 (never) to {MAX_RETIRE_AFTER_RUNS}"
        )
    if settings.repository is not None and not re.fullmatch(
        r"[^/\s]+/[^/\s]+", settings.repository
    ):
        raise InputError(f"input 'repository' got {settings.repository!r}; expected OWNER/REPO")
    for name in ("run_id", "job_id"):
        value = getattr(settings, name)
        if value is not None and value < 0:
            raise InputError(f"input '{name.replace('_', '-')}' got {value}: ids are positive")
    settings.naming_rules()  # compiles and checks the regexes


def require_update_inputs(settings: Settings) -> None:
    """``update`` needs result files and a way to name the backend."""
    if not settings.junit:
        raise InputError(
            "no result files given: pass --junit GLOB (or set the 'junit' input / IVY_MATRIX_JUNIT)"
        )
    if not (settings.backend or settings.backend_from_path or settings.backend_from_test):
        raise InputError(
            "no backend given: pass --backend NAME for one matrix leg, or --backend-from-path "
            "REGEX / --backend-from-test REGEX with a (?P<backend>...) group"
        )
