"""The static HTML site: a self-contained page that shows every dashboard of a store.

The site is a folder anyone can open from disk (``file://``) or serve as it is (GitHub Pages):
``index.html``, ``app.css`` and the scripts (``core.js``, then one per view, then ``main.js``;
the same bytes for every store, shipped in ``static/``), and the data as small ``<script>`` files under ``data/`` that the page loads
when a view needs them (Chromium refuses ``fetch()`` of ``file://`` URLs, but runs scripts):

- ``cells.py``: what the site shows of each cell (pure);
- ``documents.py``: the data files' contents: the index, the needs-attention list and one
  file per dashboard (pure); docs/site.md describes their format;
- ``build.py``: the site's files for a set of dashboard states (pure);
- ``write.py``: writes the site into a folder (I/O); the branch store commits the same files
  under ``site/`` on the dashboard branch.
"""
