"""The commit-status calls: read a commit's statuses, set one.

I/O through :class:`~ivy_matrix.github.http.Transport` (no PyGithub here); the calls of
``pr.status_writer.StatusAPI``. Both need ``statuses: write`` in the end (the status target
writes), so that is the permission 403/404 messages name.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from ivy_matrix.github.http import STATUSES_WRITE, Transport, bind, repo_path
from ivy_matrix.github.types import CommitStatus

# Contexts read of a commit's combined status: one page, GitHub's largest. A commit with more
# contexts than this may have ours on a later page: they are then written again, never lost.
STATUSES_READ = 100


class StatusCalls(Transport):
    """The commit-status calls of :class:`~ivy_matrix.github.client.GitHubClient`."""

    def get_combined_status(self, repo: str, ref: str) -> list[CommitStatus]:
        """The newest status of each context on ``ref`` (a commit sha), one page of
        STATUSES_READ: ``GET /repos/{owner}/{repo}/commits/{ref}/status?per_page=100``."""
        url = f"{repo_path(repo)}/commits/{urllib.parse.quote(ref, safe='')}/status"
        what = f"reading the commit statuses of {ref[:12]} in {repo}"
        params = {"per_page": STATUSES_READ}
        _, data = self._call(what, STATUSES_WRITE, bind(self._json, "GET", url, params))
        found = data.get("statuses") if isinstance(data, dict) else None
        return [status_from_json(item) for item in found or [] if isinstance(item, dict)]

    def create_commit_status(self, repo: str, sha: str, status: CommitStatus) -> CommitStatus:
        """Set ``status`` on commit ``sha`` (``POST /repos/{owner}/{repo}/statuses/{sha}``): a
        content-creating request. Sent again after a 5xx: a second copy of one status changes
        nothing a reader sees (GitHub shows the newest of each context)."""
        url = f"{repo_path(repo)}/statuses/{urllib.parse.quote(sha, safe='')}"
        body = {
            "state": status.state,
            "context": status.context,
            "description": status.description,
            "target_url": status.target_url or None,
        }
        what = f"setting the commit status {status.context!r} of {sha[:12]} in {repo}"
        _, data = self._call(what, STATUSES_WRITE, bind(self._json, "POST", url, None, body))
        return status_from_json(data)


def status_from_json(item: Any) -> CommitStatus:
    return CommitStatus(
        context=str(item.get("context") or ""),
        state=str(item.get("state") or ""),
        description=str(item.get("description") or ""),
        target_url=str(item.get("target_url") or ""),
    )
