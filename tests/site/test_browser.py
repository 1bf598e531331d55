"""The site in a real browser: Debian's headless chromium, driven by Playwright.

One browser for the whole module; each test gets a fresh browser context. The main site is
built the way users build it: ``ivy-matrix update`` over six runs of JUnit files whose outcomes
the test writes out (``PLAN``), then ``ivy-matrix render --html``; the expected cells are
worked out from ``PLAN`` alone.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from ivy_matrix.cli import main
from tests.commands.results import case_xml
from tests.site.browser import CHROMIUM_ARGS, axe_source, chromium_path, serve
from tests.site.scenes import F, S, dashboard, write_store

playwright_api = pytest.importorskip("playwright.sync_api")

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
                case_xml(case, _STATUS[outcomes[run - 1]], classname)
                for (cls, case, b), outcomes in PLAN.items()
                if cls == classname and b == backend
            ]
            path = folder / f"run{run}" / backend / f"{classname.rsplit('.', 1)[1]}.xml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest">'
                f"{''.join(cases)}</testsuite></testsuites>\n",
                encoding="utf-8",
            )


def cli(*argv: str) -> None:
    """Run one ivy-matrix command in-process; it must succeed."""
    out = io.StringIO()
    code = main(list(argv), {"GITHUB_REPOSITORY": "o/r"}, stdout=out, stderr=out)
    assert code == 0, out.getvalue()


@pytest.fixture(name="site", scope="module")
def site_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of six runs of PLAN, built with update and render --html."""
    work = tmp_path_factory.mktemp("site")
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
                f"{run:02d}" + "c0ffee" * 6 + "00",
                "--targets",
                "summary",
            )
        cli("render", "--html", "html")
    return work / "html"


@pytest.fixture(name="browser", scope="module")
def browser_fixture() -> Iterator[Any]:
    """One headless chromium for the module (Debian's, no download)."""
    executable = chromium_path()
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class Visit:
    """A fresh browser context and page, with every request and alert it made."""

    def __init__(self, browser: Any, **options: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1200, "height": 900}, **options)
        self.requests: list[str] = []
        self.alerts: list[str] = []
        self.errors: list[str] = []
        self.context.on("request", lambda request: self.requests.append(request.url))
        self.page = self.context.new_page()
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _dialog(self, dialog: Any) -> None:
        """An alert (or confirm, prompt) the page opened: noted, and dismissed."""
        self.alerts.append(dialog.message)
        dialog.dismiss()

    def open(self, url: str, view: str) -> Any:
        """Go to ``url`` and wait until ``view`` is painted."""
        self.page.goto(url)
        return self.painted(view)

    def painted(self, view: str) -> Any:
        # A function, not an expression: the page's policy forbids eval, which an expression needs.
        self.page.wait_for_function(f"() => document.body.dataset.painted === {view!r}")
        return self.page


@pytest.fixture(name="visit")
def visit_fixture(browser: Any) -> Iterator[Visit]:
    """A fresh context of the module's browser (closed after the test)."""
    visit = Visit(browser)
    yield visit
    visit.context.close()
    assert visit.errors == []


def url_of(site: Path, fragment: str = "") -> str:
    return (site / "index.html").as_uri() + fragment


def grid_cells(page: Any) -> dict[tuple[str, str], tuple[str, int, int]]:
    """(test, backend) -> (data-status, data-failed, data-total) of every grid cell shown."""
    cells = page.eval_on_selector_all(
        "#grid td[data-test]",
        "tds => tds.map(td => [td.dataset.test, td.dataset.backend, td.dataset.status,"
        " td.dataset.failed, td.dataset.total])",
    )
    return {(t, b): (s, int(f), int(n)) for t, b, s, f, n in cells}


def shown_rows(page: Any) -> list[str]:
    """The names in the grid's rows, top to bottom."""
    rows: list[str] = page.eval_on_selector_all(
        "#grid tbody tr", "rows => rows.map(r => r.cells[0].textContent)"
    )
    return rows


def test_the_landing_view_from_disk_lists_what_needs_attention(site, visit):
    """Opened from file://, with tests failing, the page lands on needs attention, grouped."""
    page = visit.open(url_of(site), "attention")

    headings = page.eval_on_selector_all("main h2", "hs => hs.map(h => h.id)")
    assert headings == ["group-new", "group-failing", "group-flaky", "group-fixed"]
    listed = page.eval_on_selector_all(
        "#group-failing ~ table tbody th", "ths => ths.map(th => th.textContent)"
    )
    assert listed == ["test_relu", SCRIPT_NAME, "test_\ufffdevil\ufffd_name", "test_conv"]
    assert all(url.startswith(site.as_uri()) for url in visit.requests), visit.requests


