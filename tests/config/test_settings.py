"""Tests for config/settings.py: where each setting comes from, and how bad settings are reported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ivy_matrix.config.file import MAX_CONFIG_BYTES
from ivy_matrix.config.options import OPTION_BY_NAME, FailOn
from ivy_matrix.config.settings import Settings, load_settings
from ivy_matrix.errors import ExitCode, InputError, UsageError
from ivy_matrix.results.jobs import DEFAULT_SERVER_URL
from ivy_matrix.views.style import Style

ENTRYPOINT = Path(__file__).resolve().parents[2] / "entrypoint.py"


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` and return the path."""
    path.write_text(text, encoding="utf-8")
    return path


# --- precedence -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layers", "expected"),
    [
        (("cli", "env", "config", "runner"), 4),
        (("env", "config", "runner"), 3),
        (("config", "runner"), 2),
        (("runner",), 1),
        ((), None),
    ],
)
def test_command_line_beats_env_beats_config_beats_runner(tmp_path, layers, expected):
    """Each layer of a setting hides the ones below it."""
    config = write(tmp_path / "ivy.yml", "run-id: 2\n")
    given: dict[str, object] = {"config": config if "config" in layers else None}
    env = {}
    if "cli" in layers:
        given["run_id"] = "4"
    if "env" in layers:
        env["IVY_MATRIX_RUN_ID"] = "3"
    if "runner" in layers:
        env["GITHUB_RUN_ID"] = "1"

    settings = load_settings(given, env)

    assert settings.run_id == expected


def test_runner_variables_fill_run_repository_and_server():
    """GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT, GITHUB_REPOSITORY and GITHUB_SERVER_URL are defaults."""
    env = {
        "GITHUB_RUN_ID": "123",
        "GITHUB_RUN_ATTEMPT": "3",
        "GITHUB_REPOSITORY": "octo/ivy",
        "GITHUB_SERVER_URL": "https://ghe.example.com",
        "GITHUB_ACTIONS": "true",
    }

    settings = load_settings({}, env)

    assert (settings.run_id, settings.run_attempt) == (123, 3)
    assert settings.repository == "octo/ivy"
    assert settings.server_url == "https://ghe.example.com"
    assert settings.github_actions is True


def test_defaults_apply_when_nothing_is_given():
    """With no input at all, every setting has its documented default."""
    settings = load_settings({}, {})

    assert settings.junit == ()
    assert settings.run_id is None
    assert settings.run_attempt == 1
    assert settings.server_url == DEFAULT_SERVER_URL
    assert settings.store == Path(".ivy-matrix")
    assert settings.output_dir is None
    assert settings.fail_on is FailOn.NOTHING
    assert settings.style is Style.IVY
    assert settings.history == 10
    assert settings.retire_after_runs == 100
    assert settings.github_actions is False


@pytest.mark.parametrize(
    ("given", "env", "config", "expected"),
    [
        ({"backend": ""}, {"IVY_MATRIX_BACKEND": "env"}, "", "env"),
        ({"backend": None}, {"IVY_MATRIX_BACKEND": "  "}, "backend: file\n", "file"),
        ({}, {"IVY_MATRIX_BACKEND": ""}, "backend: ''\n", None),
        ({}, {"IVY_MATRIX_BACKEND": "\n"}, "backend:\n", None),
    ],
    ids=["empty-cli", "blank-env", "empty-config", "null-config"],
)
def test_empty_values_count_as_not_given(tmp_path, given, env, config, expected):
    """An empty or blank value at one layer lets the next layer speak."""
    given = {**given, "config": write(tmp_path / "ivy.yml", config)}

    assert load_settings(given, env).backend == expected


def test_an_empty_config_value_lets_the_runner_variable_through(tmp_path):
    """repository: '' in the config file does not hide GITHUB_REPOSITORY."""
    config = write(tmp_path / "ivy.yml", "repository: ''\n")

    settings = load_settings({"config": config}, {"GITHUB_REPOSITORY": "o/r"})

    assert settings.repository == "o/r"


