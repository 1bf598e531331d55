"""Tests for state/durations.py: the two-character codes, and durations kept beside the cells
through merging, retirement, the two layouts and the totals."""

from __future__ import annotations

import copy
import json
import pickle
import re
import sys
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ivy_matrix.errors import StoreError
from ivy_matrix.model import (
    CaseCounts,
    DashboardId,
    Entry,
    Outcome,
    Row,
    RunKey,
    Seen,
    Source,
    Times,
    Timing,
    times_of,
)
from ivy_matrix.state.columnar import dump_columns
from ivy_matrix.state.durations import (
    NO_CODE,
    PRECISION,
    RANK,
    decode,
    duration_totals,
    encode,
    is_codes,
    latest_timing,
    newest_codes,
    times_column,
    timings_of,
)
from ivy_matrix.state.merge import Batch, apply_batch, union_states
from ivy_matrix.state.retirement import without
from ivy_matrix.state.statefile import dump_state, join_columns, load_state, split_columns
from ivy_matrix.state.totals import backend_totals

DASH = DashboardId(title="gradients", category="core")


def entry(run: int, cases: int = 1, outcome: Outcome = Outcome.SUCCESS) -> Entry:
    return Entry(
        source=Source(
            run=RunKey(run, 1, run),
            url=f"https://github.com/o/r/actions/runs/{run}/job/{run}",
            time=f"2026-11-{run:02d}T10:00:00Z",
        ),
        outcome=outcome,
        counts=CaseCounts(passed=cases),
    )


def one_run(
    run: int, seconds: dict[tuple[str, str], float | None], cases: int = 1, timed: int = 0
) -> Batch:
    """One run's batch: a passing entry of ``cases`` for each (row, backend), with its
    duration (or none) of ``timed`` cases (default: all)."""
    shared = entry(run, cases)  # one job's entries are shared, as build_batches shares them
    cells: dict[str, dict[str, Entry]] = {}
    times: dict[str, dict[str, Timing]] = {}
    for (row, backend), value in seconds.items():
        cells.setdefault(row, {})[backend] = shared
        if value is not None:
            times.setdefault(row, {})[backend] = Timing(value, timed or cases)
    return Batch(dashboard=DASH, cells=cells, times=times)


def durations(state, row: str = "t", backend: str = "torch") -> list[float | None]:
    (found,) = [r for r in state.rows if r.name == row]
    cell = found.cells[backend]
    return [None if t is None else t.seconds for t in timings_of(cell, found.times.get(backend))]


def test_the_codes_are_those_version_5_was_released_with():
    """ivy-matrix 0.3.0 wrote these codes: they keep reading as the same durations."""
    assert [decode(code) for code in ("00", "7q", "Fe", "__")] == [
        0.0,
        0.5,
        1.0,
        pytest.approx(100_000),
    ]
    assert decode("Se") == pytest.approx(22.073, rel=PRECISION)


def test_milliseconds_under_a_second_are_kept_exactly():
    """Every whole millisecond under a second reads back as itself; 0 is 0."""
    assert [decode(encode(ms / 1000)) for ms in range(1000)] == [ms / 1000 for ms in range(1000)]
    assert decode(encode(0.0004)) == 0.0


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1, max_value=99_000))
def test_longer_durations_are_kept_within_the_precision(seconds):
    """A duration of a second or more reads back within 0.19 %."""
    kept = decode(encode(seconds))
    assert kept is not None
    assert abs(kept / seconds - 1) <= PRECISION + 1e-12
    assert PRECISION < 0.0019


def test_codes_are_two_safe_characters_that_sort_as_their_durations():
    """Codes need no escaping in JSON and sort as the durations they keep; a week is kept as
    100,000 s; ~~ is no duration."""
    levels = [RANK[encode(x / 7)] for x in range(0, 700_000, 997)]
    assert levels == sorted(levels)
    assert RANK[NO_CODE] < RANK[encode(0)]
    assert all(len(encode(x)) == 2 and json.dumps(encode(x)) == f'"{encode(x)}"' for x in (0, 3.5))
    assert decode(encode(7 * 24 * 3600)) == pytest.approx(1e5)
    assert decode(NO_CODE) is None


def test_each_result_keeps_its_duration_through_the_history():
    """Runs merged in any order give each result of the history its own duration, newest first,
    and the oldest falls out with its duration."""
    runs = {run: float(run) * 1.5 for run in range(1, 13)}
    state = None
    for run in [3, 1, 12, 2, 7, 4, 5, 6, 11, 8, 10, 9]:
        state = apply_batch(state, one_run(run, {("t", "torch"): runs[run]})).state
    assert state is not None
    assert durations(state) == pytest.approx([runs[r] for r in range(12, 2, -1)], rel=PRECISION)


