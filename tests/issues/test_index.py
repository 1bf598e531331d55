"""Tests for issues/index.py: the index issue links every dashboard and is pinned if it can be."""

from __future__ import annotations

from ivy_matrix.issues.report import IssueAction
from tests.issues.helpers import GRADIENTS, RANDOM, Lines, make_state, publish


def test_index_issue_links_every_dashboard(fake):
    """The index issue links each dashboard's issue with passing/total per backend."""
    states = [make_state(GRADIENTS, 3), make_state(RANDOM, 6)]
    report = publish(fake, states)
    assert report.index is not None
    assert report.index.number is not None
    index = fake.issues[report.index.number]["body"]
    for key in ("core/gradients", "core/random"):
        url = report.result(key).url
        assert f"[{key}]({url})" in index
    assert f"[4/6]({report.result('core/random').url})" in index
    assert report.index_url == report.index.url


def test_pinning_the_index_is_best_effort(fake):
    """With no GraphQL endpoint, pinning fails with a warning and everything is published."""
    lines = Lines()
    report = publish(fake, [make_state(GRADIENTS, 2)], pin_index=True, log=lines)
    assert report.index is not None
    assert report.index.action is IssueAction.CREATED
    assert any("could not pin the index issue" in w for w in report.warnings)
    assert lines.warnings == list(report.warnings)
    assert fake.requests_to("POST", r"/graphql$")
