"""End to end on a real suite's results (pytest's JUnit in ../shared/junit-corpus/pytest):
the durations ``update`` keeps equal an independent sum over the XML."""

from __future__ import annotations

import io
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import ClassVar

import pytest

from ivy_matrix.cli import main
from ivy_matrix.state.durations import PRECISION
from ivy_matrix.state.totals import add_totals, backend_totals
from ivy_matrix.stores.local import LocalStore
from tests.commands.test_update_git import git_env
from tests.commands.test_update_git import run as run_over_git
from tests.conftest import shared_dir
from tests.github.fake_server import FakeGitHub
from tests.github.git_server import GitServer

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
        *("--summary-json", "summary.json", "--output-dir", "out"),
    ]
    assert main(argv, env={}) == 0
    return expected


def test_per_backend_totals_equal_the_sum_over_the_xml(corpus_store):
    """Each backend's seconds, added up over the stored dashboards, are the sum of every
    ``time`` its files hold, within the state's precision; every row is timed; the backend's
    durations file adds up to it within 1 % (to the sum over the XML, exactly)."""
    store = LocalStore(Path(".ivy-matrix"))
    totals = add_totals(backend_totals(state) for state in store.load_all())
    for backend, cells in corpus_store.items():
        assert totals[backend].seconds == pytest.approx(sum(cells.values()), rel=PRECISION)
        assert totals[backend].timed == totals[backend].success + totals[backend].failure + (
            totals[backend].skipped
        )
    assert round(totals["numpy"].seconds) == 241  # 21.908 + 203.847 + 15.296 s
    for backend, cells in corpus_store.items():
        durations = json.loads(Path(f"out/durations/{backend}.json").read_text(encoding="utf-8"))
        assert sum(durations.values()) == pytest.approx(totals[backend].seconds, rel=0.01)
        assert sum(durations.values()) == pytest.approx(sum(cells.values()), rel=1e-6)
    assert (
        "test/integration/test_elastic_spark_tensorflow.py::ElasticSparkTensorflowTests::"
        "test_auto_scale_down_by_exception"
    ) in json.loads(Path("out/durations/jax.json").read_text(encoding="utf-8"))


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


