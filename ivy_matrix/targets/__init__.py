"""Where rendered dashboards go: files, issues, the job summary and step outputs."""
