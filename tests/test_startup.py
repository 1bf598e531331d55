"""What a process imports before its work, held by the modules' names (never by time).

Issue 26 asks that an identical re-run of ``update`` cost no more than reading the XML; Python's
start-up and ivy-matrix's imports were most of it. Declaring the options (config/options.py,
settings.py, arguments.py) imported the pull request's verdicts and comment, the issue target's
plan, the dashboards' tables, the expectations' proposal and the HTTP and git transports, for an
enum or a default each; those now live in leaf modules (``pr/when_green.py``,
``issues/defaults.py``, ``views/style.py``, ``expect/rules.py``, ``github/token.py``), and the
git transport, the pull request's verdicts and body, and the env command's process
(commands/env_command.py) are imported where they are used. A later import that drags one of
them back into every start-up fails here, naming it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# ``ivy-matrix update --help``: the command line parsed, nothing run.
STARTUP = """
import contextlib, io, json, sys
import ivy_matrix.cli
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    ivy_matrix.cli.main(["update", "--help"], {})
print(json.dumps(sorted(sys.modules)))
"""
# What every update imports before it reads a file (a re-run that finds nothing new included).
UPDATE = """
import json, sys
import ivy_matrix.cli, ivy_matrix.commands.update
print(json.dumps(sorted(sys.modules)))
"""
# The leaf modules start-up needs from the packages it must not otherwise import.
LEAVES = frozenset(
    {
        "ivy_matrix.pr.when_green",
        "ivy_matrix.issues.defaults",
        "ivy_matrix.expect.rules",
        "ivy_matrix.github.token",
    }
)
# Packages and modules no start-up imports: the pull request's, the issues', the site's, the
# expectations', the commands', the targets' and the stores' code, GitHub's transports, the
# dashboards' tables, and the process machinery the git transport needs.
NOT_AT_STARTUP_PACKAGES = (
    "ivy_matrix.pr.",
    "ivy_matrix.issues.",
    "ivy_matrix.site",
    "ivy_matrix.expect.",
    "ivy_matrix.commands",
    "ivy_matrix.targets",
    "ivy_matrix.stores.",
)
NOT_AT_STARTUP = frozenset(
    {
        "ivy_matrix.github.connection",
        "ivy_matrix.github.http",
        "ivy_matrix.github.retry",
        "ivy_matrix.github.spend",
        "ivy_matrix.github.types",
        "ivy_matrix.github.git_transport",
        "ivy_matrix.github.git_process",
        "ivy_matrix.github.client",
        "ivy_matrix.views.dashboards",
        "ivy_matrix.views.index_page",
        "ivy_matrix.explain.blame",
        "ivy_matrix.explain.slowdowns",
        "subprocess",
        "statistics",
        "yaml",
    }
)
# Not even an update imports these before it needs them: a pull request's verdicts, comment
# and body, the issue target, the site, the expectations' proposal, PyGithub and the git
# transport (each imported where it is used).
NOT_IN_UPDATE = frozenset(
    {
        "ivy_matrix.pr.ancestry",
        "ivy_matrix.pr.body",
        "ivy_matrix.pr.comment",
        "ivy_matrix.pr.comment_state",
        "ivy_matrix.pr.verdicts",
        "ivy_matrix.issues.markers",
        "ivy_matrix.issues.plan",
        "ivy_matrix.issues.publish",
        "ivy_matrix.site.build",
        "ivy_matrix.expect.proposal",
        "ivy_matrix.github.client",
        "ivy_matrix.github.http",
        "ivy_matrix.github.git_transport",
        "ivy_matrix.github.git_process",
        "ivy_matrix.stores.branch",
        "ivy_matrix.commands.env_command",
        "subprocess",
        "github",
        "yaml",
    }
)


def imported(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_startup_imports_no_publishing_code() -> None:
    modules = imported(STARTUP)
    assert "ivy_matrix.config.settings" in modules  # the command line was parsed
    dragged = sorted(
        m for m in modules - LEAVES if m in NOT_AT_STARTUP or m.startswith(NOT_AT_STARTUP_PACKAGES)
    )
    assert not dragged, f"imported at start-up: {dragged}"


def test_update_imports_no_pull_request_issue_or_git_code() -> None:
    modules = imported(UPDATE)
    assert "ivy_matrix.commands.update" in modules
    dragged = sorted(modules & NOT_IN_UPDATE)
    assert not dragged, f"imported by every update: {dragged}"
