"""The runner's event payload: what it says about a pull request and the default branch.

Pure: :func:`parse_event` reads a payload already decoded from JSON; config/settings.py reads the
file the runner names in ``GITHUB_EVENT_PATH`` once (``config.settings.read_event``) and hands it
here. Nothing else reads the payload: what the commands need of it is in ``Settings``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ivy_matrix.model import PULL_REQUEST_EVENTS


@dataclass(frozen=True, slots=True, kw_only=True)
class EventInfo:
    """What the runner's event payload says about a pull request and the default branch."""

    pull_request: bool = False
    pr: int | None = None
    head_sha: str | None = None
    base_sha: str | None = None
    default_branch: str | None = None
    head_label: str | None = None
    # A pull_request event from a fork: GitHub gives such runs a read-only token.
    from_fork: bool = False
    # A merge queue's merge_group event: pull requests on top of the base, with no number.
    merge_group: bool = False


def _field(data: object, *path: str | int) -> object:
    for key in path:
        if isinstance(key, int):
            data = data[key] if isinstance(data, list) and len(data) > key else None
        else:
            data = data.get(key) if isinstance(data, dict) else None
    return data


def _text(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def parse_event(payload: object, event_name: str | None) -> EventInfo:
    """The pull request (number, head and base commits) and default branch of the event.

    ``pull_request``/``pull_request_target``: the payload's ``pull_request`` (its head sha, not
    GITHUB_SHA, which is a merge commit); ``workflow_run`` of a pull request's workflow:
    GitHub's ``workflow_run.pull_requests[0]`` and ``head_sha`` (never an artifact's), and
    the head's ``owner:branch`` (``head_repository.owner.login``, ``head_branch``), by which
    the pull request is looked up when ``pull_requests`` is empty (GitHub leaves it empty for
    pull requests from forks). ``pull_request`` (not ``pull_request_target``, which runs in the
    base repository with its token) from a fork: ``from_fork``, the head repository being
    marked a fork or named differently from the base. ``merge_group`` (a merge queue): the
    group's ``head_sha`` and ``base_sha``, results of no one pull request (no number). A payload
    of any other shape says nothing it does not hold.
    """
    default_branch = _text(_field(payload, "repository", "default_branch"))
    if event_name in PULL_REQUEST_EVENTS:
        number = _field(payload, "pull_request", "number")
        return EventInfo(
            pull_request=True,
            pr=number if isinstance(number, int) and not isinstance(number, bool) else None,
            head_sha=_text(_field(payload, "pull_request", "head", "sha")),
            base_sha=_text(_field(payload, "pull_request", "base", "sha")),
            default_branch=default_branch,
            from_fork=event_name == "pull_request" and _from_fork(payload),
        )
    if event_name == "workflow_run" and _field(payload, "workflow_run", "event") in (
        PULL_REQUEST_EVENTS
    ):
        number = _field(payload, "workflow_run", "pull_requests", 0, "number")
        owner = _text(_field(payload, "workflow_run", "head_repository", "owner", "login"))
        branch = _text(_field(payload, "workflow_run", "head_branch"))
        return EventInfo(
            pull_request=True,
            pr=number if isinstance(number, int) and not isinstance(number, bool) else None,
            head_sha=_text(_field(payload, "workflow_run", "head_sha")),
            base_sha=_text(_field(payload, "workflow_run", "pull_requests", 0, "base", "sha")),
            default_branch=default_branch,
            head_label=f"{owner}:{branch}" if owner and branch else None,
        )
    if event_name == "merge_group":
        return EventInfo(
            pull_request=True,
            merge_group=True,
            head_sha=_text(_field(payload, "merge_group", "head_sha")),
            base_sha=_text(_field(payload, "merge_group", "base_sha")),
            default_branch=default_branch,
        )
    return EventInfo(default_branch=default_branch)


def _from_fork(payload: object) -> bool:
    """Whether the pull request's head is in another repository than its base."""
    head = _field(payload, "pull_request", "head", "repo")
    base = _field(payload, "pull_request", "base", "repo")
    name = _field(head, "full_name")
    return bool(_field(head, "fork")) or (bool(name) and name != _field(base, "full_name"))
