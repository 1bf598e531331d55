"""``python -m ivy_matrix``: the same command as ``ivy-matrix``."""

from ivy_matrix.cli import main

raise SystemExit(main())