def test_a_result_without_a_duration_keeps_its_place():
    """A run whose results had no time leaves a gap, not a shift, in the durations."""
    state = None
    for run, seconds in [(1, 0.2), (2, None), (3, 0.4)]:
        state = apply_batch(state, one_run(run, {("t", "torch"): seconds})).state
    assert durations(state) == [0.4, None, 0.2]


def test_rows_alike_share_cells_but_not_durations():
    """Two rows of one job's passing results share one cell object and keep their own
    durations."""
    state = apply_batch(None, one_run(1, {("a", "torch"): 0.25, ("b", "torch"): 0.5})).state
    a, b = state.rows
    assert a.cells["torch"] is b.cells["torch"]
    assert (latest_timing(a, "torch"), latest_timing(b, "torch")) == (
        Timing(0.25, 1),
        Timing(0.5, 1),
    )


def test_partly_timed_results_keep_how_many_cases_had_a_time():
    """A result of whose 3 cases 2 had a time says so, through both layouts."""
    state = apply_batch(None, one_run(1, {("t", "torch"): 0.125}, cases=3, timed=2)).state
    state = apply_batch(state, one_run(2, {("t", "torch"): 0.375}, cases=3)).state
    row = state.rows[0]
    assert timings_of(row.cells["torch"], row.times["torch"]) == [
        Timing(0.375, 3),
        Timing(0.125, 2),
    ]
    for text in (dump_columns(state), dump_state(state)):
        assert load_state(text, where="f.json") == state


def test_durations_follow_their_cells_through_columns_union_and_retirement():
    """Split into columns and joined, unioned with another state, or with a backend removed:
    every cell keeps its own durations, and a removed cell's go with it."""
    state = None
    for run in (1, 2):
        cells = {("t", "torch"): run / 10, ("t", "jax"): run * 0.3, ("u", "jax"): None}
        state = apply_batch(state, one_run(run, cells)).state
    assert state is not None
    assert join_columns(split_columns(state).values()) == state
    assert durations(union_states(state, state), "t", "jax") == [0.6, 0.3]
    left = without(state, backends=["jax"]).state
    assert left is not None
    assert [dict(r.times) for r in left.rows] == [{"torch": state.rows[0].times["torch"]}]


def test_totals_add_up_the_latest_durations_per_backend():
    """A backend's seconds are its rows' latest durations; rows without one are not counted."""
    state = apply_batch(None, one_run(1, {("a", "torch"): 0.5, ("b", "torch"): 0.75})).state
    state = apply_batch(state, one_run(2, {("a", "torch"): 0.875, ("c", "torch"): None})).state
    assert duration_totals(state.rows) == {"torch": (1.625, 2)}
    totals = backend_totals(state)["torch"]
    assert (totals.seconds, totals.timed) == (1.625, 2)
    first_line = dump_columns(state).split("\n", 1)[0]
    assert '"seconds":1.625,"passing":3' in first_line


def test_a_state_without_durations_writes_no_durations():
    """No time in any result: the column has no ``times`` and the totals no seconds."""
    state = apply_batch(None, one_run(1, {("a", "torch"): None})).state
    document = json.loads(dump_columns(state).replace("\n", ""))
    assert "times" not in document["columns"][0]
    assert "seconds" not in document["totals"]["torch"]


@pytest.mark.parametrize(
    ("times", "complaint"),
    [
        ('"0"', "string of durations"),
        ('"0~"', "string of durations"),
        ('"00 0"', "string of durations"),
        ('"0000"', "characters"),
        ('""', "characters"),
        ("5", "string of durations"),
    ],
)
def test_durations_that_do_not_fit_the_column_are_refused(times, complaint):
    """A hand-edited ``times`` that is no codes, or not one per result, is refused by name."""
    state = apply_batch(None, one_run(1, {("a", "torch"): 0.5})).state
    text = dump_columns(state)
    written = f'"times":"{encode(0.5)}"'
    assert written in text
    with pytest.raises(StoreError, match=complaint):
        load_state(text.replace(written, f'"times":{times}'), where="f.json")


