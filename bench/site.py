"""The HTML site at Ivy's shape, or ``--scale`` times it: its size, the data each view loads,
and how fast headless Chromium paints each view.

Builds a store the way users do, with ``ivy-matrix update`` over seeded JUnit files of many
runs (default: Ivy's shape: 100 dashboards, 8,000 rows, one of them 1,200 rows, 4 backends,
30 runs; ``--scale 10``: 1,000 dashboards, 80,000 rows, one of them 12,000), then
``render --html``, and measures:

- ``size``: the bytes of the site's data files (``data/``) and of the whole site;
- ``render``: seconds to build the site's files from the store (Python, in this process), and
  the files a second render writes (0: an unchanged store writes nothing);
- ``paint``, per view (:func:`views_of`: the landing view, needs attention; each group alone;
  the summary; the failure groups and the largest alone; the slowest tests; the largest
  dashboard's grid and a failing cell's detail in it), each opened from ``file://`` in a fresh
  browser context: milliseconds from navigation start until the view is painted (the page's
  ``ivy-painted:<view>`` mark, set a frame after the view's DOM is built; ``drawn``: the
  ``ivy-drawn:<view>`` mark), the median and best of ``--repeat`` tries, the rows in the
  document, and the data files the browser requested (``data_files``, ``data_bytes``: their
  sizes; ``largest_view_data_bytes``: the most any view loads). Wall times depend on what else
  the machine runs; ``main_thread_cpu``, the CPU time of the page's main thread until then
  (Chromium's ``ThreadTime`` metric), much less so.

``--compare DIR`` renders the same store with another checkout (``git archive main | tar -x
-C DIR``) and measures its site too, the two taking turns (``ref`` in the report);
``--screenshots`` saves each view as a PNG under ``WORK/screenshots``.

Debian's chromium through Playwright, as the browser tests use it (tests/site/browser.py).
Data and the site go to ``bench/out/site/`` (gitignored). ``--smoke`` runs a tiny shape once.

I/O: writes JUnit files, a store and the site under ``--work``; starts chromium.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ivy_matrix.cli import main  # noqa: E402  -- after the path is set
from ivy_matrix.site.build import render_site  # noqa: E402
from ivy_matrix.site.page import read_page  # noqa: E402
from ivy_matrix.stores.local import LocalStore  # noqa: E402
from tests.site.browser import CHROMIUM_ARGS  # noqa: E402

BACKENDS = ("torch", "numpy", "tensorflow", "jax")
MESSAGES = (
    "AssertionError: the results from backend {b} and ground truth numpy differ: {x} != {y}",
    "ValueError: operands could not be broadcast together with shapes ({x},{y}) ({y},{x})",
    "TypeError: unsupported operand type(s) for +: 'int' and 'NoneType' at 0x7f{x:06x}",
    "RuntimeError: {b} does not support dtype 'bfloat16' on device 'cpu'",
    "IvyNotImplementedException: function 'ivy.{b}.fft{x}' is not implemented",
    "AssertionError: assert {x}.0 == {y}.5 (atol=1e-06)",
    "hypothesis.errors.Unsatisfiable: unable to satisfy assumptions after {x} examples",
    "KeyError: 'float{x}'",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    dashboards: int
    rows: int
    big: int
    runs: int


IVY = Shape(dashboards=100, rows=8000, big=1200, runs=30)
SMOKE = Shape(dashboards=3, rows=60, big=30, runs=3)


def scaled(shape: Shape, scale: int) -> Shape:
    """``shape`` at ``scale`` times its rows: as many times the dashboards, the rows and the
    largest dashboard's rows (the runs stay)."""
    return Shape(
        dashboards=shape.dashboards * scale,
        rows=shape.rows * scale,
        big=shape.big * scale,
        runs=shape.runs,
    )


@dataclass(slots=True)
class Cell:
    """One test on one backend over the runs: broken (fails from a run on), flaky or skipped."""

    params: int
    failing: int = 0  # failing parametrizations while broken
    broken: bool = False
    chronic: bool = False  # broken from the first run, and stays so
    flaky: bool = False
    skipped: bool = False
    message: int = 0


