"""The site in a real browser: Debian's headless chromium, driven by Playwright.

One browser for the whole module; each test gets a fresh browser context. The main site is
built the way users build it, from results whose every outcome the tests know (plan.py).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

import pytest

from ivy_matrix.explain.grouping import kind_line, kinds_from_json
from tests.site.browser import (
    CHROMIUM_ARGS,
    Visit,
    axe_source,
    chromium_path,
    grid_cells,
    serve,
    shown_rows,
    url_of,
)
from tests.site.plan import (
    BIDI_NAME,
    IMG_NAME,
    SCRIPT_NAME,
    build_site,
    cli,
    expected_cells,
    seconds_of,
    sha_of,
)
from tests.site.scenes import F, S, dashboard, write_store
from tests.site.test_documents import data

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(name="site", scope="module")
def site_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of plan.py's runs."""
    return build_site(tmp_path_factory.mktemp("site"))


@pytest.fixture(name="browser", scope="module")
def browser_fixture() -> Iterator[Any]:
    """One headless chromium for the module (Debian's, no download)."""
    executable = chromium_path()
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(name="visit")
def visit_fixture(browser: Any) -> Iterator[Visit]:
    """A fresh context of the module's browser (closed after the test)."""
    visit = Visit(browser)
    yield visit
    visit.context.close()
    assert visit.errors == []


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
        "core.js",
        "grid.js",
        "main.js",
        "app.css",
        "data/index.js",
        "data/attention.js",
        "data/d/core/gradients.js",
    }


def data_requested(site: Path, visit: Visit) -> list[str]:
    """The data files the page requested so far, in the order it asked for them."""
    data = (site / "data").as_uri() + "/"
    return [url.removeprefix(data) for url in visit.requests if url.startswith(data)]


def first_signature(site: Path) -> str:
    """The signature of the first failure group (they are ranked, most cells first)."""
    _, groups = data((site / "data" / "groups.js").read_text(encoding="utf-8"))
    signature: str = groups["groups"][0][0]
    return signature


@pytest.mark.parametrize(
    ("fragment", "view", "own"),
    [
        ("", "attention", ["attention.js"]),
        ("#/attention?group=failing", "attention", ["attention/failing.js"]),
        ("#/summary", "summary", []),
        ("#/groups", "groups", ["groups.js"]),
        ("#/groups?sig=SIG", "groups", ["groups/SHARD.js"]),
        ("#/slowest", "slowest", ["slowest.js"]),
        ("#/d/core/gradients", "grid", ["d/core/gradients.js"]),
        ("#/d/nn/layers?test=test_conv&cell=numpy", "grid", ["d/nn/layers.js"]),
    ],
)
def test_each_view_loads_the_index_and_its_own_data_file_only(site, visit, fragment, view, own):
    """Opened from disk, a view asks for the index and the one file of what it shows: no
    other dashboard's data, no other view's."""
    signature = first_signature(site)
    fragment = fragment.replace("SIG", signature)
    own = [name.replace("SHARD", signature[:1] or "0") for name in own]

    visit.open(url_of(site, fragment), view)

    assert data_requested(site, visit) == ["index.js", *own]


def test_moving_between_dashboards_loads_each_ones_file_once(site, visit):
    """From one grid to another and back, each dashboard's file is asked for once, and nothing
    else is: the grid of the second shows its own tests."""
    page = visit.open(url_of(site, "#/d/core/gradients"), "grid")
    page.click("text=Summary")
    visit.painted("summary")
    page.click("#main a[href='#/d/nn/layers']")
    visit.painted("grid")
    assert shown_rows(page)[-1] == "test_conv"
    page.go_back()
    visit.painted("summary")
    page.click("#main a[href='#/d/core/gradients']")
    visit.painted("grid")

    assert data_requested(site, visit) == ["index.js", "d/core/gradients.js", "d/nn/layers.js"]


