"""A token that cannot be one (a line break, white space, control characters) is refused by
every command before any request (exit 2, a setting is wrong), and no line printed ever shows
it or a piece of it."""

from __future__ import annotations

import io
import re

import pytest

from ivy_matrix.cli import main
from ivy_matrix.errors import ExitCode, GitHubAPIError
from ivy_matrix.github.client import make_client
from ivy_matrix.runner.log import Log
from tests.commands.results import write_junit
from tests.commands.test_update_github import FAST, runner_env

SECRET = "ghp_" + "S3cr3tT0k3nV4lu3" * 2
BROKEN = {
    "line break": f"{SECRET[:18]}\n{SECRET[18:]}",
    "carriage return": f"{SECRET[:18]}\r\n::add-mask::{SECRET[18:]}",
    "space": f"{SECRET[:18]} {SECRET[18:]}",
    "tab": f"{SECRET[:18]}\t{SECRET[18:]}",
    "escape": f"{SECRET[:18]}\x1b[2K{SECRET[18:]}",
    "zero-width space": f"{SECRET[:18]}\u200b{SECRET[18:]}",
    "non-ASCII": f"{SECRET[:18]}\u00e9{SECRET[18:]}",
}
# Every command; those that can reach GitHub are pointed at it.
COMMANDS = {
    "update": ["update", "--junit", "r.xml", "--backend", "torch", "--targets", "branch, issue"],
    "publish": ["publish", "--targets", "branch, issue"],
    "compare": ["compare", "--junit", "r.xml", "--backend", "torch", "--targets", "branch"],
    "adopt": ["adopt", "--dashboard", "core/gradients", "table.md", "--targets", "branch"],
    "prune": ["prune", "--dashboard", "core/gradients", "--targets", "branch"],
    "render": ["render", "--output-dir", "out"],
}


def pieces(token: str) -> list[str]:
    """The token, and each run of it between white space and control characters, as a
    message could show them (raw, or escaped as Python's repr does)."""
    runs = [run for run in re.split(r"[\W]+", token) if len(run) >= 6]
    return [token, repr(token)[1:-1], *runs]


def run(workdir, argv: list[str], env: dict[str, str]):
    """``main`` in ``workdir`` with a result file and a table to adopt; (code, printed)."""
    write_junit(workdir / "r.xml", [("test_grad", "failed")])
    (workdir / "table.md").write_text("|  | torch |\n|:--|:--|\n| test_grad |  |\n")
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, env, remote=FAST, stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("given", ["input", "option"])
def test_every_command_refuses_a_token_with_a_line_break_and_never_shows_it(
    workdir, fake, command, given
):
    """Each command exits 2 naming the token's input or option (or, where it takes no
    --token, the usage error), sends no request, and prints no piece of the token, whether the token
    comes from the action's input or --token."""
    token = BROKEN["line break"]
    env = runner_env(fake, workdir)
    argv = list(COMMANDS[command])
    if given == "input":
        env["IVY_MATRIX_TOKEN"] = token
    else:
        del env["IVY_MATRIX_TOKEN"]
        argv += ["--token", token]

    code, printed = run(workdir, argv, env)

    assert code == ExitCode.USAGE
    if command == "render" and given == "option":  # render has no --token: a usage error
        assert "unrecognized arguments: --token *** (see" in printed
    else:
        named = "input 'token'" if given == "input" else "--token"
        assert f"::error::{named} contains a line break, so it cannot be a GitHub" in printed
    assert [piece for piece in pieces(token) if piece in printed] == []
    assert fake.requests == []


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_any_token_that_cannot_be_a_header_is_refused_unseen(workdir, fake, kind):
    """White space, control, format and non-ASCII characters in the token: exit 2, no
    request, no piece of the token printed, and nothing injected into the runner's log."""
    token = BROKEN[kind]
    env = runner_env(fake, workdir, IVY_MATRIX_TOKEN=token)

    code, printed = run(workdir, COMMANDS["update"], env)

    assert code == ExitCode.USAGE
    assert "::error::input 'token' contains " in printed
    assert [piece for piece in pieces(token) if piece in printed] == []
    assert [line for line in printed.splitlines() if line.startswith("::add-mask::")] == []
    assert fake.requests == []


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_the_client_refuses_such_a_token_before_any_request(fake, kind):
    """make_client itself refuses the token, and its message holds no piece of it."""
    token = BROKEN[kind]
    with pytest.raises(GitHubAPIError) as refused:
        make_client(token=token, api_url=fake.base_url)
    assert [piece for piece in pieces(token) if piece in str(refused.value)] == []
    assert fake.requests == []


def test_the_log_never_prints_the_token_it_was_told_to_conceal():
    """Once the token is known, every line shows *** in its place: plain lines, annotations,
    a crash's traceback and the data stream alike."""
    out, data = io.StringIO(), io.StringIO()
    log = Log(github_actions=True, stream=out, data=data)
    log.conceal(SECRET)
    log.info(f"Authorization: token {SECRET}")
    log.error(f"GitHub answered for {SECRET}", title=SECRET)
    log.traceback(f"Traceback:\nValueError: header 'token {SECRET}'")
    log.data(f'{{"token": "{SECRET}"}}\n')
    printed = out.getvalue() + data.getvalue()
    assert SECRET not in printed
    assert printed.count("***") == 5


@pytest.mark.parametrize("token", [SECRET, BROKEN["line break"]], ids=["valid", "line break"])
@pytest.mark.parametrize(
    "form", [["--token", "{}"], ["--token={}"], ["--tok", "{}"], ["--tok={}"]], ids=" ".join
)
def test_a_usage_error_never_quotes_the_token(workdir, fake, token, form):
    """An option parsing error quotes the arguments; the token among them shows as ***,
    however the option was spelled."""
    argv = ["render", "--no-such-option", *(word.format(token) for word in form)]

    code, printed = run(workdir, argv, runner_env(fake, workdir))

    assert code == ExitCode.USAGE
    assert "unrecognized arguments" in printed
    assert "***" in printed
    assert [piece for piece in pieces(token) if piece in printed] == []


def test_a_config_file_that_is_not_yaml_is_named_without_quoting_its_lines(workdir, fake):
    """A YAML error in a config file that sets the token says where, not what the lines hold."""
    (workdir / "cfg.yml").write_text(f'backend: torch\ntoken: "{SECRET}\n', encoding="utf-8")
    env = runner_env(fake, workdir, IVY_MATRIX_CONFIG="cfg.yml")
    del env["IVY_MATRIX_TOKEN"]

    code, printed = run(workdir, COMMANDS["update"], env)

    assert code == ExitCode.USAGE
    assert "config file cfg.yml is not valid YAML: line " in printed
    assert [piece for piece in pieces(SECRET) if piece in printed] == []