def test_an_empty_runner_variable_falls_back_to_the_default():
    """GITHUB_SERVER_URL set to '' gives the default server."""
    assert load_settings({}, {"GITHUB_SERVER_URL": ""}).server_url == DEFAULT_SERVER_URL


def test_config_file_can_be_named_by_the_env_var(tmp_path):
    """IVY_MATRIX_CONFIG names the config file when the command line does not."""
    config = write(tmp_path / "ivy.yml", "backend: from-file\n")

    settings = load_settings({}, {"IVY_MATRIX_CONFIG": str(config)})

    assert settings.backend == "from-file"
    assert settings.config == config


# --- lists and conversions ----------------------------------------------------------------------


def test_list_settings_are_newline_separated_in_the_environment():
    """IVY_MATRIX_JUNIT holds one glob per line; blank lines and padding are dropped."""
    env = {"IVY_MATRIX_JUNIT": "results/*.xml\r\n\n   other/**/r[a,b].xml  \n!results/skip.xml\n"}

    assert load_settings({}, env).junit == (
        "results/*.xml",
        "other/**/r[a,b].xml",
        "!results/skip.xml",
    )


def test_list_settings_come_from_the_config_as_a_list_or_a_string(tmp_path):
    """junit in YAML may be a list or a block string; the command line replaces it whole."""
    as_list = write(tmp_path / "a.yml", "junit:\n  - a.xml\n  - b/*.xml\n")
    as_text = write(tmp_path / "b.yml", "junit: |\n  a.xml\n  b/*.xml\n")

    assert load_settings({"config": as_list}, {}).junit == ("a.xml", "b/*.xml")
    assert load_settings({"config": as_text}, {}).junit == ("a.xml", "b/*.xml")
    assert load_settings({"config": as_list, "junit": ["c.xml"]}, {}).junit == ("c.xml",)


def test_config_keys_may_be_kebab_or_snake_case(tmp_path):
    """fail-on and retire_after_runs are both understood in the config file."""
    config = write(
        tmp_path / "ivy.yml",
        "fail-on: failures\nretire_after_runs: 7\nstyle: compact\nhistory: 3\n",
    )

    settings = load_settings({"config": config}, {})

    assert settings.fail_on is FailOn.FAILURES
    assert settings.retire_after_runs == 7
    assert settings.style is Style.COMPACT
    assert settings.history == 3


@pytest.mark.parametrize(
    ("given", "env", "config", "message"),
    [
        ({"history": "x"}, {}, "", "--history got 'x': not a whole number"),
        ({}, {"IVY_MATRIX_JOB_ID": "1.5"}, "", "input 'job-id' (IVY_MATRIX_JOB_ID) got '1.5'"),
        ({}, {}, "history: many\n", "setting 'history' in "),
        ({}, {}, "fail-on: always\n", "allowed values: failures, errors, new, nothing"),
        ({}, {}, "junit: 5\n", "must be a list of strings, got 5"),
        ({}, {"GITHUB_RUN_ID": "-3"}, "", "GITHUB_RUN_ID got -3: ids are positive"),
        ({}, {"IVY_MATRIX_RETIRE_AFTER_RUNS": "5000"}, "", "allowed: 0 (never) to 1000"),
        ({}, {"IVY_MATRIX_HISTORY": "-1"}, "", "keep at least 1 result"),
        ({}, {"GITHUB_REPOSITORY": "just-a-name"}, "", "expected OWNER/REPO"),
        ({"dashboard": " / "}, {}, "", "dashboard name '/' is empty"),
    ],
)
def test_bad_values_name_where_they_came_from(tmp_path, given, env, config, message):
    """A value that cannot be used raises InputError saying which input gave it."""
    given = {**given, "config": write(tmp_path / "ivy.yml", config)}

    with pytest.raises(InputError) as error:
        load_settings(given, env)

    assert message in str(error.value)


