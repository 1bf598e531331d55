"""The timed cases' seconds as the durations files write them (results/timed_cases.py)."""

from __future__ import annotations

import io
import json

import pytest

from ivy_matrix.results.timed_cases import Spilled, TimedCases, decoded, entries, text_of


def _add_some(held: TimedCases) -> None:
    held.add("torch", "t.py::", {"a": 0.1, "b[1]": 2.0})
    held.add("torch", "k.py::K::", {"x": 1.0})
    held.add("jax", "t.py::", {"a": 3.0, "c::d": 1.5})
    held.add("torch", "t.py::", {"c": 0.5, "a": 0.2})
    held.add("torch", "t.py::", {})


@pytest.mark.parametrize("spill", [None, io.BytesIO()], ids=["held", "spilled"])
def test_a_start_is_held_as_its_entries_text_and_a_node_id_in_two_files_adds_up(spill):
    """Each file's cases of a start are held (or written to the spill file) as the text the
    durations file has of them; a start of several files is one text when it is taken, its
    names in the order they came and a name twice with its seconds added (as a dict of every
    case would have them)."""
    held = TimedCases(spill)
    _add_some(held)
    assert held.backends() == ["torch", "jax"]
    assert held.seconds()["torch"] == {
        "t.py::": {"a": 0.1 + 0.2, "b[1]": 2.0, "c": 0.5},
        "k.py::K::": {"x": 1.0},
    }
    taken, colons = held.take("torch")
    assert {start: text_of(body) for start, body in taken.items()} == {
        "t.py::": 'a": 0.30000000000000004,\n"b[1]": 2.0,\n"c": 0.5',
        "k.py::K::": 'x": 1.0',
    }
    assert not colons
    assert held.backends() == ["jax"]
    assert held
    assert held.take("jax")[1]  # "c::d"
    assert not held


def test_the_texts_wait_in_the_spill_file_not_in_memory():
    """Given a file, every text is written there as it is added and only where it is is
    held: the file holds each file's entries once, and what is taken reads them back."""
    spill = io.BytesIO()
    held = TimedCases(spill)
    _add_some(held)
    expected = [
        entries(named)
        for named in (
            {"a": 0.1, "b[1]": 2.0},
            {"x": 1.0},
            {"a": 3.0, "c::d": 1.5},
            {"c": 0.5, "a": 0.2},
        )
    ]
    assert spill.getvalue() == "".join(expected).encode()
    (start,) = (body for start, body in held.take("jax")[0].items())
    assert isinstance(start, Spilled)
    assert text_of(start) == expected[2]


class _Full(io.BytesIO):
    """A file that takes 40 bytes, then fails as a full disk does: as an unbuffered file
    (the update's: commands/update.py), a write takes what fits and says how much, and
    the next one fails."""

    def write(self, data) -> int:
        room = 40 - self.tell()
        if room <= 0:
            raise OSError(28, "No space left on device")
        return super().write(bytes(data)[:room])


def test_a_spill_file_that_fails_is_let_go_and_nothing_is_lost():
    """A write that fails leaves the texts held from then on: the same seconds come back."""
    spill = _Full()
    held, plain = TimedCases(spill), TimedCases()
    _add_some(held)
    _add_some(plain)
    assert 0 < len(spill.getvalue()) <= 40
    assert held.seconds() == plain.seconds()


def test_the_entries_text_reads_back_as_its_names_and_seconds():
    """Names that JSON escapes, and seconds that floats print long, read back exactly."""
    named = {'q"\\\n\u2028é': 1 / 3, "": 0.0, "a::b": 1e-7, "\ud800": 2.5}
    text = entries(named)
    assert decoded(text) == named
    assert "\n" not in text.replace(',\n"', "")  # a line break only between two entries
    assert json.loads('{"' + text + "}") == named
    assert TimedCases.of({"b": {"s::": named}}).seconds() == {"b": {"s::": named}}
    spilled = TimedCases(io.BytesIO())
    spilled.add("b", "s::", named)
    assert spilled.seconds() == {"b": {"s::": named}}
