"""End to end on a real suite's results (pytest's JUnit in ../shared/junit-corpus/pytest):
the durations ``update`` keeps equal an independent sum over the XML."""

from __future__ import annotations

import json
import random
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.state.durations import PRECISION
from ivy_matrix.state.totals import add_totals, backend_totals
from ivy_matrix.stores.local import LocalStore
from tests.conftest import shared_dir

# The corpus's pytest files, split between two backends as two matrix legs would give them.
BACKENDS = {
    "numpy": ("junit.fail.xml", "junit.gloo.standalone.xml", "junit.mpi.integration.xml"),
    "jax": (
        "junit.gloo.elastic.spark.tf.xml",
        "junit.mpi.static.xml",
        "junit.spark.integration.1.xml",
        "pytest-binary-names.xml",
    ),
}


def xml_seconds(path: Path) -> dict[tuple[str, str], float]:
    """Each cell's seconds by xml.etree: the ``time`` of its cases, by classname and test name
    without its parametrization."""
    cells: dict[tuple[str, str], float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "").partition("[")[0]
        key = (case.get("classname", ""), name)
        cells[key] = cells.get(key, 0.0) + float(case.get("time", "0"))
    return cells


@pytest.fixture(name="corpus_store")
def corpus_store_fixture(workdir: Path) -> dict[str, dict[tuple[str, str], float]]:
    """The corpus's files updated into a local store; each backend's cells' seconds by etree."""
    corpus = shared_dir("junit-corpus") / "pytest"
    expected: dict[str, dict[tuple[str, str], float]] = {}
    for backend, names in BACKENDS.items():
        for name in names:
            target = workdir / "results" / backend / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(corpus / name, target)
            for key, seconds in xml_seconds(target).items():
                cells = expected.setdefault(backend, {})
                cells[key] = cells.get(key, 0.0) + seconds
    argv = [
        "update",
        *("--junit", "results/**/*.xml"),
        *("--backend-from-path", r"results/(?P<backend>[^/]+)/"),
        *("--run-id", "7", "--job-id", "3", "--repository", "o/r"),
        *("--summary-json", "summary.json"),
    ]
    assert main(argv, env={}) == 0
    return expected


def test_per_backend_totals_equal_the_sum_over_the_xml(corpus_store):
    """Each backend's seconds, added up over the stored dashboards, are the sum of every
    ``time`` its files hold, within the state's precision; every row is timed."""
    store = LocalStore(Path(".ivy-matrix"))
    totals = add_totals(backend_totals(state) for state in store.load_all())
    for backend, cells in corpus_store.items():
        assert totals[backend].seconds == pytest.approx(sum(cells.values()), rel=PRECISION)
        assert totals[backend].timed == totals[backend].success + totals[backend].failure + (
            totals[backend].skipped
        )
    assert round(totals["numpy"].seconds) == 241  # 21.908 + 203.847 + 15.296 s


def test_the_ten_slowest_cells_of_each_backend_equal_the_sums_over_the_xml(corpus_store):
    """Each backend's ten slowest cells (the summary JSON's ``slowest``) are the ten largest
    sums of a test's cases' ``time`` over its files, in order, each within the state's
    precision (the sums of the tests of one row: a class's test, its parametrizations)."""
    summary = json.loads(Path("summary.json").read_text(encoding="utf-8"))
    for backend, cells in corpus_store.items():
        expected = sorted(cells.items(), key=lambda item: -item[1])[:10]
        found = summary["slowest"][backend]
        assert len(found) == 10
        for (key, seconds), cell in zip(expected, found, strict=True):
            assert cell["seconds"] == pytest.approx(seconds, rel=PRECISION, abs=0.0005)
            assert cell["row"].rsplit(".", 1)[-1] == key[1]


def write_run(folder: Path, seconds: dict[str, float]) -> None:
    """One run's result file: each test passing in its time."""
    cases = "".join(
        f'<testcase classname="ivy_tests.test_core.test_gradients" name="{name}" '
        f'time="{value:.3f}"/>'
        for name, value in seconds.items()
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "torch.xml").write_text(
        f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>', encoding="utf-8"
    )


def test_a_history_of_runs_reports_the_two_slower_tests_blamed_right(workdir: Path):
    """Ten runs of 30 tests through ``update`` (each run's commit and numpy version recorded):
    the test 3 times slower in the newest run (a new commit) and the one slower since numpy
    changed (run 8, the same commit as run 7) are in the summary JSON and the index, blamed on
    the code and on the environment; no other test is."""
    rnd = random.Random(28)
    usual = {f"test_{i:02d}": rnd.uniform(1, 20) for i in range(28)}
    usual |= {"test_code": 6.0, "test_env": 4.0}
    for run in range(1, 11):
        seconds = {name: value * rnd.uniform(0.75, 1.25) for name, value in usual.items()}
        seconds["test_code"] *= 3 if run == 10 else 1
        seconds["test_env"] *= 3 if run >= 8 else 1
        shutil.rmtree(workdir / "results", ignore_errors=True)
        write_run(workdir / "results", seconds)
        numpy = "1.26.4" if run < 8 else "2.0.0"
        argv = [
            "update",
            *("--junit", "results", "--backend", "torch"),
            *("--run-id", str(run), "--job-id", str(100 + run), "--repository", "o/r"),
            *("--sha", f"{7 if run == 8 else run:040x}"),  # run 8 tests run 7's commit again
            *("--env-command", f'echo \'{{"numpy": "{numpy}"}}\''),
            *("--summary-json", "summary.json", "--output-dir", "out"),
        ]
        assert main(argv, env={}) == 0

    summary = json.loads(Path("summary.json").read_text(encoding="utf-8"))
    slower = {s["row"]: s for s in summary["dashboards"]["core/gradients"]["slower"]}
    assert sorted(slower) == ["test_code", "test_env"]
    assert slower["test_code"]["blame"]["hint"] == "code only"
    assert slower["test_code"]["blame"]["first_slow"]["run_id"] == 10
    assert slower["test_env"]["blame"]["hint"] == "environment only"
    assert slower["test_env"]["blame"]["environment"] == {"numpy": ["1.26.4", "2.0.0"]}
    assert (slower["test_env"]["blame"]["last_usual"]["run_id"], slower["test_env"]["runs"]) == (
        7,
        10,
    )
    index = Path("out/README.md").read_text(encoding="utf-8")
    section = index.split("## Slower\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split(" · ")[1] for line in section] == ["test_code", "test_env"]
    assert "**code only**" in section[0]
    assert "**environment only**" in section[1]
    assert "## Slowest\n\n**torch**: " in index
