"""Entry point of the composite action: ``python entrypoint.py`` runs ``ivy-matrix``."""

from ivy_matrix.cli import main

raise SystemExit(main())
