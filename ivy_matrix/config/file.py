"""The YAML config file (``--config``): settings and dashboard rules, read as untrusted input.

I/O: reads one file, at most 1 MiB of UTF-8, with YAML's safe loader and no aliases; config/settings.py
merges what it holds with the other layers. Every problem is a UsageError naming the file.
"""

from __future__ import annotations

import re
import string
import sys
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from ivy_matrix.config.options import did_you_mean
from ivy_matrix.errors import UsageError
from ivy_matrix.results.naming import DashboardRule


def compile_regex(value: str | None, name: str, *, group: bool) -> re.Pattern[str] | None:
    """``value`` compiled (None when empty); a UsageError naming the input when it is bad."""
    if not value:
        return None
    try:
        pattern = re.compile(value)
    except re.error as error:
        raise UsageError(f"{name} got {value!r}: not a valid regex ({error})") from None
    if group and "backend" not in pattern.groupindex:
        raise UsageError(
            f"{name} got {value!r}: it needs a named group (?P<backend>...) "
            f"that captures the backend name"
        )
    return pattern


MAX_CONFIG_BYTES = 1024 * 1024


if TYPE_CHECKING:
    import yaml


class _AliasError(Exception):
    """The config file uses a YAML alias (``*name``)."""

    def __init__(self, anchor: str, line: int) -> None:
        super().__init__(anchor, line)
        self.anchor = anchor
        self.line = line


def _load_yaml(text: str) -> object:
    """``text`` read with YAML's safe loader, without aliases: ``*name`` is refused
    (:class:`_AliasError`), so no alias bomb can expand.

    PyYAML is imported here, when a config file is given: its import costs every run's
    start-up more than reading a small result file, and most runs have no config file.
    ``collect`` needs nothing but the standard library otherwise, and may run on a Python
    without PyYAML (a matrix leg's): :func:`_require_pyyaml` then says what to do.
    """
    import yaml  # noqa: PLC0415  -- see above

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in PyYAML's stubs
                raise _AliasError(str(event.anchor), event.start_mark.line + 1)
            return super().compose_node(parent, index)

    return yaml.load(text, Loader=NoAliasLoader)  # noqa: S506  -- a SafeLoader subclass


