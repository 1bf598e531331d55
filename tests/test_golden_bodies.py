"""Golden files for what ivy-matrix writes into GitHub: issue bodies, the index, the job summary.

Each test builds a small fixed state and compares the pure composer's output with
tests/golden/<name>.md (``pytest --update-goldens`` rewrites them; read the diff before
committing one). The tables themselves have their own goldens in views/test_dashboards.py.
"""

from __future__ import annotations

from ivy_matrix.issues.bodies import compose_index, compose_issue
from ivy_matrix.issues.markers import END, utf16_len
from ivy_matrix.model import (
    DashboardId,
    DashboardState,
    Entry,
    Outcome,
    RunKey,
    Source,
    Totals,
    Trend,
)
from ivy_matrix.results.signature import Signer
from ivy_matrix.state.merge import Batch, apply_batch
from ivy_matrix.state.trend import record_runs
from ivy_matrix.views.charts import parity_svg, pass_rate_svg, trend_section
from ivy_matrix.views.dashboards import render_dashboard, render_files, render_job_summary
from ivy_matrix.views.style import Style

RUN = 4519909128
ISSUES = "https://github.com/unifyai/ivy/issues"
BACKENDS = ("torch", "jax", "numpy")
CYCLE = (Outcome.SUCCESS, Outcome.SUCCESS, Outcome.FAILURE, Outcome.SKIPPED, Outcome.FLAKY)


def source(job: int) -> Source:
    return Source(
        run=RunKey(RUN, 1, job),
        url=f"https://github.com/unifyai/ivy/actions/runs/{RUN}/job/{job}",
        time="2026-11-21T10:00:00Z",
    )


def failure_line(backend: str, row: int) -> str:
    """One error seen by torch and jax (numbers differ), another by numpy."""
    if backend == "numpy":
        return "TypeError: unsupported dtype 'bfloat16'"
    return f"AssertionError: {backend}.float32 result {row} != {row + 1}"


def entry(job: int, backend: str, row: int) -> Entry:
    outcome = CYCLE[(row + job) % len(CYCLE)]
    line = failure_line(backend, row) if outcome is Outcome.FAILURE else ""
    return Entry(
        source=source(job),
        outcome=outcome,
        message=line,
        signature=Signer().signature(line, backend),
    )


def dashboard(title: str, category: str, rows: int) -> DashboardState:
    """A dashboard of ``rows`` tests over three backends, outcomes in a fixed pattern."""
    state = None
    for job, backend in enumerate(BACKENDS, start=7960678746):
        cells = {
            f"test_{title}_{row:02d}": {backend: entry(job, backend, row)}
            for row in range(rows)
            if (row, backend) != (1, "numpy")  # one empty cell
        }
        batch = Batch(dashboard=DashboardId(title=title, category=category), cells=cells)
        state = apply_batch(state, batch).state
    assert state is not None
    return state


GRADIENTS = dashboard("gradients", "core", 4)
LAYERS = dashboard("layers", "stateful", 3)


def test_dashboard_issue_body_keeps_the_maintainers_text(golden):
    """The body holds the markers, the revision and the table; text outside the region stays."""
    existing = compose_issue(GRADIENTS, existing_body=None, revision=6).body
    existing = "Owner: @ml-team\n" + existing + "\nSee also #7\n"
    bodies = compose_issue(GRADIENTS, existing_body=existing, revision=7)
    assert bodies.continuations == ()
    golden("issue_body", bodies.body)


def test_a_table_over_the_budget_is_split_into_continuation_comments(golden):
    """Over the budget, the table goes compact and its rows continue in numbered comments."""
    state = dashboard("random", "core", 20)
    bodies = compose_issue(state, existing_body=None, revision=3, budget=1200)
    assert len(bodies.continuations) == 2
    golden("issue_split_body", bodies.body)
    for part, comment in enumerate(bodies.continuations, start=1):
        golden(f"issue_split_comment_{part}", comment)


def test_index_issue_links_each_dashboard_issue(golden):
    """The index lists every dashboard with an issue, passing/total per backend, linked."""
    links = {GRADIENTS.key: f"{ISSUES}/41", LAYERS.key: f"{ISSUES}/42"}
    golden("index_issue", compose_index([LAYERS, GRADIENTS], links))


