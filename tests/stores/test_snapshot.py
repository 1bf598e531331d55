"""Tests for stores/snapshot.py: the branch read at one commit, its blobs read once, checked.

What goes over the wire runs through real PyGithub on the HTTP fake; the rest on the
in-memory model (tests/github/memory.py).
"""

from __future__ import annotations

import hashlib

import pytest

from ivy_matrix.errors import StoreError
from ivy_matrix.state.statefile import dump_state
from ivy_matrix.stores.tree import git_blob_sha
from tests.stores.helpers import (
    BRANCH,
    DASHBOARDS,
    REPO,
    STATE_DIR,
    assert_every_cell_landed,
    client,
    leg_change,
    store,
)


def test_blob_sha_is_gits():
    """git_blob_sha agrees with git hash-object for UTF-8 text."""
    assert git_blob_sha("hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


@pytest.mark.parametrize("char", ["x", "é", "\U0001f600"])
def test_the_blob_sha_of_a_text_of_many_pieces_is_that_of_its_bytes(char):
    """A large text is hashed a piece at a time (not held again as bytes): the same id as
    hashing its bytes whole, whatever its characters' lengths in UTF-8 (pieces end anywhere
    in the text, between two characters)."""
    text = (char * 1_000_003 + "\n") * 3
    data = text.encode()
    whole = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    assert git_blob_sha(text) == whole


def test_state_files_are_read_once_per_blob_and_cached_across_updates(fake):
    """A second update through the same store reads the tree but no blob it already knows."""
    with client(fake) as gh:
        branch = store(gh)
        branch.update(leg_change(0))
        before = len(fake.requests_to("GET", r"/git/blobs/"))
        branch.update(leg_change(1))
        assert len(fake.requests_to("GET", r"/git/blobs/")) == before
        assert len(store(gh).load()) == 3
    # A new store reads the three documents, the index file and the revision once each.
    assert len(fake.requests_to("GET", r"/git/blobs/")) == before + 5


def test_load_of_a_missing_branch_is_empty_and_a_foreign_state_file_is_refused(memory):
    """No branch means no state; a state file in the wrong place is a clear StoreError."""
    branch = store(memory)
    assert branch.load() == {}
    branch.update(leg_change(0, rows=1))
    state = branch.load()[DASHBOARDS[0]]
    misplaced = dump_state(state)
    tip = memory.ref_sha(f"heads/{BRANCH}")
    assert tip is not None
    tree = memory.create_tree(
        REPO, memory.get_tree(REPO, tip).sha, {f"{STATE_DIR}/x.json": misplaced}
    )
    # An older version's commit (it did not keep the index file up to date): read whole.
    tree = memory.create_tree(REPO, tree, {f"{STATE_DIR}/REVISION": "9\n"})
    assert memory.update_branch(REPO, BRANCH, memory.create_commit(REPO, "x", tree, [tip]))
    with pytest.raises(StoreError, match=r"holds dashboard 'core/gradients'"):
        branch.load()
    # A column under another backend's name is refused the same way.
    tip = memory.ref_sha(f"heads/{BRANCH}")
    assert tip is not None
    wrong = {f"{STATE_DIR}/x.json": None, f"{STATE_DIR}/core/gradients.d/b01.json": misplaced}
    tree = memory.create_tree(REPO, memory.get_tree(REPO, tip).sha, wrong)
    assert memory.update_branch(REPO, BRANCH, memory.create_commit(REPO, "y", tree, [tip]))
    with pytest.raises(StoreError, match=r"gradients.d/b01.json on branch .* holds dashboard"):
        branch.load()


def test_a_branch_whose_listing_github_cuts_short_is_still_read_whole(fake):
    """With GitHub truncating every listing of over 4 entries, a second update still merges
    into every dashboard the first one wrote (nothing is taken for missing)."""
    with client(fake) as gh:
        store(gh).update(leg_change(0))
        fake.configure(tree_limit=4)
        store(gh).update(leg_change(1))
    assert any(r.query == {} for r in fake.requests_to("GET", r"/git/trees/"))
    assert_every_cell_landed(fake, legs=2)
