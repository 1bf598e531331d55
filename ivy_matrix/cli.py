"""The ``ivy-matrix`` command: the imperative shell around the pure pipeline.

I/O. Commands:

- ``update``: read result files (and leg files, ``--legs``), fold them into the stored
  dashboards, publish them (commands/update.py holds the pipeline's order; ARCHITECTURE.md
  maps it);
- ``collect``: one matrix leg's results into a leg file, with no network (commands/collect.py);
- ``compare``: a pull request's verdicts against the stored dashboards, as JSON and markdown
  (commands/compare.py); records nothing;
- ``adopt``: take an existing dashboard table into the store, cell by cell (commands/adopt.py);
- ``render``: write every stored dashboard and the index (commands/render.py);
- ``publish``: render the dashboards and issues from the branch state (commands/publish.py);
- ``prune``: remove named dashboards, backends or rows from the store on purpose (commands/prune.py);
- ``expectations``: the per-backend expectation (xfail) lists' changes from the stored history
  (commands/expectations.py).

This module holds the dispatch (the command line's grammar is config/arguments.py, built from
``config.options.OPTIONS``); ``main`` resolves the settings and turns errors into exit codes. It takes a
:class:`~ivy_matrix.github.connection.Remote` (the GitHub client factory and the waits) and the
output streams, so that tests can run whole commands in-process, several at once, against a
fast client.

Exit codes are :class:`~ivy_matrix.errors.ExitCode` (docs/commands.md lists them): 0 done
(warnings included), 1 the results fail ``--fail-on``, 2 a usage error, 3 an input that is not
usable, 4 the store, 5 GitHub, 70 a bug in ivy-matrix (a traceback is printed; please report it).
Diagnostics go to stderr and data to stdout (runner/log.py).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from ivy_matrix.config.arguments import bare_flags, build_parser, given_tokens, options_given
from ivy_matrix.config.settings import Settings, environ, is_github_actions, load_settings
from ivy_matrix.errors import ExitCode, IvyMatrixError, ProblemsError
from ivy_matrix.runner.guard import concealing
from ivy_matrix.runner.log import Log
from ivy_matrix.runner.pacing import Heartbeat

if TYPE_CHECKING:
    from ivy_matrix.github.connection import Remote


def main(
    argv: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    remote: Remote | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    clock: Callable[[], float] = time.monotonic,
    platform: str = sys.platform,
) -> int:
    """Run one command; return the exit code. ``remote``: how to reach GitHub (tests);
    ``stdout`` (data) and ``stderr`` (diagnostics): the streams (None: the process's);
    ``clock``: what phases and progress are timed by; ``platform``: ``sys.platform``."""
    env = environ() if env is None else env
    argv = sys.argv[1:] if argv is None else argv
    log = Log(github_actions=is_github_actions(env), stream=stderr, data=stdout, clock=clock)
    tokens = given_tokens(argv, env)
    for token in tokens:
        log.conceal(token)  # before parsing: a usage error quotes the arguments
    if platform == "win32":
        log.error(WINDOWS)
        return ExitCode.USAGE
    # Nothing written while the command runs holds its secrets (runner/guard.py), its last
    # words included.
    with contextlib.ExitStack() as concealed:
        concealed.enter_context(_cyclic_gc_paused())
        concealed.enter_context(concealing(tokens))
        try:
            args = build_parser(stdout).parse_args(bare_flags(argv))
            given = options_given(args)
            settings = load_settings(given, env)
            log.conceal(settings.token or "")
            concealed.enter_context(concealing(settings.secrets))
            with Heartbeat(log).running():
                return _run(args, settings, log, remote)
        except IvyMatrixError as error:
            log.error(str(error))
            for problem in error.problems if isinstance(error, ProblemsError) else ():
                log.error(problem)
            return error.exit_code
        except Exception:  # noqa: BLE001  -- the last line of defence: report the bug, exit 70
            log.traceback(traceback.format_exc())
            log.error("ivy-matrix crashed; please report this with the log above")
            return ExitCode.BUG


# Python's cyclic garbage collector walks the containers a process holds each time enough new
# ones pile up, and every container whenever they have grown by a quarter. A command builds
# hundreds of thousands (cases, cells, rows, states, pages) and lets them go by reference
# counting: a whole update at Ivy's shape leaves about 1,500 objects to the collector, while
# its walks took a fifth of a steady update's CPU (bench/README.md, "Durations"). A command
# runs without it; it is back, if it was on, when the last command running in the process
# (the tests run several at once) ends.
_gc_lock = threading.Lock()
_gc_commands = 0  # commands running in this process
_gc_was_enabled = False


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    global _gc_commands, _gc_was_enabled  # noqa: PLW0603  -- the process's one collector
    with _gc_lock:
        if _gc_commands == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_commands += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_commands -= 1
            if _gc_commands == 0 and _gc_was_enabled:
                gc.enable()


WINDOWS = (
    "ivy-matrix runs on Linux and macOS; Windows is not supported (run it under WSL, or on a "
    "Linux or macOS runner)"
)


# Each command is imported when it runs: a matrix leg starts a fresh interpreter, and
# importing every command (the pull request's, the issues', the branch store's) would cost it
# more than reading a small result file.
def _run(  # noqa: PLR0911 -- one return a command
    args: argparse.Namespace, settings: Settings, log: Log, remote: Remote | None
) -> ExitCode:
    """Run the command ``args`` name."""
    match args.command:
        case "collect" | "render":
            return _run_offline(args, settings, log)
        case "update":
            from ivy_matrix.commands.update import run_update  # noqa: PLC0415  -- see above

            return run_update(settings, log, remote)
        case "publish":
            from ivy_matrix.commands.publish import run_publish  # noqa: PLC0415  -- see above

            return run_publish(settings, log, remote)
        case "compare":
            from ivy_matrix.commands.compare import run_compare  # noqa: PLC0415  -- see above

            return run_compare(
                settings, log, remote, markdown=args.compare_markdown, json_path=args.compare_json
            )
        case "adopt":
            from ivy_matrix.commands.adopt import run_adopt  # noqa: PLC0415  -- see above

            return run_adopt(
                settings, log, remote, dashboard=args.dashboard, file=args.file, force=args.force
            )
        case "expectations":
            from ivy_matrix.commands.expectations import run_expectations  # noqa: PLC0415
            from ivy_matrix.expect.rules import Rules  # noqa: PLC0415  -- see above

            return run_expectations(
                settings,
                log,
                remote,
                lists=args.expect_lists,
                common=args.expect_common,
                rules=Rules(
                    add_after=args.add_after,
                    remove_after=args.remove_after,
                    unseen_after=args.unseen_after,
                ),
                write=args.expect_write,
                markdown=args.expect_markdown,
            )
        case _:
            from ivy_matrix.commands.prune import run_prune  # noqa: PLC0415  -- see above

            return run_prune(
                settings,
                log,
                remote,
                dashboards=args.prune_dashboards,
                backends=args.prune_backends,
                rows=args.prune_rows,
            )


def _run_offline(args: argparse.Namespace, settings: Settings, log: Log) -> ExitCode:
    """Run ``collect`` or ``render``: they never reach GitHub."""
    if args.command == "collect":
        from ivy_matrix.commands.collect import run_collect  # noqa: PLC0415  -- see _run

        return run_collect(settings, log)
    from ivy_matrix.commands.render import run_render  # noqa: PLC0415  -- see _run

    return run_render(settings, log, check=args.check)
