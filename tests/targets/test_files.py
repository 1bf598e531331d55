"""Where the output folder's files go: dashboard file names, the index, and what gets written."""

from __future__ import annotations

import json
import re
import tracemalloc
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from ivy_matrix import redaction
from ivy_matrix.model import DashboardId, DashboardState, Entry, Outcome, RunKey, Source
from ivy_matrix.results.timed_cases import TimedCases
from ivy_matrix.runner import files as runner_files
from ivy_matrix.runner.files import write_atomic as real_write_atomic
from ivy_matrix.runner.guard import concealing, scrub, scrub_pieces
from ivy_matrix.runner.log import Quiet
from ivy_matrix.state.fold import Merged
from ivy_matrix.state.merge import Batch, apply_batch
from ivy_matrix.state.paths import INDEX_NAME, dashboard_file
from ivy_matrix.targets import files
from ivy_matrix.targets.files import (
    PagesRecord,
    dump_record,
    read_record,
    write_files,
    write_output,
)
from ivy_matrix.views import durations_file
from ivy_matrix.views.dashboards import RenderedFile, render_files
from ivy_matrix.views.dashboards import render_page as views_render_page
from ivy_matrix.views.durations_file import DurationsFile, durations_files
from ivy_matrix.views.index_page import index_row
from ivy_matrix.views.style import Style
from tests.views.durations import pieces_made, watch_texts

pytestmark = pytest.mark.timeout(30)

# Names that differ only in case, or could be taken for the index, a file or a hashed name.
TRICKY = [
    DashboardId(title="README"),
    DashboardId(title="readme"),
    DashboardId(title="ReadMe"),
    DashboardId(title="README.md"),
    DashboardId(title="grad", category="core"),
    DashboardId(title="Grad", category="Core"),
    DashboardId(title="grad", category="Core"),
    DashboardId(title="GRAD", category="core"),
    DashboardId(title="x", category="notes.md"),
    DashboardId(title="notes"),
    DashboardId(title="a b"),
    DashboardId(title="a-b"),
    DashboardId(title="gradients", category="core"),
]


def state(dashboard: DashboardId) -> DashboardState:
    """An empty dashboard state."""
    return DashboardState(id=dashboard)


def folded_paths(files: list[str]) -> set[str]:
    """Every file and folder the paths create, as a file system that ignores case sees them."""
    seen: set[str] = set()
    for path in files:
        parts = path.casefold().split("/")
        seen.update(
            "/".join(parts[: i + 1]) + ("/" if i < len(parts) - 1 else "")
            for i in range(len(parts))
        )
    return seen


def test_no_dashboard_file_collides_with_the_index_or_another_even_ignoring_case():
    """Every dashboard gets its own file, none is README.md, and no file is also a folder."""
    files = [dashboard_file(state(d)) for d in TRICKY]

    folded = [f.casefold() for f in files]
    assert len(set(folded)) == len(TRICKY)
    assert INDEX_NAME.casefold() not in folded
    as_files = {f for f in folded_paths(files) if not f.endswith("/")}
    as_folders = {f.removesuffix("/") for f in folded_paths(files) if f.endswith("/")}
    assert not as_files & as_folders


def test_plain_lower_case_names_keep_their_file_names():
    """A lower-case, file-safe dashboard name is its file name, as before."""
    assert dashboard_file(state(DashboardId(title="gradients", category="core"))) == (
        "core/gradients.md"
    )
    assert dashboard_file(state(DashboardId(title="test_module_depth"))) == "test_module_depth.md"


def test_a_dashboard_named_readme_gets_a_stable_suffixed_file():
    """README, readme and ReadMe each get their own file beside the index, the same every time."""
    names = [dashboard_file(state(DashboardId(title=t))) for t in ("README", "readme", "ReadMe")]

    for name in names:
        assert re.fullmatch(r"(README|readme|ReadMe)-[0-9a-f]{8}\.md", name)
    assert names == [
        dashboard_file(state(DashboardId(title=t))) for t in ("README", "readme", "ReadMe")
    ]


