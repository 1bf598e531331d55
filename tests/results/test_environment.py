"""A leg's environment as values: the env command's output, its limits, diffs and versioned
column names."""

from __future__ import annotations

import re

import pytest

from ivy_matrix.errors import UsageError
from ivy_matrix.jsonshape import MalformedError
from ivy_matrix.model import CaseCounts, DashboardId, Outcome
from ivy_matrix.results.cells import CellResult, Collected
from ivy_matrix.results.environment import (
    MAX_PACKAGES,
    VALUE_CAP,
    Change,
    env_diff,
    env_of,
    joined,
    parse_env_output,
)
from ivy_matrix.results.versions import column_name, parse_backend_version, rename_backends


def test_the_env_commands_json_object_becomes_sorted_pairs():
    """An env command's object of versions (strings or numbers) is kept sorted by package."""
    assert parse_env_output('{"torch": "2.5.0", "numpy": 2, "jax": "0.4.31"}') == (
        ("jax", "0.4.31"),
        ("numpy", "2"),
        ("torch", "2.5.0"),
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("torch 2.5", "its output is not JSON"),
        ('["torch"]', "its output is not a JSON object of package names to versions"),
        ('{"torch": {"v": 1}}', "the version of 'torch' is not a string"),
    ],
)
def test_output_that_is_not_an_object_of_versions_is_refused_with_its_reason(text, reason):
    """Output that is not a JSON object of versions is a ValueError saying why."""
    with pytest.raises(ValueError, match=re.escape(reason)) as caught:
        parse_env_output(text)
    assert str(caught.value) == reason


def test_an_environment_is_capped_in_packages_and_characters():
    """At most MAX_PACKAGES packages are kept, each name and version cut to VALUE_CAP."""
    many = {f"p{i:03}": "1" for i in range(MAX_PACKAGES + 10)}
    many["p000"] = "v" * (VALUE_CAP + 50)
    env = env_of(many)
    assert len(env) == MAX_PACKAGES
    assert env[0] == ("p000", "v" * VALUE_CAP)


def test_a_stored_environment_that_is_not_flat_strings_is_malformed():
    """A state's or leg file's env that is not an object of strings is refused."""
    with pytest.raises(MalformedError):
        env_of({"torch": 2})
    assert env_of(None) == ()


def test_a_later_report_wins_where_two_name_one_package():
    """Joined reports keep every package; the later report's version wins."""
    assert joined((("jax", "1"), ("python", "3.11")), (("jax", "2"),)) == (
        ("jax", "2"),
        ("python", "3.11"),
    )


def test_the_diff_lists_only_changed_added_and_removed_packages():
    """Equal versions are left out; an added or removed package has "" on its missing side."""
    before = (("jax", "0.4.30"), ("numpy", "2.1.0"), ("scipy", "1.14"))
    after = (("jax", "0.4.31"), ("numpy", "2.1.0"), ("torch", "2.5"))
    assert env_diff(before, after) == (
        Change(package="jax", before="0.4.30", after="0.4.31"),
        Change(package="scipy", before="1.14", after=""),
        Change(package="torch", before="", after="2.5"),
    )


def test_a_versioned_column_names_the_recorded_version():
    """jax@{jax} names the jax column by jax's version; other backends keep their names."""
    rules = parse_backend_version("jax@{jax}")
    env = (("jax", "0.4.31"), ("jaxlib", "0.4.30"))
    assert column_name("jax", env, rules) == "jax@0.4.31"
    assert column_name("torch", env, rules) == "torch"


def test_a_wildcard_rule_uses_each_backends_own_package_and_unknown_versions_keep_the_name():
    """*@{version} uses the backend's own package; a package not recorded keeps the plain name."""
    rules = parse_backend_version("*@{version}, jax@{jax}+{jaxlib}")
    env = (("jax", "0.4.31"), ("jaxlib", "0.4.30"), ("torch", "2.5.0"))
    assert column_name("torch", env, rules) == "torch@2.5.0"
    assert column_name("jax", env, rules) == "jax@0.4.31+0.4.30"
    assert column_name("numpy", env, rules) == "numpy"


@pytest.mark.parametrize("value", ["jax", "jax@0.4", "@{jax}"])
def test_a_backend_version_item_without_a_placeholder_is_a_usage_error(value):
    """Each item must be BACKEND@TEMPLATE with a {package} in the template."""
    with pytest.raises(UsageError):
        parse_backend_version(value)


def test_renaming_moves_every_cell_and_tally_to_the_versioned_column():
    """The read results' cells and per-backend tallies move to the versioned name."""
    dashboard = DashboardId(title="t")
    result = CellResult(Outcome.SUCCESS, CaseCounts(passed=1))
    collected = Collected(
        dashboards={dashboard: {"test_a": {"jax": result}}}, by_backend={"jax": [1, 0, 0, 0]}
    )
    rename_backends(collected, (("jax", "0.4.31"),), parse_backend_version("jax@{jax}"))
    assert collected.dashboards == {dashboard: {"test_a": {"jax@0.4.31": result}}}
    assert collected.by_backend == {"jax@0.4.31": [1, 0, 0, 0]}
