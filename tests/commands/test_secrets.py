"""Nothing ivy-matrix publishes holds the token it was given or a well-known key shape (issue 24).

Failing tests print the job's token (as given, and as git's basic-auth header carries it) and
keys of every well-known shape; a matrix leg's ``collect`` (which the action gives no token)
writes them into its leg file; a fan-in ``update`` with the branch (over git), issue, site,
file and summary targets publishes; a pull request's ``update`` comments. Then every byte
published is searched: every object of the git remote, every request body and every issue,
comment and blob the fake GitHub holds, every file written, and everything printed.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import subprocess
from pathlib import Path

import pytest

from ivy_matrix import redaction
from ivy_matrix.cli import main
from ivy_matrix.views import durations_file
from tests.commands.test_update_git import OVER_GIT, git_env
from tests.github.fake_server import FakeGitHub
from tests.github.git_server import GitServer

pytestmark = pytest.mark.timeout(180)

# A token of no well-known shape (a GHES or older token is 40 hex digits): only knowing it
# can hide it.
TOKEN = "4f1d0c3e9b7a26c58e1f0d4b3a2c9e8f7d6b5a41"
BASIC = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
KEYS = {
    "classic": "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8",
    "oauth": "gho_" + "Z9y8X7w6V5" * 3 + "u4T3s2",
    "user-to-server": "ghu_" + "Q1w2E3r4T5" * 3 + "y6U7i8",
    "installation": "ghs_" + "P0o9I8u7Y6" * 3 + "t5R4e3",
    "refresh": "ghr_" + "M1n2B3v4C5" * 3 + "x6Z7a8",
    "fine-grained": "github_pat_11ABCDEFG0" + "a1B2c3D4e5" * 8 + "f6G7h8I9j",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "slack": "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0LXJ1bm5lciJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
    "private key": "-----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2",
}
# A secret of the project's own, which its redact pattern names.
OWN = "corp-204518"
REDACT = r"corp-\d{6}"
# What each failing test prints: the token, its basic-auth header, a key of each shape.
MESSAGES = {
    "test_token": f"HTTP 401 for token {TOKEN}",
    "test_own": f"database password {OWN} refused",
    "test_header": f"git config http.extraheader=AUTHORIZATION: basic {BASIC}",
    "test_url": f"cannot push to https://x-access-token:{TOKEN}@github.com/acme/widgets.git",
    **{f"test_key_{i}": f"leaked {key} here" for i, key in enumerate(KEYS.values())},
}
NEEDLES = [TOKEN, BASIC, OWN, *KEYS.values()]
MODULE = "ivy_tests.test_auth"
# The first 40 characters of a key are enough to recognise it in a file (a private key's
# marker alone would be too).
NEEDLE_BYTES = [needle[:40].encode() for needle in NEEDLES]


FIRST = "test_token"  # fails with its message as the failure's text, not an attribute


def write_junit(path: Path, backend: str) -> None:
    """A result file in which each test of MESSAGES fails with its message (and the first
    with its message as text); a key in a parametrization; tests named after the token and a
    key, timed (so that the durations files hold their node ids); a key in a suite property."""
    cases = [
        f'<testcase classname="{MODULE}" name="test_ok[{KEYS["classic"]}]" time="1.25"/>',
        f'<testcase classname="{MODULE}" name="test_{TOKEN}" time="2.5"/>',
        f'<testcase classname="{MODULE}" name="test_{KEYS["fine-grained"]}" time="3"/>',
        (
            f'<testcase classname="{MODULE}" name="{FIRST}[{backend}]">'
            f"<failure>\n\n{MESSAGES[FIRST]}\nTraceback ...</failure></testcase>"
        ),
    ]
    for name, message in MESSAGES.items():
        if name == FIRST:
            continue
        cases.append(
            f'<testcase classname="{MODULE}" name="{name}[{backend}-{KEYS["aws"]}]">'
            f'<failure message="{message}">tb</failure></testcase>'
        )
    properties = f'<properties><property name="secret" value="{KEYS["slack"]}"/></properties>'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'<testsuites><testsuite name="s">{properties}{"".join(cases)}</testsuite></testsuites>',
        encoding="utf-8",
    )


# An env command that reports a key as a version, and the token as a package.
ENV_COMMAND = f"""echo '{{"jax": "{KEYS["jwt"]}", "{TOKEN}": "1.0"}}'"""


def run(work: Path, env: dict[str, str], argv: list[str]) -> tuple[int, str]:
    """``main`` in ``work``; its exit code and everything it printed."""
    work.mkdir(parents=True, exist_ok=True)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(work):
        code = main(argv, env, remote=OVER_GIT, stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


def git_objects(git: GitServer) -> bytes:
    """Every object of the remote (every ref's commits, trees and blobs, and any left over)."""
    done = subprocess.run(
        [
            "git",
            "--git-dir",
            str(git.root / "acme/widgets.git"),
            "cat-file",
            "--batch-all-objects",
            "--batch",
        ],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def github_bytes(api: FakeGitHub) -> bytes:
    """Everything the fake GitHub holds or was sent: issues, comments, blobs, commits,
    request bodies."""
    with api.lock:
        held = {
            "issues": api.issues,
            "comments": api.comments,
            "commits": api.commits,
            "bodies": [r.body for r in api.requests],
        }
        blobs = b"".join(api.blobs.values())
    return json.dumps(held, default=str, ensure_ascii=False).encode() + blobs


def leaks(data: bytes) -> list[str]:
    """The needles ``data`` holds (none may be there)."""
    return [needle.decode() for needle in NEEDLE_BYTES if needle in data]


def pr_event(path: Path, number: int) -> Path:
    payload = {
        "pull_request": {
            "number": number,
            "head": {"sha": "headsha1", "repo": {"full_name": "acme/widgets", "fork": False}},
            "base": {"sha": "basesha", "repo": {"full_name": "acme/widgets"}},
        },
        "repository": {"default_branch": "main"},
    }
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


@pytest.mark.parametrize("transport", ["git", "rest"])
def test_no_published_byte_holds_the_token_or_a_key(tmp_path, transport, monkeypatch):
    """A leg's collect (no token), a fan-in update to the branch (over git or the REST API),
    issues, site, files and summary, then a pull request's comment: the token and the keys the
    failing tests printed are nowhere in the remote, the fake GitHub, the files written or the
    log, and the cells still fail with their messages, redacted. The output folder's
    durations files are written in pieces (targets/files.py) cut as small as they can be."""
    monkeypatch.setattr(durations_file, "PIECE", 1)
    monkeypatch.setattr(redaction, "_CUT_AFTER", 1)
    printed = []
    with FakeGitHub() as api, GitServer() as git:
        leg = tmp_path / "leg"
        write_junit(leg / "results" / "junit.xml", "torch")
        leg_env = git_env(api, git, leg, IVY_MATRIX_JOB_ID="501", IVY_MATRIX_REDACT=REDACT)
        del leg_env["IVY_MATRIX_TOKEN"]  # the action gives collect no token
        collect = ["collect", "--junit", "results", "--backend", "torch", "--leg-file", "legs"]
        code, said = run(leg, leg_env, [*collect, "--env-command", ENV_COMMAND])
        assert code == 0, said
        (leg_file,) = (leg / "legs").iterdir()
        # Without the token collect cannot know it (docs/github.md, "Not caught"), only the
        # keys, in its leg file, log and job summary; the fan-in job must catch the token.
        assert leaks(leg_file.read_bytes()) == [TOKEN]
        assert leaks(said.encode()) == [TOKEN]
        assert leaks((leg / "summary.md").read_bytes()) == [TOKEN]

        fan_in = tmp_path / "fan-in"
        write_junit(fan_in / "results" / "junit.xml", "numpy")
        env = git_env(
            api,
            git,
            fan_in,
            IVY_MATRIX_TOKEN=TOKEN,
            IVY_MATRIX_TARGETS="branch\nissue\nsite\nfile\nsummary",
            IVY_MATRIX_BRANCH_TRANSPORT=transport,
            IVY_MATRIX_JOB_ID="502",
            IVY_MATRIX_REDACT=REDACT,
            GITHUB_SHA="mainsha",
            GITHUB_REF="refs/heads/main",
        )
        argv = [
            *("update", "--junit", "results", "--backend", "numpy", "--legs", str(leg_file)),
            *("--output-dir", "out", "--html", "site", "--summary-json", "summary.json"),
            *("--env-command", ENV_COMMAND),
        ]
        code, said = run(fan_in, env, argv)
        assert code == 0, said
        printed.append(said)
        assert api.issues  # the issue target wrote
        branch = (api.files if transport == "rest" else git.files)("ivy-matrix")
        assert {"durations/numpy.json", "durations/torch.json"} <= branch.keys()  # the branch
        # The tests named after the token and a key are one node id, hidden, their seconds added.
        assert b'"ivy_tests/test_auth.py::test_***": 5.5' in branch["durations/torch.json"]

        pull = tmp_path / "pull"
        write_junit(pull / "results" / "junit.xml", "numpy")
        number = int(api.add_issue(title="change", pull_request=True)["number"])
        env = git_env(
            api,
            git,
            pull,
            IVY_MATRIX_TOKEN=TOKEN,
            IVY_MATRIX_TARGETS="branch\npr-comment\nsummary",
            IVY_MATRIX_BRANCH_TRANSPORT=transport,
            IVY_MATRIX_JOB_ID="503",
            IVY_MATRIX_REDACT=REDACT,
            GITHUB_RUN_ID="9000000002",
            GITHUB_EVENT_NAME="pull_request",
            GITHUB_EVENT_PATH=str(pr_event(tmp_path / "event.json", number)),
        )
        code, said = run(pull, env, ["update", "--junit", "results", "--backend", "numpy"])
        assert code == 0, said
        printed.append(said)
        assert api.comments[number]

        published = {
            "git remote": git_objects(git),
            "GitHub": github_bytes(api),
            "log": "".join(printed).encode(),
        }
        # The inputs, and the leg's own files (above).
        files = [p for p in tmp_path.rglob("*") if p.is_file() and leg not in p.parents]
        files = [p for p in files if p.parent.name != "results"]
        published |= {str(p.relative_to(tmp_path)): p.read_bytes() for p in files}
        found = {where: leaks(data) for where, data in published.items() if leaks(data)}
        assert found == {}
        # The failures are still there, each with its message, redacted.
        read = api.read_file if transport == "rest" else git.read_file
        state = read(".ivy-matrix/state/ivy/auth.json", "ivy-matrix")
        assert "HTTP 401 for token ***" in state
        assert "leaked *** here" in state
        assert "https://x-access-token:***@github.com" in state
        assert "database password *** refused" in state
        # The two tests named after secrets are one row, of two passes in each column.
        assert state.count('"test_***"') == 1
        assert '"env":{"***":"1.0","jax":"***","secret":"***"}' in state
        assert {"out/README.md", "out/durations/torch.json", "site/index.html", "summary.json"} <= {
            str(p.relative_to(fan_in)) for p in files if fan_in in p.parents
        }
