"""Every setting ivy-matrix has: its name, kind, default, choices and help (``OPTIONS``).

Pure: definitions, the conversion of a given value to the option's kind, and the parsing of
``targets``; the options retired in 0.3.0 (:data:`RETIRED`) and what stops the run when one is
given. config/settings.py
resolves the values (command line, environment, config file, runner, default); cli.py builds
the command line from ``OPTIONS``; ``tests/test_action_yml.py`` checks that action.yml and
docs/options.md list the same options with the same defaults. Each default is stated here only:
``Settings``' field defaults are :func:`option_default`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from ivy_matrix.errors import UsageError
from ivy_matrix.issues.defaults import DEFAULT_LABEL, DEFAULT_WRITES_PER_HOUR
from ivy_matrix.pr.when_green import WhenGreen
from ivy_matrix.results.jobs import DEFAULT_SERVER_URL
from ivy_matrix.results.signature import DEFAULT_ALIASES
from ivy_matrix.state.merge import DEFAULT_HISTORY, RUNS_KEPT
from ivy_matrix.state.trend import DEFAULT_POINTS
from ivy_matrix.stores import DEFAULT_LOCK_TIMEOUT
from ivy_matrix.views.style import Style

_T = TypeVar("_T")

ENV_PREFIX = "IVY_MATRIX_"
DEFAULT_STORE = ".ivy-matrix"
DEFAULT_RETIRE_AFTER_RUNS = 100
MAX_RETIRE_AFTER_RUNS = RUNS_KEPT
# Where the docs give the one recipe for a matrix: the legs collect, one job after them writes.
FAN_IN_RECIPE = "docs/workflows.md#a-fan-in-job-after-the-matrix-any-width"
# Options of 0.2.0 that 0.3.0 retired with the ways legs wrote the dashboards themselves (one
# writer per run). Still declared (action input, flag, variable, config key) only so that a
# workflow that gives one stops with a message naming what to use instead (exit 2).
RETIRED = ("leg_metadata", "matrix_size", "matrix_index")


class FailOn(StrEnum):
    """When ``update`` exits 1 because of what the results say."""

    FAILURES = "failures"
    ERRORS = "errors"
    NEW = "new"
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
    PR_COMMENT = "pr-comment"
    STATUS = "status"
    SITE = "site"


class BranchTransport(StrEnum):
    """How the branch target reads and writes the dashboard branch."""

    AUTO = "auto"  # git, or the REST API where git cannot be used
    GIT = "git"
    REST = "rest"


class Kind(StrEnum):
    """What an option's value is, once read."""

    STR = "str"
    INT = "int"
    LIST = "list"
    PATH = "path"
    BOOL = "bool"  # "true" or "false"


