"""The leg file (legs.py): written by collect, read back whole, refused when it is not one."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ivy_matrix.errors import InputError
from ivy_matrix.model import CaseCounts, DashboardId, FileCounts, Outcome, ParseProblem
from ivy_matrix.redaction import Redactor
from ivy_matrix.results.cells import CellResult, Collected
from ivy_matrix.results.legs import (
    LEG_FILE_VERSION,
    LegInfo,
    LegResults,
    dump_leg,
    leg_name,
    leg_problem,
    load_leg,
    redacted_leg,
    rerun,
    with_legs,
)
from ivy_matrix.results.timed_cases import TimedCases

GRADIENTS = DashboardId(title="gradients", category="core")
LAYERS = DashboardId(title="layers", category="nn")
INFO = LegInfo(
    run_id=4519946746,
    run_attempt=2,
    job_id=12345678901,
    repository="acme/widgets",
    server_url="https://github.com",
    sha="9f2c0de",
    ref="refs/heads/main",
    event="push",
)


def one(outcome: Outcome, message: str = "") -> CellResult:
    """A cell of one case."""
    counts = {
        Outcome.SUCCESS: CaseCounts(passed=1),
        Outcome.FAILURE: CaseCounts(failed=1),
        Outcome.SKIPPED: CaseCounts(skipped=1),
        Outcome.FLAKY: CaseCounts(flaky=1),
    }
    return CellResult(outcome, counts[outcome], message)


def collected() -> Collected:
    """A leg's results: two dashboards, two backends, cells of several cases, a failure line,
    a problem and unnamed cases."""
    return Collected(
        files=[FileCounts(path="r/junit.xml", tests=9, passed=5, failed=2, skipped=2, nameless=1)],
        problems=[ParseProblem(source="r/bad.xml", message="file is empty")],
        unassigned={"r/other.xml": 2},
        nameless={"r/junit.xml": (1, 40)},
        by_backend={"torch": [4, 2, 0, 0], "numpy": [5, 0, 0, 2]},
        dashboards={
            GRADIENTS: {
                "test_adam": {
                    "torch": one(Outcome.FAILURE, "AssertionError: no")._replace(
                        where=("tests/test_core.py", 42)
                    ),
                    "numpy": CellResult(Outcome.SUCCESS, CaseCounts(passed=3)),
                },
                "test_jac": {"numpy": one(Outcome.SKIPPED)},
                "Cls.test_grad": {
                    "torch": CellResult(
                        Outcome.FAILURE,
                        CaseCounts(passed=1, failed=1, skipped=1),
                        seconds=2.5,
                        timed=2,
                    )
                },
            },
            LAYERS: {
                "test_linear": {"torch": one(Outcome.SUCCESS)._replace(seconds=0.125, timed=1)}
            },
        },
        durations=TimedCases.of(
            {"torch": {"tests/nn/test_layers.py::": {"test_linear[cpu]": 0.125}}}
        ),
    )


def test_a_leg_file_reads_back_as_it_was_written():
    """Metadata, counts, problems, unnamed and nameless cases, the per-backend tally, and every
    cell with its row order come back."""
    leg = load_leg(dump_leg(INFO, collected()), where="leg.json")
    assert leg.info == INFO
    back, original = leg.collected, collected()
    assert back.files == original.files
    assert back.problems == original.problems
    assert back.unassigned == original.unassigned
    assert back.nameless == original.nameless
    assert back.by_backend == original.by_backend
    assert back.dashboards == original.dashboards
    assert back.durations.seconds() == original.durations.seconds()
    assert [list(rows) for rows in back.dashboards.values()] == [
        ["test_adam", "test_jac", "Cls.test_grad"],
        ["test_linear"],
    ]


def test_cells_of_one_case_and_nothing_else_are_read_as_one_shared_value():
    """A fan-in reads a million cells (issue 26): a cell of one case with no failure line,
    place or duration is one value per outcome, not one made per cell (the old reader made
    each anew); a cell with anything more is read whole, duration and all."""
    rows = {
        f"test_{n}": {"torch": one(Outcome.SUCCESS), "numpy": one(Outcome.SKIPPED)}
        for n in range(50)
    }
    rows["test_timed"] = {"torch": one(Outcome.SUCCESS)._replace(seconds=0.5, timed=1)}
    leg = load_leg(dump_leg(INFO, Collected(dashboards={GRADIENTS: rows})), where="leg.json")
    back = leg.collected.dashboards[GRADIENTS]
    assert back == rows
    plain = [cell for row, cells in back.items() if row != "test_timed" for cell in cells.values()]
    assert len(plain) == 100
    assert len({id(cell) for cell in plain}) == 2  # one a passed case, one a skipped one
    assert back["test_timed"]["torch"].seconds == 0.5


def test_a_leg_file_is_one_compact_deterministic_line():
    """The same results give the same text: one line, one character per cell."""
    text = dump_leg(INFO, collected())
    assert text == dump_leg(INFO, collected())
    assert text.count("\n") == 1
    document = json.loads(text)
    assert (document["format"], document["version"]) == ("ivy-matrix-leg", LEG_FILE_VERSION)
    assert document["dashboards"][0]["cells"] == {"torch": "f.f", "numpy": "sk."}
    assert document["dashboards"][0]["counts"] == {
        "torch": {"2": [1, 1, 1, 0]},
        "numpy": {"0": [3, 0, 0, 0]},
    }
    assert document["dashboards"][0]["messages"] == {"torch": {"0": "AssertionError: no"}}
    assert document["dashboards"][0]["places"] == {"torch": {"0": ["tests/test_core.py", 42]}}
    assert "counts" not in document["dashboards"][1]
    assert document["dashboards"][0]["seconds"] == {"torch": {"2": 2.5}}
    assert document["dashboards"][0]["timed"] == {"torch": {"2": 2}}
    assert (document["dashboards"][1]["seconds"], "timed" in document["dashboards"][1]) == (
        {"torch": {"0": 0.125}},
        False,
    )


def test_a_leg_without_a_job_reads_back_with_none():
    """A leg that did not know its job id writes null; its run key has job -1."""
    info = LegInfo(run_id=5, run_attempt=1, job_id=None, repository="o/r", server_url="http://h")
    leg = load_leg(dump_leg(info, Collected()), where="x")
    assert leg.info.job_id is None
    assert leg.info.run == (5, 1, -1)


def document(**change: object) -> str:
    """A valid leg file's text with some top-level keys changed."""
    return json.dumps(json.loads(dump_leg(INFO, collected())) | change)


