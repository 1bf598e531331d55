"""End to end on a real suite's results (pytest's JUnit in ../shared/junit-corpus/pytest):
the durations ``update`` keeps equal an independent sum over the XML."""

from __future__ import annotations

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
