"""The files of the static site for a set of dashboard states.

Pure: no I/O. The page's own files (``index.html``, ``app.css``, the scripts) come in as values
(``page.py`` reads them from the package); the data files are made here (documents.py)::

    index.html  app.css  *.js            the page: the same bytes for every store
    data/index.js                        the summary, always loaded first
    data/attention.js                    needs attention: each group's first tests
    data/attention/<group>.js            one attention group alone (5 files)
    data/groups.js                       the failure groups: each signature and a sample
    data/groups/<h>.js                   one failure group alone, by the signature's first
                                         hex digit (16 files)
    data/slowest.js                      each backend's slowest tests and the slower ones
    data/d/<category>/<title>.js         one per dashboard, loaded when it is opened

Each view loads the index and its own file, no other: what a view's file holds is what it
shows (overview.py), so no view's data grows with the store beyond its largest dashboard.

Paths are relative to the site's folder; the branch store puts them under ``site/``
(``paths.SITE_DIR``), ``render --html DIR`` into ``DIR``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from ivy_matrix.explain.grouping import (
    RowGroups,
    kind_counts,
    kinds_json,
    signatures_json,
    state_groups,
)
from ivy_matrix.model import DashboardState, Trend
from ivy_matrix.site.cells import PlacedCell, dashboard_cells, stale_before
from ivy_matrix.site.documents import (
    FORMAT,
    VERSION,
    dashboard_document,
    script,
    slowest_document,
)
from ivy_matrix.site.overview import (
    attention_documents,
    attention_items,
    column_counts,
    failure_group_documents,
    group_counts,
    trend_document,
)
from ivy_matrix.state.paths import SITE_DASHBOARD_DATA, site_data_file, site_id
from ivy_matrix.views.dashboards import RenderedFile

DATA_DIR = "data"
INDEX_DATA = f"{DATA_DIR}/index.js"
SLOWEST_DATA = f"{DATA_DIR}/slowest.js"
DASHBOARD_DATA = SITE_DASHBOARD_DATA  # data/d/<category>/<title>.js: paths.site_data_file


def render_site(
    states: Sequence[DashboardState],
    page: Iterable[RenderedFile],
    *,
    only: Collection[str] | None = None,
    trend: Trend | None = None,
) -> list[RenderedFile]:
    """The site's files: the page, the index, the attention list and the data of every
    dashboard (or only of those whose keys are in ``only``; the index and the attention
    list always cover every dashboard). ``states`` in the order the summary lists them;
    ``trend``: the store's, when it keeps one (overview.trend_document)."""
    files = list(page)
    dashboards: list[dict[str, object]] = []
    attention: list[list[object]] = []
    messages: dict[str, str] = {}
    every_cell: list[PlacedCell] = []
    failing_rows: list[RowGroups] = []
    backends: dict[str, None] = {}
    stale = stale_before(states)
    for number, state in enumerate(states):
        placed = list(dashboard_cells(state, stale))
        every_cell.extend(placed)
        backends.update(dict.fromkeys(state.backend_names))
        failing_rows.extend(state_groups(state))
        mine = attention_items(number, placed, messages)
        attention.extend(mine)
        dashboards.append(
            {
                "id": site_id(state),
                "key": state.key,
                "rows": len(state.rows),
                "b": column_counts(state, placed),
                "a": len(mine),
            }
        )
        if only is None or state.key in only:
            name = f"d/{site_id(state)}"
            text = script(name, dashboard_document(state, placed))
            files.append(RenderedFile(path=site_data_file(state), text=text))
    groups = group_counts(attention)
    index = {
        "format": FORMAT,
        "version": VERSION,
        "backends": list(backends),
        "dashboards": dashboards,
        "groups": groups,
        "failing": sum(1 for item in attention if item[4] == "f"),
        "kinds": kinds_json(kind_counts(failing_rows)),
        "trend": trend_document(trend, every_cell),
    }
    files.append(RenderedFile(path=INDEX_DATA, text=script("index", index)))
    views = attention_documents(attention, messages)
    views.update(failure_group_documents(attention, signatures_json(failing_rows), messages))
    for name, document in views.items():
        files.append(RenderedFile(path=f"{DATA_DIR}/{name}.js", text=script(name, document)))
    files.append(RenderedFile(path=SLOWEST_DATA, text=script("slowest", slowest_document(states))))
    return files