def test_adding_dashboards_never_renames_the_files_of_existing_ones():
    """Each dashboard's file depends on its own name: more dashboards, same files for the old."""
    before = {f.path for f in render_files([state(d) for d in TRICKY[:5]], style=Style.IVY)}
    after = {f.path for f in render_files([state(d) for d in TRICKY], style=Style.IVY)}

    assert before <= after


def test_the_index_links_each_dashboard_to_its_own_file():
    """The index page links README-named and case-twin dashboards to the files they are written to."""
    files = render_files([state(d) for d in TRICKY], style=Style.IVY)
    index = next(f.text for f in files if f.path == INDEX_NAME)

    assert index is not None
    for dashboard in TRICKY:
        assert f"({dashboard_file(state(dashboard))})" in index
    assert [f.path for f in files].count(INDEX_NAME) == 1


def test_a_dry_run_lists_exactly_the_files_a_real_write_then_writes(tmp_path):
    """write_files with dry_run writes nothing and names the files the real call then changes."""
    out = tmp_path / "out"
    first = render_files([state(d) for d in TRICKY[:3]], style=Style.IVY)
    write_files(out, first)
    (out / first[0].path).write_text("edited by hand\n", encoding="utf-8")
    files = render_files([state(d) for d in TRICKY], style=Style.IVY)
    snapshot = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    planned = write_files(out, files, dry_run=True)

    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == snapshot
    written = write_files(out, files)
    assert planned == written
    assert first[0].path in written
    assert first[1].path not in written


@pytest.mark.parametrize("char", ["x", "é"])
def test_a_large_file_is_compared_and_written_without_its_text_held_again_as_bytes(tmp_path, char):
    """A durations file of 200k tests is 20 MB of text: written, or found already written,
    without a copy of it as bytes (the update's peak memory); the bytes are the text's."""
    text = (char * 99 + "\n") * (64 * 1024)  # 6.4 million characters
    files = [RenderedFile(path="durations/torch.json", text=text)]
    tracemalloc.start()
    try:
        peaks = []
        for _ in range(2):  # a new file, then the same text again
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            written = write_files(tmp_path, files)
            peaks.append((tracemalloc.get_traced_memory()[1] - before, written))
    finally:
        tracemalloc.stop()
    assert (tmp_path / "durations/torch.json").read_bytes() == text.encode()
    assert [written for _, written in peaks] == [["durations/torch.json"], []]
    # The text is 6.5 MB as bytes (13 MB with "é"): a few pieces of it are held at a time.
    assert [peak < 6 * 1024 * 1024 for peak, _ in peaks] == [True, True]


def test_each_durations_file_is_made_once_as_it_is_written(tmp_path, monkeypatch):
    """A durations file's text is made when it is written, once (it is not held between
    the update's reading and its end): then compared with the folder's file, and written."""
    made = pieces_made(monkeypatch)
    files = durations_files(
        TimedCases.of({"jax": {"t.py::": {"a": 1.5}}, "torch": {"t.py::": {"a": 2.0}}})
    )
    assert write_files(tmp_path, files) == ["durations/jax.json", "durations/torch.json"]
    assert made == ["durations/jax.json", "durations/torch.json"]
    assert (tmp_path / "durations/torch.json").read_text(encoding="utf-8") == '{"t.py::a": 2.0}\n'
    assert write_files(tmp_path, files) == []  # found written: made to be compared, once each
    assert len(made) == 4


