"""The status target's writer: the commit statuses of a pull request, set where they differ.

I/O through :class:`StatusAPI` (``github/statuses.py``; ``github.client.GitHubClient`` and the
test doubles implement it). It reads the commit's combined status once (one request, not
content-creating), then sets only the statuses whose state, description or target URL differ
from what the commit shows: at most one content-creating request per status (a backend's,
and the aggregate's), and none at all when a run finds what an earlier one set (an identical
re-run writes nothing). The backends' statuses are set before the aggregate.

Nothing here ends the run: the statuses are for branch protection, and the run's other targets
publish whatever becomes of them. A token that may not set statuses (403: no ``statuses:
write``, or a read-only token) is one warning that names the permission, and nothing more is
sent; another failure to set one status is a warning naming it (the commit keeps the status it
had), and the others are still set. If the read fails otherwise, every status is set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.types import CommitStatus
from ivy_matrix.runner.log import Log

# Answers that say the token may not read or set statuses here (401: refused; 403: no
# 'statuses: write', or read-only; 404: a private repository hides what the token cannot see).
_NOT_ALLOWED = frozenset({401, 403, 404})


class StatusAPI(Protocol):
    """The commit-status calls of ``github.client.GitHubClient`` that the status target makes."""

    def get_combined_status(self, repo: str, ref: str) -> list[CommitStatus]: ...

    def create_commit_status(self, repo: str, sha: str, status: CommitStatus) -> CommitStatus: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusesSet:
    """What became of each status (by context): set, already so, or not set."""

    written: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


def _same(shown: CommitStatus | None, wanted: CommitStatus) -> bool:
    """Whether the commit already shows ``wanted`` (GitHub's empty fields are "")."""
    return shown is not None and (shown.state, shown.description, shown.target_url) == (
        wanted.state,
        wanted.description,
        wanted.target_url,
    )


def write_statuses(
    api: StatusAPI, repo: str, sha: str, wanted: Sequence[CommitStatus], log: Log
) -> StatusesSet:
    """Set ``wanted`` on commit ``sha`` of ``repo`` where the commit shows otherwise."""
    contexts = tuple(status.context for status in wanted)
    try:
        shown = {status.context: status for status in api.get_combined_status(repo, sha)}
    except GitHubAPIError as error:
        if error.status in _NOT_ALLOWED:
            _not_allowed(log, error)
            return StatusesSet(failed=contexts)
        log.warning(f"cannot read the commit statuses of {sha[:12]} ({error}); setting each one")
        shown = {}
    written: list[str] = []
    unchanged: list[str] = []
    failed: list[str] = []
    for index, status in enumerate(wanted):
        if _same(shown.get(status.context), status):
            unchanged.append(status.context)
            continue
        try:
            api.create_commit_status(repo, sha, status)
        except GitHubAPIError as error:
            if error.status in _NOT_ALLOWED:
                _not_allowed(log, error)
                failed.extend(contexts[index:])
                break
            log.warning(
                f"the commit status {status.context} of {sha[:12]} was not set ({error}); the "
                f"commit keeps the status it had"
            )
            failed.append(status.context)
            continue
        written.append(status.context)
        log.info(f"commit status {status.context}: {status.state} ({status.description})")
    return StatusesSet(written=tuple(written), unchanged=tuple(unchanged), failed=tuple(failed))


def _not_allowed(log: Log, error: GitHubAPIError) -> None:
    log.warning(
        f"the status target set no commit status (it needs 'permissions: statuses: write'): "
        f"{error}; the run's other targets still publish",
        title="ivy-matrix statuses",
    )