def test_each_failure_group_alone_lists_every_test_failing_with_it(site, visit):
    """Over every failure group opened alone (each from its own file), the failure cells shown
    are exactly the cells failing now; the landing view's groups and a group alone list the
    same tests."""
    _, groups = data((site / "data" / "groups.js").read_text(encoding="utf-8"))
    shown: list[tuple[str, str, str]] = []
    for group in groups["groups"]:
        page = visit.open(url_of(site, f"#/groups?sig={group[0]}"), "groups")
        links = page.eval_on_selector_all(
            "table.grid td.failure a", "links => links.map(a => a.getAttribute('href'))"
        )
        for href in links:
            path, _, query = href.partition("?")
            params = dict(parse_qsl(query))
            shown.append((path.removeprefix("#/d/"), params["test"], params["cell"]))

    failing = {key for key, cell in expected_cells().items() if cell[0] == "failure"}
    assert sorted(shown) == sorted(failing)
    landing = visit.open(url_of(site, "#/attention"), "attention")
    listed = landing.eval_on_selector_all(
        "#group-failing ~ table tbody th", "ths => ths.map(th => th.textContent)"
    )
    alone = visit.open(url_of(site, "#/attention?group=failing"), "attention")
    assert (
        alone.eval_on_selector_all(
            "#group-failing ~ table tbody th", "ths => ths.map(th => th.textContent)"
        )
        == listed
    )


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
    # The dialog's close event (a task after it closes) takes the cell out of the URL.
    page.wait_for_function(
        "() => !document.getElementById('detail').open && !location.hash.includes('test=')"
    )
    assert page.evaluate("document.activeElement.parentElement.dataset.backend") == "numpy"


def test_a_failing_cells_detail_says_what_changed_since_its_last_pass(site, visit):
    """test_relu fails on jax from run 505 (jax bumped, new commit): the detail names both runs
    with "both", links the compare view of the two commits and lists only the changed
    packages, a markup-like name as text."""
    page = visit.open(url_of(site, "#/d/core/gradients?test=test_relu&cell=jax"), "grid")
    page.wait_for_selector("#detail[open]")

    since = page.text_content("#detail-body .since") or ""
    # The dates are the day update recorded each run (the clock's): any date.
    assert re.sub(r"\d{4}-\d\d-\d\d", "DATE", since) == (
        f"failing since run 505 ({sha_of(5)[:7]}, DATE), 2 runs; "
        f"last pass run 504 ({sha_of(4)[:7]}, DATE): both"
    )
    link = page.locator("#detail-body .compare a")
    assert link.get_attribute("href") == f"https://github.com/o/r/compare/{sha_of(4)}...{sha_of(5)}"
    assert link.text_content() == f"compare {sha_of(4)[:7]}...{sha_of(5)[:7]}"
    changes = page.eval_on_selector_all(
        "#detail-body ul.changes li", "lis => lis.map(li => li.textContent)"
    )
    assert changes == [f"{SCRIPT_NAME} (none) -> 1.0", "jax 0.4.30 -> 0.4.31"]
    assert page.locator("#detail-body script").count() == 0

    page = visit.open(url_of(site, "#/d/nn/layers?test=test_conv&cell=numpy"), "grid")
    page.wait_for_selector("#detail[open]")
    assert page.text_content("#detail-body .since").endswith("): code only")
    assert page.text_content("#detail-body p.changes") == "Same environment: no package changed."
    assert visit.alerts == []


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
        ("#/slowest?backend=jax", "slowest"),
    ],
)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_serious_or_critical_violation(site, browser, fragment, view, scheme):
    """axe-core (from npm, injected by the test) reports nothing serious in any view, in the
    light scheme and the dark one (the page follows the reader's system setting)."""
    source = axe_source()
    # The page's policy allows only its own scripts: the test's axe-core is let in.
    visit = Visit(browser, bypass_csp=True, color_scheme=scheme)
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


def test_a_big_dashboard_never_puts_more_than_1000_grid_rows_in_the_page(tmp_path, visit):
    """2,500 failing rows: the grid shows pages of 1,000, needs attention 200 per group and
    2,000 of a group alone."""
    rows = {f"test_{i:04d}": {"torch": [F, F], "numpy": [S, S]} for i in range(2500)}
    store = write_store(tmp_path / "store", [dashboard("big", rows)])
    cli("render", "--store", str(store), "--html", str(tmp_path / "html"))
    site = tmp_path / "html"

    page = visit.open(url_of(site, "#/d/core/big"), "grid")
    assert page.locator("#grid tbody tr").count() == 1000
    assert shown_rows(page)[-1] == "test_0999"
    page.click("text=next →")
    # The address changes before the grid is drawn again: wait for the rows themselves.
    page.wait_for_function(
        "() => location.hash.includes('page=2') &&"
        " document.querySelector('#grid tbody tr')?.cells[0].textContent === 'test_1000'"
    )
    assert shown_rows(page)[0] == "test_1000"
    page.click("text=next →")
    page.wait_for_function("() => document.querySelectorAll('#grid tbody tr').length !== 1000")
    assert page.locator("#grid tbody tr").count() == 500
    assert "page=3" in page.url
    page = visit.open(url_of(site, "#/attention"), "attention")
    assert page.locator("tbody tr").count() == 200
    page = visit.open(url_of(site, "#/attention?group=failing"), "attention")
    assert page.locator("tbody tr").count() == 2000
    assert "Showing 2000 of 2500." in page.text_content("#main")


