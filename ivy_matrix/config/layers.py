"""The layers a setting's value can come from, first one wins: the command line, the
``IVY_MATRIX_*`` variable, the config file, the GitHub runner's variables, the default.

I/O: reads the config file (config/file.py) named by the first two layers; the environment is
handed in (config/settings.py reads it). Each value is converted to its option's kind, and where
it came from is kept, so that a message names the setting as it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ivy_matrix.config.file import read_config_file
from ivy_matrix.config.options import OPTION_BY_NAME, OPTIONS, convert
from ivy_matrix.results.naming import DashboardRule


def resolve_layers(
    given: Mapping[str, object], env: Mapping[str, str]
) -> tuple[dict[str, object], tuple[DashboardRule, ...], dict[str, str]]:
    """Each option's value from the first layer that gives one, converted; the rules; and
    where each value came from."""
    chosen: dict[str, tuple[object, str]] = {}
    for name, value in given.items():
        if value not in (None, "", [], ()):
            chosen[name] = (value, OPTION_BY_NAME[name].flag)
    for option in OPTIONS:
        value = env.get(option.env, "")
        if option.name not in chosen and value.strip():
            given_as = f"input '{option.name.replace('_', '-')}' ({option.env})"
            chosen[option.name] = (value, given_as if option.action else option.env)
    rules: tuple[DashboardRule, ...] = ()
    if "config" in chosen:
        config_path = Path(str(chosen["config"][0]))
        from_file, rules = read_config_file(config_path, OPTION_BY_NAME, chosen["config"][1])
        for name, value in from_file.items():
            if name not in chosen and value not in (None, ""):
                chosen[name] = (value, f"setting '{name.replace('_', '-')}' in {config_path}")
    for option in OPTIONS:
        if option.name in chosen:
            continue
        names = (option.runner_env, *option.also_env) if option.runner_env else option.also_env
        found = next(((n, env[n].strip()) for n in names if env.get(n, "").strip()), None)
        if found is not None:
            chosen[option.name] = (found[1], found[0])
        elif option.default is not None:
            chosen[option.name] = (option.default, "default")
    values = {
        name: convert(OPTION_BY_NAME[name], value, origin)
        for name, (value, origin) in chosen.items()
    }
    return values, rules, {name: origin for name, (_, origin) in chosen.items()}
