"""The rules a proposal follows: N, M and K of ``proposal.py``, and their defaults.

Pure: one value. Its own module so that the command line's grammar (config/arguments.py,
which states the defaults of ``expectations --add-after`` and friends) does not import the
proposal and the history it reads.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_ADD_AFTER = 3
DEFAULT_REMOVE_AFTER = 10
DEFAULT_UNSEEN_AFTER = 10
# One failing run is not a pattern: a failure new in the newest run is never added.
MIN_ADD_AFTER = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """N (``add_after``), M (``remove_after``) and K (``unseen_after``) of proposal.py."""

    add_after: int = DEFAULT_ADD_AFTER
    remove_after: int = DEFAULT_REMOVE_AFTER
    unseen_after: int = DEFAULT_UNSEEN_AFTER

    @property
    def runs_needed(self) -> int:
        return max(self.add_after, self.remove_after, self.unseen_after)