def test_an_unreadable_config_file_is_named_as_it_was_given(tmp_path):
    """The command line's --config is named --config (it said "input 'config'"); the input
    is named with its variable (test_missing_config_file_names_the_input)."""
    missing = str(tmp_path / "nope.yml")
    with pytest.raises(InputError) as error:
        load_settings({"config": missing}, {})
    assert str(error.value).startswith(f"--config got {missing!r}: cannot read it")


def test_history_zero_is_refused():
    """history 0 is refused like any value below 1, not silently replaced by the default."""
    with pytest.raises(InputError, match="keep at least 1 result"):
        load_settings({"history": "0"}, {})


@pytest.mark.parametrize(
    ("given", "env", "message"),
    [
        ({"matrix_size": "4"}, {}, "--matrix-size: retired"),
        ({"matrix_index": "x"}, {}, "--matrix-index: retired"),
        ({}, {"IVY_MATRIX_LEG_METADATA": "m.json"}, "IVY_MATRIX_LEG_METADATA: retired"),
        (
            {},
            {
                "GITHUB_ACTIONS": "true",
                "IVY_MATRIX_MATRIX_SIZE": "4",
                "IVY_MATRIX_MATRIX_INDEX": "1",
            },
            "input 'matrix-size' and input 'matrix-index': retired",
        ),
    ],
)
def test_a_retired_option_stops_the_run_naming_what_to_use_instead(given, env, message):
    """matrix-size, matrix-index and leg-metadata, however given (a flag, a variable, the
    action's input) and whatever their value, are a usage error (exit 2) that names them,
    the collect and fan-in commands and the fan-in recipe."""
    with pytest.raises(UsageError, match=message) as raised:
        load_settings(given, env)
    assert raised.value.exit_code is ExitCode.USAGE
    text = str(raised.value)
    assert "command: collect" in text
    assert "command: fan-in" in text
    assert "docs/workflows.md#a-fan-in-job-after-the-matrix-any-width" in text


def test_a_retired_option_in_the_config_file_stops_the_run_too(tmp_path):
    """A config file of 0.2.0 that still sets matrix-size is refused the same way."""
    config = tmp_path / "ivy.yml"
    config.write_text("matrix-size: 4\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"setting 'matrix-size' in .*ivy.yml: retired"):
        load_settings({"config": str(config)}, {})


# --- the YAML file ------------------------------------------------------------------------------


def test_dashboard_rules_are_read_in_order(tmp_path):
    """dashboards: is a list of match/title/category rules, kept in order with their groups."""
    config = write(
        tmp_path / "ivy.yml",
        "dashboards:\n"
        "  - match: 'test_(?P<area>nn)\\.test_(?P<mod>\\w+)'\n"
        "    title: '{mod}'\n"
        "    category: 'nn-{area}'\n"
        "  - match: 'frontends'\n"
        "    title: frontends\n",
    )

    rules = load_settings({"config": config}, {}).dashboard_rules

    assert [(r.pattern.pattern, r.title, r.category) for r in rules] == [
        (r"test_(?P<area>nn)\.test_(?P<mod>\w+)", "{mod}", "nn-{area}"),
        ("frontends", "frontends", ""),
    ]
    assert sorted(rules[0].pattern.groupindex) == ["area", "mod"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bakend: torch\n", "unknown setting 'bakend'; known: "),
        ("config: other.yml\n", "unknown setting 'config'"),
        ("- backend\n", "must be a mapping of settings"),
        ("dashboards: {match: x}\n", "'dashboards' must be a list of rules"),
        ("dashboards:\n  - match: x\n", "dashboards rule 1 needs 'match'"),
        ("dashboards:\n  - title: x\n  - title: y\n", "dashboards rule 1 needs"),
        ("dashboards:\n  - {match: '(', title: t}\n", "dashboards rule 1 'match' got '('"),
        ("backend: [torch, numpy]\n", "setting 'backend' in "),
        ("dashboard: [{match: x, title: y}]\n", "'dashboard' takes one [CATEGORY/]TITLE"),
        ("dashboard: {title: y}\n", "setting 'dashboard' in "),
        ("history: [3]\n", "setting 'history' in "),
        ("junit: [[a.xml]]\n", "setting 'junit' in "),
        ("junit: [{a: b}]\n", "must be a list of strings"),
    ],
    ids=[
        "typo",
        "config-in-config",
        "not-a-mapping",
        "rules-not-list",
        "no-title",
        "no-match",
        "bad-regex",
        "a-list-for-backend",
        "a-list-for-dashboard",
        "a-mapping-for-dashboard",
        "a-list-for-a-number",
        "a-list-in-a-list",
        "a-mapping-in-a-list",
    ],
)
def test_config_mistakes_name_the_file_and_the_key(tmp_path, text, message):
    """An unknown key, a wrong shape or a bad rule is an InputError naming what is wrong."""
    config = write(tmp_path / "ivy.yml", text)

    with pytest.raises(InputError) as error:
        load_settings({"config": config}, {})

    assert message in str(error.value)
    if "input 'dashboards" not in message:
        assert str(config) in str(error.value)


