"""Tests for reasons.py: failing cells grouped by signature and said in words."""

from __future__ import annotations

from ivy_matrix.explain.reasons import (
    MESSAGE_SHOWN,
    Failing,
    group_failures,
    headline,
    render_reasons,
    shown_message,
)
from ivy_matrix.results.signature import Signer

SIGNER = Signer()


def failing(test: str, backend: str, message: str) -> Failing:
    return Failing(
        test=test,
        backend=backend,
        message=message,
        signature=SIGNER.signature(message, backend),
    )


def test_one_error_on_several_backends_is_one_group_named_by_its_backends_and_tests():
    """The same line (numbers and backend words aside) on torch, jax, tensorflow is one group."""
    cells = [
        failing(f"test_{n}", backend, f"AssertionError: {backend}.float32 {n} != {n + 1}")
        for n in range(7)
        for backend in ("torch", "jax", "tensorflow")
    ]
    cells.append(failing("test_z", "jax", "KeyError: 'x'"))

    groups = group_failures(cells)

    assert [len(g.cells) for g in groups] == [21, 1]
    assert headline(groups[0]) == "one error on torch, jax, tensorflow: 7 tests"
    assert groups[0].sample == "AssertionError: torch.float32 0 != 1"
    assert headline(groups[1]) == "one error on jax: 1 test"


def test_cells_without_a_message_come_last_as_one_group():
    """No message, no signature: "no failure message", after every signed group."""
    cells = [Failing(test="a", backend="numpy"), failing("b", "torch", "E")]
    groups = group_failures(cells)
    assert [g.signature == "" for g in groups] == [False, True]
    assert headline(groups[1]) == "no failure message on numpy: 1 test"


def test_the_section_lists_groups_up_to_the_limit_with_a_sample_and_the_tests():
    """Biggest group first; tests named up to ten; the rest counted."""
    cells = [failing(f"t{n:02d}", "torch", "E: boom 1") for n in range(12)]
    cells += [failing("u", "jax", "TypeError: no"), failing("v", "numpy", "ValueError: no")]

    text = render_reasons(cells, limit=2)

    assert text == (
        "### Failure reasons\n\n"
        "- **one error on torch: 12 tests**: E: boom 1\n"
        "  t00, t01, t02, t03, t04, t05, t06, t07, t08, t09 and 2 more\n"
        "- **one error on jax: 1 test**: TypeError: no\n"
        "  u\n"
        "- ... and 1 more\n\n"
    )
    assert render_reasons([], limit=5) == ""


def test_hostile_messages_and_names_show_as_text():
    """Markup, mentions, bidi characters in a line or a name are escaped; long lines are cut."""
    line = '"><img src=x onerror=alert(1)> <script>alert(1)</script> @owner \u202egnp.exe'
    text = render_reasons([failing("<b>x</b>", "torch", line)], limit=5)
    assert "<img" not in text
    assert "<script" not in text
    assert "<b>" not in text
    assert "\u202e" not in text
    assert "@owner" not in text
    assert len(shown_message("x" * 1000)) == MESSAGE_SHOWN
