"""Tests for grouping.py: a failing row's backends grouped by signature and classified, and
the signatures ranked across rows."""

from __future__ import annotations

from dataclasses import replace

from ivy_matrix.explain.grouping import (
    BackendResult,
    Kind,
    KindCount,
    classify,
    dashboard_kinds,
    group_row,
    kind_counts,
    kind_line,
    rank_signatures,
    signatures_json,
    state_groups,
)
from ivy_matrix.model import Outcome
from ivy_matrix.results.signature import Signer
from tests.state.test_history import entry, state_of

S, F, K, R = Outcome.SUCCESS, Outcome.FAILURE, Outcome.SKIPPED, Outcome.FLAKY
SIGNER = Signer()


def failed(backend: str, message: str) -> BackendResult:
    """A failing result with the signature the signer gives its line on ``backend``."""
    signature = SIGNER.signature(message, backend)
    return BackendResult(backend=backend, outcome=F, message=message, signature=signature)


def passed(backend: str, outcome: Outcome = S) -> BackendResult:
    return BackendResult(backend=backend, outcome=outcome)


SHARED_LINES = {
    "torch": "RuntimeError: torch.float32 tensor at 0x7f3a12 has 3 dims, expected 4",
    "jax": "RuntimeError: jnp.float32 tensor at 0x1b2c has 5 dims, expected 2",
    "tensorflow": "RuntimeError: tf.float64 tensor at 0xdeadbeef has 1 dims, expected 7",
}


def test_one_line_on_three_backends_is_one_shared_signature():
    """Lines that differ only in backend names, numbers and addresses give one signature;
    failing on every backend that ran, the row is shared across the three."""
    results = [failed(b, line) for b, line in SHARED_LINES.items()]
    assert len({r.signature for r in results}) == 1
    row = group_row("core/gradients", "test_conv", results)
    assert row is not None
    assert dict(row.kinds) == {results[0].signature: Kind.SHARED}
    assert row.by_signature == {results[0].signature: ("torch", "jax", "tensorflow")}


def test_a_jax_only_error_is_backend_specific():
    """Failing on jax while the other backends pass is jax's own error."""
    results = [
        passed("torch"),
        failed("jax", "KeyError: no rule for jnp.bfloat16"),
        passed("tensorflow"),
    ]
    row = group_row("core/gradients", "test_cast", results)
    assert row is not None
    assert dict(row.kinds) == {results[1].signature: Kind.BACKEND_SPECIFIC}
    assert row.kind_of("jax") is Kind.BACKEND_SPECIFIC
    assert row.kind_of("torch") is None
    assert [r.backend for r in row.failing] == ["jax"]
    assert row.passing == ("torch", "tensorflow")


def test_each_rule_of_the_classification():
    """Each signature of a row is classified by its own backends: with a pass beside it (a pass
    after reruns too) it is its backends' own; two or more backends with it and no pass share
    it; one backend with it is its own unless every failing backend has an error of its own
    (divergent); skipped backends did not run; nothing failing is not classified."""
    torch, jax = failed("torch", "ValueError: bad shape"), failed("jax", "TypeError: not an array")
    same_jax = failed("jax", "ValueError: bad shape")
    bad, not_array = torch.signature, jax.signature
    assert classify([torch, jax]) == {bad: Kind.DIVERGENT, not_array: Kind.DIVERGENT}
    assert classify([torch, jax, passed("numpy")]) == {
        bad: Kind.BACKEND_SPECIFIC,
        not_array: Kind.BACKEND_SPECIFIC,
    }
    assert classify([torch, same_jax, passed("numpy")]) == {bad: Kind.BACKEND_SPECIFIC}
    assert classify([torch, same_jax, passed("numpy", R)]) == {bad: Kind.BACKEND_SPECIFIC}
    assert classify([torch, same_jax, passed("numpy", K)]) == {bad: Kind.SHARED}
    assert classify([torch, same_jax, failed("numpy", "TypeError: x")]) == {
        bad: Kind.SHARED,
        failed("numpy", "TypeError: x").signature: Kind.BACKEND_SPECIFIC,
    }
    assert classify([torch, passed("numpy", K)]) == {bad: Kind.BACKEND_SPECIFIC}
    assert classify([torch]) == {bad: Kind.BACKEND_SPECIFIC}
    assert classify([passed("torch"), passed("jax", K)]) == {}
    assert group_row("d", "t", [passed("torch")]) is None
    bare = replace(torch, message="", signature="")
    assert classify([bare, replace(bare, backend="jax")]) == {"": Kind.SHARED}
    assert classify([bare, torch]) == {"": Kind.DIVERGENT, bad: Kind.DIVERGENT}


NARWHALS = ("pandas", "polars", "pyarrow", "modin", "dask", "duckdb")


