"""Tests for config/event.py: what the runner's event payload says, read once by the settings."""

from __future__ import annotations

import json

import pytest

from ivy_matrix.config.event import parse_event
from ivy_matrix.config.settings import load_settings, read_event

REPO = "acme/widgets"


@pytest.mark.parametrize(
    ("event_name", "payload", "expected"),
    [
        (
            "pull_request_target",
            {"pull_request": {"number": 3, "head": {"sha": "h"}, "base": {"sha": "b"}}},
            (True, 3, "h", "b"),
        ),
        (
            "workflow_run",
            {"workflow_run": {"event": "pull_request", "head_sha": "h", "pull_requests": []}},
            (True, None, "h", None),
        ),
        (
            "workflow_run",
            {"workflow_run": {"event": "push", "head_sha": "h"}},
            (False, None, None, None),
        ),
        ("pull_request", ["not", "an", "object"], (True, None, None, None)),
    ],
)
def test_the_event_says_whether_results_are_a_pull_requests(
    tmp_path, event_name, payload, expected
):
    """The event payload gives the pull request, its head and base; anything else says nothing."""
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    event = read_event(path, event_name)
    assert (event.pull_request, event.pr, event.head_sha, event.base_sha) == expected


def pull_request(head: dict[str, object], base: dict[str, object]) -> dict[str, object]:
    """A pull_request payload whose head and base repositories are ``head`` and ``base``."""
    return {"pull_request": {"number": 7, "head": {"repo": head}, "base": {"repo": base}}}


@pytest.mark.parametrize(
    ("event_name", "payload", "expected"),
    [
        ("pull_request", pull_request({"full_name": REPO}, {"full_name": REPO}), False),
        ("pull_request", pull_request({"full_name": "x/widgets"}, {"full_name": REPO}), True),
        ("pull_request", pull_request({"full_name": REPO, "fork": True}, {}), True),
        ("pull_request", pull_request({}, {"full_name": REPO}), False),
        ("pull_request", {"pull_request": {"head": "not an object"}}, False),
        ("pull_request_target", pull_request({"full_name": "x/widgets", "fork": True}, {}), False),
        ("push", pull_request({"full_name": "x/widgets", "fork": True}, {}), False),
    ],
    ids=["same-repo", "other-repo", "marked-fork", "no-head-name", "bad-head", "target", "push"],
)
def test_a_pull_request_from_a_fork_is_told_by_its_head_repository(event_name, payload, expected):
    """A pull_request event whose head repository is a fork, or another one, is from a fork."""
    assert parse_event(payload, event_name).from_fork is expected


@pytest.mark.parametrize(
    ("event_name", "payload", "actor", "expected"),
    [
        ("pull_request", pull_request({"full_name": "x/widgets"}, {"full_name": REPO}), "", True),
        ("pull_request", pull_request({"full_name": REPO}, {"full_name": REPO}), "", False),
        ("push", {}, "dependabot[bot]", True),
        ("push", {}, "octocat", False),
    ],
    ids=["fork", "same-repo", "dependabot", "user"],
)
def test_the_settings_say_whether_the_token_is_read_only(
    tmp_path, event_name, payload, actor, expected
):
    """A fork's pull request, and any run Dependabot starts, get a read-only token."""
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    env = {"GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(path), "GITHUB_ACTOR": actor}

    assert load_settings({}, env).read_only is expected


def test_an_unreadable_event_file_says_nothing(tmp_path):
    """A missing or malformed event file is no pull request and no read-only token."""
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    for path in (broken, tmp_path / "missing.json"):
        env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(path)}
        settings = load_settings({}, env)
        assert (settings.pull_request, settings.read_only) == (False, False)


def test_a_merge_group_is_compared_like_a_pull_request_with_no_number(tmp_path):
    """merge_group: its head and base commits, results of no one pull request (never recorded
    into the dashboards), and its head is the commit the statuses go on."""
    group = {
        "head_sha": "groupsha",
        "head_ref": "refs/heads/gh-readonly-queue/main/pr-7-abc",
        "base_sha": "basesha",
        "base_ref": "refs/heads/main",
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"merge_group": group}), encoding="utf-8")
    event = read_event(path, "merge_group")
    assert (event.pull_request, event.merge_group, event.pr) == (True, True, None)
    assert (event.head_sha, event.base_sha) == ("groupsha", "basesha")
    env = {"GITHUB_EVENT_NAME": "merge_group", "GITHUB_EVENT_PATH": str(path)}
    settings = load_settings({}, {**env, "GITHUB_REF": group["head_ref"], "GITHUB_SHA": "x"})
    assert (settings.merge_group, settings.feeds_dashboards, settings.commit) == (
        True,
        False,
        "groupsha",
    )
    assert not parse_event({"merge_group": group}, "push").merge_group
