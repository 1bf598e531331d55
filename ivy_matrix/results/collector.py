"""Gather one update's results into cells: dashboard -> row -> backend -> cell result.

Pure apart from reading the streams it is handed. Each file's cases are gathered on their own
first and added to the rest only when the whole file was read: a file that turns out broken
halfway adds nothing, and is reported, instead of leaving half its cells behind. Memory grows
with the number of cells, not with the size of the files.

A cell's result is its worst outcome, how many of its cases passed, failed, were skipped or
flaky (a row collapses a test's parametrizations; the counts keep what the row hides), the
first line of its first failure's message, and its duration: the sum of its cases' ``time``
and how many cases had one; ``entries.build_batches`` turns the cells into
the entries a store merges, with the job that produced them and the message's signature.

What is kept of a test's output and names is redacted here as it is kept (redaction.py), so
the token, well-known key shapes and the user's patterns never reach a cell: each failing
cell's failure line, the failed tests listed for annotations (their ids, parametrization
included, and messages), and the names of dashboards and rows (looked at once per dashboard,
and once per file for all its rows together; two names that differ only in a secret become
one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import BinaryIO, NamedTuple

from ivy_matrix.model import (
    CaseCounts,
    CaseResult,
    CaseStatus,
    DashboardId,
    Failure,
    FileCounts,
    FileRecord,
    Outcome,
    ParseProblem,
)
from ivy_matrix.redaction import REDACT_SHAPES, Redactor
from ivy_matrix.results.cells import CellResult, Collected, combine_results
from ivy_matrix.results.junit import cap_name, scan_junit
from ivy_matrix.results.naming import UNNAMED, Namer, node_prefix, row_name, test_id
from ivy_matrix.results.timed_cases import (
    Entries,
    TimedCases,
    decoded,
    entries,
    names_text,
    text_of,
)


def place_of(test_file: str, line: str) -> tuple[str, int] | None:
    """A failing case's place for its annotation: its file and its ``line`` attribute when
    that is a number (else 0); None without a file."""
    if not test_file:
        return None
    return test_file, int(line) if line.isascii() and line.isdigit() else 0


# While a file is read, a cell's cases are one int: five counts of _BITS bits each, passed in
# the lowest (so the usual cell, one passing case, is the cached small int 1), then skipped,
# flaky, the cases with a time, and failed in the highest (unbounded). A case adds its
# bucket's increment: one dict read and one store per case.
_BITS = 24  # fewer than 16 million cases of one kind in one cell of one file
_MASK = (1 << _BITS) - 1
_PASSED, _SKIPPED, _FLAKY, _TIMED, _FAILED = (1 << (_BITS * slot) for slot in range(5))
_TIMED_SHIFT = 3 * _BITS


_ONE_PASS = CellResult(Outcome.SUCCESS, CaseCounts(passed=1))
_TIMED_KEPT = 1 << 16  # most results of timed cells alike shared, a count (Collector._timed)
# What a case of each status adds to its cell (a flaky pass adds _FLAKY).
_STEP = {
    CaseStatus.PASSED: _PASSED,
    CaseStatus.SKIPPED: _SKIPPED,
    CaseStatus.FAILED: _FAILED,
    CaseStatus.ERROR: _FAILED,
}


def cell_result(tally: int, message: str = "", where: tuple[str, int] | None = None) -> CellResult:
    """A cell's result from its packed counts (see _BITS; the timed cases are left out): the
    worst outcome its cases had (failure, flaky, success, skipped, in that order)."""
    counts = CaseCounts(
        passed=tally & _MASK,
        skipped=(tally >> _BITS) & _MASK,
        flaky=(tally >> 2 * _BITS) & _MASK,
        failed=tally >> 4 * _BITS,
    )
    if counts.failed:
        outcome = Outcome.FAILURE
    elif counts.flaky:
        outcome = Outcome.FLAKY
    elif counts.passed:
        outcome = Outcome.SUCCESS
    else:
        outcome = Outcome.SKIPPED
    return CellResult(outcome, counts, message, where)


def _timed_result(result: CellResult, seconds: float, timed: int) -> CellResult:
    """``result`` with the seconds of its ``timed`` cases."""
    new_result = tuple.__new__  # CellResult's own __new__ is a Python function
    return new_result(CellResult, (result[0], result[1], result[2], result[3], seconds, timed))


FAILURES_KEPT = 50
SAMPLES_KEPT = 2  # paths or test ids a message shows as not matched
# Where a case's status is counted in a backend's tally: tests, failed, errors, skipped.
_TALLY = {CaseStatus.FAILED: 1, CaseStatus.ERROR: 2, CaseStatus.SKIPPED: 3}


_Place = tuple[str, str, str]  # a case's classname, file and suite


@dataclass(slots=True)
class _ByPlace:
    """One file's rows as ``Collector._scan_by_place`` gathers them, by place."""

    # Each place's rows: their cases as one int (packed counts, see _BITS), and the seconds
    # of those with a time.
    groups: dict[_Place, dict[str, int]] = field(default_factory=dict)
    times: dict[_Place, dict[str, float]] = field(default_factory=dict)
    # Each run of one place: the place and how many rows it had when the run began.
    segments: list[tuple[_Place, int]] = field(default_factory=list)
    # Each failing row's first failure line and where its first failing case is, each with
    # that case's number among the file's failing cases.
    lines: dict[tuple[_Place, str], tuple[int, str]] = field(default_factory=dict)
    places: dict[tuple[_Place, str], tuple[int, tuple[str, int] | None]] = field(
        default_factory=dict
    )
    failing: int = 0  # the file's failing cases

    def runs(self) -> list[tuple[_Place, Iterator[tuple[str, int]]]]:
        """Each run of one place and its new rows (name, packed counts): in this order, the
        rows in the order their first case came (a run's rows are those its place gained)."""
        groups = self.groups
        if len(self.segments) == len(groups):  # the usual file: one run a place
            return [(place, iter(rows.items())) for place, rows in groups.items()]
        spans: list[tuple[_Place, int]] = []
        later: dict[_Place, int] = {}
        for place, start in reversed(self.segments):
            spans.append((place, later.get(place, len(groups[place])) - start))
            later[place] = start
        rows = {place: iter(found.items()) for place, found in groups.items()}
        return [(place, islice(rows[place], count)) for place, count in reversed(spans) if count]

    def in_order(self) -> Iterator[tuple[_Place, str, int]]:
        """Each row (place, name, packed counts) in the order its first case came."""
        for place, rows in self.runs():
            for name, packed in rows:
                yield place, name, packed


