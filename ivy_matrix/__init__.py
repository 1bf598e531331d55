"""ivy-matrix: per-test, per-backend dashboards from JUnit XML, kept up to date on GitHub."""

__version__ = "0.3.0"
