"""Where the HTML site is linked from: the job summary, the dashboard issues, the index issue
and the step outputs, with its address given (site-url) or that of GitHub Pages."""

from __future__ import annotations

import pytest

from ivy_matrix.commands.choose_store import site_link
from ivy_matrix.config.settings import load_settings
from ivy_matrix.issues.bodies import compose_index, compose_issue
from ivy_matrix.model import Outcome, Totals
from ivy_matrix.views.dashboards import render_job_summary, site_line
from tests.state.test_history import history, state_of

ON_GITHUB = {"GITHUB_REPOSITORY": "Octo-Org/ivy", "GITHUB_SERVER_URL": "https://github.com"}


@pytest.mark.parametrize(
    ("given", "env", "expected"),
    [
        # The branch and site targets on github.com: GitHub Pages deploying the branch.
        ({"targets": ["branch", "site"]}, ON_GITHUB, "https://octo-org.github.io/ivy/site/"),
        # site-url wins, wherever the site is served.
        (
            {"targets": ["branch", "site"], "site_url": "https://docs.example.com/matrix/"},
            ON_GITHUB,
            "https://docs.example.com/matrix/",
        ),
        ({"site_url": "https://docs.example.com/"}, ON_GITHUB, "https://docs.example.com/"),
        # No site committed to the branch: nothing to link unless site-url says where.
        ({"targets": ["branch"]}, ON_GITHUB, ""),
        ({"targets": ["site"], "html": "site"}, ON_GITHUB, ""),
        # GitHub Enterprise Server: its Pages address is the server's own, so site-url says it.
        (
            {"targets": ["branch", "site"]},
            {**ON_GITHUB, "GITHUB_SERVER_URL": "https://ghe.example.com"},
            "",
        ),
    ],
)
def test_the_site_is_linked_where_it_is_known_to_be_served(given, env, expected):
    assert site_link(load_settings(given, env)) == expected


def test_the_job_summary_and_the_issues_link_the_site():
    """The summary and the index issue link the site; a dashboard's issue links its grid."""
    url = "https://octo-org.github.io/ivy/site/"
    state = state_of({"test_a": {"torch": history(Outcome.FAILURE)}})
    totals = Totals(tests=1, failed=1, errors=0, skipped=0)
    summary = render_job_summary([state], totals=totals, problems=(), site_url=url)
    assert f"[Open the site]({url}): what needs a look" in summary
    issue = compose_issue(state, existing_body=None, revision=None, site_url=url).body
    assert f"[Open {state.key} in the site]({url}#/d/{state.key}): its grid" in issue
    index = compose_index([state], {state.key: "https://x/1"}, site_url=url)
    assert f"[Open the site]({url})" in index
    # Without a site: no line at all.
    assert "site" not in render_job_summary([state], totals=totals, problems=()).lower()
    assert "in the site" not in compose_issue(state, existing_body=None, revision=None).body


@pytest.mark.parametrize("url", ["javascript:alert(1)", "https://x.example/a b", "ftp://x/"])
def test_a_site_address_that_is_no_plain_link_is_not_linked(url):
    assert site_line(url) == ""
    assert site_line(url, "core/x") == ""


def test_the_pull_request_comment_ends_with_the_site():
    """The comment's last line links the site, within its size budget."""
    from ivy_matrix.pr.body import render_comment
    from tests.pr.test_body import sample_state

    url = "https://octo-org.github.io/ivy/site/"
    state = sample_state(test_a={"torch": Outcome.FAILURE})
    body = render_comment(state, site_url=url)
    assert body.endswith(
        f"[Open the site]({url}): what needs a look, failure groups, each test's history.\n\n"
    )
    assert render_comment(state) == body[: body.index("[Open the site]")]