def plan(
    shape: Shape, rng: random.Random, broken: float
) -> dict[str, list[tuple[str, dict[str, Cell]]]]:
    """Dashboards (class names) -> their tests and each backend's cell; ``broken`` of the
    cells fail in every run, 1% are flaky and 3% skipped."""
    sizes = [shape.big] + [
        (shape.rows - shape.big) // (shape.dashboards - 1)
        + (1 if i < (shape.rows - shape.big) % (shape.dashboards - 1) else 0)
        for i in range(shape.dashboards - 1)
    ]
    dashboards = {}
    for number, size in enumerate(sizes):
        classname = f"ivy_tests.test_grp{number % 7}.test_mod{number:03d}"
        tests = []
        for i in range(size):
            params = rng.choices((1, 3, 8), weights=(70, 20, 10))[0]
            cells = {}
            for backend in BACKENDS:
                cell = Cell(params=params, message=rng.randrange(len(MESSAGES)))
                roll = rng.random()
                cell.broken = cell.chronic = roll < broken
                cell.flaky = broken <= roll < broken + 0.01
                cell.skipped = broken + 0.01 <= roll < broken + 0.04
                cell.failing = rng.randint(1, params)
                cells[backend] = cell
            tests.append((f"test_{['add', 'conv', 'grad', 'norm', 'fft'][i % 5]}_{i:04d}", cells))
        dashboards[classname] = tests
    return dashboards


def case_xml(classname: str, name: str, status: str, message: str) -> str:
    body = ""
    if status == "failed":
        body = f'<failure message="{message}">Traceback (most recent call last): ...</failure>'
    elif status == "skipped":
        body = '<skipped message="not supported"/>'
    return f'<testcase classname="{classname}" name="{name}" time="0.01">{body}</testcase>'


def write_run(
    folder: Path,
    dashboards: dict[str, list[tuple[str, dict[str, Cell]]]],
    run: int,
    rng: random.Random,
) -> None:
    """One run's JUnit files, one per backend; cells break and mend between runs."""
    for backend in BACKENDS:
        cases = []
        for classname, tests in dashboards.items():
            for name, cells in tests:
                cell = cells[backend]
                # A passing test breaks now and then, and is mended within ~15 runs.
                if run > 1 and not cell.chronic and rng.random() < (0.07 if cell.broken else 0.002):
                    cell.broken = not cell.broken
                failing = cell.broken or (cell.flaky and rng.random() < 0.3)
                for j in range(cell.params):
                    status = "passed"
                    if cell.skipped:
                        status = "skipped"
                    elif failing and j < cell.failing:
                        status = "failed"
                    message = MESSAGES[cell.message].format(b=backend, x=run + j, y=j * 7 + 1)
                    param = f"[cpu-{backend}-{j}]" if cell.params > 1 else ""
                    cases.append(case_xml(classname, name + param, status, message))
        path = folder / f"run{run:02d}" / backend / "results.xml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest">'
            + "".join(cases)
            + "</testsuite></testsuites>\n",
            encoding="utf-8",
        )


def cli(*argv: str) -> str:
    out = io.StringIO()
    code = main(list(argv), {"GITHUB_REPOSITORY": "unifyai/ivy"}, stdout=out, stderr=out)
    if code != 0:
        raise SystemExit(f"ivy-matrix {argv[0]} failed:\n{out.getvalue()}")
    return out.getvalue()


def build_store(work: Path, shape: Shape, seed: int, broken: float) -> Path:
    """The store after ``shape.runs`` updates (cached by shape, seed and failure rate)."""
    store = work / f"store-{shape.dashboards}-{shape.rows}-{shape.runs}-{seed}-{broken}"
    if (store / "state").is_dir():
        return store
    rng = random.Random(seed)
    dashboards = plan(shape, rng, broken)
    results = work / "results"
    for run in range(1, shape.runs + 1):
        shutil.rmtree(results, ignore_errors=True)
        write_run(results, dashboards, run, rng)
        started = time.monotonic()
        cli(
            "update",
            "--junit",
            f"{results}/**/*.xml",
            "--backend-from-path",
            r"run\d+/(?P<backend>[a-z]+)/",
            "--run-id",
            str(7_000_000_000 + run * 1000),
            "--sha",
            hashlib.sha1(f"run {run}".encode()).hexdigest(),
            "--store",
            str(store),
            "--targets",
            "summary",
        )
        print(f"  run {run}: update {time.monotonic() - started:.1f} s", file=sys.stderr)
    shutil.rmtree(results, ignore_errors=True)
    return store


def sizes(site: Path) -> dict[str, int]:
    data = sum(p.stat().st_size for p in (site / "data").rglob("*") if p.is_file())
    whole = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    biggest = max((p.stat().st_size for p in (site / "data").rglob("*.js")), default=0)
    return {"data_bytes": data, "site_bytes": whole, "largest_data_file": biggest}