def test_job_summary_shows_totals_counts_problems_and_the_rows_to_look_at(golden):
    """The summary has the totals, per-dashboard counts, unreadable files, and failing rows."""
    summary = render_job_summary(
        [GRADIENTS, LAYERS],
        totals=Totals(tests=19, failed=4, errors=0, skipped=6),
        problems=[("results/jax.xml", "not a JUnit XML file (line 1: syntax error)")],
        links={GRADIENTS.key: f"{ISSUES}/41"},
        index_url=f"{ISSUES}/40",
    )
    golden("job_summary", summary)


def test_the_history_section_shrinks_then_goes_before_the_table_does():
    """An issue body over budget loses history entries first, then the section, then the style."""
    full = compose_issue(GRADIENTS, existing_body=None, revision=1)
    assert "### Failing" in full.body
    assert full.style.value == "ivy"
    # The section: the failure reasons, the failing cells, the flaky ones.
    without = full.body.replace(
        full.body[full.body.index("\n### Failure reasons") : full.body.index(END)], ""
    )
    # A budget the body fits only without the section: the Ivy table stays, the section goes.
    tight = compose_issue(GRADIENTS, existing_body=None, revision=1, budget=utf16_len(without))
    assert "### Failing" not in tight.body
    assert "### Failure reasons" not in tight.body
    assert tight.style.value == "ivy"
    assert tight.body == without


def test_the_index_page_lists_history_below_its_table(golden):
    """The index page of the files and the branch ends with its history sections."""
    files = render_files([GRADIENTS, LAYERS], style=Style.IVY)
    (index,) = [f.text for f in files if f.path == "README.md"]
    assert index is not None
    golden("index_page_history", index)


def test_a_compact_dashboard_file_lists_its_failing_and_flaky_cells():
    """A compact dashboard file has its history below the table; an Ivy one is the table alone."""
    compact = {f.path: f.text for f in render_files([GRADIENTS], style=Style.COMPACT)}
    ivy = {f.path: f.text for f in render_files([GRADIENTS], style=Style.IVY)}
    assert ivy["core/gradients.md"] == render_dashboard(GRADIENTS, Style.IVY)
    text = compact["core/gradients.md"]
    assert text is not None
    assert text.startswith(render_dashboard(GRADIENTS, Style.COMPACT) + "\n\n### Failure reasons\n")
    assert "### Failing\n" in text
    assert "### Flaky\n" in text


def test_the_index_issue_drops_its_history_before_its_links():
    """An index issue over budget loses the history sections before anything else."""
    links = {GRADIENTS.key: f"{ISSUES}/41", LAYERS.key: f"{ISSUES}/42"}
    full = compose_index([LAYERS, GRADIENTS], links)
    start = full.index("\n## Newly failing")
    without = full[:start] + full[full.index(END) :]
    tight = compose_index([LAYERS, GRADIENTS], links, budget=utf16_len(without))
    assert tight == without
    assert f"[2/3]({ISSUES}/41)" in tight


TREND = record_runs(Trend(), [GRADIENTS, LAYERS], [RUN], cap=365)
PINNED = "https://github.com/unifyai/ivy/raw/9f2c0de1c2a3b4c5d6e7f8091a2b3c4d5e6f7081/"


def test_the_index_page_shows_the_trend_pictures_and_their_latest_values(golden):
    """Below the index's table: the two pictures by relative path, each with its table."""
    files = {
        f.path: f.text for f in render_files([GRADIENTS, LAYERS], style=Style.IVY, trend=TREND)
    }
    index = files["README.md"]
    assert index is not None
    assert files["charts/pass-rate.svg"] == pass_rate_svg(TREND)
    assert files["charts/parity.svg"] == parity_svg(TREND)
    golden("index_page_trend", index)


def test_the_index_issue_shows_the_pictures_pinned_to_a_commit(golden):
    """The index issue links the pictures of one commit, so each version shows its own."""
    links = {GRADIENTS.key: f"{ISSUES}/41", LAYERS.key: f"{ISSUES}/42"}
    charts = trend_section(TREND, lambda path: PINNED + path)
    body = compose_index([LAYERS, GRADIENTS], links, charts=charts)
    assert f"![Pass rate per backend]({PINNED}charts/pass-rate.svg)" in body
    golden("index_issue_trend", body)
    # The history goes first when there is too little room; then the pictures, before any
    # dashboard does.
    fewer = compose_index([LAYERS, GRADIENTS], links, charts=charts, budget=len(body) - 100)
    assert "## Trend" in fewer
    assert "## Newly failing" not in fewer
    small = compose_index([LAYERS, GRADIENTS], links, charts=charts, budget=len(charts))
    assert "## Trend" not in small
    assert f"[core/gradients]({ISSUES}/41)" in small