@dataclass(frozen=True, slots=True)
class Option:
    """One setting: its name, kind, where runner variables can fill it, and its help.

    Every option is a flag (``--kebab-name``), a variable (``IVY_MATRIX_UPPER_NAME``) and a
    config-file key; ``action`` says whether the action also declares it as an input. One that
    is not (what the runner's variables give, or what almost no workflow sets) is given to the
    action through the config file or the step's ``env:``.
    """

    name: str
    kind: Kind
    help: str
    runner_env: str | None = None
    default: str | None = None
    choices: tuple[str, ...] = ()
    # Variables other tools set, read after runner_env in this order (the token's).
    also_env: tuple[str, ...] = ()
    # Whether the action has an input for it; without one it is given in the config file,
    # on the command line or as its IVY_MATRIX_ variable (the step's env:).
    action: bool = True

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
        "when the junit patterns select no file: error (exit 3), warn, or ignore",
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
    Option("job_url", Kind.STR, "link cells to this URL instead of building one", action=False),
    Option("repository", Kind.STR, "OWNER/REPO for links", runner_env="GITHUB_REPOSITORY"),
    Option(
        "server_url",
        Kind.STR,
        "GitHub's web address",
        runner_env="GITHUB_SERVER_URL",
        default=DEFAULT_SERVER_URL,
        action=False,
    ),
    Option("store", Kind.PATH, "the local state directory", default=DEFAULT_STORE),
    Option(
        "lock_timeout",
        Kind.INT,
        "seconds to wait for the store's lock while another update holds it, then exit 4 "
        "naming the holder (0: do not wait)",
        default=str(DEFAULT_LOCK_TIMEOUT),
        action=False,
    ),
    Option("output_dir", Kind.PATH, "write the dashboards and the index here"),
    Option(
        "html",
        Kind.PATH,
        "write the static HTML site here (render; update and publish with the site target)",
    ),
    Option("config", Kind.PATH, "a YAML config file"),
    Option("summary_json", Kind.PATH, "write a JSON summary of the update here"),
    Option(
        "fail_on",
        Kind.STR,
        "exit 1 when results have failures/errors; new: when a pull request brings a new failure "
        "(a new or new-test verdict)",
        default="nothing",
        choices=tuple(FailOn),
    ),
    Option(
        "targets",
        Kind.LIST,
        "where to publish: summary (job summary and step outputs), file (--output-dir), "
        "branch (state and dashboards committed to --branch), issue (one issue per dashboard, "
        "from the branch's state: with the branch target), "
        "pr-comment (one sticky comment on the pull request with its verdicts), "
        "status (a commit status per backend and one for all, on the pull request's head: "
        "failure only for what it newly breaks), "
        "site (the static HTML site: into site/ of --branch with the branch target, into "
        "--html when given)",
        default="summary\nfile",
    ),
    Option("branch", Kind.STR, "the branch the branch target commits to", default="ivy-matrix"),
    Option(
        "branch_transport",
        Kind.STR,
        "how the branch target reads and writes the branch: git (its own protocol over HTTPS, "
        "no REST request), rest (the REST git-data API), or auto (git, else rest)",
        default="auto",
        choices=tuple(BranchTransport),
    ),
    Option(
        "token",
        Kind.STR,
        "GitHub token for the branch, issue, pr-comment and status targets and job lookup (default: "
        "IVY_MATRIX_TOKEN, GITHUB_TOKEN, GH_TOKEN; never printed)",
        also_env=("GITHUB_TOKEN", "GH_TOKEN"),
    ),
    Option(
        "redact",
        Kind.LIST,
        "regexes whose matches in failure lines, failed test ids and reported package versions "
        "are written *** (the token and well-known key shapes always are); repeatable",
    ),
    Option(
        "api_url",
        Kind.STR,
        "GitHub's REST API address",
        runner_env="GITHUB_API_URL",
        default="https://api.github.com",
        action=False,
    ),
    Option(
        "budget_warning",
        Kind.INT,
        "warn when one run spends more than this percent of an hourly GitHub budget: the "
        "token's requests (x-ratelimit-limit) or GitHub's 500 content-creating requests "
        "(0: never)",
        default="10",
        action=False,
    ),
    Option(
        "job_name",
        Kind.STR,
        "display name of the matrix jobs, with {backend}, e.g. 'tests ({backend})', to find "
        "each backend's job when no job id is given",
    ),
    Option(
        "leg_metadata",
        Kind.STR,
        "retired in 0.3.0: stops the run; legs run collect (their leg file names their job) "
        "and the job after the matrix update --legs (the fan-in)",
    ),
    Option(
        "legs",
        Kind.LIST,
        "leg files written by ivy-matrix collect, to fold into the dashboards in one commit "
        "(a fan-in job after the matrix): glob, directory or !exclude; repeatable",
    ),
    Option(
        "leg_file",
        Kind.PATH,
        "where collect writes the leg file: a path ending in .json, or a directory (created "
        "if missing) where the file is named after the leg (default: the current directory)",
    ),
    Option(
        "matrix_size",
        Kind.STR,
        "retired in 0.3.0: stops the run; legs run collect and the job after the matrix "
        "update --legs (the fan-in)",
    ),
    Option("matrix_index", Kind.STR, "retired in 0.3.0, with matrix-size: stops the run"),
    Option("issue_label", Kind.STR, "the label that marks dashboard issues", default=DEFAULT_LABEL),
    Option(
        "pin_index",
        Kind.BOOL,
        "pin the index issue (GitHub allows 3 pinned issues; a failure is only a warning)",
        default="false",
        choices=("true", "false"),
    ),
    Option(
        "site_url",
        Kind.STR,
        "where the HTML site is served, linked from the job summary and the issues "
        "(default with the branch and site targets on github.com: GitHub Pages of the "
        "dashboard branch, https://OWNER.github.io/REPO/site/)",
        action=False,
    ),
    Option(
        "issue_writes_per_hour",
        Kind.INT,
        "content-creating requests the issue target may make in an hour, the runs of that "
        "hour together (github.com allows 500 per repository); issues that do not fit wait "
        "for a later run, failing dashboards first, and the log and job summary say so",
        default=str(DEFAULT_WRITES_PER_HOUR),
    ),
    Option(
        "dry_run",
        Kind.BOOL,
        "do everything but write (store, files, branch, issues); show what would be written",
        default="false",
        choices=("true", "false"),
    ),
    Option("sha", Kind.STR, "the commit the results are from", runner_env="GITHUB_SHA"),
    Option("ref", Kind.STR, "the git ref the results are from", runner_env="GITHUB_REF"),
    Option("pr", Kind.INT, "the pull request the results are from (default: the event's)"),
    Option(
        "head_sha", Kind.STR, "the pull request's head commit (default: the event's)", action=False
    ),
    Option("base_sha", Kind.STR, "the pull request's merge base or base commit"),
    Option(
        "dashboard_branches",
        Kind.LIST,
        "branches whose results feed the dashboards (default: the repository's default branch; "
        "with no way to tell, every branch)",
    ),
    Option(
        "expected_backends",
        Kind.LIST,
        "the backends every run reports: the status target marks one without results error "
        "(default: the backends the default branch's dashboards have); repeatable, commas "
        "allowed; no action input: the config file or IVY_MATRIX_EXPECTED_BACKENDS",
        action=False,
    ),
    Option(
        "pr_comment_when_green",
        Kind.STR,
        "what the pr-comment target writes when no test fails: a short note, or nothing",
        default="note",
        choices=tuple(WhenGreen),
    ),
    Option(
        "pr_comment_author",
        Kind.STR,
        "the login the pr-comment target's token comments as; only its comments are edited",
        default="github-actions[bot]",
    ),
    Option("style", Kind.STR, "cell style of the dashboards", default="ivy", choices=tuple(Style)),
    Option(
        "history", Kind.INT, "results kept per cell", default=str(DEFAULT_HISTORY), action=False
    ),
    Option(
        "retire_after_runs",
        Kind.INT,
        "retire rows, columns and dashboards no run reported in the store's last N runs (0: never)",
        default=str(DEFAULT_RETIRE_AFTER_RUNS),
    ),
    Option(
        "trend_points",
        Kind.INT,
        "points kept in trend.json, one per completed default-branch run; older ones are "
        "thinned (1 or more)",
        default=str(DEFAULT_POINTS),
        action=False,
    ),
    Option(
        "backend_aliases",
        Kind.LIST,
        "words that name a backend in failure messages (module names, aliases), replaced by "
        "<backend> when failures are grouped by signature; the cell's own backend always is; "
        "repeatable, commas allowed",
        default="\n".join(DEFAULT_ALIASES),
    ),
    Option(
        "env_command",
        Kind.STR,
        "a command run in the test environment that prints its package versions as a JSON "
        "object {package: version}; recorded with the results (default: the versions of "
        "track-packages)",
    ),
    Option(
        "track_packages",
        Kind.LIST,
        "packages whose versions (and git commits) are recorded with the results, read by the "
        "python on the PATH; repeatable, commas allowed",
    ),
    Option(
        "backend_version",
        Kind.STR,
        "name a backend's column with its recorded version: BACKEND@TEMPLATE items, e.g. "
        "jax@{jax} (or *@{version}: every backend, its own package), comma separated",
    ),
)
OPTION_BY_NAME = {option.name: option for option in OPTIONS}


