"""The issue target's defaults: the label of its issues and the hour's budget of writes.

Pure: two constants. Their own module so that declaring the options (config/options.py) does
not import the issue target (markers.py's patterns, plan.py and the history it reads).
"""

from __future__ import annotations

# The label that marks dashboard issues (the issue-label option's default).
DEFAULT_LABEL = "ivy-matrix"
# GitHub's 500 content-creating requests an hour, less 100 for everything else that writes
# (the issue-writes-per-hour option's default; plan.py spends it).
DEFAULT_WRITES_PER_HOUR = 400