def test_every_grid_cell_carries_what_the_results_say(site, visit):
    """Each cell's data-status, data-failed and data-total match the results' newest run."""
    expected = expected_cells()
    for key in ("core/gradients", "nn/layers"):
        page = visit.open(url_of(site, f"#/d/{key}"), "grid")
        want = {(row, b): cell for (d, row, b), cell in expected.items() if d == key}
        assert grid_cells(page) == want


def test_over_loopback_http_no_request_leaves_the_pages_origin(site, visit):
    """Served over HTTP, every view loads only files of the site's own origin."""
    with serve(site) as base:
        visit.open(base, "attention")
        visit.open(base + "#/summary", "summary")
        visit.open(base + "#/groups", "groups")
        page = visit.open(base + "#/d/core/gradients?test=test_relu&cell=jax", "grid")
        page.wait_for_selector("#detail[open]")

    assert visit.requests
    assert [url for url in visit.requests if not url.startswith(base)] == []
    assert {url.removeprefix(base).split("#")[0] for url in visit.requests} >= {
        "",
        "app.js",
        "app.css",
        "data/index.js",
        "data/attention.js",
        "data/d/core/gradients.js",
    }


def test_filters_and_sorts_change_the_rows_shown(site, visit):
    """Name, backend and status filters narrow the rows; sorting by status puts failures first."""
    page = visit.open(url_of(site, "#/d/core/gradients"), "grid")

    page.fill("#f-q", "relu")
    page.wait_for_function("() => location.hash.includes('q=relu')")
    assert shown_rows(page) == ["test_relu"]

    page.fill("#f-q", "")
    page.wait_for_function("() => !location.hash.includes('q=')")
    page.select_option("#f-backend", "torch")
    page.select_option("#f-status", "failure")
    failing_on_torch = {"test_relu", "test_flip", "test_torch_only", SCRIPT_NAME}
    assert set(shown_rows(page)) == failing_on_torch
    expected = expected_cells()
    assert grid_cells(page) == {
        (row, "torch"): expected[("core/gradients", row, "torch")] for row in failing_on_torch
    }
    assert expected[("core/gradients", "test_relu", "torch")] == ("failure", 1, 3)

    page.select_option("#f-status", "")
    page.select_option("#f-sort", "status")
    rows = shown_rows(page)
    assert set(rows[:4]) == failing_on_torch
    assert rows[4] == "test_skip"  # then skipped, then passing
    page.select_option("#f-sort", "name")
    assert shown_rows(page) == sorted(rows)
    assert "backend=torch" in page.evaluate("location.hash")


def test_the_url_holds_the_view_and_reloading_it_shows_the_same(site, visit, browser):
    """Filters chosen on the page are in the URL; opening that URL afresh restores them."""
    page = visit.open(url_of(site, "#/d/core/gradients"), "grid")
    page.select_option("#f-status", "attention")
    page.select_option("#f-sort", "name")
    page.fill("#f-q", "test_")
    page.wait_for_function("() => location.hash.includes('q=test_')")
    url = page.url
    rows = shown_rows(page)

    again = Visit(browser)
    try:
        copy = again.open(url, "grid")
        assert shown_rows(copy) == rows
        assert copy.input_value("#f-q") == "test_"
        assert copy.input_value("#f-status") == "attention"
        assert copy.input_value("#f-sort") == "name"
        detail = url_of(site, f"#/d/core/gradients?test={quote(SCRIPT_NAME)}&cell=torch")
        copy = again.open(detail, "grid")
        copy.wait_for_selector("#detail[open]")
        assert copy.text_content("#detail-title") == f"{SCRIPT_NAME} · torch"
    finally:
        again.context.close()
    assert again.errors == []


