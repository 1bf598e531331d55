"""Where rendered dashboards go: files, issues, the job summary and step outputs.

- ``targets/files.py``: pages in ``--output-dir``;
- ``issues/publish.py``: one issue per dashboard and the index issue (the ``issues/``
  package says how they are written);
- ``targets/summary.py``: the job summary, step outputs, ``--summary-json`` and annotations.
"""
