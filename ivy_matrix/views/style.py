"""How dashboard cells are drawn: the ``style`` option's choices.

Pure: one enum. Its own module so that declaring the options (config/options.py) does not
import the tables that draw the cells (dashboards.py and what it imports).
"""

from __future__ import annotations

from enum import StrEnum


class Style(StrEnum):
    """How dashboard cells are drawn."""

    IVY = "ivy"
    COMPACT = "compact"