def test_unknown_key_message_lists_the_known_settings(tmp_path):
    """The unknown-key message lists the settings the file may hold, kebab-cased."""
    config = write(tmp_path / "ivy.yml", "fail_onn: failures\n")

    with pytest.raises(InputError) as error:
        load_settings({"config": config}, {})

    assert "fail-on" in str(error.value)
    assert "dashboards" in str(error.value)


def test_bad_yaml_names_the_file(tmp_path):
    """A file that is not YAML is an InputError naming it."""
    config = write(tmp_path / "broken.yml", "backend: [torch\n")

    with pytest.raises(InputError) as error:
        load_settings({"config": config}, {})

    assert f"config file {config} is not valid YAML" in str(error.value)


def test_yaml_aliases_are_refused_with_the_line(tmp_path):
    """An alias (``*name``) is an InputError naming the file and line: a config never needs one."""
    config = write(tmp_path / "ivy.yml", "history: &h 5\nretire-after-runs: *h\n")

    with pytest.raises(InputError) as error:
        load_settings({"config": config}, {})

    assert f"config file {config} line 2: the YAML alias *h is not allowed" in str(error.value)


def test_a_config_file_over_the_size_cap_is_refused_by_name(tmp_path):
    """A config file over 1 MiB is refused unread, naming the file, even if it is valid YAML."""
    config = write(tmp_path / "big.yml", "# " + "x" * MAX_CONFIG_BYTES + "\nhistory: 3\n")

    with pytest.raises(InputError) as error:
        load_settings({"config": config}, {})

    assert f"config file {config} is larger than 1024 KiB" in str(error.value)


def test_a_deeply_nested_config_file_is_refused_by_name(tmp_path):
    """YAML nested a hundred thousand deep is an InputError naming the file, not a crash."""
    config = write(tmp_path / "deep.yml", "[" * 100_000)

    with pytest.raises(InputError) as error:
        load_settings({"config": config}, {})

    assert f"config file {config} is nested too deeply" in str(error.value)


_BOMB = "".join(
    f"{name}: &{name} [{','.join([f'*{previous}'] * 9)}]\n"
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
)