def dashboard_with(**change: object) -> str:
    """A valid leg file whose first dashboard has some keys changed."""
    doc = json.loads(dump_leg(INFO, collected()))
    doc["dashboards"][0] |= change
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{", "not JSON"),
        ("[" * 100_000, "not JSON"),
        ("[]", "expected a JSON object"),
        (document(format="ivy-matrix-dashboard"), "is not 'ivy-matrix-leg'"),
        (document(version=1), "version 1 is not 2"),
        (document(version=3), "version 3 is not 2"),
        (document(run_id="7"), "'run_id': expected an integer"),
        (document(run_id=True), "'run_id': expected an integer"),
        (document(run_id=0), "'run_id' must be positive"),
        (document(run_attempt=0), "'run_attempt' must be 1 or more"),
        (document(job_id=-3), "'job_id' must be positive or null"),
        (document(repository="acme"), "'repository' must be OWNER/REPO"),
        (document(server_url="javascript:alert(1)"), "'server_url' must be an http(s) URL"),
        (document(files=[{"path": "x", "tests": -1}]), "must not be negative"),
        (document(files={}), "'files': expected a list"),
        (document(unassigned={"x": "2"}), "'unassigned': expected an integer"),
        (document(dashboards=[7]), "'dashboards': expected an object"),
        (document(backends={"torch": [1, 2]}), "expected 4 numbers, 0 or more"),
        (document(nameless={"x.xml": [1, -4]}), "expected 2 numbers, 0 or more"),
        (dashboard_with(title=" "), "'dashboards.title' is empty"),
        (dashboard_with(title="t" * 5000), "is longer than 4000 characters"),
        (dashboard_with(rows=["a", "a", "b"]), "lists a row twice"),
        (dashboard_with(cells={"torch": "ff"}), "expected one character per row (3)"),
        (dashboard_with(cells={"torch": "fzs"}), "unknown cell code 'z'"),
        (dashboard_with(counts={"torch": {"2": [1, 0, 0, 0]}}), "do not give a failure cell"),
        (dashboard_with(counts={"torch": {"2": [0, 0, 0, 0]}}), "do not give a failure cell"),
        (dashboard_with(counts={"torch": {"2": [1, -1, 0, 0]}}), "four numbers, 0 or more"),
        (
            dashboard_with(counts={"torch": {"1": [1, 0, 0, 0]}}, timed={}),
            "for a cell it does not have",
        ),
        (dashboard_with(counts={"torch": {"²": [1, 1, 0, 0]}}), "keys must be row numbers"),
        (dashboard_with(messages={"numpy": {"0": "x"}}), "only a failing cell has a failure"),
        (dashboard_with(messages={"torch": {"0": "x" * 501}}), "longer than 500 characters"),
        (dashboard_with(cells={"": "fss"}), "an empty or too long backend"),
        (dashboard_with(places={"numpy": {"0": ["t.py", 1]}}), "only a failing cell has a place"),
        (dashboard_with(places={"torch": {"0": ["t.py", -1]}}), "a place's line is 0 or more"),
        (dashboard_with(places={"torch": {"0": ["t.py"]}}), "a place is a file and a line"),
        (dashboard_with(places={"torch": {"0": [7, 1]}}), "'places': expected a string"),
        (dashboard_with(places={"torch": {"1": ["t.py", 1]}}), "for a cell it does not have"),
        (document(dashboards=[json.loads(dashboard_with())["dashboards"][0]] * 2), "twice"),
        (document(run_id=2**53), "'run_id': a number larger than 9007199254740991"),
        (document(files=[{"path": "x", "tests": 10**4000}]), "'files.tests': a number larger"),
        (document(backends={"torch": [1, 0, 0, 10**20]}), "'backends': a number larger"),
        (dashboard_with(counts={"torch": {"2" * 17: [1, 1, 0, 0]}}), "keys must be row numbers"),
        (dashboard_with(messages={"torch": {"1" * 5000: "x"}}), "keys must be row numbers"),
        (
            document(dashboards=[{"title": f"t{n}", "rows": []} for n in range(5001)]),
            "'dashboards': 5,001 dashboards, more than the 5,000 a leg file may hold",
        ),
        (
            document(dashboards=[{"title": "t", "rows": ["r"] * 100_001}]),
            "'dashboards': 100,001 rows, more than the 100,000",
        ),
        (
            document(
                dashboards=[
                    {
                        "title": "t",
                        "rows": ["r"] * 50_001,
                        "cells": {"a": "f" * 50_001, "b": "." + "s" * 50_000},
                    }
                ]
            ),
            "'dashboards': 100,001 cells, more than the 100,000",
        ),
        (
            document(backends={f"b{n}": [0, 0, 0, 0] for n in range(257)}),
            "'backends': 259 backends, more than the 256",
        ),
        (document(problems=[{}] * 10_001), "'problems': 10,001 entries, more than the 10,000"),
        (document(ref="refs/heads/\udc00"), "a string holds a lone surrogate"),
        (dashboard_with(messages={"torch": {"0": "\ud83d boom"}}), "a lone surrogate"),
        (dashboard_with(seconds={"torch": {"2": -1}}), "a number of seconds, 0 to 31622400"),
        (dashboard_with(seconds={"torch": {"2": "1"}}), "a number of seconds"),
        (dashboard_with(seconds={"torch": {"2": True}}), "a number of seconds"),
        (dashboard_with(seconds={"torch": {"2": 1e300}}), "a number of seconds"),
        (
            dashboard_with(seconds={"torch": {"1": 1.0}}, timed={}),
            "durations for a cell it does not have",
        ),
        (dashboard_with(timed={"torch": {"0": 1}}), "timed cases without a duration"),
        (dashboard_with(timed={"torch": {"2": 4}}), "4 timed cases, the cell has 3"),
        (dashboard_with(timed={"torch": {"2": 0}}), "0 timed cases, the cell has 3"),
        (document(durations={"torch": []}), "'durations': expected an object"),
        (document(durations={"torch": {"x.py::": {"t": -2}}}), "a number of seconds"),
        (document(durations={"torch": {"x.py::": {"t" * 5000: 1}}}), "longer than 4000"),
    ],
)
def test_a_file_that_is_not_a_usable_leg_file_is_refused_naming_it(text, reason):
    """Anything the format does not allow is refused whole, with the file and the reason:
    numbers too long to be counts, and strings that are not text, included."""
    with pytest.raises(InputError) as raised:
        load_leg(text, where="legs/leg-7.json")
    assert str(raised.value).startswith("leg file legs/leg-7.json: ")
    assert reason in str(raised.value)


