"""Tests for stores/index.py: each dashboard's summary, kept in the branch's index file, says
what the index page, the retirement and the trend need of it, as reading the state would."""

from __future__ import annotations

import pytest

from ivy_matrix.model import DashboardId, DashboardState
from ivy_matrix.state.retirement import retire
from ivy_matrix.state.trend import dashboard_part, join_parts, trend_point
from ivy_matrix.stores.index_file import (
    absent_part,
    dump_index,
    load_index,
    retires_something,
    stale_at,
    summarize,
)
from ivy_matrix.targets.files import PagesRecord, dump_record, read_record
from ivy_matrix.views.dashboards import render_files
from ivy_matrix.views.index_page import render_index_page
from ivy_matrix.views.style import Style
from tests.explain.test_slowdowns import generated_history
from tests.stores.helpers import DASHBOARDS, RUN, leg_change


def states() -> list[DashboardState]:
    """Three dashboards, four legs, two runs (the second on legs 0 and 1 only, flipped)."""
    found: dict[DashboardId, DashboardState] = {}
    for leg in range(4):
        found = dict(leg_change(leg, rows=6)(found).states)
    for leg in range(2):
        found = dict(leg_change(leg, rows=6, run=RUN + 1, flip=1)(found).states)
    return sorted(found.values(), key=lambda s: s.key)


def test_the_index_file_round_trips_every_summary():
    """dump_index and load_index give back the summaries and the revision."""
    summaries = {state.id: summarize(state) for state in states()}
    revision, loaded = load_index(dump_index(summaries.values(), 7)) or (0, {})
    assert revision == 7
    assert loaded == summaries
    assert any(summary.row.kinds for summary in summaries.values())  # failing rows by kind


@pytest.mark.parametrize("version", [1, 2])
def test_an_index_file_of_an_older_version_is_read_whole_again(version):
    """A version 1 file (no failing rows by kind) or 2 (its notes without streaks of two or
    three runs, its kinds by row) is not read: the branch is read whole once."""
    text = dump_index([summarize(state) for state in states()], 7)
    older = text.replace('"version":3', f'"version":{version}', 1)
    assert older != text
    assert load_index(older) is None


@pytest.mark.parametrize("text", ["", "{}", "[]", '{"format": "ivy-matrix-index", "version": 9}'])
def test_an_index_file_this_version_cannot_read_is_none(text):
    """A file that is not an index this version reads is None: the branch is read whole."""
    assert load_index(text) is None


def test_the_index_page_from_summaries_is_the_one_from_the_states():
    """The index page drawn from the summaries equals the one drawn from every state."""
    given = states()
    expected = {f.path: f.text for f in render_files(given, style=Style.IVY)}["README.md"]
    assert render_index_page([summarize(state).row for state in given]) == expected


def test_stale_at_says_exactly_when_retirement_takes_something():
    """A horizon above stale_at retires something from the dashboard; at or below, nothing."""
    for state in states():
        at = stale_at(state)
        assert at is not None
        summary = summarize(state)
        for horizon in (at - 1, at, at + 1):
            took = retire(state, horizon).state is not state
            assert took == retires_something(summary, horizon) == (horizon > at)


def test_a_runs_point_is_the_sum_of_the_dashboards_parts():
    """A run's point from each dashboard's part (kept or computed) equals trend_point over
    every state, for a run that reached some dashboards and one that reached all."""
    given = states()
    summaries = [summarize(state) for state in given]
    for run in (RUN, RUN + 1):
        parts = [s.part(run) for s in summaries]
        assert all(part is not None for part in parts)
        assert join_parts(run, [p for p in parts if p is not None]) == trend_point(given, run)
    absent = DashboardState(id=DASHBOARDS[0])
    assert absent_part(given[0]).point.backends == dashboard_part(given[0], 0).point.backends
    assert absent_part(absent).point.backends == ()


def test_the_durations_notes_round_trip_in_the_index_file_and_the_folders_record(tmp_path):
    """A dashboard with durations: its cells that got slower, each backend's seconds and its
    slowest rows are kept in the branch's index file and the output folder's record, and the
    index page drawn from either shows the "Slower" and "Slowest" of the states."""
    state = generated_history()
    summary = summarize(state)
    assert summary.row.notes.slower_total == 2
    assert len(summary.row.notes.slowest) == 5
    _, loaded = load_index(dump_index([summary], 7)) or (0, {})
    assert loaded == {state.id: summary}
    record = PagesRecord(folder="out", revision="r", style="ivy", index={state.key: summary.row})
    (tmp_path / "pages.json").write_text("".join(dump_record(record)), encoding="utf-8")
    assert read_record(tmp_path / "pages.json") == record
    expected = {f.path: f.text for f in render_files([state], style=Style.IVY)}["README.md"]
    assert render_index_page([loaded[state.id].row]) == expected
    assert "## Slower\n\n" in expected
    assert "## Slowest\n\n**torch**: " in expected
