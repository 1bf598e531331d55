"""A branch as one read of it saw it: the tree, the states read, every dashboard's summary.

Pure: values and git's blob ids; ``stores/snapshot.py`` reads them, ``stores/commit.py``
decides from them what a commit writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.stores.index_file import Summary
from ivy_matrix.utf8 import utf8_pieces, utf8_size


class TreeListing(Protocol):
    """A listed tree: its sha and its files (path -> blob sha)."""

    @property
    def sha(self) -> str: ...

    @property
    def files(self) -> Mapping[str, str]: ...


# What a file of a commit holds: a text, or what makes its pieces afresh each time it is called
# (a durations file, 5 MB at 200k tests: views/durations_file.py), so that it is hashed and
# written a piece at a time, never held whole.
Content = str | Callable[[], Iterable[str]]


def git_blob_sha(content: Content) -> str:
    """The git object id of a blob holding ``content`` as UTF-8 (``git hash-object``), hashed
    64 Ki characters at a time: a large text is not held again as bytes, nor the blob
    whole. Pieces are made twice: git's header, first, needs their size."""
    if isinstance(content, str):
        size = utf8_size(content)
        texts: Iterable[str] = (content,)
    else:
        size = sum(map(utf8_size, content()))
        texts = content()
    digest = hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False)
    for text in texts:
        for piece in utf8_pieces(text):
            digest.update(piece)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class EmptyTree:
    """The tree of a branch that does not exist yet."""

    sha: str = ""
    files: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The branch at ``tip`` (None: no branch yet), as one try of an update read it.

    ``states`` are the dashboards read; ``summaries`` every dashboard's (from the index, or
    computed when everything was read); ``paths`` the state files found of each dashboard
    read (older layouts' included, to be removed when it is written); ``whole``: every
    dashboard was read; ``indexed``: the branch has a valid index of this revision (else the
    next commit writes the whole layout anew).
    """

    tip: str | None
    tree: TreeListing
    states: Mapping[DashboardId, DashboardState]
    summaries: dict[DashboardId, Summary]
    revision: int = 0
    paths: dict[DashboardId, set[str]] = field(default_factory=dict)
    whole: bool = True
    indexed: bool = True

    def other_runs(self) -> set[int]:
        """The runs of the dashboards not read (their summaries'): the retirement window."""
        return {
            run for dashboard, s in self.summaries.items() if dashboard not in self.states
            for run in s.runs
        }  # fmt: skip
