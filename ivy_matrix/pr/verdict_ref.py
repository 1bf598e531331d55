"""The pull request's verdict ref: where every writer's verdicts are kept, with compare and swap.

I/O through a :class:`~ivy_matrix.stores.remote.BranchRemote`, the transport the branch store
uses (``branch-transport``): over git (``github/git_transport.py``) the ref is read with one
shallow fetch and moved with one push, which spend no REST request (docs/github.md, "the
branch target"); over the REST API (``RestRemote``) with the git-data calls, 3 requests to
read and 3 to write. The ref ``refs/ivy-matrix/pr/<number>`` points at a commit whose tree
holds one file, ``verdicts.json`` (:func:`~ivy_matrix.pr.comment_state.dump_ref_state`); each write is
a commit on the one read, and the ref moves only if nobody moved it meanwhile (a
compare-and-swap: git's push with ``--force-with-lease=<ref>:<the tip read>``, or the REST
API's fast-forward-only move; created only if absent), so concurrent writers never lose each
other's verdicts: the loser reads again. GitHub has no conditional edit of a comment
(``../shared/design/PLATFORM.md`` 3.3), which is why the verdicts live here and the comment
only shows them (``pr/comment.py``).

**Bounded.** A record is at most :data:`MAX_RECORD_BYTES` (:class:`RecordTooLargeError`
otherwise: nothing is written); Ivy's 28,000 cells all failing, each with a failure line of its
own, take about 17 MB. And the ref keeps no history of past runs: a record that starts afresh
(the first of a new run or head, or in place of a damaged one) is a commit with no parent, so
each pull request's ref holds one run's commits, the writes of that run's writers. Over git
the move is still a compare and swap (``--force-with-lease``); the REST API can only move a
ref forward (its compare and swap), so over REST every record is a commit on the one read.

The ref is outside ``refs/heads``, so it starts no workflow and shows in no branch list; it
needs ``contents: write``. A record this version cannot read is started afresh (the caller
warns, with :attr:`Read.damage`), unless a newer ivy-matrix wrote it (:class:`NewerRecordError`:
then nothing is written).
"""

from __future__ import annotations

from dataclasses import dataclass

from ivy_matrix.errors import GitHubAPIError, PushRefusedError, ReadOnlyTokenError
from ivy_matrix.github.types import RefUpdate
from ivy_matrix.pr.comment_state import NewerFormatError, RefState, dump_ref_state, load_ref_state
from ivy_matrix.stores.remote import BranchRemote
from ivy_matrix.stores.tree import git_blob_sha

REF_PREFIX = "refs/ivy-matrix/pr/"
FILE = "verdicts.json"
CACHED = 8  # records kept by blob sha, so that a record read or written once is not fetched
# The largest record written: about twice Ivy's whole matrix failing with a failure line of its
# own in each cell (17 MB), and well below the 50 MB past which GitHub warns about a file.
MAX_RECORD_BYTES = 32 * 1024 * 1024


def verdict_ref(pr: int) -> str:
    """The ref that keeps pull request ``pr``'s verdicts."""
    return f"{REF_PREFIX}{pr}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Read:
    """The ref as one read found it: its commit (None: no ref yet) and its record (None: none,
    or a damaged one, whose reason is ``damage``)."""

    tip: str | None
    state: RefState | None
    damage: str = ""


class NewerRecordError(Exception):
    """The ref holds a record of a newer ivy-matrix: this one must not overwrite it."""


class RecordTooLargeError(Exception):
    """The record would be larger than :data:`MAX_RECORD_BYTES`: it is not written."""


class VerdictRef:
    """Reads and writes the verdict ref of pull request ``pr`` through ``remote``."""

    def __init__(self, remote: BranchRemote, pr: int) -> None:
        self.remote = remote
        self.ref = verdict_ref(pr)
        self._texts: dict[str, str] = {}  # blob sha -> text, so an unchanged record is read once

    def read(self) -> Read:
        """The ref now (over git one fetch; over REST 3 requests: the ref, its tree, the record
        unless already read)."""
        tip = self.remote.read_ref(self.ref)
        if tip is None:
            return Read(tip=None, state=None)
        sha = self.remote.tree(tip).files.get(FILE)
        if sha is None:
            return Read(tip=tip, state=None, damage=f"it has no {FILE}")
        text = self._texts.get(sha)
        if text is None:
            text = self._texts[sha] = self.remote.texts([sha])[sha]
        try:
            return Read(tip=tip, state=load_ref_state(text))
        except NewerFormatError as error:
            raise NewerRecordError(
                f"{self.ref} holds verdicts of a newer ivy-matrix ({error}); not writing over "
                f"them: use the same ivy-matrix version in every job of the workflow"
            ) from None
        except (ValueError, TypeError, KeyError, IndexError) as error:
            return Read(tip=tip, state=None, damage=f"{FILE} is damaged ({error})")

    def write(
        self, tip: str | None, state: RefState, message: str, *, afresh: bool = False
    ) -> str | None:
        """Commit ``state`` on ``tip`` and move the ref there if it is still at ``tip`` (create
        it when ``tip`` is None); the new commit, or None when another writer got there first.
        ``afresh``: the record replaces what ``tip`` holds (a new run's, or a damaged one), so
        its commit has no parent where the transport can move the ref so (module docstring).
        :class:`RecordTooLargeError` when the record is larger than :data:`MAX_RECORD_BYTES`.
        """
        text = dump_ref_state(state)
        size = len(text.encode("utf-8"))
        if size > MAX_RECORD_BYTES:
            raise RecordTooLargeError(
                f"the verdicts of {len(state.verdicts.cells):,} cell(s) take {size / 2**20:.1f} "
                f"MiB, more than the {MAX_RECORD_BYTES >> 20} MiB {self.ref} may hold"
            )
        if len(self._texts) > CACHED:
            self._texts.clear()
        self._texts[git_blob_sha(text)] = text  # the next read need not fetch it
        tree = self.remote.write_tree(None, [(FILE, text)])
        parents = [] if tip is None or (afresh and self.remote.swaps_any_move) else [tip]
        commit = self.remote.write_commit(message, tree, parents)
        update = RefUpdate(ref=self.ref, new=commit, old=tip)
        try:
            moved = self.remote.update_ref(update)
        except (ReadOnlyTokenError, PushRefusedError):
            raise  # retrying cannot help
        except GitHubAPIError:
            # An error after the transport's retries: the move may have landed all the same
            # (or lost to another writer's; then this one reads again, as after a refusal).
            moved = self.remote.list_refs(self.ref).get(self.ref) == commit
        return commit if moved else None
