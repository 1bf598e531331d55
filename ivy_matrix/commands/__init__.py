"""One module per command (update, compare, publish, prune, adopt, render), and the shell steps they share: finding result files, finding each backend's job, choosing the store.

I/O. The only code besides ``cli.py`` that sees :class:`~ivy_matrix.config.settings.settings.Settings`: each command turns it into the small values the stores and targets take.
"""