def problem(
    info: LegInfo = INFO,
    *,
    run_id: int | None = 4519946746,
    run_attempt: int = 2,
    repository: str = "acme/widgets",
    server_url: str = "https://github.com",
    sha: str = "9f2c0de",
) -> str | None:
    """Why ``info`` does not belong to the run given (by default its own)."""
    return leg_problem(
        info,
        run_id=run_id,
        run_attempt=run_attempt,
        repository=repository,
        server_url=server_url,
        sha=sha,
    )


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ({"run_id": 4519946747}, "it is for run 4519946746, not this run (4519946747)"),
        ({"run_attempt": 1}, "it is for attempt 2, later than this one (1)"),
        ({"repository": "evil/widgets"}, "it is for repository 'acme/widgets', not evil/widgets"),
        ({"server_url": "https://ghe.example"}, "it is for server 'https://github.com'"),
        ({"sha": "0000000"}, "it tested commit '9f2c0de', not this run's 0000000"),
        ({"run_id": None}, "this job's run and repository are unknown"),
    ],
)
def test_a_leg_file_of_another_run_repository_server_attempt_or_commit_is_not_used(given, reason):
    """A leg file is used only by the fan-in job of its own run, attempt or later, and commit."""
    found = problem(**given)
    assert found is not None
    assert found.startswith(reason)


