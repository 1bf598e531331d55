"""Meta tests: action.yml, the options in config/options.py and docs/options.md agree with each other."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from ivy_matrix.config.options import OPTIONS, Option
from ivy_matrix.config.settings import load_settings
from ivy_matrix.errors import UsageError
from tests.markdown_doc import code_spans, section, table

ROOT = Path(__file__).resolve().parents[1]
# Inputs the action's own shell steps consume; they are not ivy-matrix settings.
ACTION_ONLY = {"python", "command", "artifacts"}
# What the run step passes for the token: nothing to a matrix leg's collect (issue 24).
TOKEN_UNLESS_COLLECT = "${{ inputs.command != 'collect' && inputs.token || '' }}"


def action():
    return yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def run_step(doc):
    return next(step for step in doc["runs"]["steps"] if step.get("id") == "run")


def test_every_input_reaches_python_through_its_env_variable():
    """Each input is forwarded as IVY_MATRIX_<UPPER> in the run step, and nothing else is."""
    doc = action()
    env = run_step(doc)["env"]
    for name in doc["inputs"]:
        if name in ACTION_ONLY:
            continue
        variable = "IVY_MATRIX_" + name.upper().replace("-", "_")
        given = TOKEN_UNLESS_COLLECT if name == "token" else "${{ inputs." + name + " }}"
        assert env[variable] == given, name
    forwarded = {k for k in env if k.startswith("IVY_MATRIX_")}
    assert len(forwarded) == len(set(doc["inputs"]) - ACTION_ONLY)


def test_a_legs_collect_step_gets_no_token():
    """command: collect makes no request, so the run step gives it no token (which an
    env-command could otherwise reach): the token's variable is empty for collect alone, and
    no other variable of the step carries the token."""
    env = run_step(action())["env"]
    assert env["IVY_MATRIX_TOKEN"] == TOKEN_UNLESS_COLLECT
    assert [k for k, v in env.items() if "inputs.token" in str(v)] == ["IVY_MATRIX_TOKEN"]


def test_inputs_are_exactly_the_options_the_action_has_inputs_for():
    """One input = one IVY_MATRIX_ variable = one option whose ``action`` is true; the options
    that are not inputs (the runner gives them, or almost no workflow sets them) are read
    from the config file or the step's env."""
    inputs = set(action()["inputs"]) - ACTION_ONLY
    assert inputs == {option.name.replace("_", "-") for option in OPTIONS if option.action}


def test_the_action_has_at_most_48_inputs():
    """Issue 23: an input is for what a workflow needs; the rest stays in the config file."""
    assert len(action()["inputs"]) <= 48


def test_an_option_that_is_no_input_is_read_from_the_step_env():
    """An option without an input, given as the variable a step's env sets, is used and named
    by its variable (there is no input to name)."""
    with pytest.raises(UsageError, match=r"^IVY_MATRIX_HISTORY got 0"):
        load_settings({}, {"GITHUB_ACTIONS": "true", "IVY_MATRIX_HISTORY": "0"})
    assert load_settings({}, {"GITHUB_ACTIONS": "true", "IVY_MATRIX_HISTORY": "20"}).history == 20


def option(name: str) -> Option:
    return next(o for o in OPTIONS if o.name == name.replace("-", "_"))


def test_input_defaults_agree_with_the_settings_defaults():
    """Where an input has a default, the setting has the same default."""
    for name, spec in action()["inputs"].items():
        if name in ACTION_ONLY or "${{" in str(spec["default"]):
            continue
        default = str(spec["default"])
        if not default and option(name).runner_env:
            continue  # the runner's variable fills it
        expected = option(name).default or ""
        assert default.replace(", ", "\n") == expected, name


def test_every_input_is_described_and_optional_with_a_quoted_string_default():
    """Inputs say what they do, are optional, and default to a string."""
    for name, spec in action()["inputs"].items():
        assert spec["description"], name
        assert spec["required"] is False, name
        assert isinstance(spec["default"], str), name


