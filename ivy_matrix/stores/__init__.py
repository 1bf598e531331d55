"""Where dashboard state lives between runs: a local folder or a branch.

Every store offers the same :class:`Store` protocol: ``update(change)`` reads every dashboard's
state, calls ``change`` (pure; it may be called again on a fresher read, so it must depend
only on the states it is given), saves what the change says changed, and hands back a
:class:`Saved`. A store built with ``dry_run`` reads and calls ``change`` the same way, then
logs what it would write instead of writing it.

- ``stores/local.py``: a folder on this machine, under a file lock;
- ``stores/branch.py``: a branch of the repository, by git compare-and-swap (reading it:
  ``stores/snapshot.py``; what is where on it: ``stores/layout.py``).

Pure: the protocol, its values and the stores' shared defaults; the stores themselves do I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.state.fold import Merged

# How long a writer waits for the local store's lock before it refuses, in seconds.
DEFAULT_LOCK_TIMEOUT = 600

Change = Callable[[Mapping[DashboardId, DashboardState]], Merged]


@dataclass(frozen=True, slots=True, kw_only=True)
class Saved:
    """What a store's update ended with.

    ``merged`` is the change's result on the states the store last read (the one it saved);
    ``revision`` the branch's revision after the update (None for stores without one);
    ``written`` what the store wrote, or in a dry run would write (paths in the store);
    ``output`` what its ``after_save`` wrote (the
    output folder). ``urls`` and ``index_url`` are where people read the dashboards, when the
    store is also where they are published. ``at`` is the branch commit that holds the pages
    (the new commit, or the tip read when nothing had to be written): the index issue pins
    its pictures to it.
    """

    merged: Merged
    revision: int | None = None
    written: tuple[str, ...] = ()
    output: tuple[str, ...] = ()
    commit_sha: str | None = None
    at: str | None = None
    attempts: int = 1
    converged: bool = True
    urls: Mapping[str, str] = field(default_factory=dict)
    index_url: str | None = None


class Store(Protocol):
    """Dashboard state, read and saved in one step (see the module docstring).

    ``changes_once``: whether ``update`` calls its change once only (never again on a fresher
    read), so that the change may let go of what it folded (commands/folding.py).
    """

    @property
    def changes_once(self) -> bool: ...

    def update(self, change: Change) -> Saved: ...


# Called with an update's result once it is saved (the local store: still under its lock);
# returns the paths it wrote. The output folder is kept this way (targets/files.py).
AfterSave = Callable[[Merged], tuple[str, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Published:
    """Where people read the dashboards after an update: per dashboard key, the index and the
    site; ``notes``: what a target left for a later run, in words (the job summary shows them).
    It starts from :class:`Saved`'s links, and the issue target adds its issues."""

    urls: Mapping[str, str] = field(default_factory=dict)
    index_url: str | None = None
    notes: tuple[str, ...] = ()
    site_url: str = ""
