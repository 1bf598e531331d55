"""The output folder renders only what an update changed, and always equals a fresh render.

Property-style: random sequences of updates (legs of some backends and some dashboards, new
runs and re-runs of one, updates that skip the folder, hand edits to it, another style) and
after each one the folder is compared with ``ivy-matrix render`` of the store.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ivy_matrix.cli import main
from tests.commands.results import GRADIENTS, LAYERS, tree, write_junit

pytestmark = pytest.mark.timeout(600)

ENV = {"GITHUB_REPOSITORY": "o/r", "IVY_MATRIX_JOB_ID": "3"}
CLASSES = (GRADIENTS, LAYERS, "ivy_tests.test_core.test_linalg")
TESTS = ("test_a", "test_b[1]", "test_b[2]", "test_c")
STATUSES = ("passed", "failed", "error", "skipped")

# What happens before an update: nothing, the folder's index is edited, a page is deleted.
MISHAPS = ("none", "edit index", "delete page")


@dataclass(frozen=True)
class Step:
    """One update: its run, the backends and test classes its files hold, the four tests'
    statuses, whether it writes the folder (and in the compact style), and what happened to
    the folder before it."""

    run: int
    backends: list[str]
    classes: list[str]
    statuses: list[str]
    output: bool
    compact: bool
    mishap: str


STEPS = st.builds(
    Step,
    run=st.integers(min_value=1, max_value=4),
    backends=st.lists(st.sampled_from(("torch", "jax")), min_size=1, unique=True),
    classes=st.lists(st.sampled_from(CLASSES), min_size=1, max_size=2, unique=True),
    statuses=st.lists(st.sampled_from(STATUSES), min_size=4, max_size=4),
    output=st.booleans(),
    compact=st.booleans(),
    mishap=st.sampled_from(MISHAPS),
)


def write_results(root: Path, step: Step, index: int) -> Path:
    """The update's result files, one folder per update and backend; returns the folder."""
    folder = root / f"results-{index}"
    for backend in step.backends:
        for number, classname in enumerate(step.classes):
            cases = [(t, step.statuses[(i + number) % 4]) for i, t in enumerate(TESTS)]
            write_junit(folder / backend / f"{number}.xml", cases, classname=classname)
    return folder


def mishap(out: Path, what: str) -> None:
    """What the user (or anything else) did to the folder since the last update."""
    pages = sorted(p for p in out.rglob("*.md") if p.name != "README.md") if out.is_dir() else []
    if what == "edit index" and (out / "README.md").is_file():
        (out / "README.md").write_text("edited by hand\n", encoding="utf-8")
    elif what == "delete page" and pages:
        pages[0].unlink()


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(STEPS, min_size=1, max_size=6))
def test_after_any_updates_the_folder_equals_a_fresh_render(steps):
    """After each update that writes the folder, it holds exactly what render writes."""
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        store, out, fresh = root / "store", root / "out", root / "fresh"
        for index, step in enumerate(steps):
            mishap(out, step.mishap)
            folder = write_results(root, step, index)
            argv = [
                "update",
                "--junit",
                f"{folder}/**/*.xml",
                "--backend-from-path",
                r"/(?P<backend>torch|jax)/",
                "--run-id",
                str(step.run),
                "--store",
                str(store),
            ]
            style = "compact" if step.compact else "ivy"
            if step.output:
                argv += ["--output-dir", str(out), "--style", style]
            assert main(argv, ENV) == 0
            if not step.output:
                continue
            shutil.rmtree(fresh, ignore_errors=True)
            render = ["render", "--store", str(store), "--output-dir", str(fresh)]
            assert main([*render, "--style", style], {}) == 0
            assert tree(out) == tree(fresh)