def test_a_durations_file_is_written_in_pieces_each_scrubbed(tmp_path, monkeypatch):
    """The output folder's durations file is made, scrubbed and written a piece at a time
    (never its whole text): the file is the whole text scrubbed, compared again piece by
    piece; the token in a test's name is hidden wherever the pieces are cut."""
    token = "4f1d0c3e9b7a26c58e1f0d4b3a2c9e8f7d6b5a41"
    monkeypatch.setattr(durations_file, "PIECE", 100)
    monkeypatch.setattr(redaction, "_CUT_AFTER", 1)
    pieces: list[str] = []

    def seen(_file: DurationsFile, piece: str) -> str:
        pieces.append(piece)
        return piece

    watch_texts(monkeypatch, seen)
    seconds = {f"t{i}.py::": {f"test_{i}_{j}_{token}": j / 8 for j in range(30)} for i in range(3)}
    (file,) = durations_files(TimedCases.of({"torch": seconds}))
    whole = "".join(file.pieces())
    made = len(pieces)
    with concealing([token]):
        assert write_files(tmp_path, [file]) == ["durations/torch.json"]
        assert (tmp_path / file.path).read_text(encoding="utf-8") == scrub(whole)
        assert write_files(tmp_path, [file]) == ["durations/torch.json"]  # the token differs
    assert token in whole
    assert made >= 3 * 30 * len(f"test_0_0_{token}") // 100
    # Written; then compared up to its first piece (the token hidden differs), written again.
    assert len(pieces) == made + made + 1 + made
    assert max(map(len, pieces)) < 100 + 2 * len(f'"t0.py::test_0_0_{token}": 0.125,\n')
    plain = durations_files(TimedCases.of({"torch": {"t.py::": {"a": 1.0}}}))
    assert write_files(tmp_path, plain) == ["durations/torch.json"]
    assert write_files(tmp_path, plain) == []  # found written: compared piece by piece


def test_the_documented_file_names_are_the_ones_written():
    """The examples of hashed file names in docs/how-it-works.md are what dashboard_file gives."""
    assert dashboard_file(state(DashboardId(title="Grad", category="Core"))) == (
        "Core-70ea1983/Grad-d1c58652.md"
    )
    assert dashboard_file(state(DashboardId(title="README"))) == "README-2b7814d3.md"


def test_the_records_text_comes_a_dashboard_at_a_time_as_one_json_document(tmp_path):
    """The output folder's record is made a dashboard's index row at a time (never the whole
    document or its text at once besides): joined, the pieces are the one JSON document
    json writes of it, read back as the same record."""
    source = Source(run=RunKey(3, 1, 1), url="https://github.com/o/r/actions/runs/3")
    states = [
        apply_batch(
            None,
            Batch(
                dashboard=DashboardId(title=f"d{index}", category="core"),
                cells={"test_a": {"torch": Entry(source=source, outcome=Outcome.FAILURE)}},
            ),
        ).state
        for index in range(3)
    ]
    record = PagesRecord(
        folder="out",
        revision="s:1",
        style="ivy",
        files={"README.md": (10, 5)},
        index={state.key: index_row(state) for state in states},
    )

    pieces = list(dump_record(record))

    assert len(pieces) == 1 + 3 + 1  # the head, a line a row, the end
    assert all(piece.count("\n") == 1 and piece.endswith("\n") for piece in pieces)
    text = "".join(pieces)
    document = json.loads(text)
    # Its line breaks are JSON's white space: without them, json's compact text of it.
    assert text.replace("\n", "") == json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    assert list(document) == ["format", "version", "folder", "revision", "style", "files", "index"]
    (tmp_path / "pages.json").write_text(text, encoding="utf-8")
    assert read_record(tmp_path / "pages.json") == record
    # A record written on one line (before its rows had lines of their own) reads the same.
    (tmp_path / "pages.json").write_text(text.replace("\n", "") + "\n", encoding="utf-8")
    assert read_record(tmp_path / "pages.json") == record
    empty = "".join(dump_record(PagesRecord(folder="out", revision="s:1", style="ivy")))
    assert json.loads(empty)["index"] == {}


def _failing_states(count: int, rows: int) -> list[DashboardState]:
    """``count`` dashboards of ``rows`` failing tests each (their index rows have notes)."""
    source = Source(run=RunKey(3, 1, 1), url="https://github.com/o/r/actions/runs/3/job/4")
    return [
        apply_batch(
            None,
            Batch(
                dashboard=DashboardId(title=f"d{index}", category="core"),
                cells={
                    f"test_{row:04}": {"torch": Entry(source=source, outcome=Outcome.FAILURE)}
                    for row in range(rows)
                },
            ),
        ).state
        for index in range(count)
    ]


