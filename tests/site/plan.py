"""The results the browser tests build their site from, and what the site must show of them.

``PLAN`` writes out each test case's outcome on each backend in each of ``RUNS`` runs (and
:func:`environment` each run's recorded packages); the
site is built as users build it (``ivy-matrix update`` once per run, then ``render --html``),
and :func:`expected_cells` works out every grid cell from ``PLAN`` alone.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from xml.sax.saxutils import quoteattr

from ivy_matrix.cli import main
from tests.commands.results import case_xml

BACKENDS = ("torch", "numpy", "jax")
RUNS = 6
GRADIENTS = "ivy_tests.test_core.test_gradients"
LAYERS = "ivy_tests.test_nn.test_layers"
SCRIPT_NAME = "<script>alert(1)</script>"
IMG_NAME = '"><img src=x onerror=alert(1)>'
BIDI_NAME = "test_\u202eevil\u202c_name"
P, X, K = "passed", "failed", "skipped"
# (class, test case, backend) -> its outcome in runs 1..6; a case absent on a backend is not run
# there. Parametrized cases (test_relu[...]) collapse into one row.
PLAN: dict[tuple[str, str, str], str] = {}


def _plan(classname: str, case: str, **by_backend: str) -> None:
    for backend, outcomes in by_backend.items():
        PLAN[(classname, case, backend)] = outcomes


for _backend in BACKENDS:
    for _i in range(12):
        _plan(GRADIENTS, f"test_grad_{_i:02d}", **{_backend: "PPPPPP"})
_plan(GRADIENTS, "test_relu[a]", torch="PPPPPP", numpy="PPPPPP", jax="PPPPXX")
_plan(GRADIENTS, "test_relu[b]", torch="PPPPPP", numpy="PPPPPP", jax="PPPPPP")
_plan(GRADIENTS, "test_relu[c]", torch="PPPPPX", numpy="PPPPPP", jax="PPPPPP")
_plan(GRADIENTS, "test_flip", torch="PXPXPX", numpy="PPPPPP", jax="PPPPPP")
_plan(GRADIENTS, "test_fixed", torch="XXXXXP", numpy="PPPPPP", jax="PPPPPP")
_plan(GRADIENTS, "test_skip", torch="KKKKKK", numpy="KKKKKK", jax="KKKKKK")
_plan(GRADIENTS, "test_torch_only", torch="PPPPPX")
_plan(GRADIENTS, SCRIPT_NAME, torch="XXXXXX", numpy="PPPPPP", jax="PPPPPP")
_plan(GRADIENTS, IMG_NAME, torch="PPPPPP", numpy="PPPPPX", jax="PPPPPP")
_plan(GRADIENTS, BIDI_NAME, torch="PPPPPP", numpy="PPPPPP", jax="XXXXXX")
for _i in range(5):
    _plan(LAYERS, f"test_dense_{_i}", torch="PPPPPP", numpy="PPPPPP", jax="PPPPPP")
_plan(LAYERS, "test_conv", torch="PPPPPP", numpy="PPPXXX", jax="PPPPPP")

# Each run's environment, recorded from the result files' suite <properties>: jax moves from
# 0.4.30 to 0.4.31 in run 5, when a package named like markup appears; numpy stays.
JAX_BUMP = 5


def environment(run: int) -> dict[str, str]:
    """The packages of run ``run`` (1..RUNS) and their versions."""
    if run < JAX_BUMP:
        return {"jax": "0.4.30", "numpy": "2.1.0"}
    return {"jax": "0.4.31", "numpy": "2.1.0", SCRIPT_NAME: "1.0"}


def seconds_of(case: str, backend: str, run: int) -> float:
    """How long ``case`` took on ``backend`` in run ``run`` (1..RUNS): a few hundredths of a
    second, but test_conv on jax 30 s, and 90 s in the newest run (a new commit, the same
    packages as the run before: slower, code only), and test_dense_0 12 s on torch."""
    if (case, backend) == ("test_conv", "jax"):
        return 90.0 if run == RUNS else 30.0
    if (case, backend) == ("test_dense_0", "torch"):
        return 12.0
    return (len(case) + BACKENDS.index(backend)) / 100


def sha_of(run: int) -> str:
    """The commit run ``run`` tested."""
    return f"{run:02d}" + "c0ffee" * 6 + "00"


_STATUS = {"P": "passed", "X": "failed", "K": "skipped"}
_WORST = {"failure": 3, "success": 1, "skipped": 0}
_CELL = {"P": "success", "X": "failure", "K": "skipped"}


def expected_cells() -> dict[tuple[str, str, str], tuple[str, int, int]]:
    """(dashboard, row, backend) -> (status, failed cases, cases) from PLAN's newest run alone.

    A row is a test with its parametrization cut off; its cell is the worst of its cases'
    outcomes (failure, then success, then skipped); a backend without the test is missing.
    """
    cases: dict[tuple[str, str, str], list[str]] = {}
    for (classname, case, backend), outcomes in PLAN.items():
        dashboard_key = "core/gradients" if classname == GRADIENTS else "nn/layers"
        cases.setdefault((dashboard_key, case.split("[")[0], backend), []).append(outcomes[-1])
    result = {}
    for dashboard_key, row in {(d, r) for d, r, _ in cases}:
        for backend in BACKENDS:
            found = cases.get((dashboard_key, row, backend), [])
            status = max((_CELL[o] for o in found), key=lambda s: _WORST[s], default="missing")
            result[(dashboard_key, row, backend)] = (status, found.count("X"), len(found))
    return result


def write_run(folder: Path, run: int) -> None:
    """The JUnit files of run ``run`` (1..RUNS): one file per backend and class."""
    for backend in BACKENDS:
        for classname in (GRADIENTS, LAYERS):
            cases = [
                case_xml(case, _STATUS[outcomes[run - 1]], classname).replace(
                    "<testcase ", f'<testcase time="{seconds_of(case, backend, run)}" ', 1
                )
                for (cls, case, b), outcomes in PLAN.items()
                if cls == classname and b == backend
            ]
            properties = "".join(
                f"<property name={quoteattr(name)} value={quoteattr(version)}/>"
                for name, version in environment(run).items()
            )
            path = folder / f"run{run}" / backend / f"{classname.rsplit('.', 1)[1]}.xml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest">'
                f"<properties>{properties}</properties>{''.join(cases)}</testsuite></testsuites>\n",
                encoding="utf-8",
            )


def cli(*argv: str) -> None:
    """Run one ivy-matrix command in-process; it must succeed."""
    out = io.StringIO()
    code = main(list(argv), {"GITHUB_REPOSITORY": "o/r"}, stdout=out, stderr=out)
    assert code == 0, out.getvalue()


def build_site(work: Path) -> Path:
    """The site of ``RUNS`` runs of PLAN in ``work``, built with update and render --html."""
    with contextlib.chdir(work):
        for run in range(1, RUNS + 1):
            write_run(work, run)
            cli(
                "update",
                "--junit",
                f"run{run}/**/*.xml",
                "--backend-from-path",
                r"run\d+/(?P<backend>[a-z]+)/",
                "--run-id",
                str(500 + run),
                "--sha",
                sha_of(run),
                "--targets",
                "summary",
            )
        cli("render", "--html", "html")
    return work / "html"
