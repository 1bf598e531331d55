"""Value types shared by every stage of the pipeline.

Pure: no I/O. Everything here is a frozen dataclass or a StrEnum, so a stage can hand its
output to the next one without either of them being able to change it.

The stages are::

    result file --junit--> CaseResult --naming--> (dashboard, row, backend) + Outcome
                --merge--> DashboardState (cells with run-ordered history) --render--> markdown
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, KeysView, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol


class CaseStatus(StrEnum):
    """How one JUnit ``<testcase>`` ended, by the children it has (error > failure > skipped)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


class Outcome(StrEnum):
    """What a dashboard cell shows."""

    SUCCESS = "success"
    FAILURE = "failure"
    SKIPPED = "skipped"
    FLAKY = "flaky"

    @property
    def severity(self) -> int:
        """Rank used when several results fall into one cell: the worst one wins."""
        return _SEVERITY[self]


# A cell is "skipped" only when every result in it was skipped; one pass makes it a success,
# one rerun-pass makes it flaky, and one failure or error makes it a failure.
_SEVERITY = {Outcome.SKIPPED: 0, Outcome.SUCCESS: 1, Outcome.FLAKY: 2, Outcome.FAILURE: 3}


def worst(a: Outcome, b: Outcome) -> Outcome:
    """Return the more severe of two outcomes."""
    return a if _SEVERITY[a] >= _SEVERITY[b] else b


class CaseResult(NamedTuple):
    """One ``<testcase>`` as read from a result file.

    ``classname`` and ``file`` are empty strings when the file does not give them; ``suite`` is
    the name of the innermost enclosing ``<testsuite>`` ("" when it has none); ``line`` is the
    ``line`` attribute (where the test is in ``file``, as pytest's xunit1 family writes it) of
    a failed or erroring case, as written ("" otherwise: only failures are annotated).
    ``time`` is the case's ``time`` attribute in seconds, None when it has none or one that
    is not a finite number of 0 or more.

    A NamedTuple, not a frozen dataclass like the other types: one is built per test case, and
    at a million cases a frozen dataclass's ``__init__`` alone costs more than a second.
    """

    name: str
    classname: str = ""
    file: str = ""
    suite: str = ""
    status: CaseStatus = CaseStatus.PASSED
    flaky: bool = False
    message: str = ""
    line: str = ""
    time: float | None = None


class Timing(NamedTuple):
    """How long one cell took in one run: the sum of its cases' ``time`` (seconds) and how many
    of its cases had one (``timed``; the others are not counted)."""

    seconds: float
    timed: int


class Timed(Protocol):
    """Anything that says how long a cell took: a :class:`Timing`, or a cell's result as an
    update read it (results/collector.py ``CellResult``). ``timed`` 0: no case had a time."""

    @property
    def seconds(self) -> float: ...

    @property
    def timed(self) -> int: ...


# A row without durations (state/durations.py has the form of those it has).
NO_TIMES: Mapping[str, str] = MappingProxyType({})

# A Times' own items (its __getitem__ looks up a backend).
_item: Callable[[Any, Any], Any] = tuple.__getitem__
_CODES = slice(1, None)
_LAYOUTS: dict[tuple[str, ...], dict[str, int]] = {}  # see Times.layout
_LAYOUTS_KEPT = 1 << 12


def times_layout(backends: tuple[str, ...]) -> dict[str, int]:
    """The :attr:`Times.layout` of ``backends`` (in order): one dict for all the rows of
    the same backends (not kept once there are very many)."""
    layout = _LAYOUTS.get(backends)
    if layout is None:
        layout = {backend: at for at, backend in enumerate(backends, 1)}
        if len(_LAYOUTS) < _LAYOUTS_KEPT:
            _LAYOUTS[backends] = layout
    return layout