def test_with_nothing_failing_the_landing_view_is_the_summary(tmp_path, visit):
    """A store where every test passes lands on the summary: passing/total, and the change in
    passing tests since the run before (a new test passing counts as one more)."""
    rows = {"test_a": {"torch": [S, S], "jax": [S, F]}, "test_b": {"torch": [S], "jax": [S]}}
    store = write_store(tmp_path / "store", [dashboard("green", rows)])
    cli("render", "--store", str(store), "--html", str(tmp_path / "html"))

    page = visit.open(url_of(tmp_path / "html"), "summary")

    cells = page.eval_on_selector_all(
        "table.summary td.counts",
        "tds => tds.map(td => [td.querySelector('a').firstChild.textContent,"
        " td.querySelector('.delta').textContent])",
    )
    assert cells == [["2/2", "+1"], ["2/2", "+2"]]


def test_the_groups_and_the_summary_say_how_backends_share_each_failure(site, visit):
    """The failure groups come in the data's ranking with each signature's kind, and the
    summary counts the failing tests by kind as the index page words it."""
    _, groups = data((site / "data" / "groups.js").read_text(encoding="utf-8"))
    _, index = data((site / "data" / "index.js").read_text(encoding="utf-8"))
    page = visit.open(url_of(site, "#/groups"), "groups")
    kinds = page.eval_on_selector_all(
        "table.groups td.kind", "tds => tds.map(td => td.textContent)"
    )
    assert kinds == [group[4] for group in groups["groups"]]
    assert kinds
    page = visit.open(url_of(site, "#/summary"), "summary")
    counts = kinds_from_json(index["kinds"])
    assert page.text_content("p.kinds") == f"Failing tests across backends: {kind_line(counts)}."


VIEWS = [
    ("#/attention", "attention"),
    ("#/summary", "summary"),
    ("#/groups", "groups"),
    ("#/d/core/gradients", "grid"),
    ("#/slowest", "slowest"),
]


@pytest.mark.parametrize(("fragment", "view"), VIEWS)
def test_at_phone_width_no_view_scrolls_sideways(site, browser, fragment, view):
    """At 375 px the page itself never scrolls sideways: a wide table scrolls in its own box."""
    visit = Visit(browser, viewport={"width": 375, "height": 800})
    try:
        page = visit.open(url_of(site, fragment), view)
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    finally:
        visit.context.close()
    assert widths[0] <= widths[1], f"{fragment}: the page is {widths[0]} px wide at {widths[1]} px"


def test_the_page_follows_a_dark_system_setting(site, browser):
    """With a dark system setting the page is dark, its text light; the light setting the
    reverse (luminance of the computed colours)."""

    def luminance(colour: str) -> float:
        r, g, b = (int(x) for x in re.findall(r"\d+", colour)[:3])
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    looks = {}
    for scheme in ("light", "dark"):
        visit = Visit(browser, color_scheme=scheme)
        try:
            page = visit.open(url_of(site, "#/summary"), "summary")
            looks[scheme] = page.evaluate(
                "() => [getComputedStyle(document.body).backgroundColor,"
                " getComputedStyle(document.body).color]"
            )
        finally:
            visit.context.close()
    light_bg, light_text = (luminance(c) for c in looks["light"])
    dark_bg, dark_text = (luminance(c) for c in looks["dark"])
    assert light_bg > light_text
    assert dark_bg < dark_text
    assert dark_bg < 60


def test_a_strip_tells_failures_from_passes_by_shape_not_only_colour(site, visit):
    """test_flip fails every other run on torch: in its strip a failure is a full-height block
    and a pass a low bar, so the history reads the same in grey (or under deuteranopia)."""
    page = visit.open(url_of(site, "#/d/core/gradients"), "grid")
    strip = page.locator('#grid td[data-test="test_flip"][data-backend="torch"] .strip')
    layers = strip.evaluate(
        "s => [getComputedStyle(s).backgroundImage, getComputedStyle(s).backgroundSize]"
    )
    images = re.findall(r"linear-gradient\((?:[^()]|\([^()]*\))*\)", layers[0])
    heights = [int(h) for h in re.findall(r"(\d+)px(?:,|$)", layers[1])]
    assert len(images) == len(heights) == 2
    # Each layer draws one status: the failures' layer is the tallest.
    sizes = dict(zip(("failure", "success"), heights, strict=True))
    assert sizes["failure"] >= 2 * sizes["success"]