def test_the_last_guard_cuts_a_large_record_after_its_rows():
    """The record is written in pieces, and the last guard, which cuts a text only after a line
    break, cuts it (it holds a text without line breaks whole, and its bytes beside it)."""
    states = _failing_states(30, 60)
    record = PagesRecord(
        folder="out",
        revision="s:1",
        style="ivy",
        index={state.key: index_row(state) for state in states},
    )
    text = "".join(dump_record(record))
    assert len(text) > 2 * redaction._CUT_AFTER  # as the guard cuts it, at its own size
    parts = list(scrub_pieces(dump_record(record)))
    assert "".join(parts) == text
    assert len(parts) >= 2
    longest_row = max(map(len, dump_record(record)))
    assert max(map(len, parts)) < redaction._CUT_AFTER + longest_row


def test_the_output_folders_record_is_handed_to_the_writer_in_pieces(tmp_path, monkeypatch):
    """write_output hands the record's writer its lines, not one joined text: the last guard
    cuts it after each (here after any text at all), and the file is the record."""
    monkeypatch.setattr(redaction, "_CUT_AFTER", 1)
    states = _failing_states(3, 4)
    merged = Merged(
        states={s.id: s for s in states}, changed=tuple(s.key for s in states), revision="s:1"
    )
    given: list[str | list[str]] = []

    def write_atomic(path: Path, text: str | Iterable[str], *, sync: bool = True) -> None:
        if path.name == "pages.json":
            text = text if isinstance(text, str) else list(text)
            given.append(text)
        real_write_atomic(path, text, sync=sync)

    monkeypatch.setattr(files, "write_atomic", write_atomic)
    parts: list[str] = []

    def scrub_each(texts: Iterable[str]) -> Iterator[str]:
        for part in scrub_pieces(texts):
            parts.append(part)
            yield part

    monkeypatch.setattr(runner_files, "scrub_pieces", scrub_each)
    record = tmp_path / "store" / "pages.json"
    out = tmp_path / "out"

    write_output(out, merged, style=Style.IVY, dry_run=False, log=Quiet(), record=record)

    (lines,) = given
    assert isinstance(lines, list)
    assert len(lines) == 1 + 3 + 1
    assert len(parts) >= 1 + 3  # cut after the head and each row (the short end stays)
    assert "".join(parts) == "".join(lines) == record.read_text(encoding="utf-8")
    assert read_record(record) == PagesRecord(
        folder=str(out.resolve()),
        revision="s:1",
        style="ivy",
        files=files.stats(out, [INDEX_NAME, *(dashboard_file(s) for s in states)]),
        index={s.key: index_row(s) for s in states},
    )


def test_each_page_is_let_go_before_the_next_is_drawn(tmp_path, monkeypatch):
    """The output folder's pages are drawn one at a time, as they are written: none is still
    held (by the writer's loop) while the next is drawn."""

    class Text(str):
        """A page's text that can be watched for its end."""

        __slots__ = ("__weakref__",)

    drawn: list[weakref.ref[Text]] = []
    held: list[int] = []

    def render_page(state: DashboardState, style: Style) -> RenderedFile:
        held.append(sum(page() is not None for page in drawn))
        page = views_render_page(state, style)
        text = Text(page.text)
        drawn.append(weakref.ref(text))
        return RenderedFile(path=page.path, text=text)

    monkeypatch.setattr(files, "render_page", render_page)
    states = _failing_states(3, 4)
    merged = Merged(states={s.id: s for s in states}, changed=tuple(s.key for s in states))

    written = write_output(tmp_path, merged, style=Style.IVY, dry_run=False, log=Quiet())

    assert held == [0, 0, 0]
    assert len(written) == 3 + 1
