"""Versioned columns (``--backend-version``): a backend's column named with a recorded version.

Pure: no I/O. The setting is a comma-separated list of ``BACKEND@TEMPLATE`` items:
``jax@{jax}`` names the jax column ``jax@0.4.31`` when the leg's environment (environment.py)
records jax 0.4.31, so a version bump shows as a new column beside the old one instead of a
flip in one column. In a template, ``{PACKAGE}`` is that package's recorded version and
``{version}`` the version of the package named as the backend; ``*@TEMPLATE`` applies to every
backend no item names. A backend whose template names a package the environment does not
record keeps its plain name (the version is unknown, and a column must not be named by a
guess).

The renaming is applied where the results are read (``update`` and ``collect``), before any
cell is built, so every view (tables, history, blame, pull-request verdicts) sees the
versioned name as the column's name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ivy_matrix.errors import UsageError
from ivy_matrix.results.cells import Collected
from ivy_matrix.results.environment import Env

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ANY = "*"


def parse_backend_version(value: str) -> dict[str, str]:
    """The items of ``--backend-version``: backend (or ``*``) -> template.

    :class:`UsageError` for an item without ``@`` or a template without a placeholder."""
    rules: dict[str, str] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        backend, at, template = item.partition("@")
        if not at or not backend.strip() or not _PLACEHOLDER.search(template):
            raise UsageError(
                f"backend-version item {item!r:.80} is not BACKEND@TEMPLATE with a "
                f"{{package}} in the template (e.g. jax@{{jax}})"
            )
        rules[backend.strip()] = template.strip()
    return rules


def column_name(backend: str, env: Env, rules: Mapping[str, str]) -> str:
    """``backend``'s column with its version (``backend`` itself when no rule applies or a
    package the rule names is not recorded)."""
    template = rules.get(backend, rules.get(_ANY))
    if template is None:
        return backend
    versions = dict(env)
    missing = False

    def fill(match: re.Match[str]) -> str:
        nonlocal missing
        package = backend if match.group(1) == "version" else match.group(1)
        found = versions.get(package)
        if found is None:
            missing = True
            return ""
        return found

    filled = _PLACEHOLDER.sub(fill, template)
    return backend if missing else f"{backend}@{filled}"


def rename_backends(collected: Collected, env: Env, rules: Mapping[str, str]) -> None:
    """Name ``collected``'s columns by :func:`column_name` (in place, before any cell is
    built from it)."""
    if not rules or not env:
        return
    names = {b: column_name(b, env, rules) for b in collected.backends}
    names.update({b: column_name(b, env, rules) for b in collected.by_backend})
    if all(old == new for old, new in names.items()):
        return
    for rows in collected.dashboards.values():
        for row, cells in rows.items():
            rows[row] = {names.get(b, b): result for b, result in cells.items()}
    collected.by_backend = {names.get(b, b): n for b, n in collected.by_backend.items()}
