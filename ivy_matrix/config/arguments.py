"""The command line's grammar: one sub-parser per command, built from ``options.OPTIONS``.

I/O only through argparse, which prints help and version (to the stream it is given). Which
options each command takes is decided here; their names, kinds, defaults and help come from
``options.OPTIONS``, so the command line, ``IVY_MATRIX_*``, the config file and action.yml stay one
list. Usage errors are :class:`~ivy_matrix.errors.UsageError` (exit 2) with a hint at what a
newcomer most likely meant. cli.py dispatches what it parses.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from ivy_matrix import __version__
from ivy_matrix.config.options import OPTION_BY_NAME, OPTIONS, RETIRED, Kind
from ivy_matrix.errors import UsageError
from ivy_matrix.expect.rules import (
    DEFAULT_ADD_AFTER,
    DEFAULT_REMOVE_AFTER,
    DEFAULT_UNSEEN_AFTER,
)

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

_UPDATE_OPTIONS = tuple(o.name for o in OPTIONS if o.name != "leg_file")
# What compare does not use: it records nothing, writes no dashboards or issues.
_NOT_COMPARE = frozenset(
    {
        "lock_timeout",
        "output_dir",
        "html",
        "summary_json",
        "legs",
        "issue_label",
        "pin_index",
        "issue_writes_per_hour",
        "dry_run",
        "pr_comment_when_green",
        "pr_comment_author",
        "expected_backends",
        "style",
        "history",
        "retire_after_runs",
        "trend_points",
    }
)
_COMPARE_OPTIONS = tuple(name for name in _UPDATE_OPTIONS if name not in _NOT_COMPARE)
# What collect uses: reading and naming results, the leg's run and job, and its own outputs.
_COLLECT_OPTIONS = (
    *("junit", "if_no_files_found", "backend", "backend_from_path", "backend_from_test"),
    *("dashboard", "config", "run_id", "run_attempt", "job_id", "repository"),
    *("server_url", "leg_file", "fail_on", "dry_run", "sha", "ref", "pr", "head_sha"),
    *("env_command", "track_packages", "backend_version", "redact"),
    *RETIRED,  # given, they stop the run naming what to use instead
)
_METAVARS = {
    "backend": "NAME",
    "backend_from_path": "REGEX",
    "backend_from_test": "REGEX",
    "dashboard": "[CATEGORY/]TITLE",
    "job_url": "URL",
    "repository": "OWNER/REPO",
    "server_url": "URL",
    "store": "DIR",
    "lock_timeout": "SECONDS",
    "output_dir": "DIR",
    "html": "DIR",
    "config": "FILE",
    "summary_json": "FILE",
    "targets": "TARGETS",
    "dashboard_branches": "BRANCH",
    "expected_backends": "BACKENDS",
    "branch": "BRANCH",
    "token": "TOKEN",
    "api_url": "URL",
    "job_name": "PATTERN",
    "issue_label": "LABEL",
    "backend_aliases": "WORDS",
    "sha": "SHA",
    "head_sha": "SHA",
    "base_sha": "SHA",
    "ref": "REF",
    "pr_comment_author": "LOGIN",
    "budget_warning": "PERCENT",
    "env_command": "COMMAND",
    "track_packages": "PACKAGES",
    "backend_version": "BACKEND@TEMPLATE",
    "redact": "REGEX",
}
_KIND_METAVARS = {
    Kind.LIST: "GLOB",
    Kind.INT: "N",
    Kind.PATH: "PATH",
    Kind.STR: "VALUE",
    Kind.BOOL: "VALUE",
}
_STORE_OPTIONS = ("store", "output_dir", "config", "style")
_BRANCH_OPTIONS = (
    *("targets", "branch", "branch_transport", "token", "api_url", "server_url"),
    *("repository", "dry_run", "budget_warning"),
)
_PUBLISH_OPTIONS = (
    *_BRANCH_OPTIONS,
    *("output_dir", "html", "config", "style", "history", "retire_after_runs", "trend_points"),
    *("issue_label", "pin_index", "site_url", "issue_writes_per_hour"),
)
_PRUNE_NAMES = ("prune_dashboards", "prune_backends", "prune_rows")


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors raised as UsageError (exit 2, our one-line message with a
    hint) and help and version written to ``stdout`` (None: the process's)."""

    stdout: TextIO | None = None

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}{_hint(message)} (see {self.prog} --help)")

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # argparse sends help and version here with file=sys.stdout: use the command's stream.
        if self.stdout is not None and file in (None, sys.stdout):
            file = self.stdout
        super()._print_message(message, file)


_COMMANDS = ("update", "compare", "adopt", "render", "publish", "prune", "expectations")


