"""The rules ARCHITECTURE.md states, held against the code's own imports.

The import graph is read from the source (top-level imports and imports inside functions alike)
and checked for what the map promises: no cycles; pure modules (their docstring says "Pure")
import only pure modules and nothing that reaches files, processes or the network; every other
module imports only from its own layer or below; only the commands and the command line see the
configuration; no three modules share a name prefix outside a package of that name; no function
takes more than 10 parameters (pass a few frozen values instead of a long list).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ivy_matrix"

# The layers of modules that do I/O, lowest first: a module may import its own layer and any
# layer below, never one above. Pure modules sit below all of them, wherever their package is.
LAYERS = (
    ("runner",),
    ("github",),
    ("stores",),
    ("issues", "pr", "targets", "site"),
    ("config",),
    ("commands",),
    ("cli", "__main__"),
)
# Standard and third-party modules that reach files, processes, the clock's sleep or the network:
# a pure module imports none of them.
IO_MODULES = frozenset(
    {
        "concurrent",
        "fcntl",
        "github",
        "glob",
        "http",
        "io",
        "msvcrt",
        "os",
        "requests",
        "shutil",
        "socket",
        "subprocess",
        "sys",
        "tempfile",
        "threading",
        "urllib3",
    }
)
_PURE = re.compile(r"^Pure\b", re.MULTILINE)


def module_name(path: Path) -> str:
    """``ivy_matrix/issues/store.py`` -> ``ivy_matrix.issues.store``; a package is its ``__init__``."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path) -> tuple[set[str], set[str]]:
    """The ivy_matrix modules ``path`` imports, and the top-level names of every other import."""
    ours: set[str] = set()
    others: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = ours if alias.name.split(".")[0] == "ivy_matrix" else others
                target.add(alias.name if target is ours else alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "ivy_matrix":
                others.add(node.module.split(".")[0])
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                ours.add(full if full in MODULES else node.module)
    others.discard("__future__")
    return ours, others


GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def is_pure(name: str) -> bool:
    """Whether the module's docstring declares it pure (a paragraph starting "Pure")."""
    doc = ast.get_docstring(ast.parse(MODULES[name].read_text(encoding="utf-8"))) or ""
    return bool(_PURE.search(doc))


def layer_of(name: str) -> int:
    """The layer of a module that does I/O (its first package below ivy_matrix, or cli)."""
    parts = name.split(".")
    top = parts[1] if len(parts) > 1 else ""
    for number, members in enumerate(LAYERS, start=1):
        if top in members:
            return number
    return 0


def test_the_package_has_no_import_cycles():
    """Following imports from any module never leads back to it."""
    cycles = []
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(GRAPH[name][0]):
            if target == name or target not in MODULES:
                continue
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in MODULES:
        if name not in state:
            visit(name, [name])
    assert cycles == []


@pytest.mark.parametrize("name", sorted(n for n in MODULES if is_pure(n)))
def test_a_pure_module_imports_only_pure_modules(name):
    """The core computes: it imports no module that does I/O, of ours or of anyone's."""
    ours, others = GRAPH[name]
    impure = sorted(target for target in ours if target in MODULES and not is_pure(target))
    assert (impure, sorted(others & IO_MODULES)) == ([], [])


def test_every_module_that_is_not_pure_belongs_to_a_layer():
    """I/O lives in a package (or the command line), never beside the pure core at the top."""
    loose = sorted(n for n in MODULES if not is_pure(n) and layer_of(n) == 0)
    # Package faces with no code of their own are neither pure nor I/O.
    assert [n for n in loose if MODULES[n].read_text(encoding="utf-8").count("\n") > 8] == []


def test_no_import_points_back_up_a_layer():
    """Stores never import issues, pr or targets; nothing below the commands imports them."""
    upward = sorted(
        f"{name} -> {target}"
        for name, (ours, _) in GRAPH.items()
        if not is_pure(name)
        for target in ours
        if target in MODULES and not is_pure(target) and layer_of(target) > layer_of(name)
    )
    assert upward == []


def test_only_the_commands_and_the_cli_import_the_configuration():
    """Stores, targets, GitHub, issues, pr and the core take values: none imports config."""
    seeing = sorted(
        name
        for name, (ours, _) in GRAPH.items()
        if layer_of(name) not in {5, 6, 7}
        and any(t == "ivy_matrix.config" or t.startswith("ivy_matrix.config.") for t in ours)
    )
    assert seeing == []


def test_no_three_modules_share_a_prefix_outside_a_package_of_that_name():
    """``issue_a``, ``issue_b``, ``issue_c`` would be a package in disguise."""
    prefixes: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in MODULES.values():
        stem = path.stem
        if "_" in stem.strip("_"):
            prefixes[(str(path.parent), stem.strip("_").split("_")[0])].append(stem)
    crowded = {key: stems for key, stems in prefixes.items() if len(stems) >= 3}
    assert crowded == {}


def test_the_checks_see_an_import_inside_a_function(tmp_path):
    """An import inside a function counts as much as one at the top of a module."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from ivy_matrix.config import settings\n", encoding="utf-8")

    assert "ivy_matrix.config.settings" in imports_of(module)[0]


def test_the_pure_marker_is_read_from_a_paragraph_start():
    """Only a paragraph that starts with "Pure" declares a module pure."""
    assert _PURE.search("Reads things.\n\nPure: no I/O.")
    assert not _PURE.search("I/O, except the Pure parts.")


# Issue 23: a function or constructor that needs more than this many values takes a few frozen
# values instead (the branch store's place, writing and retries: stores/branch.py).
MAX_PARAMETERS = 10
# Functions allowed more, each with the reason; empty since issue 23 (issues/publish.py's
# publish_issues had 11 and was rewritten before it landed).
WIDE_ALLOWED: frozenset[tuple[str, str]] = frozenset()


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Every parameter a caller can pass (``*args`` and ``**kwargs`` count one each), the
    ``self`` or ``cls`` of a method left out."""
    arguments = function.args
    names = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
    if names and names[0] in {"self", "cls"}:
        names = names[1:]
    return len(names) + (arguments.vararg is not None) + (arguments.kwarg is not None)


def wide_functions(path: Path) -> list[tuple[str, int, int]]:
    """(name, line, parameters) of each function or method in ``path`` with more than
    MAX_PARAMETERS parameters."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            count = parameter_count(node)
            if count > MAX_PARAMETERS:
                found.append((node.name, node.lineno, count))
    return found


def test_no_function_takes_more_than_ten_parameters():
    """No function, method or constructor in ivy_matrix/ takes more than 10 parameters (self
    left out): past that, group them into a few frozen values."""
    wide = [
        f"{MODULES[name].relative_to(PACKAGE.parent)}:{line} {function}() takes {count} "
        f"parameters, more than {MAX_PARAMETERS}: pass a few frozen values (a dataclass "
        f"grouping where, how and what) instead of a long list"
        for name in MODULES
        for function, line, count in wide_functions(MODULES[name])
        if (name, function) not in WIDE_ALLOWED
    ]
    assert wide == [], "\n".join(wide)


def test_the_parameter_count_leaves_out_self_and_counts_star_arguments(tmp_path):
    """``self`` is not counted; ``*args`` and ``**kwargs`` are one each; 11 is too many."""
    module = tmp_path / "m.py"
    module.write_text(
        "class C:\n"
        "    def m(self, a, b, /, c, *rest, d, e=1, **more): ...\n"
        "def wide(a, b, c, d, e, f, g, h, i, j, k): ...\n"
        "def narrow(a, b, c, d, e, f, g, h, i, j): ...\n",
        encoding="utf-8",
    )
    tree = ast.parse(module.read_text(encoding="utf-8"))
    counts = {
        node.name: parameter_count(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
    }
    assert counts == {"m": 7, "wide": 11, "narrow": 10}
    assert wide_functions(module) == [("wide", 3, 11)]