def test_a_leg_file_of_this_run_or_an_earlier_attempt_is_used():
    """The same run, an attempt no later than this one; names and hosts in any case."""
    assert problem() is None
    assert problem(run_attempt=3) is None
    assert problem(repository="ACME/Widgets", server_url="https://GitHub.com/") is None
    assert problem(sha="") is None


def test_leg_names_differ_by_job_and_by_content():
    """Each leg file's name holds its run, attempt and job, and a digest of its text."""
    text = dump_leg(INFO, collected())
    name = leg_name(INFO, text)
    assert name.startswith("ivy-matrix-leg-4519946746-2-12345678901-")
    assert leg_name(INFO, text + " ") != name
    nobody = LegInfo(run_id=1, run_attempt=1, job_id=None, repository="o/r", server_url="http://h")
    assert leg_name(nobody, text).startswith("ivy-matrix-leg-1-1-nojob-")


def test_with_legs_adds_every_legs_counts_and_shows_the_worse_outcome_of_a_shared_cell():
    """The fan-in's totals are the sum of its legs'; a cell two legs fill shows the worse
    outcome and both legs' cases."""
    first = load_leg(dump_leg(INFO, collected()), where="a").collected
    other = Collected(
        files=[FileCounts(path="s/junit.xml", tests=1, passed=1)],
        unassigned={"r/other.xml": 1},
        by_backend={"numpy": [1, 0, 0, 0]},
        dashboards={GRADIENTS: {"test_jac": {"numpy": one(Outcome.SUCCESS)}}},
    )
    legs = [load_leg(dump_leg(INFO, c), where=n) for c, n in ((first, "a"), (other, "b"))]
    joined = with_legs(Collected(), legs)
    assert joined.totals().tests == 10
    assert joined.unassigned == {"r/other.xml": 3}
    assert joined.by_backend == {"torch": [4, 2, 0, 0], "numpy": [6, 0, 0, 2]}
    jac = joined.dashboards[GRADIENTS]["test_jac"]["numpy"]
    assert jac == CellResult(Outcome.SUCCESS, CaseCounts(passed=1, skipped=1))
    assert joined.dashboards[GRADIENTS]["test_adam"]["torch"] == one(
        Outcome.FAILURE, "AssertionError: no"
    )._replace(where=("tests/test_core.py", 42))