def _hint(message: str) -> str:
    """What a newcomer most likely meant, for argparse's usual complaints."""
    if message.startswith("unrecognized arguments:"):
        extra = message.removeprefix("unrecognized arguments:").split()
        if any(Path(word).exists() for word in extra if not word.startswith("-")):
            return (
                "; the shell expanded a glob into several files: quote it "
                "(--junit 'results/*.xml') or repeat --junit for each"
            )
        return ""
    if "invalid choice:" in message and "argument COMMAND" in message:
        word = message.split("invalid choice:", 1)[1].split("'")[1:2]
        close = difflib.get_close_matches(word[0], _COMMANDS, n=1) if word else []
        if close:
            return f"; did you mean {close[0]}?"
    if "required: COMMAND" in message or "argument COMMAND" in message:
        return "; the command comes first: ivy-matrix update --junit GLOB ..."
    return ""


def build_parser(stdout: TextIO | None = None) -> argparse.ArgumentParser:
    """The ``ivy-matrix`` parser with every command; help and version go to ``stdout``."""
    parser = _Parser(
        prog="ivy-matrix",
        description="Per-test, per-backend dashboards from JUnit XML results.",
        epilog="Every option can also be set as IVY_MATRIX_<OPTION> (e.g. IVY_MATRIX_BACKEND).",
    )
    parser.add_argument("--version", action="version", version=f"ivy-matrix {__version__}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    update = commands.add_parser(
        "update", help="fold result files into the dashboards and write them"
    )
    _add_options(update, _UPDATE_OPTIONS)
    collect = commands.add_parser(
        "collect",
        help="one matrix leg's results into a leg file for a fan-in job; no network at all",
    )
    _add_options(collect, _COLLECT_OPTIONS)
    _compare_arguments(
        commands.add_parser(
            "compare",
            help="a pull request's verdicts against the stored dashboards; records nothing",
        )
    )
    _adopt_arguments(
        commands.add_parser("adopt", help="take an existing dashboard table into the store")
    )
    render = commands.add_parser(
        "render", help="write every stored dashboard and the index, or the HTML site"
    )
    _add_options(render, (*_STORE_OPTIONS, "html"))
    render.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when --output-dir differs from a fresh render, naming "
        "each file that does",
    )
    publish = commands.add_parser(
        "publish", help="render the dashboards, issues and index from the branch state"
    )
    _add_options(publish, _PUBLISH_OPTIONS)
    prune = commands.add_parser(
        "prune", help="remove named dashboards, backends or rows from the store on purpose"
    )
    _prune_arguments(prune)
    _add_options(prune, (*_STORE_OPTIONS, "lock_timeout", *_BRANCH_OPTIONS))
    _expectations_arguments(
        commands.add_parser(
            "expectations",
            help="propose the per-backend expectation (xfail) lists' changes from the history",
        )
    )
    for each in (parser, *commands.choices.values()):
        each.stdout = stdout
    return parser


def _add_options(sub: argparse.ArgumentParser, names: Sequence[str]) -> None:
    """The options of ``OPTIONS`` named in ``names``, in ``OPTIONS``' order."""
    for option in OPTIONS:
        if option.name not in names:
            continue
        default = f" (default: {option.default})" if option.default else ""
        # A retired option is accepted only to stop the run, naming what to use: not shown.
        help_text = argparse.SUPPRESS if option.name in RETIRED else option.help + default
        if option.kind is Kind.LIST:
            metavar = _METAVARS.get(option.name, _KIND_METAVARS[option.kind])
            sub.add_argument(
                option.flag, dest=option.name, action="append", metavar=metavar, help=help_text
            )
        else:
            metavar = _METAVARS.get(option.name, _KIND_METAVARS[option.kind])
            sub.add_argument(
                option.flag,
                dest=option.name,
                # Choices are checked by config/settings.py, so that a bad value on the command line
                # and in IVY_MATRIX_* gets the same message and exit code.
                metavar="{" + ",".join(option.choices) + "}" if option.choices else metavar,
                help=help_text,
            )


def _compare_arguments(compare: argparse.ArgumentParser) -> None:
    """``compare``: where the comment and the verdicts go, then the options of ``update`` it uses."""
    compare.add_argument(
        "--markdown",
        dest="compare_markdown",
        type=Path,
        metavar="FILE",
        help="write the comment ('-': to stdout)",
    )
    compare.add_argument(
        "--json",
        dest="compare_json",
        type=Path,
        metavar="FILE",
        help="write the verdicts ('-': to stdout)",
    )
    _add_options(compare, _COMPARE_OPTIONS)


def _adopt_arguments(adopt: argparse.ArgumentParser) -> None:
    """``adopt``: the dashboard and the file holding its table, then the store's options."""
    adopt.add_argument("--dashboard", required=True, help="[category/]title of the dashboard")
    adopt.add_argument("file", type=Path, help="the markdown file holding the table")
    adopt.add_argument("--force", action="store_true", help="replace a dashboard already stored")
    _add_options(adopt, ("store", "lock_timeout", "config", *_BRANCH_OPTIONS, "style"))