def views_of(site: Path, big_id: str) -> dict[str, tuple[str, str]]:
    """Every view of the site: name -> (the address's fragment, the view it paints): the
    landing view (needs attention), each attention group alone, the summary, the failure
    groups and the largest of them alone, the slowest tests, the largest dashboard's grid and
    a failing cell's detail in it."""
    from urllib.parse import quote

    views = {
        "attention": ("", "attention"),
        "attention_failing": ("#/attention?group=failing", "attention"),
        "summary": ("#/summary", "summary"),
        "groups": ("#/groups", "groups"),
        "slowest": ("#/slowest", "slowest"),
        "grid": (f"#/d/{big_id}", "grid"),
    }
    signature, test, backend = _a_failure(site, big_id)
    if signature:
        views["group_alone"] = (f"#/groups?sig={signature}", "groups")
    if test:
        views["detail"] = (f"#/d/{big_id}?test={quote(test)}&cell={backend}", "grid")
    return views


def _a_failure(site: Path, big_id: str) -> tuple[str, str, str]:
    """The most common failure's signature, and a failing cell of the largest dashboard."""
    ranked = _document(site / "data" / "groups.js").get("groups", [])
    signature = ranked[0][0] if ranked else ""
    grid = _document(site / "data" / "d" / f"{big_id}.js")
    for row in grid["rows"]:
        for i, backend in enumerate(grid["backends"]):
            if row[1 + i] >= 0 and grid["cells"][row[1 + i]]["s"] == "f":
                return signature, row[0], backend
    return signature, "", ""


def _document(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    found: dict[str, Any] = json.loads(text[text.index(",") + 1 : text.rindex(");")])
    return found


def _note(into: list[str], request: Any) -> None:
    into.append(request.url)


def _open(browser: Any, site: Path, fragment: str, view: str) -> dict[str, Any]:
    """One try: the view opened in a fresh context, its marks, CPU and requests."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    requested: list[str] = []
    context.on("request", partial(_note, requested))
    page = context.new_page()
    session = context.new_cdp_session(page)
    session.send("Performance.enable")
    page.goto((site / "index.html").as_uri() + fragment)
    page.wait_for_function(f"() => document.body.dataset.painted === {view!r}")
    drawn, painted = page.evaluate(
        f"() => ['ivy-drawn:{view}', 'ivy-painted:{view}']"
        ".map(n => performance.getEntriesByName(n).at(-1).startTime)"
    )
    metrics = session.send("Performance.getMetrics")["metrics"]
    found = {
        "drawn": drawn,
        "painted": painted,
        "cpu": 1000 * next(m["value"] for m in metrics if m["name"] == "ThreadTime"),
        "fcp": page.evaluate(
            "() => (performance.getEntriesByName('first-contentful-paint')[0]"
            " || {startTime: null}).startTime"
        ),
        "rows": page.evaluate("() => document.querySelectorAll('tr').length"),
        "requested": requested,
    }
    context.close()
    return found


def _figures(site: Path, tries: list[dict[str, Any]]) -> dict[str, Any]:
    data = (site / "data").as_uri() + "/"
    files = sorted(u[len(data) :] for u in tries[-1]["requested"] if u.startswith(data))
    times = [t["painted"] for t in tries]
    return {
        "median_ms": round(statistics.median(times), 1),
        "best_ms": round(min(times), 1),
        "drawn_median_ms": round(statistics.median(t["drawn"] for t in tries), 1),
        "main_thread_cpu_median_ms": round(statistics.median(t["cpu"] for t in tries), 1),
        "first_contentful_paint_ms": round(
            statistics.median(t["fcp"] for t in tries if t["fcp"]), 1
        ),
        "rows_in_document": tries[-1]["rows"],
        "data_files": files,
        "data_bytes": sum((site / "data" / f).stat().st_size for f in files),
    }


def paint(sites: dict[str, Path], big_id: str, repeat: int) -> dict[str, dict[str, Any]]:
    """Per site (this code's, and the reference's with ``--compare``) and view
    (:func:`views_of`), each opened from ``file://`` in fresh contexts, the sites taking turns:
    its paint times, and the data files the browser requested for it (``data_bytes``: their
    sizes)."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is not installed (scripts/bootstrap --dev installs it)")
    found: dict[str, dict[str, Any]] = {name: {} for name in sites}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        first = next(iter(sites.values()))
        for label, (fragment, view) in views_of(first, big_id).items():
            tries: dict[str, list[dict[str, Any]]] = {name: [] for name in sites}
            for attempt in range(repeat):
                order = list(sites.items())
                for name, site in order if attempt % 2 == 0 else order[::-1]:
                    tries[name].append(_open(browser, site, fragment, view))
            for name, site in sites.items():
                found[name][label] = _figures(site, tries[name])
        browser.close()
    return found


