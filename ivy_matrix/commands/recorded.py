"""Which result files the local store holds already, and what an update tells it it brings.

I/O: reads the local store's ledger (ledger.py, stores/local.py) and the output folder's
record (targets/files.py). The steps of ``update`` that let a re-run that finds nothing new do
almost nothing:

1. :func:`reading_of`: the digest of the settings that shape what reading a file gives (the
   run, attempt, job and link, the naming and backend rules, ...). None when a reading cannot
   be repeated: local runs number themselves, a job found by listing the run's jobs may be
   another one, a fan-in job's leg files bring cells of their own, and only the local store
   keeps a ledger.
2. :func:`known_files`: the files the ledger recorded under that reading, and the store's
   revision; commands/reading.py reads none of those again. None at all when the store's data
   files are not as the ledger recorded them (a restored backup, a deleted state): the ledger
   alone proves nothing, and the store checks again under its lock (stores/local.py).
3. :func:`inputs_of`: what the update brings (ledger.Inputs): the records of the files it
   read, and whether it brings nothing new at all, which lets the store skip reading its states
   when nothing else needs them (the summary JSON and the job summary do) and the output
   folder shows that revision.
"""

from __future__ import annotations

from collections.abc import Mapping

from ivy_matrix.commands.choose_store import REMOTE, pages_record
from ivy_matrix.config.options import Target
from ivy_matrix.config.settings import Settings
from ivy_matrix.model import FileRecord
from ivy_matrix.results.cells import Collected
from ivy_matrix.state.ledger import Inputs, reading_digest
from ivy_matrix.stores.local import LocalStore
from ivy_matrix.targets.files import shows

Identity = tuple[str, int, str]


def reading_of(settings: Settings) -> str | None:
    """The update's reading (module docstring), or None when it cannot be repeated."""
    local = not (REMOTE & set(settings.targets)) or settings.read_only
    listed = settings.job_url is None and settings.job_id is None and bool(settings.token)
    if not local or settings.run_id is None or listed or not settings.feeds_dashboards:
        return None
    if settings.legs:
        return None  # a fan-in job's leg files bring cells of their own (legs.py)
    fields: list[tuple[str, object]] = [
        ("run_id", settings.run_id),
        ("run_attempt", settings.run_attempt),
        ("job_id", settings.job_id),
        ("job_url", settings.job_url),
        ("repository", settings.repository),
        ("server_url", settings.server_url),
        ("backend", settings.backend),
        ("backend_from_path", settings.backend_from_path),
        ("backend_from_test", settings.backend_from_test),
        ("dashboard", settings.dashboard),
        ("dashboard_rules", settings.dashboard_rules),
        ("backend_aliases", settings.backend_aliases),
        ("history", settings.history),
        ("retire_after_runs", settings.retire_after_runs),
        ("commit", settings.commit),
        ("ref", settings.ref),
        ("event", settings.event_name),
    ]
    if settings.backend_version:
        # Names the columns; added only when set, so that ledgers written before keep theirs.
        fields.append(("backend_version", settings.backend_version))
    return reading_digest(fields)


def known_files(
    settings: Settings, reading: str | None
) -> tuple[Mapping[Identity, FileRecord], str | None]:
    """The files the store's ledger holds under ``reading``, and the store's revision."""
    if reading is None:
        return {}, None
    ledger, revision = LocalStore(settings.store).ledger()
    return ledger.recorded(reading), revision


def inputs_of(
    settings: Settings, collected: Collected, reading: str | None, revision: str | None
) -> Inputs | None:
    """What the update brings, for the store's ledger (None: no reading to record)."""
    if reading is None:
        return None
    nothing_new = (
        revision is not None
        and len(collected.kept) == len(collected.files) > 0
        and settings.summary_json is None
        and settings.step_summary is None
        and _output_shows(settings, revision)
    )
    return Inputs(
        reading=reading,
        files=tuple(collected.records),
        kept=tuple(collected.kept),
        nothing_new=nothing_new,
        revision=revision or "",
        touched=tuple(collected.touched),
    )


def _output_shows(settings: Settings, revision: str) -> bool:
    """Whether the output folder (if the update writes one) shows the store's revision."""
    record = pages_record(settings)
    if Target.FILE not in settings.targets or settings.output_dir is None:
        return True
    return record is not None and shows(record, settings.output_dir, revision, settings.style)
