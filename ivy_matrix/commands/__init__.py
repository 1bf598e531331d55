"""One module per command (update, compare, publish, prune, adopt, render), and the shell steps
they share: finding result files (result_files.py), each backend's job (job_links.py), the
store and the GitHub connection (choose_store.py), the exit code fail-on asks for (fail_on.py).

I/O. With cli.py, the only code that sees :class:`~ivy_matrix.config.settings.Settings`
(tests/test_architecture.py holds that): each command turns it into the small values
the stores, targets, GitHub connection and pull-request comment take.
"""