PYTEST_PROJECT = {
    "tests/nn/test_layers.py": (
        "import time\n"
        "import pytest\n\n\n"
        "@pytest.mark.parametrize('x', [1, 2, 'a-b'])\n"
        "def test_relu(x):\n    time.sleep(0.01)\n\n\n"
        "class TestConv:\n"
        "    def test_forward(self):\n        time.sleep(0.02)\n\n"
        "    class TestInner:\n"
        "        def test_deep(self):\n            pass\n"
    ),
    "tests/test_top.py": "def test_a():\n    pass\n\n\ndef test_b():\n    assert False\n",
}


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_the_durations_file_keys_every_test_by_the_node_id_pytest_collects(workdir, family):
    """A real pytest run's JUnit (either family): the backend's durations file names every
    test by its pytest node id (what pytest-split matches), and its seconds add up to the
    sum of the file's ``time`` attributes, which is the backend's total."""
    project = workdir / "project"
    for path, text in PYTEST_PROJECT.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text, encoding="utf-8")
    run = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", f"junit_family={family}"]
    collected = subprocess.run(
        [*run, "--collect-only", "-q"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    node_ids = {line for line in collected.stdout.splitlines() if "::" in line}
    subprocess.run(
        [*run, "-q", "--junitxml", str(workdir / "results" / "numpy.xml")],
        cwd=project,
        capture_output=True,
        timeout=60,
        check=False,
    )
    argv = [
        "update",
        *("--junit", "results", "--backend", "numpy", "--run-id", "3", "--repository", "o/r"),
        *("--output-dir", "out", "--summary-json", "summary.json"),
    ]
    assert main(argv, env={}) == 0

    durations = json.loads(Path("out/durations/numpy.json").read_text(encoding="utf-8"))
    assert set(durations) == node_ids
    assert len(node_ids) == 7
    expected = sum(xml_seconds(workdir / "results" / "numpy.xml").values())
    assert sum(durations.values()) == pytest.approx(expected, rel=0.01)
    summary = json.loads(Path("summary.json").read_text(encoding="utf-8"))
    total = summary["all_dashboards"]["numpy"]["seconds"]
    assert sum(durations.values()) == pytest.approx(total, rel=0.01)


def leg(work: Path, server: str, run_id: int, backend: str, *, job: int, seconds: dict[str, float]):
    """One matrix leg: its timed results, collected into ``legs`` (no network)."""
    cases = "".join(
        f'<testcase classname="tests.nn.test_layers.TestConv" name="{name}" time="{value}"/>'
        for name, value in seconds.items()
    )
    results = work / f"leg-{backend}-{job}"
    results.mkdir(parents=True)
    (results / "junit.xml").write_text(f"<testsuite>{cases}</testsuite>", encoding="utf-8")
    argv = ["collect", "--junit", str(results), "--backend", backend, "--leg-file", "legs"]
    argv += ["--run-id", str(run_id), "--run-attempt", "1", "--repository", "acme/widgets"]
    assert main([*argv, "--job-id", str(job)], {"GITHUB_SERVER_URL": server}) == 0


def test_the_fan_in_commits_each_backends_durations_file_and_the_next_run_replaces_it(
    workdir: Path,
):
    """Legs carry their cases' durations to the fan-in job, which commits one durations file
    per backend over git beside the pages (two shards of jax in one file); the next run's
    fan-in replaces the file of each backend it brought and keeps the others'."""
    prefix = "tests/nn/test_layers.py::TestConv::"
    with FakeGitHub() as api, GitServer() as git:
        leg(workdir, git.url, 100, "jax", job=11, seconds={"test_a[1]": 1.5, "test_a[2]": 2.25})
        leg(workdir, git.url, 100, "jax", job=12, seconds={"test_b": 40.0})
        leg(workdir, git.url, 100, "numpy", job=13, seconds={"test_a[1]": 0.125, "test_b": 0.5})
        env = git_env(api, git, workdir, GITHUB_RUN_ID="100")
        fan_in = ["--legs", "legs", "--run-id", "100", "--repository", "acme/widgets"]
        result = run_over_git(workdir, env, *fan_in)
        assert result.returncode == 0, result.stderr
        files = git.files("ivy-matrix")
        assert json.loads(files["durations/jax.json"]) == {
            f"{prefix}test_a[1]": 1.5,
            f"{prefix}test_a[2]": 2.25,
            f"{prefix}test_b": 40.0,
        }
        assert json.loads(files["durations/numpy.json"]) == {
            f"{prefix}test_a[1]": 0.125,
            f"{prefix}test_b": 0.5,
        }

        shutil.rmtree(workdir / "legs")
        leg(workdir, git.url, 101, "jax", job=21, seconds={"test_a[1]": 3.0})
        env = git_env(api, git, workdir, GITHUB_RUN_ID="101")
        fan_in = ["--legs", "legs", "--run-id", "101", "--repository", "acme/widgets"]
        result = run_over_git(workdir, env, *fan_in)
        assert result.returncode == 0, result.stderr
        files = git.files("ivy-matrix")
        assert json.loads(files["durations/jax.json"]) == {f"{prefix}test_a[1]": 3.0}
        assert f"{prefix}test_b" in json.loads(files["durations/numpy.json"])


class _Spill(io.BytesIO):
    """The update's temporary file, watched: what it held when it was closed."""

    made: ClassVar[list[_Spill]] = []

    def __init__(self, **_: object) -> None:
        super().__init__()
        self.held = b""
        _Spill.made.append(self)

    def close(self) -> None:
        self.held = self.getvalue()
        super().close()


@pytest.mark.parametrize("made", [_Spill, None], ids=["spilled", "no temporary file"])
def test_the_timed_cases_wait_in_a_temporary_file_until_the_update_ends(workdir, monkeypatch, made):
    """The timed cases' texts wait in the update's temporary file (results/timed_cases.py),
    which is closed (and so deleted) when the update ends; without one (the temporary
    folder is not there), they are held: the durations files are the same."""
    _Spill.made.clear()
    if made is None:
        monkeypatch.setattr(tempfile, "tempdir", str(workdir / "not-there"))
    else:
        monkeypatch.setattr(tempfile, "TemporaryFile", made)
    cases = "".join(
        f'<testcase classname="tests.test_m.TestK" name="test_{i}[x]" time="{i / 4}"/>'
        for i in range(5)
    )
    (workdir / "results").mkdir()
    (workdir / "results" / "torch.xml").write_text(f"<testsuite>{cases}</testsuite>", "utf-8")
    argv = ["update", "--junit", "results", "--backend", "torch", "--run-id", "3"]
    assert main([*argv, "--repository", "o/r", "--output-dir", "out"], env={}) == 0
    written = Path("out/durations/torch.json").read_text(encoding="utf-8")
    assert json.loads(written) == {f"tests/test_m.py::TestK::test_{i}[x]": i / 4 for i in range(5)}
    if made is _Spill:
        (spill,) = _Spill.made
        assert spill.closed
        assert spill.held.decode() == written[len('{"tests/test_m.py::TestK::') : -2].replace(
            '"tests/test_m.py::TestK::', '"'
        )


_LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
from ivy_matrix.cli import main
sys.exit(main(sys.argv[1:], env={}))
"""


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="no file size limit here")
def test_a_temporary_file_that_fills_up_loses_nothing(workdir):
    """When the temporary file can take no more (here: no file may grow past 100 kB, as a
    full disk refuses), what it holds is read back and the rest is held: the update writes
    the same durations files as one that never ran out, where it once failed writing them
    (a buffered file kept failing to write what it held, then crashed as it was closed)."""
    (workdir / "results").mkdir()
    for backend in range(24):  # 24 backends' small texts (3.5 kB each), 450 kB in all
        cases = "".join(
            f'<testcase classname="tests.test_m.TestK{k}" name="test_{i}_{"p" * 150}" '
            f'time="{i / 8 + backend}"/>'
            for k in range(10)
            for i in range(8)
        )
        xml = f"<testsuite>{cases}</testsuite>"
        (workdir / "results" / f"b{backend}.xml").write_text(xml, encoding="utf-8")
    argv = ["update", "--junit", "results/b*.xml", "--backend-from-path", r"(?P<backend>b\d+)\."]
    argv += ["--run-id", "3", "--repository", "o/r", "--style", "compact", "--store"]
    assert main([*argv, "free", "--output-dir", "free-out"], env={}) == 0
    limited = subprocess.run(
        [sys.executable, "-c", _LIMITED, *argv, "limited", "--output-dir", "limited-out"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert limited.returncode == 0, limited.stderr[-3000:]
    free = sorted((workdir / "free-out" / "durations").iterdir())
    assert len(free) == 24
    assert sum(path.stat().st_size for path in free) > 300_000  # more than the limit took
    for path in free:
        assert (workdir / "limited-out" / "durations" / path.name).read_bytes() == path.read_bytes()