def test_the_keyboard_reaches_a_cells_detail_and_back(site, visit):
    """Tab reaches the grid, arrows move between cells, Enter opens the detail, Escape closes it."""
    page = visit.open(url_of(site, "#/d/nn/layers?status=failure"), "grid")
    for _ in range(20):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('cell-button')"):
            break
    page.keyboard.press("ArrowRight")
    focused = page.evaluate("document.activeElement.parentElement.dataset.backend")
    assert focused == "numpy"

    page.keyboard.press("Enter")
    page.wait_for_selector("#detail[open]")
    assert page.text_content("#detail-title") == "test_conv · numpy"
    assert "failing since run 504" in page.text_content("#detail-body")
    assert "last pass run 503" in page.text_content("#detail-body")
    assert "test=test_conv" in page.url

    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.getElementById('detail').open")
    assert page.evaluate("document.activeElement.parentElement.dataset.backend") == "numpy"
    assert "test=" not in page.url


def test_hostile_names_show_as_text_and_run_nothing(site, visit):
    """Names that look like markup stay text; bidi controls show as U+FFFD; nothing runs."""
    page = visit.open(url_of(site, "#/d/core/gradients"), "grid")

    names = page.eval_on_selector_all("#grid tbody th", "ths => ths.map(th => th.textContent)")
    assert {SCRIPT_NAME, IMG_NAME, "test_\ufffdevil\ufffd_name"} <= set(names)
    tests = page.eval_on_selector_all(
        "#grid td[data-test]", "tds => tds.map(td => td.dataset.test)"
    )
    assert BIDI_NAME in tests
    assert page.locator("img").count() == 0
    assert page.locator("#grid script").count() == 0
    visit.open(url_of(site, "#/attention"), "attention")
    visit.open(url_of(site, "#/groups"), "groups")
    assert visit.alerts == []


@pytest.mark.parametrize(
    ("fragment", "view"),
    [
        ("", "attention"),
        ("#/summary", "summary"),
        ("#/groups", "groups"),
        ("#/d/core/gradients", "grid"),
        ("#/d/core/gradients?test=test_relu&cell=jax", "grid"),
    ],
)
def test_axe_finds_no_serious_or_critical_violation(site, browser, fragment, view):
    """axe-core (from npm, injected by the test) reports nothing serious in any view."""
    source = axe_source()
    # The page's policy allows only its own scripts: the test's axe-core is let in.
    visit = Visit(browser, bypass_csp=True)
    try:
        page = visit.open(url_of(site, fragment), view)
        if "test=" in fragment:
            page.wait_for_selector("#detail[open]")
        page.add_script_tag(content=source)
        violations = page.evaluate(
            "axe.run(document).then(r => r.violations.map(v => [v.id, v.impact, v.nodes.length]))"
        )
    finally:
        visit.context.close()
    assert [v for v in violations if v[1] in {"serious", "critical"}] == []


def test_a_big_dashboard_never_puts_more_than_2000_rows_in_the_page(tmp_path, visit):
    """2,500 failing rows: the grid shows pages of 2,000, needs attention 200 per group."""
    rows = {f"test_{i:04d}": {"torch": [F, F], "numpy": [S, S]} for i in range(2500)}
    store = write_store(tmp_path / "store", [dashboard("big", rows)])
    with contextlib.chdir(tmp_path):
        cli("render", "--store", str(store), "--html", "html")
    site = tmp_path / "html"

    page = visit.open(url_of(site, "#/d/core/big"), "grid")
    assert page.locator("#grid tbody tr").count() == 2000
    page.click("text=next →")
    visit.painted("grid")
    page.wait_for_function("() => location.hash.includes('page=2')")
    assert page.locator("#grid tbody tr").count() == 500
    page = visit.open(url_of(site, "#/attention"), "attention")
    assert page.locator("tbody tr").count() == 200


def test_with_nothing_failing_the_landing_view_is_the_summary(tmp_path, visit):
    """A store where every test passes lands on the summary: passing/total, and the change in
    passing tests since the run before (a new test passing counts as one more)."""
    rows = {"test_a": {"torch": [S, S], "jax": [S, F]}, "test_b": {"torch": [S], "jax": [S]}}
    store = write_store(tmp_path / "store", [dashboard("green", rows)])
    with contextlib.chdir(tmp_path):
        cli("render", "--store", str(store), "--html", "html")

    page = visit.open(url_of(tmp_path / "html"), "summary")

    cells = page.eval_on_selector_all(
        "table.summary td.counts",
        "tds => tds.map(td => [td.querySelector('a').firstChild.textContent,"
        " td.querySelector('.delta').textContent])",
    )
    assert cells == [["2/2", "+1"], ["2/2", "+2"]]
