"""Tests for naming.py: which dashboard, row and backend a test case lands in."""

from __future__ import annotations

import re

import pytest

from ivy_matrix.model import CaseResult, DashboardId
from ivy_matrix.results.naming import (
    DashboardRule,
    Namer,
    NamingRules,
    node_prefix,
    split_classname,
    strip_parametrization,
)

IVY = "ivy_tests.test_ivy.test_functional.test_core.test_gradients"


def test_parametrizations_collapse_into_their_function():
    """``test_conv2d[torch-cpu-False]`` is the row ``test_conv2d``."""
    assert strip_parametrization("test_conv2d[torch-cpu-False]") == "test_conv2d"
    assert strip_parametrization("test_plain") == "test_plain"
    assert strip_parametrization("[weird]") == "[weird]"


def test_ivy_module_becomes_dashboard_with_folder_as_category():
    """``...test_core.test_gradients`` is dashboard ``gradients`` in category ``core``."""
    assert split_classname(IVY) == (DashboardId(title="gradients", category="core"), "")


def test_class_based_tests_keep_their_class_in_the_row():
    """A pytest class stays in the row name, and the module still names the dashboard."""
    namer = Namer(NamingRules(backend="torch"))
    case = CaseResult(name="test_forward[x]", classname="tests.nn.test_layers.TestConv")
    assert namer.place(case) == (
        DashboardId(title="layers", category="nn"),
        "TestConv.test_forward",
    )


def test_file_attribute_tells_where_the_module_ends():
    """With pytest's ``file=``, a CapWords module is still a module."""
    dashboard, prefix = split_classname("pkg.Models.Inner", file="pkg/Models.py")
    assert (dashboard, prefix) == (DashboardId(title="Models", category="pkg"), "Inner.")


def test_java_style_classes_group_by_package_and_bare_classes_by_class():
    """JUnit for Java groups by package; a lone class names its own dashboard."""
    assert split_classname("com.acme.CalculatorTest") == (
        DashboardId(title="acme", category="com"),
        "CalculatorTest.",
    )
    assert split_classname("SparkTests") == (DashboardId(title="SparkTests"), "")
    assert split_classname("", suite="go-suite") == (DashboardId(title="go-suite"), "")


def test_backend_comes_from_the_fixed_name_then_the_path_then_the_test_id():
    """Each backend source is used in its turn."""
    fixed = Namer(NamingRules(backend="torch", backend_from_path=re.compile(r"(?P<backend>numpy)")))
    assert fixed.backend_for_file("results/numpy/x.xml") == "torch"
    by_path = Namer(NamingRules(backend_from_path=re.compile(r"results-(?P<backend>\w+)/")))
    assert by_path.backend_for_file("dl/results-jax/junit.xml") == "jax"
    assert by_path.backend_for_file("dl/other/junit.xml") is None
    by_test = Namer(NamingRules(backend_from_test=re.compile(r"\[(?P<backend>torch|jax)-")))
    assert by_test.backend_for_case(CaseResult(name="test_x[jax-cpu]", classname=IVY)) == "jax"
    assert by_test.backend_for_case(CaseResult(name="test_x[cpu]", classname=IVY)) is None


def test_config_rules_pick_the_dashboard_with_named_groups():
    """The first matching rule names the dashboard, using the regex's groups."""
    rules = (
        DashboardRule(
            pattern=re.compile(r"test_core\.test_(?P<mod>gradients|random)::"),
            title="{mod}-and-more",
            category="core",
        ),
        DashboardRule(pattern=re.compile(r"::test_"), title="everything"),
    )
    namer = Namer(NamingRules(backend="torch", rules=rules))
    assert namer.place(CaseResult(name="test_grad[a]", classname=IVY))[0] == DashboardId(
        title="gradients-and-more", category="core"
    )
    assert namer.place(CaseResult(name="test_y", classname="a.test_b"))[0] == DashboardId(
        title="everything"
    )


def test_fixed_dashboard_collects_everything():
    """``--dashboard`` puts every case in one dashboard."""
    namer = Namer(NamingRules(backend="torch", dashboard=DashboardId(title="all")))
    assert namer.place(CaseResult(name="test_y", classname=IVY)) == (
        DashboardId(title="all"),
        "test_y",
    )


@pytest.mark.parametrize(
    ("classname", "file", "prefix"),
    [
        ("tests.nn.test_layers", "", "tests/nn/test_layers.py::"),
        ("tests.nn.test_layers.TestConv", "", "tests/nn/test_layers.py::TestConv::"),
        (
            "tests.nn.test_layers.TestConv.TestInner",
            "",
            "tests/nn/test_layers.py::TestConv::TestInner::",
        ),
        (
            "tests.nn.test_layers.TestConv",
            "tests/nn/test_layers.py",
            "tests/nn/test_layers.py::TestConv::",
        ),
        # An inherited test: file names where the function is, not the module that runs it.
        (
            "test.integration.test_spark.SparkTests",
            "test/integration/spark_common.py",
            "test/integration/test_spark.py::SparkTests::",
        ),
        # A lower-case class is taken for a module unless file says where the module ends.
        ("tests.test_x.lower", "", "tests/test_x/lower.py::"),
        ("tests.test_x.lower", "tests/test_x.py", "tests/test_x.py::lower::"),
        ("", "", None),
    ],
)
def test_a_cases_node_id_is_rebuilt_from_its_classname_and_file(classname, file, prefix):
    """pytest's junit classname is the module's dotted path and its classes: the node id puts
    back the slashes and ``.py``, the module ending where ``file`` says, else before the
    trailing CapWords parts."""
    assert node_prefix(classname, file) == prefix
