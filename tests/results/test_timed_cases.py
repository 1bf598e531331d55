"""The timed cases' seconds as the durations files write them (results/timed_cases.py)."""

from __future__ import annotations

import json

from ivy_matrix.results.timed_cases import TimedCases, decoded, entries


def test_a_start_is_held_as_its_entries_text_and_a_node_id_in_two_files_adds_up():
    """Each file's cases of a start are held as the text the durations file has of them; a
    start of several files is one text when it is taken, its names in the order they came
    and a name twice with its seconds added (as a dict of every case would have them)."""
    held = TimedCases()
    held.add("torch", "t.py::", {"a": 0.1, "b[1]": 2.0})
    held.add("torch", "k.py::K::", {"x": 1.0})
    held.add("jax", "t.py::", {"a": 3.0})
    held.add("torch", "t.py::", {"c": 0.5, "a": 0.2})
    held.add("torch", "t.py::", {})
    assert held.backends() == ["torch", "jax"]
    assert held.seconds()["torch"] == {
        "t.py::": {"a": 0.1 + 0.2, "b[1]": 2.0, "c": 0.5},
        "k.py::K::": {"x": 1.0},
    }
    taken = held.take("torch")
    assert taken == {
        "t.py::": """a": 0.30000000000000004,\n"b[1]": 2.0,\n"c": 0.5""",
        "k.py::K::": 'x": 1.0',
    }
    assert held.backends() == ["jax"]
    assert held
    held.take("jax")
    assert not held


def test_the_entries_text_reads_back_as_its_names_and_seconds():
    """Names that JSON escapes, and seconds that floats print long, read back exactly."""
    named = {'q"\\\n\u2028é': 1 / 3, "": 0.0, "a::b": 1e-7, "\ud800": 2.5}
    text = entries(named)
    assert decoded(text) == named
    assert "\n" not in text.replace(',\n"', "")  # a line break only between two entries
    assert json.loads('{"' + text + "}") == named
    assert TimedCases.of({"b": {"s::": named}}).seconds() == {"b": {"s::": named}}