def option_default(name: str, kind: type[_T]) -> _T:
    """An option's default (as OPTIONS states it), converted like a given value."""
    option = OPTION_BY_NAME[name]
    value = convert(option, option.default, "default")
    if not isinstance(value, kind):
        raise TypeError(f"the default of option {name!r} is not a {kind.__name__}: {value!r}")
    return value


def _split_list(value: str) -> list[str]:
    # Action inputs are multi-line strings; one pattern per line (commas may be part of a glob).
    return [line.strip() for line in value.splitlines() if line.strip()]


def convert(option: Option, value: object, origin: str) -> object:
    """``value`` as the option's kind; a UsageError saying where it came from if it is not."""
    if option.kind is Kind.LIST:
        if isinstance(value, str):
            return tuple(_split_list(value))
        if isinstance(value, list | tuple) and not any(map(_is_several, value)):
            return tuple(str(v) for v in value)
        raise UsageError(f"{origin} must be a list of strings, got {_shown(value)}")
    if _is_several(value):
        kind = "a mapping" if isinstance(value, dict) else "a list"
        raise UsageError(f"{origin} takes one value, not {kind}: got {_shown(value)}")
    text = str(value).strip().lower() if isinstance(value, bool) else str(value).strip()
    if option.choices and text not in option.choices:
        raise UsageError(
            f"{origin} got {text!r}; allowed values: {', '.join(option.choices)}"
            f"{did_you_mean(text, option.choices)}"
        )
    if option.kind is Kind.INT:
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"{origin} got {text!r}: not a whole number") from None
    if option.kind is Kind.PATH:
        return Path(text)
    if option.kind is Kind.BOOL:
        return text == "true"
    return text


