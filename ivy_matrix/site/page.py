"""The page's own files (``index.html``, ``app.css`` and the scripts), read from the package.

I/O: reads the package's ``site/static/`` folder (package data), once per process. The files
are the same for every store; the data files beside them are build.py's.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from ivy_matrix.views.dashboards import RenderedFile

# The page, its style, and its scripts in the order index.html loads them.
STATIC_FILES = (
    "index.html",
    "app.css",
    "core.js",
    "summary.js",
    "attention.js",
    "grid.js",
    "slowest.js",
    "detail.js",
    "main.js",
)


@cache
def read_page() -> tuple[RenderedFile, ...]:
    """The page's files, as files of the site's folder."""
    folder = files("ivy_matrix.site").joinpath("static")
    return tuple(
        RenderedFile(path=name, text=folder.joinpath(name).read_text(encoding="utf-8"))
        for name in STATIC_FILES
    )
