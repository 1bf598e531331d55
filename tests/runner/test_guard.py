"""The last guard (issue 24): while a command conceals its token, no write holds it (local
files, log lines, step outputs, the job summary, GitHub request bodies, git objects), and
well-known key shapes never reach one, concealed or not."""

from __future__ import annotations

import io
import json
import subprocess

from ivy_matrix.github.git_transport import GitTransport
from ivy_matrix.runner.files import write_atomic
from ivy_matrix.runner.guard import concealing, scrub, scrub_json
from ivy_matrix.runner.log import Log, append_output, append_summary
from tests.conftest import fake_client

TOKEN = "4f1d0c3e9b7a26c58e1f0d4b3a2c9e8f7d6b5a41"
OTHER = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d"
KEY = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"


def test_every_local_write_hides_the_concealed_token_and_key_shapes(tmp_path):
    """A file, a log line, an annotation, a step output and the job summary written while
    the token is concealed show *** for it and for a key."""
    text = f"token {TOKEN}, key {KEY}"
    printed = io.StringIO()
    log = Log(github_actions=True, stream=printed)
    with concealing([TOKEN]):
        write_atomic(tmp_path / "page.md", text)
        log.info(text)
        log.warning(text, file="r.xml")
        append_output(tmp_path / "output.txt", "json", text)
        append_summary(tmp_path / "summary.md", text)
    written = [(tmp_path / n).read_text("utf-8") for n in ("page.md", "output.txt", "summary.md")]
    for found in [*written, printed.getvalue()]:
        assert "token ***, key ***" in found
        assert TOKEN not in found
        assert KEY not in found


def test_a_token_is_concealed_only_while_a_command_names_it():
    """Outside concealing the token is plain text (no other value is hidden); key shapes
    are hidden always."""
    assert scrub(f"{TOKEN} {KEY}") == f"{TOKEN} ***"
    with concealing([TOKEN]):
        assert scrub(f"{TOKEN} {KEY}") == "*** ***"
    assert scrub(TOKEN) == TOKEN


def test_commands_running_at_once_each_keep_their_token_concealed():
    """Two commands in one process (the tests run several at once): the first to end leaves
    the other's token concealed, and the same token concealed twice stays so until both end."""
    with concealing([TOKEN]):
        with concealing([OTHER, TOKEN]):
            assert scrub(f"{TOKEN} {OTHER}") == "*** ***"
        assert scrub(f"{TOKEN} {OTHER}") == f"*** {OTHER}"
    assert scrub(TOKEN) == TOKEN


def test_scrub_json_hides_every_string_of_a_request_body():
    """Nested objects and lists, keys left as they are; numbers and booleans untouched."""
    body = {"title": TOKEN, "labels": [KEY, "ivy-matrix"], "n": 3, "ok": True, "x": None}
    with concealing([TOKEN]):
        assert scrub_json(body) == {
            "title": "***",
            "labels": ["***", "ivy-matrix"],
            "n": 3,
            "ok": True,
            "x": None,
        }


def test_a_github_request_never_carries_the_concealed_token(fake):
    """An issue and a comment created while the token is concealed reach GitHub with ***."""
    client = fake_client(fake)
    with concealing([TOKEN]):
        issue = client.create_issue(
            "acme/widgets", title=f"dashboard {KEY}", body=f"body {TOKEN}", labels=["x"]
        )
        client.create_issue_comment("acme/widgets", issue.number, f"comment {TOKEN}")
    with fake.lock:
        held = json.dumps([fake.issues, fake.comments], default=str)
    assert TOKEN not in held
    assert KEY not in held
    assert "body ***" in held
    assert "comment ***" in held


def test_a_git_object_never_holds_the_concealed_token():
    """A file and a commit message written to the dashboard branch's repository while the
    token is concealed hold *** instead."""
    transport = GitTransport(server_url="http://127.0.0.1:9", repository="acme/widgets", token="t")
    try:
        with concealing([TOKEN]):
            tree = transport.write_tree(None, [("state.json", f'{{"message": "{TOKEN}"}}')])
            commit = transport.write_commit(f"update {TOKEN}", tree, [])
        (sha,) = transport.tree(commit).files.values()
        assert transport.texts([sha]) == {sha: '{"message": "***"}'}
        shown = subprocess.run(
            ["git", "--git-dir", transport.directory, "cat-file", "commit", commit],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
        assert shown.partition("\n\n")[2].strip() == "update ***"
    finally:
        transport.close()