def test_one_backend_failing_everything_does_not_hide_what_the_others_share():
    """narwhals' shape: duckdb fails 926 tests with one error of its own. 40 of them also fail
    on the five other backends with one shared error, and 30 also fail on polars alone with
    polars' own error. The 40 are shared failures, the 30 polars-only, and duckdb's 926 its
    own; none is divergent (each of the 996 failures is said once)."""
    duckdb = "NotImplementedError: operation not supported by the duckdb backend"
    shared = "AssertionError: DataFrame.iloc[:, 2] values are different (33.3 %)"
    polars = "polars.exceptions.ComputeError: cannot cast List to Struct"
    rows = []
    for i in range(926):
        results = []
        for backend in NARWHALS[:-1]:
            if i < 40:
                results.append(failed(backend, shared))
            elif i < 70 and backend == "polars":
                results.append(failed(backend, polars))
            else:
                results.append(passed(backend))
        results.append(failed("duckdb", duckdb))
        rows.append(group_row("tests/frame", f"test_{i}", results))
    found = [r for r in rows if r is not None]
    assert kind_counts(found) == (
        KindCount(kind=Kind.SHARED, backends=(), rows=40),
        KindCount(kind=Kind.BACKEND_SPECIFIC, backends=("duckdb",), rows=926),
        KindCount(kind=Kind.BACKEND_SPECIFIC, backends=("polars",), rows=30),
    )
    assert kind_line(kind_counts(found)) == "40 shared failures, 926 duckdb-only, 30 polars-only"
    kinds = {g.message: g.kind for g in rank_signatures(found)}
    assert kinds == {
        duckdb: Kind.BACKEND_SPECIFIC,
        shared: Kind.SHARED,
        polars: Kind.BACKEND_SPECIFIC,
    }
    assert found[0].kind_of("pandas") is Kind.SHARED
    assert found[0].kind_of("duckdb") is Kind.BACKEND_SPECIFIC
    assert found[50].kind_of("polars") is Kind.BACKEND_SPECIFIC


def test_signatures_are_ranked_by_cells_then_backends_with_their_rows_kind():
    """Most cells first, then most backends, then first seen; lines without a signature last;
    a signature's kind is the one most of its rows have (a tie goes to shared)."""
    lone = failed("numpy", "ZeroDivisionError: division by zero")
    shared = [failed(b, line) for b, line in SHARED_LINES.items()]
    rows = [
        group_row("d", "t_lone", [lone, passed("torch")]),
        group_row("d", "t_bare", [BackendResult(backend="torch", outcome=F)]),
        group_row("d", "t_one", [passed("torch"), failed("jax", "KeyError: 1")]),
        group_row("d", "t_two", [failed("jax", "KeyError: 2"), failed("torch", "KeyError: 3")]),
        group_row("d", "t_shared", shared),
        group_row("d", "t_shared_here", [*shared[:2], passed("tensorflow")]),
    ]
    ranked = rank_signatures(r for r in rows if r is not None)
    assert [(g.message, g.cells, g.backends, g.tests, g.kind) for g in ranked] == [
        (SHARED_LINES["torch"], 5, ("torch", "jax", "tensorflow"), 2, Kind.SHARED),
        ("KeyError: 1", 3, ("jax", "torch"), 2, Kind.SHARED),
        ("ZeroDivisionError: division by zero", 1, ("numpy",), 1, Kind.BACKEND_SPECIFIC),
        ("", 1, ("torch",), 1, Kind.BACKEND_SPECIFIC),
    ]
    assert signatures_json(r for r in rows[:1] if r is not None) == [
        {
            "signature": lone.signature,
            "message": "ZeroDivisionError: division by zero",
            "cells": 1,
            "backends": ["numpy"],
            "tests": 1,
            "kind": "backend-specific",
        }
    ]


def test_the_index_line_counts_rows_by_kind_and_backends():
    """Shared rows first, then each set of failing backends' own rows (most first), then the
    divergent ones; counts of several dashboards add up."""
    shared = [failed(b, line) for b, line in SHARED_LINES.items()]
    jax_only = [passed("torch"), failed("jax", "KeyError: x")]
    rows = [
        group_row("d", "a", shared),
        group_row("d", "b", jax_only),
        group_row("d", "c", jax_only),
        group_row("d", "d", [failed("torch", "E: 1"), failed("jax", "E: 2"), passed("numpy")]),
        group_row("d", "e", [failed("torch", "A"), failed("jax", "B")]),
        group_row("d", "f", [passed("jax"), failed("torch", "C")]),
    ]
    counts = kind_counts(r for r in rows if r is not None)
    assert counts == (
        KindCount(kind=Kind.SHARED, backends=(), rows=1),
        KindCount(kind=Kind.BACKEND_SPECIFIC, backends=("jax",), rows=2),
        KindCount(kind=Kind.BACKEND_SPECIFIC, backends=("jax", "torch"), rows=1),
        KindCount(kind=Kind.BACKEND_SPECIFIC, backends=("torch",), rows=1),
        KindCount(kind=Kind.DIVERGENT, backends=(), rows=1),
    )
    assert (
        kind_line(counts)
        == "1 shared failure, 2 jax-only, 1 jax+torch-only, 1 torch-only, 1 divergent"
    )
    doubled = kind_counts([*counts, *counts])
    assert kind_line(doubled).startswith("2 shared failures, 4 jax-only, ")
    assert kind_line(()) == ""


