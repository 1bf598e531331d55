"""What the pr-comment target writes for a pull request with no failing cell: the
``pr-comment-when-green`` option's choices.

Pure: one enum. Its own module so that declaring the options (config/options.py) does not
import the pull request's verdicts and comment (comment_state.py and what it imports).
"""

from __future__ import annotations

from enum import StrEnum


class WhenGreen(StrEnum):
    """What the pr-comment target writes for a pull request with no failing cell."""

    NOTE = "note"
    NOTHING = "nothing"
