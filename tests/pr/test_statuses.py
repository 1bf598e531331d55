"""Tests for pr/statuses.py: the commit statuses a pull request's verdicts ask for."""

from __future__ import annotations

import pytest

from ivy_matrix.github.types import CommitStatus
from ivy_matrix.model import RunKey
from ivy_matrix.pr.statuses import (
    DESCRIPTION_LIMIT,
    ELLIPSIS,
    NO_RESULTS,
    desired_statuses,
    fit,
)
from ivy_matrix.pr.verdicts import CellVerdict, Comparison, Verdict

URL = "https://github.com/o/r/pull/7#issuecomment-1"
RUN = RunKey(500, 1, 1)
BACKENDS = ("torch", "numpy", "tensorflow", "jax")


def cell(row: str, backend: str, verdict: Verdict) -> CellVerdict:
    return CellVerdict(
        dashboard="core/gradients", row=row, backend=backend, verdict=verdict, link=None, run=RUN
    )


def comparison(cells: list[CellVerdict], backends: tuple[str, ...] = BACKENDS) -> Comparison:
    return Comparison(
        cells=tuple(cells), backend_runs=tuple((b, RUN) for b in backends), located=True
    )


def shown(statuses: tuple[CommitStatus, ...]) -> dict[str, tuple[str, str]]:
    assert {s.target_url for s in statuses} == {URL}
    return {s.context: (s.state, s.description) for s in statuses}


def test_one_new_failure_fails_its_backend_and_the_aggregate_alone():
    """jax's new failure: jax and ivy-matrix are failure, naming it; the others succeed,
    counting what failed before the pull request."""
    cells = [
        cell("test_roll", "jax", Verdict.NEW),
        cell("test_tile", "torch", Verdict.PRE_EXISTING),
        cell("test_tile", "numpy", Verdict.FLAKY),
        cell("test_sum", "jax", Verdict.FIXED),
    ]
    statuses = desired_statuses(comparison(cells), expected=BACKENDS, target_url=URL)
    assert shown(statuses) == {
        "ivy-matrix/torch": ("success", "no new failures; 1 pre-existing"),
        "ivy-matrix/numpy": ("success", "no new failures; 1 flaky"),
        "ivy-matrix/tensorflow": ("success", "no new failures"),
        "ivy-matrix/jax": ("failure", "1 new: test_roll"),
        "ivy-matrix": ("failure", "1 new on jax: test_roll"),
    }
    assert statuses[-1].context == "ivy-matrix"  # the aggregate is set last


def test_failures_that_are_all_pre_existing_pass_every_status():
    """Failures main already has are not the pull request's: every status is success."""
    cells = [cell("test_a", b, Verdict.PRE_EXISTING) for b in BACKENDS]
    cells.append(cell("test_b", "jax", Verdict.NO_BASELINE))
    found = shown(desired_statuses(comparison(cells), expected=BACKENDS, target_url=URL))
    assert {state for state, _ in found.values()} == {"success"}
    assert found["ivy-matrix"] == (
        "success",
        "no new failures on 4 backends; 4 pre-existing, 1 no-baseline",
    )


def test_an_expected_backend_without_results_is_an_error_and_so_is_the_aggregate():
    """A crashed tensorflow leg: its status is error, never success; the aggregate too, also
    naming the new failures."""
    ran = ("torch", "numpy", "jax")
    cells = [cell("test_roll", "jax", Verdict.NEW_TEST)]
    found = shown(desired_statuses(comparison(cells, ran), expected=BACKENDS, target_url=URL))
    assert found["ivy-matrix/tensorflow"] == ("error", NO_RESULTS)
    assert found["ivy-matrix/jax"] == ("failure", "1 new: test_roll")
    assert found["ivy-matrix"] == ("error", "no results from tensorflow; 1 new: test_roll")
    assert list(found) == [*(f"ivy-matrix/{b}" for b in (*ran, "tensorflow")), "ivy-matrix"]


def test_a_backend_that_is_not_expected_still_gets_its_status_and_a_leg_no_aggregate():
    """Every backend with results gets a status; without the aggregate, only those."""
    statuses = desired_statuses(comparison([], ("torch",)), target_url=URL, aggregate=False)
    assert shown(statuses) == {"ivy-matrix/torch": ("success", "no new failures")}


def test_descriptions_never_pass_140_characters_and_are_cut_between_names():
    """Hundreds of new failures: the count stays whole, names are cut between two of them
    with an ellipsis; one name longer than the limit is cut within it."""
    cells = [cell(f"test_function_number_{i:03d}", "jax", Verdict.NEW) for i in range(300)]
    found = shown(desired_statuses(comparison(cells), expected=BACKENDS, target_url=URL))
    jax = found["ivy-matrix/jax"][1]
    assert len(jax) <= DESCRIPTION_LIMIT
    assert jax.startswith("300 new: test_function_number_000, ")
    assert jax.endswith(f"_00{jax.count(',') - 1}, {ELLIPSIS}")
    assert len(found["ivy-matrix"][1]) <= DESCRIPTION_LIMIT
    long = fit("1 new: " + "x" * 500)
    assert (len(long), long[-1]) == (DESCRIPTION_LIMIT, ELLIPSIS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2 new: test_roll, test_tile", "2 new: test_roll, test_tile"),
        ("1 new: test_\nroll\x00 ok", "1 new: test_ roll ok"),
        ("a" * 140, "a" * 140),
    ],
)
def test_a_description_is_one_printable_line(text, expected):
    """Line breaks and control characters become spaces; what fits is left whole."""
    assert fit(text) == expected
