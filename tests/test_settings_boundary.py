"""The configuration stops at the commands: no other part of ivy_matrix imports it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ivy_matrix"
CONFIG = "ivy_matrix.config"
# Parts that may see the configuration: the command line and the commands (and config itself).
ALLOWED = ("cli.py", "commands/", "config/")


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function, by its full name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def config_importers() -> set[str]:
    """The modules of ivy_matrix, outside cli.py, commands/ and config/, that import config."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name.startswith(ALLOWED):
            continue
        if any(module == CONFIG or module.startswith(f"{CONFIG}.") for module in imported(path)):
            found.add(name)
    return found


def test_only_the_commands_and_the_cli_import_the_configuration():
    """Stores, targets, GitHub, issues and the pure core take values: none imports config."""
    assert config_importers() == set()


def test_the_import_finder_sees_imports_inside_functions(tmp_path):
    """An import of config inside a function counts as much as one at the top of a module."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from ivy_matrix.config import settings\n", encoding="utf-8")

    assert "ivy_matrix.config.settings" in imported(module)