def test_a_dashboard_is_grouped_by_each_cells_newest_result():
    """A state's failing rows by their cells' newest results, backends in display order."""
    line = "AssertionError: torch.float32 0 != 1"
    failing = replace(entry(100, F), message=line, signature=SIGNER.signature(line, "torch"))
    jax_line = line.replace("torch", "jax")
    jax_failing = replace(failing, message=jax_line, signature=SIGNER.signature(jax_line, "jax"))
    state = state_of(
        {
            "t_both": {"torch": [failing, entry(99, S)], "jax": [jax_failing]},
            "t_fixed": {"torch": [entry(100, S), entry(99, F)], "jax": [entry(100, S)]},
            "t_torch": {"torch": [failing], "jax": [entry(100, S)]},
        }
    )
    found = state_groups(state)
    assert [
        (g.row, [k for _, k in g.kinds], tuple(r.backend for r in g.failing)) for g in found
    ] == [
        ("t_both", [Kind.SHARED], ("torch", "jax")),
        ("t_torch", [Kind.BACKEND_SPECIFIC], ("torch",)),
    ]
    assert all(g.dashboard == state.key for g in found)


def test_rows_no_backend_fails_in_are_passed_over_without_a_result_each(monkeypatch):
    """A dashboard's rows mostly pass: their cells make no BackendResult (one is made per
    cell of a row that fails somewhere), and the groups are the same."""
    from ivy_matrix.explain import grouping

    made: list[str] = []

    class Counted(BackendResult):
        __slots__ = ()

        def __init__(self, **fields: object) -> None:
            made.append(str(fields["backend"]))
            super().__init__(**fields)  # type: ignore[arg-type]

    state = state_of(
        {
            **{f"t_pass{i}": {"torch": [entry(100, S)], "jax": [entry(100, S)]} for i in range(20)},
            "t_fails": {"torch": [entry(100, F)], "jax": [entry(100, S)]},
        }
    )

    def seen(groups: list[grouping.RowGroups]) -> list[object]:
        return [(g.row, [vars_of(r) for r in g.failing], g.passing, g.kinds) for g in groups]

    def vars_of(result: BackendResult) -> tuple[object, ...]:
        return (result.backend, result.outcome, result.message, result.signature)

    expected = seen(state_groups(state))
    monkeypatch.setattr(grouping, "BackendResult", Counted)
    assert seen(state_groups(state)) == expected
    assert made == ["torch", "jax"]


def test_a_dashboards_kinds_are_classified_once_for_each_set_of_cells_its_rows_share(
    monkeypatch,
):
    """The index's kinds of a dashboard are what its failing rows' groups count, found from
    the cells (no result made) and each set of cell objects the rows hold (rows alike share
    them) classified once, however many rows hold it."""
    from ivy_matrix.explain import grouping

    line = "AssertionError: torch.float32 0 != 1"
    failing = replace(entry(100, F), message=line, signature=SIGNER.signature(line, "torch"))
    jax_line = line.replace("torch", "jax")
    jax_failing = replace(failing, message=jax_line, signature=SIGNER.signature(jax_line, "jax"))
    state = state_of(
        {
            "t_both": {"torch": [failing], "jax": [jax_failing]},
            "t_torch": {"torch": [failing], "jax": [entry(100, S)]},
            "t_jax": {"torch": [entry(100, K)], "jax": [replace(failing, message="E: x")]},
            "t_apart": {"torch": [failing], "jax": [replace(failing, signature="other")]},
            "t_pass": {"torch": [entry(100, S)], "jax": [entry(100, S)]},
        }
    )
    rows = tuple(row._replace(name=f"{row.name}{copy}") for copy in range(50) for row in state.rows)
    many = replace(state, rows=rows)
    expected = kind_counts(state_groups(many))
    assert expected == (
        KindCount(kind=Kind.SHARED, backends=(), rows=50),
        KindCount(kind=Kind.BACKEND_SPECIFIC, backends=("jax",), rows=50),
        KindCount(kind=Kind.BACKEND_SPECIFIC, backends=("torch",), rows=50),
        KindCount(kind=Kind.DIVERGENT, backends=(), rows=50),
    )
    made: list[object] = []
    monkeypatch.setattr(grouping, "BackendResult", lambda **fields: made.append(fields))
    classified: list[object] = []
    kinds_of = grouping._classified

    def counted(groups: dict[str, int], *, passing: bool) -> dict[str, Kind]:
        classified.append(groups)
        return kinds_of(groups, passing=passing)

    monkeypatch.setattr(grouping, "_classified", counted)
    assert dashboard_kinds(many) == expected
    assert made == []
    assert len(classified) <= len(state.rows)