def _read_config(path: Path, named: str) -> str:
    """The config file's text: at most MAX_CONFIG_BYTES of UTF-8, whatever kind of file it is.
    ``named``: the setting that named the file, as it was given (``--config``, the input)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise UsageError(
            f"{named} got {str(path)!r}: cannot read it ({error.strerror or error})"
        ) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise UsageError(
            f"config file {path} is larger than {MAX_CONFIG_BYTES // 1024} KiB; a config file "
            f"holds settings and dashboard rules: give a smaller file"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UsageError(f"config file {path} is not UTF-8 text ({error.reason})") from None


def read_config_file(
    path: Path, known: Collection[str], named: str = "--config"
) -> tuple[dict[str, object], tuple[DashboardRule, ...]]:
    """The settings (by option name, among ``known``) and dashboard rules a config file holds.

    ``config`` itself is not a setting a config file can give. ``named``: the setting that
    named the file, as it was given (``--config``, or the action's input and its variable).
    """
    text = _read_config(path, named)
    _require_pyyaml(path)
    import yaml  # noqa: PLC0415  -- see _load_yaml

    try:
        raw = _load_yaml(text)
    except _AliasError as error:
        raise UsageError(
            f"config file {path} line {error.line}: the YAML alias *{error.anchor} is not "
            f"allowed (a config file has no need for anchors and aliases); write the value out"
        ) from None
    except yaml.YAMLError as error:
        raise UsageError(f"config file {path} is not valid YAML: {_yaml_problem(error)}") from None
    except RecursionError:
        raise UsageError(
            f"config file {path} is nested too deeply to be an ivy-matrix config; "
            f"a config file is a mapping of settings"
        ) from None
    if raw is None:
        return {}, ()
    if not isinstance(raw, dict):
        raise UsageError(f"config file {path} must be a mapping of settings")
    values: dict[str, object] = {}
    rules: tuple[DashboardRule, ...] = ()
    for key, value in raw.items():
        name = str(key).replace("-", "_")
        if name == "dashboards":
            rules = _rules(value, path)
        elif name == "token":
            raise UsageError(
                f"config file {path}: 'token' does not belong in a file that is committed; "
                f"pass --token, or set IVY_MATRIX_TOKEN, GITHUB_TOKEN or GH_TOKEN"
            )
        elif name == "dashboard" and isinstance(value, list):
            raise UsageError(
                f"config file {path}: 'dashboard' takes one [CATEGORY/]TITLE for every test, "
                f"not a list; rules that name dashboards by test id go under 'dashboards' "
                f"(a list of match/title/category)"
            )
        elif name in known and name != "config":
            values[name] = value
        else:
            names = [*sorted(n.replace("_", "-") for n in known), "dashboards"]
            raise UsageError(
                f"config file {path}: unknown setting {key!r}; known: {', '.join(names)}"
                f"{did_you_mean(str(key), names)}"
            )
    return values, rules


def _require_pyyaml(path: Path) -> None:
    """A UsageError saying how to get PyYAML when this Python lacks it (the standard library
    alone: what the action's ``collect`` legs run on)."""
    try:
        import yaml  # noqa: F401, PLC0415  -- see _load_yaml
    except ImportError:
        raise UsageError(
            f"config file {path} is YAML, and reading it needs PyYAML, which this Python "
            f"({sys.executable}) does not have: install ivy-matrix's requirements into it "
            f"(pip install --require-hashes --no-deps -r requirements.lock), or give its "
            f"settings as options or inputs instead"
        ) from None


def _yaml_problem(error: yaml.YAMLError) -> str:
    """What is wrong and where, without PyYAML's quote of the lines around it: those can hold
    a secret (the file may set the token)."""
    import yaml  # noqa: PLC0415  -- see _load_yaml

    if not isinstance(error, yaml.MarkedYAMLError):
        return type(error).__name__
    mark = error.problem_mark or error.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    what = ", ".join(str(part) for part in (error.context, error.problem) if part)
    return where + (what or "unreadable")


_RULE_KEYS = {"match", "title", "category"}


def _check_placeholders(
    template: str, pattern: re.Pattern[str], path: Path, index: int, key: str
) -> None:
    """Every ``{name}`` in a rule's title or category must be a named group of its regex."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as error:
        raise UsageError(
            f"config file {path}: dashboards rule {index} {key} {template!r}: {error}"
        ) from None
    for name in fields:
        if name not in pattern.groupindex:
            groups = ", ".join(pattern.groupindex) or "none"
            raise UsageError(
                f"config file {path}: dashboards rule {index} {key} uses {{{name}}}, which is "
                f"not a named group of its 'match' regex (named groups: {groups})"
            )


def _rules(value: object, path: Path) -> tuple[DashboardRule, ...]:
    if not isinstance(value, list):
        raise UsageError(f"config file {path}: 'dashboards' must be a list of rules")
    rules = []
    for index, item in enumerate(value, start=1):
        if not isinstance(item, dict) or "match" not in item or "title" not in item:
            raise UsageError(
                f"config file {path}: dashboards rule {index} needs 'match' (a regex on the "
                f"test id) and 'title' (and may have 'category')"
            )
        unknown = sorted(str(key) for key in item if key not in _RULE_KEYS)
        if unknown:
            raise UsageError(
                f"config file {path}: dashboards rule {index} has unknown key(s) "
                f"{', '.join(map(repr, unknown))}; known: match, title, category"
            )
        pattern = compile_regex(
            str(item["match"]), f"config file {path}: dashboards rule {index} 'match'", group=False
        )
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