def test_timed_counts_that_do_not_fit_are_refused():
    """A count of timed cases per duration that is missing or negative is refused."""
    text = dump_columns(apply_batch(None, one_run(1, {("t", "torch"): 1.0}, 3, 2)).state)
    assert '"timed":{"0":[2]}' in text
    for bad in ('{"0":[]}', '{"0":[-1]}', '{"0":"2"}'):
        with pytest.raises(StoreError, match="malformed"):
            load_state(text.replace('{"0":[2]}', bad), where="f.json")


_CODE = st.sampled_from(["~~", "00", "0A", "Sx", "__", "zz"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["torch", "jax", "numpy"]),
            st.lists(_CODE, min_size=1, max_size=3).map("".join),
            max_size=3,
        ),
        max_size=12,
    )
)
def test_a_backends_totals_are_its_rows_latest_durations_added_in_row_order(times):
    """Summed in C (duration_totals), the seconds are those of a row-by-row loop, to the bit,
    and the rows those whose latest result has a duration."""
    rows = [Row(f"r{i}", Seen(RunKey(), i), {}, found) for i, found in enumerate(times)]
    expected: dict[str, list[float]] = {}
    for found in times:
        for backend, codes in found.items():
            seconds = decode(codes[:2])
            if seconds is not None:
                total = expected.setdefault(backend, [0.0, 0])
                total[0] += seconds
                total[1] += 1
    assert duration_totals(rows) == {b: (s, int(n)) for b, (s, n) in expected.items()}


_TIMES = st.lists(_CODE, min_size=1, max_size=3).map("".join)
_NAMES = st.lists(st.sampled_from(["torch", "jax", "numpy"]), unique=True, max_size=3)


def _rows_alike(names: list[str]) -> st.SearchStrategy[list[dict[str, str]]]:
    """Rows timed on every one of ``names``, in that order (the usual dashboard)."""
    one = st.tuples(*[_TIMES for _ in names]).map(
        lambda codes: dict(zip(names, codes, strict=True))
    )
    return st.lists(one, max_size=6)


# Rows' durations: rows alike (cut from one list), or any rows (backends missing, or in
# another order).
_ROWS_TIMES = st.one_of(
    _NAMES.flatmap(_rows_alike),
    st.lists(
        st.dictionaries(st.sampled_from(["torch", "jax", "numpy"]), _TIMES, max_size=3),
        max_size=8,
    ),
)


@settings(max_examples=200, deadline=None)
@given(_ROWS_TIMES)
def test_a_backends_newest_codes_are_each_rows_first_code(times):
    """Per backend in first-seen order, each row's newest code (NO_CODE where the row has no
    durations there), whether the rows are alike (cut from one list) or not."""
    rows = tuple(Row(f"r{i}", Seen(RunKey(), i), {}, found) for i, found in enumerate(times))
    backends = dict.fromkeys(b for found in times for b in found)
    expected = {b: [found.get(b, NO_CODE)[:2] for found in times] for b in backends}
    assert {b: list(codes) for b, codes in newest_codes(rows).items()} == expected
    assert list(newest_codes(rows)) == list(backends)


@settings(max_examples=200, deadline=None)
@given(_ROWS_TIMES)
def test_rows_held_as_times_give_the_columns_dicts_give(times):
    """Rows whose durations are held as Times (as merging makes them) have the newest codes
    and the columns of each backend that the same rows with dicts have, and their state the
    same document."""
    as_dicts = tuple(Row(f"r{i}", Seen(RunKey(), i), {}, found) for i, found in enumerate(times))
    held = tuple(row._replace(times=times_of(row.times)) for row in as_dicts)
    assert {b: list(c) for b, c in newest_codes(held).items()} == {
        b: list(c) for b, c in newest_codes(as_dicts).items()
    }
    for backend in ("torch", "jax", "numpy", "tensorflow"):
        assert list(times_column(held, backend)) == list(times_column(as_dicts, backend))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["torch", "jax", "numpy", "a::b"]), _TIMES, max_size=4))
def test_times_is_a_read_only_mapping_as_a_dict_of_its_items(found):
    """A Times answers every question a dict of the same items answers, the same way."""
    held = times_of(found)
    assert held == found
    assert found == held
    assert not held != found  # noqa: SIM202  -- the != of a Times, not of the dict
    assert dict(held) == found
    assert list(held) == list(found)
    assert len(held) == len(found)
    assert bool(held) == bool(found)
    assert list(held.keys()) == list(found.keys())
    assert held.keys() <= found.keys() | {"other"}
    assert list(held.values()) == list(found.values())
    assert list(held.items()) == list(found.items())
    for backend in ("torch", "jax", "numpy", "a::b", "other"):
        assert (backend in held) == (backend in found)
        assert held.get(backend) == found.get(backend)
        assert held.get(backend, "~~") == found.get(backend, "~~")
        if backend in found:
            assert held[backend] == found[backend]
        else:
            with pytest.raises(KeyError):
                held[backend]
    if found:  # (NO_TIMES, the empty one, is a mapping proxy: never pickled)
        assert isinstance(cast(object, held), Times)
        assert pickle.loads(pickle.dumps(held)) == found
        assert copy.deepcopy(held) == found
    assert held != {**found, "other": "00"}
    assert held != cast(object, list(found))