def _prune_arguments(prune: argparse.ArgumentParser) -> None:
    """What ``prune`` removes: dashboards, backends (columns) and rows."""
    prune.add_argument(
        "--dashboard",
        dest="prune_dashboards",
        action="append",
        default=[],
        metavar="[CATEGORY/]TITLE",
        help="a dashboard to remove; with --backend or --row, where they are removed (repeatable)",
    )
    prune.add_argument(
        "--backend",
        dest="prune_backends",
        action="append",
        default=[],
        metavar="NAME",
        help="a backend (column) to remove, from every dashboard or the named ones (repeatable)",
    )
    prune.add_argument(
        "--row",
        dest="prune_rows",
        action="append",
        default=[],
        metavar="NAME",
        help="a row (test) to remove from the named dashboard(s) (repeatable)",
    )


_EXPECTATIONS_NAMES = (
    *("expect_lists", "expect_common", "expect_write", "expect_markdown"),
    *("add_after", "remove_after", "unseen_after"),
)


def _expectations_arguments(sub: argparse.ArgumentParser) -> None:
    """``expectations``: the lists, the rules' run counts, what is written; then where the
    history is read."""
    sub.add_argument(
        "--lists",
        dest="expect_lists",
        required=True,
        metavar="PATTERN",
        help="each backend's list, with {backend} for its name (e.g. tests/xfails/{backend}.txt)",
    )
    sub.add_argument(
        "--common-list",
        dest="expect_common",
        type=Path,
        metavar="FILE",
        help="the list of tests expected to fail on every backend",
    )
    for flag, dest, default, what in (
        (
            "--add-after",
            "add_after",
            DEFAULT_ADD_AFTER,
            "add a test failing in each of the last N runs",
        ),
        (
            "--remove-after",
            "remove_after",
            DEFAULT_REMOVE_AFTER,
            "remove an entry passing in each of the last N runs",
        ),
        (
            "--unseen-after",
            "unseen_after",
            DEFAULT_UNSEEN_AFTER,
            "remove an entry no run of the last N ran",
        ),
    ):
        sub.add_argument(
            flag,
            dest=dest,
            type=int,
            default=default,
            metavar="N",
            help=f"{what} (default: {default})",
        )
    sub.add_argument(
        "--write", dest="expect_write", action="store_true", help="rewrite the lists that change"
    )
    sub.add_argument(
        "--markdown",
        dest="expect_markdown",
        type=Path,
        metavar="FILE",
        help="write the changes with their evidence ('-': to stdout)",
    )
    _add_options(sub, ("store", "config", "history", "dashboard_branches", *_BRANCH_OPTIONS))


_BOOL_FLAGS = frozenset(option.flag for option in OPTIONS if option.kind is Kind.BOOL)
# Words taken as a flag's value, so that "--dry-run yes" is told the allowed values.
_BOOL_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0", "y", "n"})


def bare_flags(argv: Sequence[str]) -> list[str]:
    """``--dry-run`` alone means ``--dry-run=true``; ``--dry-run true|false`` still works.

    Rewritten before argparse sees it, so that ``adopt --dry-run FILE`` never takes the file
    for the flag's value.
    """
    out = list(argv)
    for i, word in enumerate(out):
        if word == "--":
            break
        if word in _BOOL_FLAGS and (i + 1 == len(out) or out[i + 1] not in _BOOL_WORDS):
            out[i] = f"{word}=true"
    return out


def given_tokens(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The token as given on the command line (``--token T``, ``--token=T``, or an
    abbreviation argparse accepts) and in the environment, before any parsing."""
    token = OPTION_BY_NAME["token"]
    found = [env.get(token.env, ""), env.get(token.env, "").strip()]
    for at, word in enumerate(argv):
        flag, equals, value = word.partition("=")
        if len(flag) > len("--t") and token.flag.startswith(flag):
            found.append(value if equals else (argv[at + 1] if at + 1 < len(argv) else ""))
    return [value for value in found if value]


# What the commands take beside OPTIONS: arguments of their own, which settings never see.
_OWN_ARGUMENTS = frozenset(
    {
        *("command", "file", "force", "check", "compare_markdown", "compare_json"),
        *_PRUNE_NAMES,
        *_EXPECTATIONS_NAMES,
    }
)


def options_given(args: argparse.Namespace) -> dict[str, object]:
    """The options in ``args`` (None where not given), for ``config.settings.load_settings``.

    ``adopt --dashboard`` names the dashboard to adopt, not the ``dashboard`` option.
    """
    given = {k: v for k, v in vars(args).items() if k not in _OWN_ARGUMENTS}
    if args.command == "adopt":
        given.pop("dashboard")
    return given
