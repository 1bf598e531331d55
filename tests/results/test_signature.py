"""Tests for signature.py: one short hash for one kind of error, whatever the test or backend."""

from __future__ import annotations

from ivy_matrix.results.signature import SIGNATURE_LENGTH, Signer, parse_aliases


def test_the_same_error_on_two_backends_has_one_signature():
    """Backend names, numbers, addresses and paths do not tell two backends' errors apart."""
    signer = Signer()
    torch = signer.signature(
        "AssertionError: torch.float32 != 3 at 0x7f3a9b in /ci/ivy/backends/torch/general.py:123",
        "torch",
    )
    jax = signer.signature(
        "AssertionError: jax.float32 != 5 at 0x1b2c in /ci/ivy/backends/jax/general.py:77", "jax"
    )
    assert torch == jax
    assert len(torch) == SIGNATURE_LENGTH


def test_different_errors_have_different_signatures():
    """A different exception or wording is a different signature."""
    signer = Signer()
    assert signer.signature("TypeError: bad dtype", "torch") != signer.signature(
        "ValueError: bad dtype", "torch"
    )


def test_normalising_replaces_what_varies_in_order():
    """Hex, quoted literals, paths with lines, backend words and numbers become placeholders."""
    signer = Signer(aliases=("np", "tf"))
    assert signer.normalise(
        "KeyError: 'x1' at 0xdeadBEEF in C:\\work\\a.py:3:4 with np.ndarray and tf.int64,  44/256",
        "paddle",
    ) == ("KeyError: <str> at <hex> in <path> with <backend>.ndarray and <backend>.int<n>, <n>/<n>")


def test_the_cells_own_backend_counts_even_when_not_configured():
    """The backend a failure was seen on is replaced, in any case, as a whole word only."""
    signer = Signer(aliases=())
    assert signer.normalise("MyBackend failed; mybackend_x stays", "mybackend") == (
        "<backend> failed; mybackend_x stays"
    )


def test_an_apostrophe_inside_a_word_starts_no_literal():
    """ "can't" keeps its words; only a quote that starts a word opens a literal."""
    assert Signer().normalise("can't cast 'a' to int", "torch") == "can't cast <str> to int"


def test_a_source_file_name_with_its_line_is_a_path():
    """``test_ops.py:12`` is a path even without a folder."""
    assert Signer().normalise("failed in test_ops.py:12", "torch") == "failed in <path>"


def test_no_message_has_no_signature():
    """An empty message gives an empty signature."""
    assert Signer().signature("", "torch") == ""


def test_aliases_are_split_on_commas_stripped_and_kept_once():
    """The option's values may hold several words each."""
    assert parse_aliases(["np, tf", " jnp ", "np", ""]) == ("np", "tf", "jnp")