def _is_several(value: object) -> bool:
    """Whether a value read from YAML is a collection (a list or mapping), not one value."""
    return isinstance(value, list | tuple | dict | set)


def _shown(value: object, cap: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= cap else text[: cap - 3] + "..."


def spell(name: str, *, action: bool) -> str:
    """How a user names a setting: the action's input on a runner (or, for an option that is
    no input, its variable), else the flag."""
    option = OPTION_BY_NAME[name]
    if not action:
        return option.flag
    return f"input '{name.replace('_', '-')}'" if option.action else option.env


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean X?"`` for the choice closest to a mistyped ``word``, else ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _flag(name: str) -> str:
    return OPTION_BY_NAME[name].flag


def parse_targets(values: tuple[str, ...], named: str = "--targets") -> tuple[Target, ...]:
    """The ``targets`` given (comma-separated, any case) as Targets, each once, in order;
    ``named``: the setting as the user gave it, for the message."""
    names = [v.strip().lower() for value in values for v in value.split(",") if v.strip()]
    allowed = [t.value for t in Target]
    for name in names:
        if name not in allowed:
            raise UsageError(
                f"{named} got {name!r}; allowed values: {', '.join(allowed)}"
                f"{did_you_mean(name, allowed)}"
            )
    return tuple(dict.fromkeys(Target(n) for n in names))


def retired_problem(given: Iterable[str], named: Callable[[str], str]) -> str | None:
    """What to tell a user who gave options of :data:`RETIRED` (their names, as ``named``
    spells them), or None when ``given`` holds none."""
    retired = [name for name in RETIRED if name in set(given)]
    if not retired:
        return None
    what = " and ".join(named(name) for name in retired)
    return (
        f"{what}: retired in ivy-matrix 0.3.0, where one job per run writes the dashboards. "
        f"Give the matrix legs command: collect (ivy-matrix collect) and one job after them "
        f"command: fan-in (ivy-matrix update --legs); the recipe is {FAN_IN_RECIPE}, or use "
        f"a release 0.2 pin to keep the old set-up"
    )