def test_merged_rows_hold_their_durations_in_one_tuple_of_a_layout_they_share():
    """Merging keeps a row's durations as a Times, not a dict: one tuple a row, smaller than
    the dict of its items, and one layout shared by the rows of the same backends."""
    runs: dict[tuple[str, str], float | None] = {
        ("a", "torch"): 0.5,
        ("a", "jax"): 1.0,
        ("b", "torch"): 2.0,
        ("b", "jax"): 3.0,
    }
    state = apply_batch(None, one_run(1, runs)).state
    first, second = (cast(Times, row.times) for row in state.rows)
    assert type(first) is Times
    assert type(second) is Times
    assert first.layout is second.layout
    assert first == {"torch": encode(0.5), "jax": encode(1.0)}
    assert sys.getsizeof(first) < sys.getsizeof(dict(first.items()))
    # A row without durations holds none, as before.
    untimed = apply_batch(None, one_run(1, {("c", "torch"): None})).state
    assert not untimed.rows[0].times
    assert not isinstance(cast(object, untimed.rows[0].times), Times)


def test_a_states_newest_codes_are_made_once():
    """A state's rows are asked about when it is saved (its totals) and when it is drawn (its
    slowest and slower cells): their columns are made once; other rows get their own."""
    state = apply_batch(None, one_run(1, {("a", "torch"): 0.5, ("b", "torch"): 2.0})).state
    assert state is not None
    columns = newest_codes(state.rows)
    assert newest_codes(state.rows) is columns
    assert columns == {"torch": [encode(0.5), encode(2.0)]}
    assert newest_codes(list(state.rows)) is not columns
    assert newest_codes(tuple(state.rows[:1])) == {"torch": [encode(0.5)]}


@pytest.mark.parametrize("alike", [True, False])
def test_newest_codes_cut_from_longer_histories_are_one_string_per_code(alike):
    """A steady update's rows hold several results' codes: each newest code cut from them is
    one shared string per code (every state saved keeps its columns), not one per row."""
    older = {"torch": "AbQ3Q3", "jax": "~~AbAb"} if alike else {"jax": "Ab~~"}
    times = [{"torch": "AbQ3Q3", "jax": "~~AbAb"}, older] * 20
    rows = tuple(Row(f"r{i}", Seen(RunKey(), i), {}, found) for i, found in enumerate(times))

    columns = newest_codes(rows)

    codes = [code for column in columns.values() for code in column]
    assert len(codes) == 80
    assert len({id(code) for code in codes}) == len(set(codes))


_ONE_CODE_AT_A_TIME = re.compile(r"(?:[0-9A-Za-z_-]{2}|~~)*")


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.text(alphabet="0aZ_-~|é\n 9", max_size=12),
        st.lists(st.sampled_from(["00", "Sx", "~~", "_-", "~0", "0~", "~", "a"])).map("".join),
    )
)
def test_codes_are_checked_as_two_characters_each(text):
    """is_codes, checked a character at a time, says what a match one code at a time says:
    an even number of code characters, each ~ paired with a ~."""
    assert is_codes(text) == (_ONE_CODE_AT_A_TIME.fullmatch(text) is not None)


def test_every_character_is_a_code_character_as_one_code_at_a_time_says():
    """Each character of ASCII and a few beyond, alone, beside a code character and beside
    ``~``: is_codes says what a match one code at a time says (the property test above draws
    from a few characters, not those just outside the alphabet's ranges: ``/ : @ [ ` {``)."""
    characters = [chr(n) for n in range(128)] + ["é", "٣", "\u212a", "\U0001f600"]
    texts = [c + other for c in characters for other in ("", "0", "~")]
    texts += ["0" + c for c in characters] + ["~" + c for c in characters]
    found = [t for t in texts if is_codes(t) != (_ONE_CODE_AT_A_TIME.fullmatch(t) is not None)]
    assert found == []
