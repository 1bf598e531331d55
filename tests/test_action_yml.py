"""Meta tests: action.yml, the settings in config/settings.py and the README agree with each other."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ivy_matrix.config.options import OPTIONS, Option

ROOT = Path(__file__).resolve().parents[1]
# Inputs the action's own shell steps consume; they are not ivy-matrix settings.
ACTION_ONLY = {"python", "command"}


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
        assert env[variable] == "${{ inputs." + name + " }}", name
    forwarded = {k for k in env if k.startswith("IVY_MATRIX_")}
    assert len(forwarded) == len(set(doc["inputs"]) - ACTION_ONLY)


def test_inputs_are_exactly_the_settings_config_reads():
    """One input = one IVY_MATRIX_ variable = one Settings field, with no exceptions."""
    inputs = set(action()["inputs"]) - ACTION_ONLY
    assert inputs == {option.name.replace("_", "-") for option in OPTIONS}


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
            match = re.search(r"uses:\s*(\S+)", line)
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


def test_readme_lists_every_option():
    """The README's option table names every setting."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for o in OPTIONS:
        assert f"`{o.flag}`" in readme, o.flag