class Read(NamedTuple):
    """What reading one file added besides its counts and cells (what a
    :class:`~ivy_matrix.model.FileRecord` keeps of it)."""

    counts: FileCounts
    backend: str
    failures: tuple[Failure, ...]
    tallies: tuple[tuple[str, tuple[int, int, int, int]], ...]
    unassigned: int
    nameless_line: int
    ids_tried: int
    unmatched_ids: tuple[str, ...]
    dashboards: tuple[DashboardId, ...]


class Collector:
    """Reads result files one at a time into a :class:`Collected`.

    ``last`` is what the last file read added (None when it could not be read). ``redactor``
    hides the secrets in every text kept (the module docstring; default: the well-known
    shapes). ``spill``: a file the timed cases' texts are written to (results/timed_cases.py).
    """

    def __init__(
        self,
        namer: Namer,
        *,
        redactor: Redactor = REDACT_SHAPES,
        spill: BinaryIO | None = None,
    ) -> None:
        self.namer = namer
        self.redactor = redactor
        self.redact = redactor.cached()
        self.collected = Collected(durations=TimedCases(spill))
        self.last: Read | None = None
        self._dashboards: list[DashboardId] = []
        self._dashboard_index: dict[DashboardId, int] = {}
        # (classname, file, suite) -> (dashboard index, row prefix): the same few classnames
        # come back for every case, so the split is done once per classname (the one cache
        # of naming: Namer itself is stateless).
        self._places: dict[tuple[str, str, str], tuple[int, str]] = {}
        self._shared: dict[int, CellResult] = {}  # see _commit
        # The results of timed cells without a failure line or place, by their packed counts
        # (see _BITS), then their seconds (not 0: -0.0 is 0.0 as a key); the usual one, a
        # passing case, under _PASSED + _TIMED. Durations take a few thousand values (most
        # are whole milliseconds under a second): cells alike share one result, so that an
        # update makes a few thousand of them, not one a cell (each an object held to the
        # fold, and one the garbage collector looks at: at 200k test cases, 62k -> 20k).
        self._timed: dict[int, dict[float, CellResult]] = {}
        # (classname, file) -> the start of its cases' node ids (redacted), or None.
        self._prefixes: dict[tuple[str, str], str | None] = {}

    def _index(self, dashboard: DashboardId) -> int:
        index = self._dashboard_index.get(dashboard)
        if index is None:
            redact = self.redact
            clean = DashboardId(title=redact(dashboard.title), category=redact(dashboard.category))
            index = self._dashboard_index.get(clean)
            if index is None:
                index = self._dashboard_index[clean] = len(self._dashboards)
                self._dashboards.append(clean)
            self._dashboard_index[dashboard] = index
        return index

    # Longer than the usual 60 lines: ``on_case`` runs once per test case (millions), so it is
    # one flat closure over local names, with no call it can avoid.
    def add_file(self, stream: BinaryIO, *, source: str) -> FileCounts:  # noqa: C901, PLR0915  -- the per-case closure is the hot loop, kept flat
        """Read one result file; its cells count only if all of it could be read."""
        namer = self.namer
        collected = self.collected
        self.last = None
        file_backend = self.file_backend(source)
        per_case = namer.needs_test_id
        # This file's tallies, added to the rest only when the whole file was read.
        by_backend: dict[str, list[int]] = {}
        unmatched_ids = collected.unmatched_ids
        unmatched_before = len(unmatched_ids)
        tried = 0
        nameless: list[int] = []
        pending: dict[tuple[int, str, str], int] = {}
        cases_of = pending.get  # bound once: called for every case
        # The seconds of each cell whose cases have a time (their number is in the tally).
        seconds: dict[tuple[int, str, str], float] = {}
        # Each timed case's seconds, by backend and place (classname, file, suite), then name;
        # then as the durations files' text, held (results/timed_cases.py), with whether a
        # name in it holds "::" (the usual file: as each run of one place ends).
        cases: dict[tuple[str, _Place], dict[str, float]] = {}
        texts: dict[tuple[str, _Place], list[tuple[Entries, bool]]] = {}
        # The first failure line of each failing cell, and where its first failing case is.
        messages: dict[tuple[int, str, str], str] = {}
        wheres: dict[tuple[int, str, str], tuple[str, int] | None] = {}
        places = self._places
        unassigned = 0
        failures: list[Failure] = []
        room = FAILURES_KEPT - len(self.collected.failures)

        def on_case(case: CaseResult) -> None:  # noqa: C901, PLR0912, PLR0915  -- the hot loop, kept flat
            nonlocal unassigned, tried
            backend = file_backend
            if backend is None and per_case:
                tried += 1
                backend = namer.backend_for_case(case)
                if backend is not None:
                    backend = cap_name(backend)
                    # Per case only here: with a file's backend the file's counts say it all.
                    counted = by_backend.get(backend)
                    if counted is None:
                        counted = by_backend[backend] = [0, 0, 0, 0]
                    counted[0] += 1
                    column = _TALLY.get(case.status)
                    if column is not None:
                        counted[column] += 1
                elif len(unmatched_ids) < SAMPLES_KEPT:
                    unmatched_ids.append(self.redact(test_id(case)))
            if backend is None:
                unassigned += 1
                return
            key = (case.classname, case.file, case.suite)
            place = places.get(key)
            if place is None:
                dashboard, prefix = namer.locate(case)
                place = places[key] = (self._index(dashboard), prefix)
            index, prefix = place
            if per_case:
                ruled = namer.ruled(case)
                if ruled is not None:
                    index = self._index(ruled)
                row = row_name(prefix, case.name)
            else:
                name = case.name
                if name[-1:] == "]":
                    head = name.partition("[")[0]
                    if head:
                        name = head
                row = prefix + name if name else prefix + UNNAMED
            cell = (index, row, backend)
            status = case.status
            time = case.time
            timed = 0
            if time is not None:
                timed = _TIMED
                seconds[cell] = seconds.get(cell, 0.0) + time
                named = cases.get((backend, key))
                if named is None:
                    named = cases[backend, key] = {}
                named[case.name] = named.get(case.name, 0.0) + time
            if status is CaseStatus.PASSED:
                pending[cell] = cases_of(cell, 0) + (_FLAKY if case.flaky else _PASSED) + timed
            elif status is CaseStatus.SKIPPED:
                pending[cell] = cases_of(cell, 0) + _SKIPPED + timed
            else:
                pending[cell] = cases_of(cell, 0) + _FAILED + timed
                if case.message and cell not in messages:
                    messages[cell] = case.message
                if cell not in wheres:
                    wheres[cell] = place_of(case.file, case.line)
                if len(failures) < room:
                    failures.append(
                        Failure(
                            test=self.redact(test_id(case)),
                            backend=backend,
                            message=self.redact(case.message),
                            result_file=source,
                            test_file=case.file,
                            test_line=case.line,
                        )
                    )

        commit: Callable[[], tuple[tuple[DashboardId, ...], bool]] | None = None
        if file_backend is not None and not per_case:
            # The usual file: one backend, rows named by their place: the quicker loop.
            counts, problem, commit = self._scan_by_place(
                stream, source, file_backend, (failures, room), nameless, cases=texts
            )
        else:
            counts, problem = scan_junit(
                stream,
                source=source,
                on_case=on_case,
                on_nameless=nameless.append,
                properties=collected.properties,
            )
        collected.ids_tried += tried
        if nameless:
            counts = replace(counts, nameless=len(nameless))
        collected.files.append(counts)
        if problem is not None:
            collected.problems.append(problem)
            return counts
        if nameless:
            collected.nameless[source] = (len(nameless), nameless[0])
        tallies = tuple((b, (n[0], n[1], n[2], n[3])) for b, n in by_backend.items())
        if file_backend is not None:
            by_backend[file_backend] = [counts.tests, counts.failed, counts.errors, counts.skipped]
        self._tally(by_backend.items())
        if unassigned:
            collected.unassigned[source] = unassigned
        collected.failures.extend(failures)
        if commit is None:
            reached = self._commit(pending, messages, wheres, seconds)
            hide = self._held_cases(cases, texts)
        else:
            reached, hide = commit()
        self._commit_cases(texts, hide=hide)
        self.last = Read(
            counts=counts,
            backend=file_backend or "",
            failures=tuple(failures),
            tallies=tallies,
            unassigned=unassigned,
            nameless_line=nameless[0] if nameless else 0,
            ids_tried=tried,
            unmatched_ids=tuple(unmatched_ids[unmatched_before:]),
            dashboards=reached,
        )
        return counts

    # Longer than the usual 60 lines: the per-case closure is the hot loop of the usual file,
    # kept flat (one closure, local names).
    def _scan_by_place(  # noqa: C901, PLR0915  -- see above
        self,
        stream: BinaryIO,
        source: str,
        backend: str,
        into: tuple[list[Failure], int],
        nameless: list[int],
        *,
        cases: dict[tuple[str, _Place], list[tuple[Entries, bool]]],
    ) -> tuple[FileCounts, ParseProblem | None, Callable[[], tuple[tuple[DashboardId, ...], bool]]]:
        """Read a file whose cases all have its ``backend`` (no per-case naming): each row's
        cases as one int (packed counts, see _BITS) and seconds, its first failure line and
        place; the first failures into ``into``; the timed cases' seconds into ``cases``, as
        the text the durations files hold, held as each run of one place ends (the update's
        temporary file: results/timed_cases.py), not as names and floats until the file
        ends. Returns the counts, the problem, and what adds the file's cells to the rest (to
        call once the whole file was read: :meth:`_commit_places`; it returns the dashboards
        they reached and whether the redactor may hide something in a timed case's name:
        :meth:`_looked`).

        Cases come in runs of one place (classname, file, suite): each run finds its place's
        rows once, and a case's cell is its row name there, no string built and no tuple
        hashed per case. The cells keep the order their first case came in (each run of a
        place is one segment of its rows, in order).
        """
        failures, room = into
        namer, places = self.namer, self._places
        read = _ByPlace()
        groups, group_times, segments = read.groups, read.times, read.segments
        lines, places_of = read.lines, read.places
        last: _Place = ("", "", "\0")  # no place has a NUL in its suite name
        rows: dict[str, int] = {}
        times: dict[str, float] = {}
        named: dict[str, float] = {}
        failing = 0
        untimed = False  # whether a case had no time
        # Whether the redactor may hide something in a timed case's name or a row's
        # (:meth:`_looked`): then the file's rows are renamed and its cases' names redacted.
        hidden = False

        def hold(place: _Place) -> None:
            """A run of one place ended: its cases' names and seconds as text, held."""
            nonlocal named, hidden
            run, may_hide = self._hold(places[place][1], named)
            cases[backend, place].append(run)
            hidden = hidden or may_hide
            named = {}

        def on_case(case: CaseResult) -> None:  # noqa: C901, PLR0912  -- the hot loop, kept flat
            nonlocal last, rows, times, named, failing, untimed
            name, classname, test_file, suite, status, flaky, message, line, time = case
            if classname != last[0] or test_file != last[1] or suite != last[2]:
                last = (classname, test_file, suite)
                found = groups.get(last)
                if found is None:
                    if last not in places:
                        dashboard, prefix = namer.locate(case)
                        places[last] = (self._index(dashboard), prefix)
                    found = groups[last] = {}
                    group_times[last] = {}
                    cases[backend, last] = []
                if named:  # the run that ends: its names and seconds as text, held
                    hold(segments[-1][0])
                rows = found
                times = group_times[last]
                segments.append((last, len(rows)))
            if time is not None:
                before = named.get(name)  # the usual case: a name once, its seconds kept as read
                named[name] = time if before is None else before + time
            else:
                untimed = True
            if name[-1:] == "]":
                head = name.partition("[")[0]
                if head:
                    name = head
            step = _FLAKY if flaky else _STEP[status]
            tally = rows.get(name)
            if tally is None:  # the usual case: a row's first case
                if time is not None:
                    times[name] = time
                    step += _TIMED
                rows[name] = step
            else:
                if time is not None:
                    times[name] = times.get(name, 0.0) + time
                    step += _TIMED
                rows[name] = tally + step
            if step >= _FAILED:
                failing += 1
                if message:
                    lines.setdefault((last, name), (failing, message))
                if (last, name) not in places_of:
                    places_of[last, name] = (failing, place_of(test_file, line))
                if len(failures) < room:
                    failures.append(
                        Failure(
                            test=self.redact(test_id(case)),
                            backend=backend,
                            message=self.redact(message),
                            result_file=source,
                            test_file=test_file,
                            test_line=line,
                        )
                    )

        counts, problem = scan_junit(
            stream,
            source=source,
            on_case=on_case,
            on_nameless=nameless.append,
            properties=self.collected.properties,
        )
        if named and problem is None:
            hold(last)
        read.failing = failing

        def commit() -> tuple[tuple[DashboardId, ...], bool]:
            # Two places of one row (the same dashboard and prefix) add up, as one loop over
            # both would have counted them: then the cells are gathered by their key first.
            if len({places[place] for place in groups}) < len(groups):
                return self._commit(*self._pending(backend, read)), False
            clean = not untimed and not hidden
            renamed = {} if clean else self._renamed_places(groups)
            return self._commit_places(backend, read, renamed), hidden

        return counts, problem, commit

    def _pending(
        self, backend: str, read: _ByPlace
    ) -> tuple[
        dict[tuple[int, str, str], int],
        dict[tuple[int, str, str], str],
        dict[tuple[int, str, str], tuple[str, int] | None],
        dict[tuple[int, str, str], float],
    ]:
        """A file's rows by place as the cells ``add_file``'s loop keeps (for :meth:`_commit`),
        in the order they came: a cell of two places adds them up, and keeps the first
        failure line and place of the two."""
        pending: dict[tuple[int, str, str], int] = {}
        messages: dict[tuple[int, str, str], str] = {}
        wheres: dict[tuple[int, str, str], tuple[str, int] | None] = {}
        seconds: dict[tuple[int, str, str], float] = {}
        never = read.failing + 1  # after every failing case
        first: dict[tuple[int, str, str], int] = {}
        first_place: dict[tuple[int, str, str], int] = {}
        for place, name, tally in read.in_order():
            index, prefix = self._places[place]
            cell = (index, prefix + name if name else prefix + UNNAMED, backend)
            time = read.times[place].get(name)
            pending[cell] = pending.get(cell, 0) + tally
            if time is not None:
                seconds[cell] = seconds.get(cell, 0.0) + time
            line = read.lines.get((place, name))
            if line is not None and first.get(cell, never) > line[0]:
                first[cell] = line[0]
                messages[cell] = line[1]
            found = read.places.get((place, name))
            if found is not None and first_place.get(cell, never) > found[0]:
                first_place[cell] = found[0]
                wheres[cell] = found[1]
        return pending, messages, wheres, seconds

    def _looked(self, prefix: str, text: str) -> bool:
        """Whether the redactor may hide something in the names of an
        :func:`~ivy_matrix.results.timed_cases.entries` text, each after ``prefix`` (a place's
        row prefix: :func:`~ivy_matrix.results.timed_cases.names_text`). A row's name (the
        prefix and its first case's name, without a parametrization) is the start of one of
        these, and a case's name the end: what the redactor may hide in either, it finds."""
        return self.redactor.may_hide(names_text(prefix, text))

    # The per-cell loop of the usual file, kept flat (local names, no call it can avoid).
    def _commit_places(  # noqa: C901, PLR0912  -- see above
        self, backend: str, read: _ByPlace, renamed: dict[str, str]
    ) -> tuple[DashboardId, ...]:
        """Add a fully read file's rows, no two places of one row, to the rest: each cell's
        result made once, straight from its packed counts (a cell in two files: combined),
        its row renamed by ``renamed`` (:meth:`_renamed_places`); return the dashboards they
        reached."""
        places, ids = self._places, self._dashboards
        reached: dict[int, None] = {}
        shared, alike, redact = self._shared, self._shared.get, self.redact
        timed_shared = self._timed.setdefault(_PASSED + _TIMED, {})
        passed_in = timed_shared.get
        lines, wheres = read.lines, read.places
        timed_one = _PASSED + _TIMED
        mask, shift, failing = _MASK << _TIMED_SHIFT, _TIMED_SHIFT, _FAILED
        for place, named in read.runs():
            index, prefix = places[place]
            reached[index] = None
            rows = self.collected.dashboards.setdefault(ids[index], {})
            times = read.times[place]
            for name, packed in named:
                row = prefix + name if name else prefix + UNNAMED
                if renamed:
                    row = renamed.get(row, row)
                if packed == timed_one:  # the usual cell: one passing case, timed
                    seconds = times[name]
                    result = passed_in(seconds)
                    if result is None:
                        result = _timed_result(_ONE_PASS, seconds, 1)
                        if seconds and len(timed_shared) < _TIMED_KEPT:
                            timed_shared[seconds] = result
                else:
                    timed = packed & mask
                    tally = packed - timed if timed else packed
                    line = spot = None
                    if tally >= failing:
                        line = lines.get((place, name))
                        where = wheres.get((place, name))
                        spot = None if where is None else where[1]
                    if line is not None or spot is not None:
                        if spot is not None:
                            spot = (redact(spot[0]), spot[1])
                        result = cell_result(tally, redact(line[1]) if line else "", spot)
                        if timed:
                            result = _timed_result(result, times[name], timed >> shift)
                    elif timed:
                        result = self._timed_alike(packed, times[name])
                    else:
                        found = alike(tally)
                        if found is None:
                            found = shared[tally] = cell_result(tally)
                        result = found
                cells = rows.get(row)
                if cells is None:
                    rows[row] = {backend: result}
                else:
                    old = cells.get(backend)
                    cells[backend] = result if old is None else combine_results(old, result)
        return tuple(ids[index] for index in reached)

    def file_backend(self, source: str) -> str | None:
        """The backend a file's path names (None: none, or each test case names its own);
        counts the paths the backend regex was tried on, as the read-error message says."""
        backend = self.namer.backend_for_file(source)
        if backend is not None:
            return cap_name(backend)
        if self.namer.matches_paths:
            self.collected.paths_tried += 1
            if len(self.collected.unmatched_paths) < SAMPLES_KEPT:
                self.collected.unmatched_paths.append(source)
        return None

    def add_recorded(self, record: FileRecord) -> FileCounts:
        """Add what a file read before reported, without its cells (they are in the store)."""
        collected = self.collected
        self.file_backend(record.path)
        counts = record.counts
        collected.files.append(counts)
        if counts.nameless:
            collected.nameless[record.path] = (counts.nameless, record.nameless_line)
        tallies = {b: list(n) for b, n in record.tallies}
        if record.backend:
            tallies[record.backend] = [counts.tests, counts.failed, counts.errors, counts.skipped]
        self._tally(tallies.items())
        if record.unassigned:
            collected.unassigned[record.path] = record.unassigned
        collected.ids_tried += record.ids_tried
        room = SAMPLES_KEPT - len(collected.unmatched_ids)
        collected.unmatched_ids.extend(record.unmatched_ids[: max(room, 0)])
        room = FAILURES_KEPT - len(collected.failures)
        redact = self.redact
        collected.failures.extend(
            replace(failure, test=redact(failure.test), message=redact(failure.message))
            for failure in record.failures[: max(room, 0)]
        )
        collected.touched.update(dict.fromkeys(record.dashboards))
        collected.kept.append(record.identity)
        return counts

    def _tally(self, by_backend: Iterable[tuple[str, Sequence[int]]]) -> None:
        for backend, numbers in by_backend:
            total = self.collected.by_backend.setdefault(backend, [0, 0, 0, 0])
            for slot, count in enumerate(numbers):
                total[slot] += count

    def _renamed_places(self, groups: dict[_Place, dict[str, int]]) -> dict[str, str]:
        """The rows of a file read by place (their place's prefix and name) whose names hold
        a secret, with the secret hidden (as :meth:`_renamed`): the names are looked at
        once, each place's joined in one piece of text."""
        places = self._places
        texts = []
        for place, rows in groups.items():
            prefix = places[place][1]
            texts.append(prefix + ("\n" + prefix).join(rows))
            if "" in rows:
                texts.append(prefix + UNNAMED)
        if not self.redactor.may_hide("\n".join(texts)):
            return {}
        return self._renamed(
            prefix + name if name else prefix + UNNAMED
            for place, rows in groups.items()
            for prefix in (places[place][1],)
            for name in rows
        )

    def _renamed(self, names: Iterable[str]) -> dict[str, str]:
        """The rows of ``names`` whose names hold a secret, with the secret hidden: all the
        names are looked at at once, and each only when one may hold one."""
        rows = dict.fromkeys(names)
        if not self.redactor.may_hide("\n".join(rows)):
            return {}
        redact = self.redact
        return {row: clean for row in rows if (clean := redact(row)) != row}

    def _timed_alike(self, packed: int, seconds: float) -> CellResult:
        """The result of a timed cell without a failure line or place: its packed counts (see
        _BITS) and its seconds, shared with the cells alike (Collector._timed)."""
        alike = self._timed.get(packed)
        if alike is None:
            alike = self._timed[packed] = {}
        result = alike.get(seconds)
        if result is None:
            timed = packed & (_MASK << _TIMED_SHIFT)
            tally = packed - timed
            found = self._shared.get(tally)
            if found is None:
                found = self._shared[tally] = cell_result(tally)
            result = _timed_result(found, seconds, timed >> _TIMED_SHIFT)
            if seconds and len(alike) < _TIMED_KEPT:
                alike[seconds] = result
        return result

    def _held_cases(
        self,
        cases: dict[tuple[str, _Place], dict[str, float]],
        into: dict[tuple[str, _Place], list[tuple[Entries, bool]]],
    ) -> bool:
        """A file's timed cases read a case at a time (by backend and place, name -> seconds)
        held as the text the durations files hold, into ``into`` (as
        :meth:`_scan_by_place` holds them); return whether the redactor may hide something
        in their names."""
        hidden = False
        for key, named in cases.items():
            if named:
                run, may_hide = self._hold("", named)
                into[key] = [run]
                hidden = hidden or may_hide
        return hidden

    def _hold(self, prefix: str, named: Mapping[str, float]) -> tuple[tuple[Entries, bool], bool]:
        """One run's timed cases (name -> seconds) held as the text the durations files hold
        (results/timed_cases.py), with whether a name in it holds "::"; and whether the
        redactor may hide something in their names, each after ``prefix`` (:meth:`_looked`)."""
        text = entries(named)
        return (self.collected.durations.hold(text), "::" in text), self._looked(prefix, text)

    def _commit_cases(
        self, cases: dict[tuple[str, _Place], list[tuple[Entries, bool]]], *, hide: bool
    ) -> None:
        """Add one fully read file's timed cases (by backend and place, their held
        :func:`~ivy_matrix.results.timed_cases.entries` texts, one a run of the place, each
        with whether a name in it holds "::") to the rest (a node id in two files or runs:
        its seconds added, when its durations file is made), by backend and node id; with
        ``hide``, their names redacted as the cells' names are (read back for it)."""
        durations = self.collected.durations
        prefixes = self._prefixes
        redact = self.redact
        for (backend, (classname, test_file, _)), texts in cases.items():
            if not texts:
                continue
            place = (classname, test_file)
            prefix = prefixes.get(place, "")
            if prefix == "":
                found = node_prefix(classname, test_file)
                prefix = prefixes[place] = None if found is None else redact(found)
            if prefix is None:
                continue
            if not hide:
                for body, colons in texts:
                    durations.add_held(backend, prefix, body, colons=colons)
                continue
            read: dict[str, float] = {}  # a name in two runs: its seconds added, in order
            for body, _ in texts:
                for name, seconds in decoded(text_of(body)).items():
                    read[name] = read.get(name, 0.0) + seconds
            named: dict[str, float] = {}
            for name, seconds in read.items():
                clean = redact(name)
                named[clean] = named.get(clean, 0.0) + seconds
            durations.add(backend, prefix, named)

    def _commit(
        self,
        pending: dict[tuple[int, str, str], int],
        messages: dict[tuple[int, str, str], str],
        wheres: dict[tuple[int, str, str], tuple[str, int] | None],
        seconds: dict[tuple[int, str, str], float],
    ) -> tuple[DashboardId, ...]:
        """Add one fully read file's cells to the rest (a cell in two files: combined);
        return the dashboards they reached."""
        dashboards = self.collected.dashboards
        ids = self._dashboards
        reached: dict[int, None] = {}
        renamed = self._renamed(row for _, row, _ in pending)
        # Cells without a failure line share one result per count (most are one passing case).
        shared = self._shared
        alike = shared.get
        failed = _FAILED
        one_pass = _ONE_PASS
        redact = self.redact
        timed_mask, shift = _MASK << _TIMED_SHIFT, _TIMED_SHIFT
        for cell, packed in pending.items():
            timed = packed & timed_mask
            tally = packed - timed if timed else packed
            if tally >= failed and (cell in messages or wheres.get(cell) is not None):
                where = wheres.get(cell)
                if where is not None:
                    where = (redact(where[0]), where[1])
                result = cell_result(tally, redact(messages.get(cell, "")), where)
                if timed:
                    result = _timed_result(result, seconds[cell], timed >> shift)
            elif timed:
                result = self._timed_alike(packed, seconds[cell])
            elif tally == _PASSED:  # the usual cell, without a dict lookup
                result = one_pass
            else:
                found = alike(tally)
                if found is None:
                    found = shared[tally] = cell_result(tally)
                result = found
            index, row, backend = cell
            if renamed:
                row = renamed.get(row, row)
            reached[index] = None
            cells = dashboards.setdefault(ids[index], {}).setdefault(row, {})
            old = cells.get(backend)
            cells[backend] = result if old is None else combine_results(old, result)
        return tuple(ids[index] for index in reached)