def screenshots(site: Path, big_id: str, folder: Path) -> None:
    """Each view of :func:`views_of` as the browser shows it (the top of the page, 1,400 x
    900), into ``folder/<view>.png``, to look at."""
    from playwright.sync_api import sync_playwright

    folder.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS
        )
        for label, (fragment, view) in views_of(site, big_id).items():
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            page.goto((site / "index.html").as_uri() + fragment)
            page.wait_for_function(f"() => document.body.dataset.painted === {view!r}")
            page.screenshot(path=str(folder / f"{label}.png"))
            context.close()
        browser.close()


def load_average() -> float:
    """The machine's load over the last minute (the paint times depend on it)."""
    return round(os.getloadavg()[0], 1)


def run(args: argparse.Namespace) -> dict[str, Any]:
    shape = SMOKE if args.smoke else scaled(IVY, args.scale)
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    store_dir = build_store(work, shape, args.seed, args.broken)
    states = LocalStore(store_dir).load_all()
    started = time.monotonic()
    files = render_site(states, read_page())
    render_seconds = time.monotonic() - started
    site = work / "html"
    shutil.rmtree(site, ignore_errors=True)
    with contextlib.redirect_stdout(io.StringIO()):
        cli("render", "--store", str(store_dir), "--html", str(site))
    again = cli("render", "--store", str(store_dir), "--html", str(site))
    big = max(states, key=lambda s: len(s.rows))
    from ivy_matrix.state.paths import site_id

    sites = {"this": site}
    if args.compare is not None:
        sites["ref"] = reference_site(Path(args.compare), store_dir, work / "html@ref")
    painted = paint(sites, site_id(big), 1 if args.smoke else args.repeat)
    if args.screenshots:
        screenshots(site, site_id(big), work / "screenshots")
    report: dict[str, Any] = {
        "shape": {
            "dashboards": len(states),
            "rows": sum(len(s.rows) for s in states),
            "largest_dashboard_rows": len(big.rows),
            "backends": len(BACKENDS),
            "runs": shape.runs,
            "broken_at_start": args.broken,
        },
        "files": len(files),
        "size": sizes(site),
        "render": {
            "seconds": round(render_seconds, 2),
            "second_render": again.strip().splitlines()[-1],
        },
        "paint": painted["this"],
        "largest_view_data_bytes": max(v["data_bytes"] for v in painted["this"].values()),
        "load_average": load_average(),
    }
    if "ref" in painted:
        report["ref"] = {
            "size": sizes(sites["ref"]),
            "paint": painted["ref"],
            "largest_view_data_bytes": max(v["data_bytes"] for v in painted["ref"].values()),
        }
    return report


def reference_site(code: Path, store: Path, site: Path) -> Path:
    """The site of ``store`` as the checkout ``code`` renders it (``--compare``)."""
    shutil.rmtree(site, ignore_errors=True)
    command = [sys.executable, str(code / "entrypoint.py"), "render", "--store", str(store)]
    subprocess.run(
        [*command, "--html", str(site)],
        check=True,
        capture_output=True,
        env={**os.environ, "GITHUB_REPOSITORY": "unifyai/ivy"},
    )
    return site


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default=str(ROOT / "bench" / "out" / "site"))
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--broken", type=float, default=0.04, help="share of cells failing in every run"
    )
    parser.add_argument(
        "--scale",
        type=int,
        default=1,
        help="times Ivy's shape: as many times the dashboards, rows and the largest's rows",
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny shape, once (checks it runs)")
    parser.add_argument(
        "--compare",
        help="a checkout of other code (git archive main | tar -x -C DIR): its site of the "
        "same store is measured too, the two taking turns",
    )
    parser.add_argument(
        "--screenshots", action="store_true", help="save each view as a PNG under WORK/screenshots"
    )
    parser.add_argument("--json", help="also write the figures here")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse_args()
    report = run(arguments)
    text = json.dumps(report, indent=2)
    print(text)
    if arguments.json:
        Path(arguments.json).write_text(text + "\n", encoding="utf-8")
