"""The expectations pull request: one, from a branch of its own, updated in place.

I/O through the REST API (``github/git.py`` git data, ``github/issues.py`` pull requests).
:func:`read_lists` reads the expectation lists from the default branch's head (a tree listing
and the lists' blobs; no write); :func:`publish` then makes the branch
``ivy-matrix-expectations`` one commit on that head whose tree changes the lists, and opens
the pull request from it, or updates the open one:

- an identical run writes nothing: the branch's lists already have the blob shas the
  change would write, and the open pull request has the body;
- a changed run makes a new commit on the default branch's head and moves the branch to it
  (a lease: :meth:`~ivy_matrix.github.git.GitCalls.replace_branch`), then edits the pull
  request's body, keeping its number;
- at most :data:`MAX_WRITES` content-creating requests: a tree, a commit, the branch, the
  pull request (4).

A name under ``ivy-matrix/`` cannot exist beside the dashboard branch ``ivy-matrix`` (git
keeps refs as paths), so the branch is ``ivy-matrix-expectations``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.types import PullRequest, Tree
from ivy_matrix.stores.tree import git_blob_sha

BRANCH = "ivy-matrix-expectations"
MAX_WRITES = 6
COMMIT_MESSAGE = (
    "ivy-matrix: update the expectation lists\n\nFrom the stored default-branch history."
)


class ExpectationsAPI(Protocol):
    """The calls :func:`read_lists` and :func:`publish` make."""

    def get_default_branch(self, repo: str) -> str: ...

    def get_branch_head(self, repo: str, branch: str) -> str | None: ...

    def get_tree(self, repo: str, tree_ish: str) -> Tree: ...

    def get_blob_texts(self, repo: str, shas: Collection[str]) -> dict[str, str]: ...

    def create_tree(
        self, repo: str, base_tree: str | None, files: Mapping[str, str | None]
    ) -> str: ...

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str: ...

    def create_branch(self, repo: str, branch: str, sha: str) -> bool: ...

    def replace_branch(self, repo: str, branch: str, sha: str, *, old: str) -> bool: ...

    def list_pull_requests(self, repo: str, *, head: str) -> list[PullRequest]: ...

    def create_pull_request(
        self, repo: str, *, title: str, head: str, base: str, body: str
    ) -> PullRequest: ...

    def update_pull_request(
        self, repo: str, number: int, *, title: str, body: str
    ) -> PullRequest: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Base:
    """The default branch's head the lists were read from: its name, commit and files."""

    branch: str
    sha: str
    tree: Tree


@dataclass(slots=True, kw_only=True)
class Published:
    """What :func:`publish` did: the pull request (None: none is open), whether the branch
    moved and whether the pull request was opened or edited, and its writes."""

    number: int | None = None
    branch_moved: bool = False
    opened: bool = False
    edited: bool = False
    writes: list[str] = field(default_factory=list)


def read_lists(
    github: ExpectationsAPI, repo: str, default: str | None, paths: Collection[str]
) -> tuple[Base, dict[str, str]]:
    """The default branch's head and the text of each of ``paths`` that exists there."""
    branch = default or github.get_default_branch(repo)
    sha = github.get_branch_head(repo, branch)
    if sha is None:
        raise GitHubAPIError(f"reading the default branch {branch!r} of {repo}: it has no commit")
    tree = github.get_tree(repo, sha)
    shas = {path: tree.files[path] for path in paths if path in tree.files}
    texts = github.get_blob_texts(repo, shas.values())
    return Base(branch=branch, sha=sha, tree=tree), {p: texts[s] for p, s in shas.items()}


def publish(
    github: ExpectationsAPI,
    repo: str,
    base: Base,
    files: Mapping[str, str],
    *,
    lists: Collection[str],
    title: str,
    body: str,
) -> Published:
    """Make the branch hold ``files`` (path -> text; the lists that change) on ``base`` and
    the pull request ``body``; ``lists`` are all the lists' paths. See the module docstring:
    writes only what differs."""
    done = Published()

    def write(what: str) -> None:
        if len(done.writes) >= MAX_WRITES:
            raise GitHubAPIError(f"{what}: over the {MAX_WRITES} writes one run may make")
        done.writes.append(what)

    owner = repo.partition("/")[0]
    tip = github.get_branch_head(repo, BRANCH)
    if tip is None or not _holds(github.get_tree(repo, tip), base.tree, files, lists):
        write("tree")
        tree = github.create_tree(repo, base.tree.sha, files)
        write("commit")
        commit = github.create_commit(repo, COMMIT_MESSAGE, tree, [base.sha])
        write("branch")
        moved = (
            github.create_branch(repo, BRANCH, commit)
            if tip is None
            else github.replace_branch(repo, BRANCH, commit, old=tip)
        )
        if not moved:
            raise GitHubAPIError(
                f"moving branch {BRANCH!r} of {repo}: it changed while this run wrote it; "
                f"the next run proposes again"
            )
        done.branch_moved = True
    open_now = github.list_pull_requests(repo, head=f"{owner}:{BRANCH}")
    if not open_now:
        write("pull request")
        opened = github.create_pull_request(
            repo, title=title, head=BRANCH, base=base.branch, body=body
        )
        done.number, done.opened = opened.number, True
        return done
    pull = open_now[0]
    done.number = pull.number
    if pull.body != body:
        write("pull request")
        github.update_pull_request(repo, pull.number, title=title, body=body)
        done.edited = True
    return done


def _holds(branch: Tree, base: Tree, files: Mapping[str, str], lists: Collection[str]) -> bool:
    """Whether ``branch`` has each of ``files`` as the change would write it, and every
    other list as ``base`` has it (compared by blob sha)."""
    return all(
        branch.files.get(path)
        == (git_blob_sha(files[path]) if path in files else base.files.get(path))
        for path in {*lists, *files}
    )
