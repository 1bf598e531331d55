"""Where a test case goes: which dashboard, which row, which backend column.

Pure: no I/O. The rules, in the order they are tried:

- **Backend**: a fixed name (one matrix leg), else the named group ``backend`` of a regex
  searched in the result file's path (a fan-in job holding every leg's files), else the named
  group ``backend`` of a regex searched in the test id.
- **Row**: the test function. A pytest parametrization (``test_conv2d[torch-cpu-False]``)
  collapses into its function (``test_conv2d``); a class-based test keeps its class
  (``TestConv.test_forward``).
- **Dashboard**: the first configured rule whose regex matches the test id, else a fixed
  dashboard, else the test module: ``...test_core.test_gradients`` becomes dashboard
  ``gradients`` in category ``core`` (``test_`` prefixes and ``_test`` suffixes are dropped).

The test id that rules match is ``classname::name`` as the result file gives them (``name``
alone when there is no classname).

**pytest's node ids** (:func:`node_prefix`: what the durations file keys its tests by, as
``pytest-split`` reads them): pytest writes a case's ``classname`` as its module's path with
``/`` as ``.`` and ``.py`` dropped, then its classes (``tests.nn.test_layers.TestConv``), and
its ``name`` as the function with its parametrization (``test_forward[cpu]``); its node id is
``tests/nn/test_layers.py::TestConv::test_forward[cpu]``. The module ends where ``file``
says (pytest's ``xunit1`` family writes it) when ``file`` is a prefix of the classname; else
at the last part before the trailing CapWords ones (classes are CapWords, modules
snake_case). What cannot be rebuilt: a folder or module whose name has a dot
(``tests/v1.2/test_x.py``), a class whose name is not CapWords (taken for a module), a
``--junit-prefix`` (taken for a folder), and tests that are not Python functions (doctests of
a ``.txt`` file, notebooks): their ids name no test pytest collects, and pytest-split gives
those tests the average duration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from ivy_matrix.model import CaseResult, DashboardId

FALLBACK_DASHBOARD = "tests"
UNNAMED = "(unnamed)"


@dataclass(frozen=True, slots=True, kw_only=True)
class DashboardRule:
    """Send tests whose id matches ``pattern`` to one dashboard.

    ``title`` and ``category`` may use the pattern's named groups as ``{group}``.
    """

    pattern: re.Pattern[str]
    title: str
    category: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class NamingRules:
    """How cases are named; built once from the settings."""

    backend: str | None = None
    backend_from_path: re.Pattern[str] | None = None
    backend_from_test: re.Pattern[str] | None = None
    dashboard: DashboardId | None = None
    rules: tuple[DashboardRule, ...] = ()


def test_id(case: CaseResult) -> str:
    """The id that dashboard rules and ``backend-from-test`` match: ``classname::name``."""
    return f"{case.classname}::{case.name}" if case.classname else case.name


def strip_parametrization(name: str) -> str:
    """``test_conv2d[torch-cpu-False]`` -> ``test_conv2d``; other names are kept."""
    if name.endswith("]"):
        head, bracket, _ = name.partition("[")
        if bracket and head:
            return head
    return name


def _is_class_component(part: str) -> bool:
    # Modules are snake_case by convention (PEP 8, pytest discovery); classes are CapWords.
    return part[:1].isupper()


def clean_part(part: str) -> str:
    """Drop the ``test_``/``tests_`` prefix or ``_test``/``_tests`` suffix of a module or folder."""
    for prefix in ("test_", "tests_"):
        if part.startswith(prefix) and len(part) > len(prefix):
            return part[len(prefix) :]
    for suffix in ("_test", "_tests"):
        if part.endswith(suffix) and len(part) > len(suffix):
            return part[: -len(suffix)]
    return part


def split_classname(classname: str, file: str = "", suite: str = "") -> tuple[DashboardId, str]:
    """Return the default dashboard and the class prefix for rows (``""`` or ``"Cls."``).

    ``file`` (pytest's ``file=`` attribute) tells exactly where the module ends; without it,
    trailing CapWords components are taken as classes.
    """
    parts = [p for p in classname.split(".") if p] if classname else []
    module_index = -1
    if file and parts:
        stem = PurePosixPath(file.replace("\\", "/")).stem
        for index in range(len(parts) - 1, -1, -1):
            if parts[index] == stem:
                module_index = index
                break
    if module_index < 0:
        module_index = len(parts) - 1
        while module_index >= 0 and _is_class_component(parts[module_index]):
            module_index -= 1
    classes = parts[module_index + 1 :]
    row_prefix = "".join(f"{c}." for c in classes)
    if module_index >= 0:
        title = clean_part(parts[module_index])
        category = clean_part(parts[module_index - 1]) if module_index >= 1 else ""
        return DashboardId(title=title, category=category), row_prefix
    if classes:
        # A bare class name (JUnit for Java, unittest without a package): one dashboard each.
        return DashboardId(title=classes[-1]), "".join(f"{c}." for c in classes[:-1])
    if file:
        return DashboardId(title=clean_part(PurePosixPath(file.replace("\\", "/")).stem)), ""
    return DashboardId(title=suite or FALLBACK_DASHBOARD), ""


class Namer:
    """Names cases by the rules: backend, dashboard and row.

    Stateless: the caller caches what repeats (collect.py keeps one place per classname).
    """

    def __init__(self, rules: NamingRules) -> None:
        self._rules = rules

    def backend_for_file(self, path: str) -> str | None:
        """The backend for every case of a file, when it does not depend on the case."""
        if self._rules.backend:
            return self._rules.backend
        if self._rules.backend_from_path is not None:
            match = self._rules.backend_from_path.search(path.replace("\\", "/"))
            if match and match.group("backend"):
                return match.group("backend")
        return None

    def backend_for_case(self, case: CaseResult) -> str | None:
        """The backend named inside the test id, by ``backend-from-test``."""
        if self._rules.backend_from_test is None:
            return None
        match = self._rules.backend_from_test.search(test_id(case))
        return match.group("backend") if match and match.group("backend") else None

    @property
    def matches_paths(self) -> bool:
        """Whether a file's backend comes from ``backend-from-path`` (not a fixed backend)."""
        return self._rules.backend_from_path is not None and not self._rules.backend

    @property
    def needs_test_id(self) -> bool:
        """Whether naming looks at each case's id (dashboard rules, backend-from-test)."""
        rules = self._rules
        return bool(rules.rules) or (rules.backend_from_test is not None and not rules.backend)

    def locate(self, case: CaseResult) -> tuple[DashboardId, str]:
        """The dashboard and row prefix that a case's classname alone decides."""
        dashboard, prefix = split_classname(case.classname, case.file, case.suite)
        if self._rules.dashboard is not None:
            dashboard = self._rules.dashboard
        return dashboard, prefix

    def ruled(self, case: CaseResult) -> DashboardId | None:
        """The dashboard the first matching ``dashboards`` rule names for the case's id."""
        if not self._rules.rules:
            return None
        tid = test_id(case)
        for rule in self._rules.rules:
            match = rule.pattern.search(tid)
            if match:
                groups = {k: v or "" for k, v in match.groupdict().items()}
                return DashboardId(
                    title=rule.title.format(**groups), category=rule.category.format(**groups)
                )
        return None

    def place(self, case: CaseResult) -> tuple[DashboardId, str]:
        """Return the dashboard and row of a case."""
        dashboard, prefix = self.locate(case)
        return self.ruled(case) or dashboard, row_name(prefix, case.name)


def row_name(prefix: str, name: str) -> str:
    """The row of a case: its classes' prefix and its name without the parametrization."""
    # Not cached: parametrized ids are mostly unique, and a cache would grow with the cases.
    return prefix + (strip_parametrization(name) or UNNAMED)


def node_prefix(classname: str, file: str = "") -> str | None:
    """The node id of a case of ``classname`` up to its name: ``path/to/test_x.py::Class::``
    (the module docstring; None without a classname)."""
    parts = [p for p in classname.split(".") if p]
    if not parts:
        return None
    module_end = 0
    if file:
        stem = file.replace("\\", "/").removesuffix(".py").removeprefix("./").split("/")
        if len(stem) <= len(parts) and parts[: len(stem)] == stem:
            module_end = len(stem)
    if not module_end:
        module_end = len(parts)
        while module_end > 1 and _is_class_component(parts[module_end - 1]):
            module_end -= 1
    path = "/".join(parts[:module_end]) + ".py"
    return "::".join([path, *parts[module_end:], ""])