def test_a_character_written_as_a_pair_of_escapes_is_text():
    """A surrogate pair (an emoji as ``\\ud83d\\ude00``) is one character: the file is read."""
    text = dump_leg(INFO, collected()).replace("AssertionError: no", "\\ud83d\\ude00 no")
    leg = load_leg(text, where="leg.json")
    assert leg.collected.dashboards[GRADIENTS]["test_adam"]["torch"].message == "\U0001f600 no"


def test_a_leg_run_again_is_known_by_its_cells_and_its_newest_attempt_counts():
    """Legs that share a cell are one leg run again: each older attempt points at the newest
    attempt that ran it. Legs sharing no cell, or of another run, are other legs."""

    def leg(run: int, attempt: int, *rows: str) -> LegResults:
        info = LegInfo(
            run_id=run, run_attempt=attempt, job_id=attempt, repository="o/r", server_url="http://h"
        )
        cells = {row: {"torch": one(Outcome.SUCCESS)} for row in rows}
        return LegResults(info=info, collected=Collected(dashboards={GRADIENTS: cells}))

    legs = [
        leg(7, 1, "test_a", "test_b"),  # 0: run again in attempts 2 and 3
        leg(7, 1, "test_c"),  # 1: another shard, never run again
        leg(7, 2, "test_a", "test_b"),  # 2: run again in attempt 3
        leg(7, 3, "test_b"),  # 3: the newest (it stopped early)
        leg(8, 1, "test_a"),  # 4: another run's
    ]
    assert rerun(legs) == {0: 3, 2: 3}
    assert rerun(legs[:3]) == {0: 2}
    assert rerun([legs[1], legs[4]]) == {}


def test_a_legs_texts_are_redacted_as_the_fan_in_reads_them():
    """What a leg's tests could put in its file (failure lines, dashboard and row names, a
    problem's message, the environment) loses the fan-in's token and every key; two rows that
    differ only in a secret are one, their cases combined."""
    token = "4f1d0c3e9b7a26c58e1f0d4b3a2c9e8f7d6b5a41"
    key = "AKIAIOSFODNN7EXAMPLE"
    leaked = DashboardId(title=f"auth {key}", category="core")
    results = Collected(
        files=[FileCounts(path="r.xml", tests=3, passed=2, failed=1, problem=None)],
        problems=[ParseProblem(source="bad.xml", message=f"not XML near {token}")],
        dashboards={
            leaked: {
                f"test_{token}": {"torch": one(Outcome.SUCCESS)},
                f"test_{key}": {"torch": one(Outcome.FAILURE, f"401 for {token}")},
            }
        },
    )
    info = replace(INFO, env=(("jax", key), (token, "1.0")))
    text = dump_leg(info, results)
    leg = redacted_leg(load_leg(text, where="leg.json"), Redactor.of([token]))
    shown = repr(leg)
    assert token not in shown
    assert key not in shown
    assert leg.collected.dashboards == {
        DashboardId(title="auth ***", category="core"): {
            "test_***": {
                "torch": CellResult(Outcome.FAILURE, CaseCounts(passed=1, failed=1), "401 for ***")
            }
        }
    }
    assert leg.info.env == (("***", "1.0"), ("jax", "***"))
