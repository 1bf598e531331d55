"""The static HTML site: a self-contained page that shows every dashboard of a store.

The site is a folder anyone can open from disk (``file://``) or serve as it is (GitHub Pages):
``index.html``, ``app.css`` and the scripts (``core.js``, then one per view, then ``main.js``;
the same bytes for every store, shipped in ``static/``), and the data as small ``<script>``
files under ``data/``: each view loads the index and the one file of what it shows, when it is
opened (Chromium refuses ``fetch()`` of ``file://`` URLs, but runs scripts):

- ``cells.py``: what the site shows of each cell (pure);
- ``documents.py``: the data file of each dashboard and of the slowest tests (pure);
- ``overview.py``: the index, and the files of the needs-attention and failure-group views,
  each holding what its view shows, no more (pure); docs/site.md describes the format;
- ``build.py``: the site's files for a set of dashboard states (pure);
- ``write.py``: writes the site into a folder (I/O); the branch store commits the same files
  under ``site/`` on the dashboard branch.
"""