def test_a_failure_message_keeps_its_line_breaks(tmp_path, visit):
    """A multi-line failure message shows its lines in the cell detail (no U+FFFD for a line
    break) and its first line, with an ellipsis, where one line fits."""
    state = dashboard("lines", {"test_a": {"torch": [F, F]}})
    row = state.rows[0]
    message = "AssertionError: arrays differ\nMismatched elements: 3 / 8"
    entries = tuple(
        dataclasses.replace(e, message=message, signature="abc123")
        for e in row.cells["torch"].entries
    )
    row = row._replace(cells={"torch": dataclasses.replace(row.cells["torch"], entries=entries)})
    store = write_store(tmp_path / "store", [dataclasses.replace(state, rows=(row,))])
    cli("render", "--store", str(store), "--html", str(tmp_path / "html"))

    page = visit.open(url_of(tmp_path / "html", "#/d/core/lines?test=test_a&cell=torch"), "grid")
    page.wait_for_selector("#detail[open]")
    assert page.text_content("#detail-body pre.message") == message
    page = visit.open(url_of(tmp_path / "html", "#/groups"), "groups")
    title = page.text_content("table.groups th.message-cell") or ""
    assert title == "AssertionError: arrays differ …"
    assert "\ufffd" not in title


def test_the_grid_has_a_time_column_and_sorts_the_slowest_first(site, visit):
    """Each row shows its longest newest duration over the backends shown; sorted by time,
    the slowest come first; with one backend, that backend's."""
    page = visit.open(url_of(site, "#/d/nn/layers?sort=time"), "grid")

    assert shown_rows(page)[:2] == ["test_conv", "test_dense_0"]
    times = page.eval_on_selector_all("#grid tbody td.time", "tds => tds.map(td => td.textContent)")
    assert times[:2] == ["1 min 30 s", "12.0 s"]
    title = page.get_attribute("#grid tbody td.time", "title") or ""
    assert title.startswith("jax: 90.1")  # kept within 0.19 %
    page.select_option("#f-backend", "numpy")
    times = page.eval_on_selector_all(
        "#grid tbody tr", "rows => rows.map(r => [r.cells[0].textContent, r.cells[1].textContent])"
    )
    expected = {
        row: f"{seconds_of(row, 'numpy', 6):g} s" for row in [f"test_dense_{i}" for i in range(5)]
    }
    assert dict(times) == {**expected, "test_conv": f"{seconds_of('test_conv', 'numpy', 6):g} s"}
    assert [row for row, _ in times][-1] == "test_conv"  # the shortest on numpy
    assert grid_cells(page)[("test_conv", "numpy")][0] == "failure"  # the cells are unchanged


def test_the_slowest_view_lists_a_backends_slowest_tests_and_the_slower_ones(site, visit):
    """The slowest view lists jax's slowest tests longest first, each linked to its cell, and
    the test that got 3 times slower in the newest run, blamed on the code."""
    page = visit.open(url_of(site, "#/slowest?backend=jax"), "slowest")

    rows = page.eval_on_selector_all(
        "#slowest tbody tr", "rows => rows.map(r => [r.dataset.test, Number(r.dataset.seconds)])"
    )
    assert rows[0] == ["test_conv", pytest.approx(90.0, rel=0.002)]
    assert [seconds for _, seconds in rows] == sorted((s for _, s in rows), reverse=True)
    link = page.get_attribute("#slowest tbody tr th a", "href")
    assert link == "#/d/nn/layers?test=test_conv&cell=jax"
    slower = page.eval_on_selector_all(
        "#slower tbody tr",
        "rows => rows.map(r => [r.dataset.test, r.dataset.backend, r.textContent])",
    )
    assert [row[:2] for row in slower] == [["test_conv", "jax"]]
    assert "code only" in slower[0][2]
    assert "3 times" not in slower[0][2]  # the table says the median instead
    assert "30 s of 6 runs" in slower[0][2] or "30.0 s of 6 runs" in slower[0][2]