def test_every_uses_is_pinned_to_a_full_sha_with_a_version_comment():
    """Every `uses:` in the action and the workflows is a 40-hex SHA with a # v comment."""
    files = [ROOT / "action.yml", *sorted((ROOT / ".github" / "workflows").glob("*.yml"))]
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            match = re.search(r"^\s*(?:- )?uses:\s*(\S+)", line)
            if not match or match.group(1).startswith("./"):
                continue
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", match.group(1)), line
            assert re.search(r"# v\d", line), line


def test_no_run_script_expands_inputs():
    """No `run:` contains `${{ inputs.` (that would be template injection)."""
    for step in action()["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step.get("name")


def test_every_step_declares_bash_and_outputs_come_from_the_run_step():
    """Run steps use bash; every output is wired to the step that writes it."""
    doc = action()
    for step in doc["runs"]["steps"]:
        if "run" in step:
            assert step["shell"] == "bash"
    for name, spec in doc["outputs"].items():
        assert spec["value"] == "${{ steps.run.outputs." + name + " }}"
        assert spec["description"]


def option_reference() -> list[list[str]]:
    """The rows of docs/options.md's table of every option."""
    text = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    return table(section(text, "Every option"), ["option", "variable", "default", "meaning"])


def shown_default(name: str, spec: dict[str, str]) -> set[str]:
    """What the reference's default cell must show as code: the default, the runner variables
    that fill the option, and the expression the action passes instead."""
    o = option(name)
    shown = {o.default.replace("\n", ", ")} if o.default else set()
    shown |= {o.runner_env} if o.runner_env else set()
    shown |= set(o.also_env)
    return shown | ({spec["default"]} if "${{" in spec["default"] else set())


def test_option_reference_lists_every_option_once_in_order():
    """docs/options.md lists each option by its flag, in OPTIONS' order, and nothing else."""
    assert [row[0] for row in option_reference()] == [f"`{o.flag}`" for o in OPTIONS]


def test_option_reference_names_each_options_variable():
    """Each option's row names the IVY_MATRIX_ variable the action forwards its input through."""
    assert [row[1] for row in option_reference()] == [f"`{o.env}`" for o in OPTIONS]


def test_option_reference_states_each_default_and_nothing_else_as_code():
    """A default cell shows exactly the option's default, its runner variable and the
    expression the action passes, each as code; an option with none of them shows no code."""
    inputs = action()["inputs"]
    for row in option_reference():
        name = row[0].strip("`").removeprefix("--")
        spec = inputs.get(name, {"default": ""})
        assert set(code_spans(row[2])) == shown_default(name, spec), name


def test_option_reference_says_which_options_are_no_input():
    """An option that is not an input says so in its meaning, with how to give it instead."""
    for o, row in zip(OPTIONS, option_reference(), strict=True):
        said = "not an input of the action" in row[3].lower()
        assert said is (not o.action), o.flag


def test_option_reference_names_every_allowed_value():
    """An option with a closed set of values names each of them in its meaning, as code."""
    for o, row in zip(OPTIONS, option_reference(), strict=True):
        assert set(o.choices) <= set(code_spans(row[3])), o.flag


def test_option_reference_lists_the_action_only_inputs_with_their_defaults():
    """The inputs only the action's own steps read are listed with action.yml's defaults."""
    text = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    rows = table(section(text, "Inputs of the action only"), ["input", "default", "meaning"])
    inputs = action()["inputs"]
    listed = {row[0].strip("`"): code_spans(row[1]) for row in rows}
    assert listed == {
        name: [inputs[name]["default"]] if inputs[name]["default"] else [] for name in ACTION_ONLY
    }


def test_outputs_reference_lists_every_step_output():
    """docs/outputs.md lists each output of action.yml once, and no other."""
    text = (ROOT / "docs" / "outputs.md").read_text(encoding="utf-8")
    rows = table(section(text, "Step outputs"), ["output", "what it holds"])
    assert [row[0].strip("`") for row in rows] == list(action()["outputs"])


def run_script(
    step_id: str, tmp_path: Path, *, shows: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    """The ``run:`` script of one step of action.yml, run by bash as the runner would, with a
    stand-in Python that prints its arguments (and ``shows``: shell words, such as the
    variables it was given)."""
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\necho "python ran: $*"\n{shows}\n', encoding="utf-8")
    python.chmod(0o755)
    step = next(s for s in action()["runs"]["steps"] if s.get("id") == step_id)
    variables = {
        "PATH": "/usr/bin:/bin",
        "PYTHON": str(python),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        **env,
    }
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", step["run"]],
        env=variables,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("command", ["update", "publish"])
def test_the_command_input_runs_the_command_it_names(tmp_path, command):
    """update and publish reach the entrypoint as its one argument."""
    result = run_script("run", tmp_path, COMMAND=command)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"python ran: {ROOT}/entrypoint.py {command}\n"


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("render", "'render'"),
        ("update\n::warning title=x::injected", "a value that is not a plain word"),
        ("update\r\n::add-mask::update", "a value that is not a plain word"),
        ("x ##[error]injected", "a value that is not a plain word"),
        ("", "a value that is not a plain word"),
    ],
)
def test_a_bad_command_input_fails_the_step_before_use_and_injects_nothing(
    tmp_path, command, shown
):
    """Anything but update, collect, fan-in or publish exits 1 with one ::error:: line, before
    Python runs;
    a value with a line break or other markup is not echoed, so it starts no workflow command."""
    result = run_script("run", tmp_path, COMMAND=command)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"::error::input 'command' got {shown}"
        + (" (not shown)" if shown.startswith("a value") else "")
        + ": use update, collect, fan-in or publish"
    ]


