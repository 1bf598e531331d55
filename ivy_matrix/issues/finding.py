"""Finding our issues by their hidden marker, creating the missing ones, closing duplicates.

I/O, through :class:`~ivy_matrix.github.types.IssueAPI`: list the issues with the label
(``state=all``, all pages of 100, pull requests left out), create the label if missing, ``POST``
an issue (``GET`` it only when the answer shows another body), and (for a duplicate) ``POST`` a comment and ``PATCH`` its state and
labels. Every call needs ``permissions: issues: write``; a read-only token (fork or Dependabot
pull request) raises :class:`~ivy_matrix.errors.ReadOnlyTokenError`, which the update turns into
"step summary only". In: the label and the bodies to create; out: :class:`Found` (our issues per
dashboard key, and the index under :data:`INDEX_KEY`) and the issues created.

**Finding.** One listing per call; each body's first line is matched against the dashboard and
index markers (``issues/markers.py``).

**Creating.** A dashboard with no issue gets one (the label is created first if missing); a
body GitHub did not store as sent is written once more (``issues/requests.py``). A create POST is
never resent blindly: after a 5xx or a network error (the issue may exist anyway) the issues are
listed and one with the marker is taken before creating again, at most :data:`CREATE_TRIES`
times.

**Duplicates.** Two runs can both find nothing and both create, and a create POST retried after
a 5xx can land twice (PLATFORM.md 1.3); the lowest number is kept and the others are closed with
a comment pointing to it and lose the label (:meth:`Finder.close_duplicate`; which ones a
call closes is decided by :meth:`Finder.lost_races`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.types import Issue
from ivy_matrix.issues.markers import dashboard_key, is_index, shows_newer
from ivy_matrix.issues.report import IssueAction, Written
from ivy_matrix.issues.requests import ReadBack, Requests

# A listing is taken again before a write when this many writes went out since the last one:
# the revision a write is checked against is never older than that (see issues/publish.py).
RELIST_EVERY = 25
LABEL_COLOR = "0e8a16"
LABEL_DESCRIPTION = "Test dashboards kept up to date by ivy-matrix"
INDEX_KEY = "\0index"  # cannot collide with a dashboard key in the maps below
CREATE_TRIES = 4  # create POSTs per issue, each after listing finds it did not land


@dataclass(slots=True)
class Found:
    """Our issues in one listing: per dashboard key (and the index), lowest number first."""

    by_key: dict[str, list[Issue]] = field(default_factory=dict)


class Finder:
    """Listing, creating and closing whole issues of one label (with the writer's requests)."""

    def __init__(self, requests: Requests, readback: ReadBack, *, label: str) -> None:
        self.requests = requests
        self.readback = readback
        self.label = label
        self._label_ready = False  # the label is known to exist
        self._listed_at: int | None = None  # the writes made when the last listing was taken
        self.listed = Found()  # the last listing (the index issue is written from it)

    def find(self) -> Found:
        """List the labelled issues once and group ours by marker."""
        calls = self.requests
        self._listed_at = calls.writes
        found = Found()
        for issue in calls.client.list_issues(calls.repo, label=self.label):
            key = INDEX_KEY if is_index(issue.body) else dashboard_key(issue.body)
            if key is not None:
                found.by_key.setdefault(key, []).append(issue)
        for issues in found.by_key.values():
            issues.sort(key=lambda i: i.number)
        self.listed = found
        return found

    @property
    def label_ready(self) -> bool:
        """Whether the label is known to exist (creating an issue then costs no label)."""
        return self._label_ready

    @property
    def stale(self) -> bool:
        """Whether RELIST_EVERY writes (or more) went out since the last listing, or none was
        taken: a write should not trust the revisions it shows."""
        return self._listed_at is None or self.requests.writes - self._listed_at >= RELIST_EVERY

    def _ensure_label(self) -> None:
        if not self._label_ready:
            calls = self.requests
            if calls.client.ensure_label(
                calls.repo, self.label, color=LABEL_COLOR, description=LABEL_DESCRIPTION
            ):
                calls.writes += 1  # a content-creating request (the GET before it is not)
            self._label_ready = True

    def create(self, title: str, body: str, *, revision: int | None = None) -> Issue:
        """A new issue with our label, its body checked and rewritten once if it differs.

        The create's own answer carries the body GitHub stored (as an edit's does,
        ``requests.ReadBack.write_body``); only when it differs is the issue read again. With
        ``revision`` (the branch store's, of ``body``) a body found showing a newer one is left
        as it is: after a create answered 5xx the issue is found by listing, a moment later,
        and a newer job may have written it meanwhile (and checked it for the last time).
        """
        calls = self.requests
        self._ensure_label()
        issue = self._post_issue(title, body)
        calls.log.info(f"created issue #{issue.number} ({title})")
        if issue.body == body:
            return issue
        back = calls.client.get_issue(calls.repo, issue.number)
        if back.body == body or shows_newer(back.body, revision):
            return back
        return self.readback.write_body(back, body, revision=revision)[0]

    def _post_issue(self, title: str, body: str) -> Issue:
        """POST the issue; after an answer that leaves it unknown whether it landed, list the
        issues and take ours if it is there, else POST again (at most ``CREATE_TRIES``)."""
        calls = self.requests
        key = INDEX_KEY if is_index(body) else dashboard_key(body)
        tries = 0
        while True:
            calls.pace()
            try:
                return calls.client.create_issue(
                    calls.repo, title=title, body=body, labels=[self.label]
                )
            except GitHubAPIError as error:
                tries += 1
                unsure = error.status is None or 500 <= error.status <= 599  # noqa: PLR2004
                if not unsure or tries >= CREATE_TRIES:
                    raise
                calls.log.info(f"creating {title!r}: {error}; looking for it before trying again")
            calls.sleep(min(2.0**tries, 30.0))
            landed = self.find().by_key.get(key) if key is not None else None
            if landed:
                calls.log.info(f"issue #{landed[0].number} ({title}) was created after all")
                return landed[0]

    def close_duplicate(self, duplicate: Issue, keep: Issue) -> bool:
        """Close a second issue of one dashboard, pointing to the kept one; True if written."""
        calls = self.requests
        has_label = self.label.lower() in (name.lower() for name in duplicate.labels)
        if duplicate.state == "closed" and not has_label:
            return False
        labels = [name for name in duplicate.labels if name.lower() != self.label.lower()]
        if calls.dry_run:
            calls.plan("PATCH", f"issue #{duplicate.number} (close as duplicate of #{keep.number})")
            return True
        if duplicate.state != "closed":
            calls.pace()
            calls.client.create_issue_comment(
                calls.repo,
                duplicate.number,
                f"Duplicate of #{keep.number}: ivy-matrix keeps one issue per dashboard "
                f"(two jobs created one at the same time) and closed this one.",
            )
        calls.pace()
        calls.client.update_issue(
            calls.repo, duplicate.number, state="closed", state_reason="not_planned", labels=labels
        )
        calls.log.info(f"closed issue #{duplicate.number}, a duplicate of #{keep.number}")
        return True

    def lost_races(self, written: Mapping[str, Written]) -> dict[str, tuple[Issue, Issue]]:
        """List again after creating; per created key whose new issue is not the lowest
        numbered one of its dashboard: (the lowest, ours as listed now).

        Each job closes only the issue it created itself (the other creators close theirs); a
        create that GitHub applied twice (a POST retried after a 5xx) leaves the second,
        returned copy as "ours", so it is the one closed.
        """
        created = {
            key: w.issue
            for key, w in written.items()
            if w.result.action is IssueAction.CREATED and w.issue is not None
        }
        if not created:
            return {}
        again = self.find()
        lost: dict[str, tuple[Issue, Issue]] = {}
        for key, mine in created.items():
            issues = again.by_key.get(key, [])
            listed = next((i for i in issues if i.number == mine.number), mine)
            if issues and issues[0].number != mine.number:
                lost[key] = (issues[0], listed)
        return lost