class Times(tuple[object, ...]):  # a read-only Mapping[str, str] (registered below)
    """A row's durations by backend (``Row.times``, as merging makes them) in one tuple: its
    :attr:`layout`, then the codes in the layout's order. A dict a row was 184 bytes; this
    is 96 for four backends (at 200k test cases, 20k rows: 2 MB less at the update's end,
    bench/README.md). Read-only, and equal to any mapping of the same items, as a dict of
    them is. Made by :func:`times_of`, or ``tuple.__new__(Times, (layout, *codes))``."""

    __slots__ = ()

    @property
    def layout(self) -> dict[str, int]:
        """Each backend's place in the tuple, in order: one dict shared by the rows of the
        same backends (:func:`times_layout`)."""
        layout: dict[str, int] = _item(self, 0)
        return layout

    def __getitem__(self, backend: str) -> str:  # type: ignore[override]
        codes: str = _item(self, _item(self, 0)[backend])
        return codes

    def get(self, backend: str, default: str | None = None) -> str | None:
        at: int | None = _item(self, 0).get(backend)
        if at is None:
            return default
        codes: str = _item(self, at)
        return codes

    def __iter__(self) -> Iterator[str]:
        backends: Iterator[str] = iter(_item(self, 0))
        return backends

    def __len__(self) -> int:
        return len(_item(self, 0))

    def __contains__(self, backend: object) -> bool:
        return backend in _item(self, 0)

    def keys(self) -> KeysView[str]:
        keys: KeysView[str] = _item(self, 0).keys()
        return keys

    def values(self) -> tuple[str, ...]:
        codes: tuple[str, ...] = _item(self, _CODES)
        return codes

    def items(self) -> zip[tuple[str, str]]:
        return zip(self.layout, self.values(), strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Times({dict(self.items())!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return times_of, (dict(self.items()),)


def times_of(times: Mapping[str, str]) -> Mapping[str, str]:
    """``times`` (backend -> codes, in order) held as a :class:`Times` (:data:`NO_TIMES`
    when empty)."""
    if not times:
        return NO_TIMES
    backends = tuple(times)
    # One call a row, for merging: the layout looked up here, no cast() made.
    layout = _LAYOUTS.get(backends) or times_layout(backends)
    return tuple.__new__(Times, (layout, *times.values()))  # type: ignore[return-value]


Mapping.register(Times)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParseProblem:
    """Why a result file, or part of it, could not be read. Data, not an exception."""

    source: str
    message: str
    line: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """A failed test case, kept (a bounded number of them) for annotations on the run page."""

    test: str
    backend: str
    message: str
    result_file: str
    test_file: str = ""
    test_line: str = ""  # the case's line attribute, as written ("" when it has none)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileCounts:
    """Per-file tallies of test cases, as reported in ``--summary-json``."""

    path: str
    tests: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    flaky: int = 0
    problem: str | None = None
    # Test cases without a name (counted above, never recorded: an interrupted run).
    nameless: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Totals:
    """One update's tallies over every result file (the job summary, outputs and summary JSON)."""

    files: int = 0
    tests: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    flaky: int = 0
    problems: int = 0
    unassigned: int = 0


class RunKey(NamedTuple):
    """Orders results in time: GitHub run ids grow, then attempts, then job ids.

    Adopted cells whose run is unknown use ``-1`` so that any known run is newer. A NamedTuple:
    run keys are compared and hashed once per cell, and tuples do both in C.
    """

    run_id: int = -1
    run_attempt: int = -1
    job_id: int = -1


UNKNOWN_RUN = RunKey()


@dataclass(frozen=True, slots=True, kw_only=True)
class DashboardId:
    """A dashboard's identity: its key is ``category/title`` (or ``title`` alone)."""

    title: str
    category: str = ""

    @property
    def key(self) -> str:
        return f"{self.category}/{self.title}" if self.category else self.title


PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """The job that produced results: its place in run order, its URL and when it was recorded.

    ``time`` is an ISO-8601 UTC timestamp, or "" when unknown (adopted cells). Many cells share
    one source, so it is stored once per dashboard.

    Provenance, each empty when unknown (older states, adopted cells, local runs): ``sha`` the
    commit tested, ``event`` the workflow event (``push``, ``pull_request``, ``schedule``, ...),
    ``ref`` the git ref (``refs/heads/main``), and for a pull request its number ``pr`` and the
    ``base_sha`` it is compared with.

    ``env`` is the job's environment (results/environment.py: sorted ``(package, version)`` pairs,
    empty when not recorded).
    """

    run: RunKey
    url: str
    time: str = ""
    sha: str = ""
    event: str = ""
    ref: str = ""
    pr: int | None = None
    base_sha: str = ""
    env: tuple[tuple[str, str], ...] = ()

    @property
    def is_pull_request(self) -> bool:
        """Whether this job tested a pull request (its number is known, or its event says so)."""
        return self.pr is not None or self.event in PULL_REQUEST_EVENTS


class CaseCounts(NamedTuple):
    """How the test cases of one cell ended in one run (a row collapses a test's
    parametrizations, so a cell can hold many cases). The four are disjoint: ``passed`` does
    not include ``flaky`` (passed only after reruns); ``failed`` counts failures and errors.

    A NamedTuple: one is built per cell, tens of thousands per update, and most are equal.
    """

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    flaky: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped + self.flaky

    @property
    def partly_failing(self) -> bool:
        """Some cases failed and some did not (the compact style shows the counts then)."""
        return 0 < self.failed < self.total


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One recorded result of one cell: what a run found.

    ``counts`` are its cases (None when unknown: adopted cells, states written before
    version 2). A failing entry keeps the first line of its first failure's message
    (``message``, at most ``junit.MESSAGE_CAP`` characters) and that line's ``signature``
    (results/signature.py: a short hash of the line with what varies between runs and backends taken
    out, so that one error on several backends or tests has one signature); both are "" for
    the other outcomes and when the result file gave no message.

    Cells adopted from an existing table are read into this form too: a cell is always drawn
    from its outcome and link, never from text kept as it was.
    """

    source: Source
    outcome: Outcome
    counts: CaseCounts | None = None
    message: str = ""
    signature: str = ""

    @property
    def run(self) -> RunKey:
        return self.source.run


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """A cell's history, newest run first, at most ``history`` entries. ``entries[0]`` is shown."""

    entries: tuple[Entry, ...]

    @property
    def latest(self) -> Entry:
        return self.entries[0]


class Seen(NamedTuple):
    """Where a row or column first appeared: the run that first had it, then its position there."""

    run: RunKey
    seq: int


class Row(NamedTuple):
    """One test (row), its cells by backend name and their durations (``times``, by backend,
    only cells with some: the codes of state/durations.py, kept beside the cells because
    cells are shared by the rows alike and durations differ from row to row; a
    :class:`Times` where merging made them, a dict where a state was read). Rows of the same
    cells may hold one mapping of them (state/merge.py ``Made``): it is never changed in
    place, a change makes a new one.

    A NamedTuple: merging and loading build one per test, tens of thousands per dashboard.
    """

    name: str
    first_seen: Seen
    cells: Mapping[str, Cell]
    times: Mapping[str, str] = NO_TIMES


@dataclass(frozen=True, slots=True, kw_only=True)
class DashboardState:
    """One dashboard: its rows (tests), columns (backends) and every cell's history.

    ``rows`` and ``backends`` are kept sorted by first appearance, so the order does not depend
    on the order in which results were applied. ``runs`` holds the newest distinct run ids that
    touched the dashboard, newest first; the retirement policy counts them.
    """

    id: DashboardId
    backends: tuple[tuple[str, Seen], ...] = ()
    rows: tuple[Row, ...] = ()
    runs: tuple[int, ...] = ()

    @property
    def key(self) -> str:
        return self.id.key

    @property
    def backend_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.backends)


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendPoint:
    """One backend in one run, over every dashboard: its rows by that run's result, and
    ``missing``, the rows it has a cell in that the run brought no result for."""

    passed: int = 0
    failed: int = 0
    flaky: int = 0
    skipped: int = 0
    missing: int = 0

    @property
    def ran(self) -> int:
        """Rows with a result that says pass or fail (skipped and missing ones say neither)."""
        return self.passed + self.failed + self.flaky


@dataclass(frozen=True, slots=True, kw_only=True)
class Parity:
    """One run's rows that ran on every backend of their dashboard (``rows``), how many of
    them passed on all (``green``), and per backend how many failed there only."""

    rows: int = 0
    green: int = 0
    fails_only: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TrendPoint:
    """One completed default-branch run, summed over every dashboard of the store."""

    run: int
    sha: str = ""
    time: str = ""
    backends: tuple[tuple[str, BackendPoint], ...] = ()
    parity: Parity = Parity()


@dataclass(frozen=True, slots=True, kw_only=True)
class Trend:
    """A store's trend: one point per run, oldest first (state/trend.py keeps it)."""

    points: tuple[TrendPoint, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class FileRecord:
    """One result file as an update read it, and what reading it reported.

    ``backend`` is the file's own backend ("" when each test case names its own; then
    ``tallies`` has each backend's test cases, failed, errors and skipped). ``failures`` are
    those the reading kept for annotations; ``dashboards`` those its cells reached.
    """

    path: str
    size: int
    sha256: str
    backend: str = ""
    counts: FileCounts
    failures: tuple[Failure, ...] = ()
    tallies: tuple[tuple[str, tuple[int, int, int, int]], ...] = ()
    unassigned: int = 0
    nameless_line: int = 0
    ids_tried: int = 0
    unmatched_ids: tuple[str, ...] = ()
    dashboards: tuple[DashboardId, ...] = ()

    @property
    def identity(self) -> tuple[str, int, str]:
        """What a file must match to count as read before: path, size and SHA-256."""
        return (self.path, self.size, self.sha256)
