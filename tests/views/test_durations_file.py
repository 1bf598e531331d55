"""The durations files' text (views/durations_file.py): written a node id's start at a time,
it is the text of one JSON object of every node id, as json writes it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ivy_matrix.results.timed_cases import TimedCases
from ivy_matrix.views.durations_file import durations_files, durations_text

# Starts of node ids as naming.node_prefix makes them, and names with what JSON must escape.
_PREFIXES = st.sampled_from(["a.py::", "a.py::B::", "dir/é.py::C::", 'q"x.py::'])
_NAMES = st.text(alphabet=st.sampled_from('ab:[]"\\\n\u2028é1-'), min_size=1, max_size=8)
_SECONDS = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


def _one_object(prefixes: dict[str, dict[str, float]]) -> str | None:
    """The straightforward text: one dict of every node id, encoded at once."""
    entries = {
        prefix + name: seconds
        for prefix, named in prefixes.items()
        for name, seconds in named.items()
    }
    if not entries:
        return None
    return json.dumps(entries, ensure_ascii=False, separators=(",\n", ": ")) + "\n"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_PREFIXES, st.dictionaries(_NAMES, _SECONDS, max_size=5), max_size=4))
def test_the_text_is_that_of_one_object_of_every_node_id(prefixes):
    """Escapes, empty starts, and names holding "::" (a node id another start can make too:
    written once, with its last seconds) give the bytes of one json.dumps of them all."""
    assert durations_text(prefixes) == _one_object(prefixes)


def test_each_backend_with_a_test_has_a_file_one_node_id_a_line():
    files = durations_files(
        TimedCases.of(
            {
                "torch": {"t.py::": {"test_a[1]": 0.5, "test_a[2]": 1.25}, "t.py::K::": {"b": 2.0}},
                "jax": {"t.py::": {}},
            }
        )
    )
    assert [f.path for f in files] == ["durations/torch.json"]
    assert "".join(files[0].pieces()) == (
        '{"t.py::test_a[1]": 0.5,\n"t.py::test_a[2]": 1.25,\n"t.py::K::b": 2.0}\n'
    )


def test_the_durations_are_taken_over_a_backend_at_a_time():
    """Each backend's timed cases leave the mapping given as its file is made: they are not
    kept (a name and seconds a test case) for the rest of the update."""
    given = TimedCases.of({"torch": {"t.py::": {"a": 1.0}}, "jax": {"t.py::": {"a": 2.0}}})
    files = durations_files(given)
    assert [f.path for f in files] == ["durations/jax.json", "durations/torch.json"]
    assert not given