SHOW_LEGS = 'printf "legs=%s|job=%s|leg-file=%s\\n" "$IVY_MATRIX_LEGS" "${IVY_MATRIX_JOB_ID-unset}" "$IVY_MATRIX_LEG_FILE"'


@pytest.mark.parametrize(
    ("artifacts", "legs"),
    [("true", "/tmp/r/ivy-matrix-legs\nmine/*.json"), ("false", "mine/*.json")],
)
def test_fan_in_runs_update_on_the_downloaded_legs_without_its_own_job_id(
    tmp_path, artifacts, legs
):
    """command fan-in runs update on the download folder (with artifacts) and the given legs,
    and unsets its own job id, so that no cell links the fan-in job."""
    result = run_script(
        "run",
        tmp_path,
        shows=SHOW_LEGS,
        COMMAND="fan-in",
        ARTIFACTS=artifacts,
        LEGS_FOLDER="/tmp/r/ivy-matrix-legs",
        IVY_MATRIX_LEGS="mine/*.json",
        IVY_MATRIX_JOB_ID="999",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == (
        f"python ran: {ROOT}/entrypoint.py update\nlegs={legs}|job=unset|leg-file=\n"
    )


@pytest.mark.parametrize(("given", "used"), [("", "/tmp/r/ivy-matrix-leg"), ("x.json", "x.json")])
def test_collect_writes_its_leg_file_into_a_folder_of_its_own_unless_told(tmp_path, given, used):
    """command collect runs collect, with the leg file in the runner's temporary folder unless
    leg-file says where; its job id stays."""
    result = run_script(
        "run",
        tmp_path,
        shows=SHOW_LEGS,
        COMMAND="collect",
        LEG_FOLDER="/tmp/r/ivy-matrix-leg",
        IVY_MATRIX_LEG_FILE=given,
        IVY_MATRIX_JOB_ID="101",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == (
        f"python ran: {ROOT}/entrypoint.py collect\nlegs=|job=101|leg-file={used}\n"
    )


def test_a_python_input_with_a_line_break_sets_no_other_output(tmp_path):
    """The python input goes to the plan step's output file only as one line, or not at
    all: a line break in it is refused."""
    result = run_script("plan", tmp_path, GIVEN_PYTHON="/usr/bin/python3\nvenv=/tmp/evil")
    assert result.returncode == 1
    assert result.stdout.startswith("::error::input 'python' holds a line break")
    assert not (tmp_path / "output").exists()