# Runs the entry point with at most 1 GiB of address space, so a runaway read fails safely.
_LIMITED = (
    "import resource, runpy, sys; "
    "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
    "sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize("kind", ["alias-bomb", "dev-zero"])
def test_hostile_config_files_exit_2_with_bounded_memory(tmp_path, kind):
    """An alias bomb and an endless device as --config exit 2 (usage) with one message, within 1 GiB."""
    if kind == "dev-zero":
        config = Path("/dev/zero")
    else:
        config = write(tmp_path / "bomb.yml", 'a: &a ["lol","lol","lol","lol"]\n' + _BOMB)

    argv = ["update", "--junit", "r.xml", "--backend", "t", "--config", str(config)]

    completed = subprocess.run(
        [sys.executable, "-c", _LIMITED, str(ENTRYPOINT), *argv],
        cwd=tmp_path,
        env={"PYTHONUTF8": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert completed.stdout == ""
    assert completed.stderr.startswith(f"error: config file {config} ")


def test_missing_config_file_names_the_input(tmp_path):
    """A config path that cannot be read names the input and the path."""
    missing = tmp_path / "nope.yml"

    with pytest.raises(InputError) as error:
        load_settings({}, {"IVY_MATRIX_CONFIG": str(missing)})

    assert f"input 'config' (IVY_MATRIX_CONFIG) got {str(missing)!r}: cannot read it" in str(
        error.value
    )


def test_an_empty_config_file_sets_nothing(tmp_path):
    """An empty YAML document is allowed and changes no setting."""
    config = write(tmp_path / "ivy.yml", "# nothing yet\n")

    assert load_settings({"config": config}, {}).backend is None


def test_unknown_keys_in_a_dashboards_rule_are_refused(tmp_path):
    """A misspelt key inside a dashboards rule is refused with its name, like top-level keys."""
    config = write(tmp_path / "ivy.yml", "dashboards:\n  - {match: x, title: t, catgory: c}\n")

    with pytest.raises(InputError, match="catgory"):
        load_settings({"config": config}, {})


def test_a_config_file_that_is_not_utf8_is_refused_by_name(tmp_path):
    """A config file in another encoding is an InputError naming the file."""
    config = tmp_path / "latin.yml"
    config.write_bytes("backend: caf\u00e9\n".encode("latin-1"))

    with pytest.raises(InputError, match=r"latin\.yml"):
        load_settings({"config": config}, {})


def test_settings_defaults_are_the_option_defaults():
    """Settings built from nothing equal settings resolved from no input: OPTIONS' defaults."""
    assert Settings() == load_settings({}, {})
    assert Settings().retire_after_runs == int(OPTION_BY_NAME["retire_after_runs"].default or "")


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("false", False), (True, True)])
def test_boolean_options_are_real_booleans(value, expected):
    """dry-run and pin-index are bools, from the command line, the environment or YAML."""
    settings = load_settings({"dry_run": value, "pin_index": value}, {})
    assert settings.dry_run is expected
    assert settings.pin_index is expected


# ------------------------------------------------------------ secrets (issue 24)

TOKEN = "4f1d0c3e9b7a26c58e1f0d4b3a2c9e8f7d6b5a41"


def test_redact_patterns_come_from_the_config_file_and_hide_their_secrets(tmp_path):
    """redact in the config file is a list of regexes; the redactor hides their matches, the
    token and the runner's credentials beside them."""
    config = write(tmp_path / "ivy.yml", "redact:\n  - 'corp-\\d{6}'\n  - 'pw=\\S+'\n")
    env = {"IVY_MATRIX_TOKEN": TOKEN, "ACTIONS_RUNTIME_TOKEN": "runtime-credential-1"}
    redact = load_settings({"config": config}, env).redactor()
    said = f"{TOKEN} corp-204518 pw=hunter2 runtime-credential-1 kept"
    assert redact(said) == "*** *** *** *** kept"


@pytest.mark.parametrize(
    ("pattern", "said"),
    [("(unclosed", "not a valid regex"), ("x*", "it matches an empty text")],
    ids=["not a regex", "matches nothing"],
)
def test_a_redact_pattern_that_cannot_work_is_refused_naming_it(pattern, said):
    """A pattern that is no regex, or that matches an empty text (it would put *** between
    every two characters), is a usage error naming the input and the pattern."""
    with pytest.raises(UsageError) as raised:
        load_settings({}, {"IVY_MATRIX_REDACT": pattern, "GITHUB_ACTIONS": "true"})
    assert f"input 'redact' got {pattern!r}" in str(raised.value)
    assert said in str(raised.value)
