"""How the branch store reaches the repository: git's own protocol, or the REST git-data API.

I/O through either transport. :class:`BranchRemote` is what the branch store needs: read the
branch tip, read trees and blobs, write trees and commits, and move a ref by compare-and-swap;
and what a pull request's verdict ref needs (``pr/verdict_ref.py``): read one ref, list a
prefix, and the same writes. Two implementations:

- ``github.git_transport.GitTransport``: a shallow local repository, one ``git fetch`` to read
  (objects included, so reading files is local), one ``git push`` to move refs (atomic);
  no REST request at all;
- :class:`RestRemote`: the REST git-data calls of ``github.client.GitHubClient`` (a request
  per tree, blob, commit and ref change), for where git cannot be used or is not wanted.

:class:`AutoRemote` (``branch-transport: auto``) uses git, and the REST API when git is not
installed or the server does not answer git's protocol at the first contact (a warning says
so). The choice is made once per command.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

from ivy_matrix.github.git_process import GitUnavailableError
from ivy_matrix.github.types import RefUpdate
from ivy_matrix.runner.log import Progress
from ivy_matrix.stores.tree import Content, TreeListing

_R = TypeVar("_R")


class BranchRemote(Protocol):
    """The repository as the branch store sees it (see the module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def swaps_any_move(self) -> bool:
        """Whether :meth:`update_ref` compares and swaps a move that is not a fast-forward too
        (git's ``--force-with-lease``), so that a ref can start afresh safely."""
        ...

    def read_tip(self, branch: str) -> str | None: ...

    def read_ref(self, ref: str) -> str | None: ...

    def list_refs(self, prefix: str) -> dict[str, str]: ...

    def tree(self, commit: str) -> TreeListing: ...

    def texts(self, shas: Collection[str]) -> dict[str, str]: ...

    def write_tree(self, base_tree: str | None, files: Iterable[tuple[str, Content | None]]) -> str:
        """A tree: ``base_tree`` with each path set to its content, or removed where None."""
        ...

    def write_commit(self, message: str, tree: str, parents: Sequence[str]) -> str: ...

    def update_ref(self, update: RefUpdate) -> bool: ...

    def close(self) -> None: ...


class GitData(Protocol):
    """The REST git-data calls :class:`RestRemote` makes (``github.client.GitHubClient``)."""

    def get_branch_head(self, repo: str, branch: str) -> str | None: ...

    def get_tree(self, repo: str, tree_ish: str) -> TreeListing: ...

    def get_blob_texts(self, repo: str, shas: Collection[str]) -> dict[str, str]: ...

    def create_tree(
        self, repo: str, base_tree: str | None, files: Mapping[str, str | None]
    ) -> str: ...

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str: ...

    def create_branch(self, repo: str, branch: str, sha: str) -> bool: ...

    def update_branch(self, repo: str, branch: str, sha: str) -> bool: ...

    def create_ref(self, repo: str, ref: str, sha: str) -> bool: ...

    def get_ref(self, repo: str, ref: str) -> str | None: ...

    def move_ref(self, repo: str, ref: str, sha: str) -> bool: ...

    def list_refs(self, repo: str, prefix: str) -> dict[str, str]: ...


_HEADS = "refs/heads/"


class RestRemote:
    """:class:`BranchRemote` over the REST git-data API of ``repo``.

    A ref is moved by one request that GitHub refuses unless it is a fast-forward: a
    compare-and-swap as long as ``new`` descends from ``old`` (it does: a commit on the tip read).
    """

    name = "rest"
    # Its one compare-and-swap is GitHub's fast-forward-only move.
    swaps_any_move = False

    def __init__(self, client: GitData, repo: str) -> None:
        self.client = client
        self.repo = repo
        self._trees: dict[str, TreeListing] = {}

    def read_tip(self, branch: str) -> str | None:
        return self.client.get_branch_head(self.repo, branch)

    def read_ref(self, ref: str) -> str | None:
        return self.client.get_ref(self.repo, ref)

    def list_refs(self, prefix: str) -> dict[str, str]:
        return self.client.list_refs(self.repo, prefix)

    def tree(self, commit: str) -> TreeListing:
        found = self._trees.get(commit)
        if found is None:
            found = self._trees[commit] = self.client.get_tree(self.repo, commit)
        return found

    def texts(self, shas: Collection[str]) -> dict[str, str]:
        return self.client.get_blob_texts(self.repo, shas) if shas else {}

    def write_tree(self, base_tree: str | None, files: Iterable[tuple[str, Content | None]]) -> str:
        """The tree, by the REST API (``create_tree``: one request, a large file's blob sent
        in one of its own first), whose JSON bodies hold each text whole: a file given in
        pieces (a durations file) is made whole here, and every text is held until the tree
        is written (the git transport writes each a piece at a time as it comes)."""
        texts = {
            path: content if content is None or isinstance(content, str) else "".join(content())
            for path, content in files
        }
        return self.client.create_tree(self.repo, base_tree, texts)

    def write_commit(self, message: str, tree: str, parents: Sequence[str]) -> str:
        return self.client.create_commit(self.repo, message, tree, list(parents))

    def update_ref(self, update: RefUpdate) -> bool:
        ref, client, repo = update.ref, self.client, self.repo
        branch = ref.removeprefix(_HEADS) if ref.startswith(_HEADS) else None
        if update.old is None:
            if branch is not None:
                return client.create_branch(repo, branch, update.new)
            # A create that finds the ref holding what it would write (a retried create that
            # had landed) did what was asked.
            return client.create_ref(repo, ref, update.new) or (
                client.get_ref(repo, ref) == update.new
            )
        if branch is not None:
            return client.update_branch(repo, branch, update.new)
        return client.move_ref(repo, ref, update.new)

    def close(self) -> None:
        return  # the client belongs to the command's connection, which closes it


class AutoRemote:
    """git, or the REST API when git cannot be used here (decided at the first contact)."""

    def __init__(
        self,
        git: Callable[[], BranchRemote],
        rest: Callable[[], BranchRemote],
        log: Progress,
    ) -> None:
        self._git = git
        self._rest = rest
        self._log = log
        self._chosen: BranchRemote | None = None

    @property
    def name(self) -> str:
        return self._chosen.name if self._chosen is not None else "auto"

    def _first(self, request: Callable[[BranchRemote], _R]) -> _R:
        """``request`` on the chosen transport; at the first call, git unless it is unavailable."""
        if self._chosen is not None:
            return request(self._chosen)
        git: BranchRemote | None = None
        try:
            git = self._git()
            result = request(git)
        except GitUnavailableError as error:
            if git is not None:
                git.close()
            self._log.warning(
                f"the dashboard branch is read and written through the REST API instead of "
                f"git: {error}; set branch-transport: rest to skip trying git"
            )
            self._chosen = self._rest()
            return request(self._chosen)
        self._chosen = git
        return result

    def _active(self) -> BranchRemote:
        if self._chosen is None:
            raise RuntimeError("AutoRemote: the branch must be read before it is written")
        return self._chosen

    def read_tip(self, branch: str) -> str | None:
        return self._first(lambda remote: remote.read_tip(branch))

    def read_ref(self, ref: str) -> str | None:
        return self._first(lambda remote: remote.read_ref(ref))

    def list_refs(self, prefix: str) -> dict[str, str]:
        return self._first(lambda remote: remote.list_refs(prefix))

    def tree(self, commit: str) -> TreeListing:
        return self._active().tree(commit)

    def texts(self, shas: Collection[str]) -> dict[str, str]:
        return self._active().texts(shas)

    def write_tree(self, base_tree: str | None, files: Iterable[tuple[str, Content | None]]) -> str:
        return self._active().write_tree(base_tree, files)

    def write_commit(self, message: str, tree: str, parents: Sequence[str]) -> str:
        return self._active().write_commit(message, tree, parents)

    @property
    def swaps_any_move(self) -> bool:
        return self._active().swaps_any_move

    def update_ref(self, update: RefUpdate) -> bool:
        return self._active().update_ref(update)

    def close(self) -> None:
        if self._chosen is not None:
            self._chosen.close()
