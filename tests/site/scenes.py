"""Dashboard states and stores for the site's tests, built from outcomes written out in full.

``dashboard(rows)`` builds a state directly: each row maps a backend to its outcomes, newest
run first, one run per outcome (run 100, 99, ...), each result from the job of that run and
backend. ``write_store`` saves states into a local store the commands read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ivy_matrix.model import (
    Cell,
    DashboardId,
    DashboardState,
    Entry,
    Outcome,
    Row,
    RunKey,
    Seen,
    Source,
)
from ivy_matrix.stores.local import LocalStore

S, F, K, Y = Outcome.SUCCESS, Outcome.FAILURE, Outcome.SKIPPED, Outcome.FLAKY
NEWEST = 100
BACKEND_NUMBER = {"torch": 1, "numpy": 2, "jax": 3, "tensorflow": 4}
HOSTILE = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "test_\u202eevil\u202c_name",
)

# Sources are shared by every cell of a run and backend, as update makes them.
_SOURCES: dict[tuple[int, str], Source] = {}


def source(run: int, backend: str) -> Source:
    """The job of ``run`` that ran ``backend``: a fixed URL, commit, time and environment
    (jax moves from 0.4.30 to 0.4.31 in the newest run, numpy stays)."""
    key = (run, backend)
    if key not in _SOURCES:
        job = run * 10 + BACKEND_NUMBER.get(backend, 9)
        _SOURCES[key] = Source(
            run=RunKey(run, 1, job),
            url=f"https://github.com/o/r/actions/runs/{run}/job/{job}",
            time=f"2026-11-{run % 28 + 1:02d}T10:00:00Z",
            sha=f"{run:04d}" + "abcdef0123456789" * 2 + "abcd",
            event="push",
            ref="refs/heads/main",
            env=(("jax", "0.4.31" if run >= NEWEST else "0.4.30"), ("numpy", "2.1.0")),
        )
    return _SOURCES[key]


def cell(backend: str, outcomes: Sequence[Outcome], newest: int = NEWEST) -> Cell:
    """A cell whose results are ``outcomes``, newest first, of runs ``newest``, newest - 1..."""
    return Cell(
        entries=tuple(
            Entry(source=source(newest - i, backend), outcome=outcome)
            for i, outcome in enumerate(outcomes)
        )
    )


def dashboard(
    title: str,
    rows: Mapping[str, Mapping[str, Sequence[Outcome]]],
    *,
    category: str = "core",
    newest: Mapping[str, int] | None = None,
) -> DashboardState:
    """A dashboard of ``rows`` (test -> backend -> outcomes, newest first); ``newest`` gives a
    row's newest run when it is not ``NEWEST`` (a test that stopped running)."""
    backends: dict[str, None] = {}
    for cells in rows.values():
        backends.update(dict.fromkeys(cells))
    first = Seen(RunKey(1, 1, 1), 0)
    built = tuple(
        Row(
            name=name,
            first_seen=Seen(RunKey(1, 1, 1), i),
            cells={
                b: cell(b, outcomes, (newest or {}).get(name, NEWEST))
                for b, outcomes in cells.items()
            },
        )
        for i, (name, cells) in enumerate(rows.items())
    )
    runs = sorted(
        {e.run.run_id for row in built for c in row.cells.values() for e in c.entries},
        reverse=True,
    )
    return DashboardState(
        id=DashboardId(title=title, category=category),
        backends=tuple((b, Seen(first.run, i)) for i, b in enumerate(backends)),
        rows=built,
        runs=tuple(runs),
    )


def sample_states() -> list[DashboardState]:
    """Two dashboards covering every status, attention group and a hostile name of each kind."""
    gradients = dashboard(
        "gradients",
        {
            "test_green": {"torch": [S, S, S], "numpy": [S, S, S], "jax": [S, S, S]},
            "test_new": {"torch": [F, S, S], "numpy": [S, S, S], "jax": [F, S, S]},
            "test_failing": {"torch": [F, F, F, S], "numpy": [S, S, S], "jax": [S]},
            "test_flips": {"torch": [F, S, F, S], "numpy": [S, S, S]},
            "test_rerun": {"torch": [Y, S, S], "numpy": [S, S, S], "jax": [S, S, S]},
            "test_fixed": {"torch": [S, F, F], "numpy": [S, S, S], "jax": [S, S, S]},
            "test_skipped": {"torch": [K, K, K], "numpy": [K, K], "jax": [K]},
            HOSTILE[0]: {"torch": [F, F], "numpy": [S, S], "jax": [S, S]},
            HOSTILE[1]: {"torch": [S, S], "numpy": [S, S], "jax": [F, S]},
            HOSTILE[2]: {"torch": [S], "numpy": [F, F, F], "jax": [S]},
        },
    )
    layers = dashboard(
        "layers",
        {
            "test_dense": {"torch": [S] * 6, "numpy": [S] * 6},
            "test_gone": {"torch": [S, S], "numpy": [F, F]},
        },
        category="nn",
        newest={"test_gone": NEWEST - 6},
    )
    return [gradients, layers]


def write_store(folder: Path, states: Sequence[DashboardState]) -> Path:
    """A local store at ``folder`` holding ``states``; returns ``folder``."""
    store = LocalStore(folder)
    for state in states:
        store.save(state)
    return folder
