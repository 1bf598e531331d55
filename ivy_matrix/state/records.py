"""The records inside a state document: sources, failure lines and cell histories.

Pure: no I/O. Both layouts of the state document use them (statefile.py, one table for the
whole dashboard; columnar.py, one per column): :class:`Tables` lists each source, failure line
and history once while a document is written; the ``read_*`` functions read them back,
checking each value's type, so that a hand-edited document is refused with a message, never
half read. The forms are documented in statefile.py's docstring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ivy_matrix.jsonshape import MalformedError, expect_int, expect_list, expect_str
from ivy_matrix.model import (
    UNKNOWN_RUN,
    CaseCounts,
    Cell,
    DashboardId,
    Entry,
    Outcome,
    RunKey,
    Seen,
    Source,
)
from ivy_matrix.results.environment import env_of
from ivy_matrix.results.junit import MESSAGE_CAP, cap_name

# The "format" of every state document, whichever version or layout.
FORMAT = "ivy-matrix-dashboard"
OUTCOMES = {o.value: o for o in Outcome}
_SOURCE_ITEMS = 5  # run id, attempt, job id, URL, time; then the optional provenance


def read_name(value: object) -> str:
    """A row or backend name, capped as the JUnit reader caps names (``cap_name``): a state
    file is text anyone with write access to the store can edit, and a name a megabyte long
    would be copied into every line of its table. (Titles are not: ``--dashboard`` may give
    any, and the stores check them against the file's path.)"""
    return cap_name(expect_str(value))


def read_run(value: object) -> RunKey:
    run_id, attempt, job_id = expect_list(value)
    return RunKey(expect_int(run_id), expect_int(attempt), expect_int(job_id))


def read_head(document: Mapping[str, object]) -> tuple[DashboardId, tuple[tuple[str, Seen], ...]]:
    """A document's dashboard and its backends, each with where it first appeared."""
    backends = []
    for item in expect_list(document["backends"]):
        name, first_run, seq = expect_list(item)
        backends.append((read_name(name), Seen(read_run(first_run), expect_int(seq))))
    dashboard = DashboardId(
        title=expect_str(document["title"]), category=expect_str(document["category"])
    )
    return dashboard, tuple(backends)


def read_runs(document: Mapping[str, object]) -> tuple[int, ...]:
    """The run ids a document says touched its dashboard, newest first."""
    return tuple(expect_int(r) for r in expect_list(document["runs"]))


def _provenance(source: Source) -> dict[str, object]:
    """The known provenance fields of a source (empty when none is known)."""
    fields: dict[str, object] = {
        "sha": source.sha,
        "event": source.event,
        "ref": source.ref,
        "pr": source.pr,
        "base_sha": source.base_sha,
    }
    found = {name: value for name, value in fields.items() if value not in {"", None}}
    if source.env:
        found["env"] = dict(source.env)
    return found


def read_source(item: object) -> Source:
    values = expect_list(item)
    if len(values) not in {_SOURCE_ITEMS, _SOURCE_ITEMS + 1}:
        raise MalformedError(f"expected a source of 5 or 6 items, got {len(values)}")
    run_id, attempt, job_id, url, time = values[:_SOURCE_ITEMS]
    provenance = values[_SOURCE_ITEMS] if len(values) > _SOURCE_ITEMS else {}
    if not isinstance(provenance, dict):
        raise MalformedError(f"expected an object of provenance, got {provenance!r:.60}")
    pr = provenance.get("pr")
    run = RunKey(expect_int(run_id), expect_int(attempt), expect_int(job_id))
    if run.run_attempt == 0:
        # Attempts start at 1: attempt 0 is a cell adopted by an older ivy-matrix, which took
        # its place in run order from its link. Adopted cells are older than any run now
        # (readback.py), so that no link can pin its cell against later results.
        run = UNKNOWN_RUN
    return Source(
        run=run,
        url=expect_str(url),
        time=expect_str(time),
        sha=expect_str(provenance.get("sha", "")),
        event=expect_str(provenance.get("event", "")),
        ref=expect_str(provenance.get("ref", "")),
        pr=None if pr is None else expect_int(pr),
        base_sha=expect_str(provenance.get("base_sha", "")),
        env=env_of(provenance.get("env")),
    )


_new_tuple = tuple.__new__  # CaseCounts' own __new__ is a Python function


def _counts(value: object) -> CaseCounts | None:
    if value is None:
        return None
    if type(value) is list and len(value) == 4:  # noqa: PLR2004  -- the four counts
        a, b, c, d = value
        if type(a) is type(b) is type(c) is type(d) is int:
            return _new_tuple(CaseCounts, value)  # the usual record, checked: made in C
    numbers = expect_list(value)
    if len(numbers) != len(CaseCounts._fields):
        raise MalformedError(f"expected 4 case counts, got {value!r:.60}")
    return CaseCounts(*(expect_int(n) for n in numbers))


def read_message(value: object) -> tuple[str, str]:
    text, signature = expect_list(value)
    # Cut as the JUnit reader cuts failure messages (a hand edit can make one any size).
    return expect_str(text)[:MESSAGE_CAP], expect_str(signature)


def read_cell(
    history: object,
    sources: Sequence[Source],
    messages: Sequence[tuple[str, str]],
    version: int,
    made: dict[tuple[object, ...], Entry] | None = None,
) -> Cell:
    """One cell history: ``[source index, outcome, counts?, message index?]`` per result.

    ``made``: the entries already read from this document's table, by their record: histories
    share results (a job's pass is in many of them), and one entry each is read once and
    shared, as merging made them.
    """
    entries = []
    known = made.get if made is not None else None
    for record in expect_list(history):
        values = record if type(record) is list else expect_list(record)
        if len(values) == 3 and type(values[2]) is list:  # noqa: PLR2004  -- the usual record: source, outcome, counts
            key: tuple[object, ...] = (values[0], values[1], tuple(values[2]))
        else:
            key = tuple([tuple(v) if isinstance(v, list) else v for v in values])
        found = None if known is None else known(key)
        if found is None:
            found = _entry(values, sources, messages, version)
            if made is not None:
                made[key] = found
        entries.append(found)
    if not entries:
        raise MalformedError("a cell with no results")
    return Cell(entries=tuple(entries))


def _entry(
    values: list[object],
    sources: Sequence[Source],
    messages: Sequence[tuple[str, str]],
    version: int,
) -> Entry:
    """One result of a history, checked."""
    index = expect_int(values[0])
    if not 0 <= index < len(sources):
        raise MalformedError(f"source index {index} out of range")
    outcome = OUTCOMES[expect_str(values[1])]
    if version < 2:  # noqa: PLR2004  -- the version that added counts and messages
        # Older versions kept an adopted cell's text as a third item: it is not used any
        # more, so that no adopted markdown is ever drawn again as it was.
        return Entry(source=sources[index], outcome=outcome)
    counts = _counts(values[2]) if len(values) > 2 else None  # noqa: PLR2004  -- optional
    message, signature = "", ""
    if len(values) > 3:  # noqa: PLR2004  -- the optional message index
        position = expect_int(values[3])
        if not 0 <= position < len(messages):
            raise MalformedError(f"message index {position} out of range")
        message, signature = messages[position]
    return Entry(
        source=sources[index],
        outcome=outcome,
        counts=counts,
        message=message,
        signature=signature,
    )


class Tables:
    """The tables a document lists each source, failure line and cell history in, once.

    Found by identity first (many cells share one source or one history object), then by
    value, so that equal states give the same text however their cells are shared.
    """

    def __init__(self) -> None:
        self.sources: list[list[object]] = []
        self._source_index: dict[Source, int] = {}
        self._source_by_identity: dict[int, int] = {}
        self._message_index: dict[tuple[str, str], int] = {}
        self.histories: list[tuple[tuple[object, ...], ...]] = []
        self._history_index: dict[tuple[tuple[object, ...], ...], int] = {}
        self._history_by_identity: dict[int, int] = {}
        # Cells share entries (one per job and result): each is written once.
        self._result_by_identity: dict[int, tuple[object, ...]] = {}

    @property
    def messages(self) -> list[list[str]]:
        return [[text, signature] for text, signature in self._message_index]

    def source(self, source: Source) -> int:
        found = self._source_by_identity.get(id(source))
        if found is None:
            found = self._source_index.get(source)
            if found is None:
                found = self._source_index[source] = len(self.sources)
                # RunKey is a tuple: run id, run attempt, job id.
                record: list[object] = [*source.run, source.url, source.time]
                provenance = _provenance(source)
                self.sources.append([*record, provenance] if provenance else record)
            self._source_by_identity[id(source)] = found
        return found

    def _result(self, entry: Entry) -> tuple[object, ...]:
        found = self._result_by_identity.get(id(entry))
        if found is None:
            found = self._result_by_identity[id(entry)] = self._encode(entry)
        return found

    def _encode(self, entry: Entry) -> tuple[object, ...]:
        head = (self.source(entry.source), entry.outcome.value)
        counts = entry.counts  # a tuple: json writes it as a list
        if entry.message or entry.signature:
            key = (entry.message, entry.signature)
            found = self._message_index.get(key)
            if found is None:
                found = self._message_index[key] = len(self._message_index)
            return (*head, counts, found)
        return head if counts is None else (*head, counts)

    def history(self, cell: Cell) -> int:
        """The index of ``cell``'s history in :attr:`histories` (added when new)."""
        found = self._history_by_identity.get(id(cell))
        if found is None:
            history = tuple(self._result(e) for e in cell.entries)
            found = self._history_index.get(history)
            if found is None:
                found = self._history_index[history] = len(self.histories)
                self.histories.append(history)
            self._history_by_identity[id(cell)] = found
        return found
