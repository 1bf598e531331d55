"""A stateful fake of the GitHub REST API, served over plain HTTP on 127.0.0.1 for tests.

Stdlib only. ``FakeGitHub`` keeps GitHub's state (jobs, issues, comments, labels, git blobs,
trees, commits and refs) as plain dicts under one lock and serves exactly the operations
``ivy_matrix/github/client.py`` calls: a repository (its default branch); the jobs of a run attempt; git refs (get, create, update),
blobs (create, get), trees (create, get) and commits (create); issues (list, get, create, edit), their
comments (list, create, edit, delete) and labels (get, create); pull requests (list, get, open,
edit); a commit's statuses (set one, read the combined status). GraphQL (pinning) answers 404.
Bodies have the shapes of ``../shared/github-api/openapi-subset.json`` (and, for the statuses
and opening or editing a pull request, ``tests/github/openapi-supplement.json``), errors the texts of
``../shared/design/PLATFORM.md`` (sections 1-3). Store logic is tested on the in-memory model
``tests/github/memory.py``; this fake is for the client itself and end-to-end tests.

What GitHub does and the client relies on: ``Link`` pagination (``per_page`` 30 by default,
at most 100); 422 for a ref move that is not a fast-forward and for creating an existing ref;
422 for bodies over 65,536 characters; GitHub's rate limits, kept by a
:class:`~tests.github.budget.Budget` (``x-ratelimit-*`` headers on every answer; the primary
limit, content creation per minute and per hour, concurrent requests; 403 or 429 as GitHub
answers them; time from the ``clock`` the test gives), every token's spend recorded; 403
"Resource not accessible by integration" on writes with a read-only token; 400 for conditional headers on writes; ``url``
values under the prefix the request came in on (root or GHES ``/api/v3``), as PyGithub
asserts. Faults are queued per request (``inject``: before or after the write lands, held, or
silently not applied) or drawn at random (``fail_rate``; ``fail_landed`` of those on writes
land before their 502). Requests matching ``slow`` take that much longer (GitHub's comment
edits can take seconds).

Run standalone::

    python tests/github/fake_server.py --port 0 --state-file state.json [--seed seed.json]

It prints its base URL, serves until SIGTERM/SIGINT, then writes its state as JSON to
``--state-file``. ``GET /_fake/state`` returns the same JSON at any time; ``POST /_fake/config``,
``POST /_fake/inject`` and ``POST /_fake/seed`` change knobs, queue faults and add data.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import hashlib
import json
import random
import re
import signal
import socket
import sys
import threading
import time
import traceback
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

if __name__ == "__main__":  # run as a script: the checkout's root must be importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.github.budget import (
    GITHUB_TOKEN,
    SECONDARY_MESSAGE,
    UNLIMITED,
    Admission,
    Budget,
    Clock,
    Limits,
)

DOCS = "https://docs.github.com/rest"
BODY_LIMIT = 65_536
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CONDITIONAL_HEADERS = ("If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since")
BOT_LOGIN = "github-actions[bot]"
BOT_ID = 41898282
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
GHES_PREFIX = "/api/v3"
FAIL_KINDS = ("502", "503", "403-secondary", "429", "429-no-retry-after")
JOB_NAME_LIMIT = 100
# Commit statuses: GitHub's states, its description limit and its statuses per sha and context.
STATUS_STATES = frozenset({"error", "failure", "pending", "success"})
STATUS_DESCRIPTION_LIMIT = 140
STATUSES_PER_CONTEXT = 1000
FIRST_JOB_ID = 30_000_000_001

Response = tuple[int, Any, dict[str, str]]
JSON = dict[str, Any]


# The fields of a pull request in a listing (``pull-request-simple``), out of the whole one.
PULL_SIMPLE_FIELDS = (
    "url", "id", "node_id", "html_url", "diff_url", "patch_url", "issue_url", "commits_url",
    "review_comments_url", "review_comment_url", "comments_url", "statuses_url", "number",
    "state", "locked", "title", "user", "body", "labels", "milestone", "created_at",
    "updated_at", "closed_at", "merged_at", "merge_commit_sha", "assignee", "head", "base",
    "_links", "author_association", "auto_merge",
)  # fmt: skip


class _Fail(Exception):  # noqa: N818  -- an HTTP answer, not a failure of the fake
    """Raised by handlers to answer with an error status and GitHub's JSON error body."""

    def __init__(self, status: int, message: str, doc: str = DOCS, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.body: JSON = {"message": message, **extra, "documentation_url": doc}
        self.body["status"] = str(status)


def _not_found() -> _Fail:
    return _Fail(404, "Not Found")


def _validation_failed(resource: str, field_: str, code: str, message: str | None = None) -> _Fail:
    error: JSON = {"resource": resource, "code": code, "field": field_}
    if message is not None:
        error["message"] = message
    return _Fail(422, "Validation Failed", errors=[error])


@dataclass
class FakeConfig:
    """Runtime knobs; change them with ``fake.configure(...)`` or ``POST /_fake/config``."""

    # GitHub's rate limits (tests/github/budget.py); a test that needs more says why.
    limits: Limits = GITHUB_TOKEN
    latency: tuple[float, float] = (0.0, 0.0)
    fail_rate: float = 0.0
    fail_kinds: tuple[str, ...] = FAIL_KINDS
    # Of the random faults drawn for writes, this share lands first: the write is applied and
    # then answered with a 502 (the "5xx after commit" that makes a retried POST duplicate).
    fail_landed: float = 0.0
    retry_after: tuple[int, ...] = (0, 1)
    seed: int = 0
    read_only: bool = False
    # A recursive tree listing with more entries than this is cut short and says
    # "truncated": true, as GitHub does past 100,000 entries or 7 MB (0: never).
    tree_limit: int = 0
    # Benchmarks (bench/github_scale.py) turn this off: bodies of many large writes add up.
    keep_bodies: bool = True
    # (method regex, path regex, low, high): requests that match take a uniform draw of that
    # many more seconds before they are applied and answered.
    slow: tuple[tuple[str, str, float, float], ...] = ()


@dataclass
class Fault:
    """A queued one-shot (or ``times``-shot) answer for requests matching method and path.

    ``path`` is a regex searched in the API path without the ``/api/v3`` prefix. ``status=None``
    with ``wait`` holds the request until the event is set, then serves it normally, which
    lets a test force an interleaving. ``after_write=True`` applies the request first and then
    answers with the fault, the "5xx after commit" case that makes retried POSTs duplicate.
    ``silent=True`` answers a write with success but does not apply it: the object is served as
    a GET of the same path would (GitHub has been reported to do this with large bodies).
    """

    method: str = ".*"
    path: str = ".*"
    status: int | None = 502
    after_write: bool = False
    silent: bool = False
    times: int = 1
    retry_after: int | None = None
    message: str | None = None
    wait: threading.Event | None = None
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        """Tell whether this fault applies to the request."""
        return (
            self.times > 0
            and re.fullmatch(self.method, method, re.IGNORECASE) is not None
            and re.search(self.path, path) is not None
        )


@dataclass(frozen=True)
class RequestRecord:
    """One served request, as tests see it in ``fake.requests``."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    write: bool
    body: Any = None
    authorization: str | None = None
    prefix: str = ""
    # For benchmarks: when it was answered (time.time()) and the bytes of each body.
    at: float = 0.0
    bytes_in: int = 0
    bytes_out: int = 0


@dataclass
class _Req:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    api: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def repo_name(self) -> str:
        return f"{self.params['owner']}/{self.params['repo']}"

    @property
    def fields(self) -> JSON:
        """The JSON object sent, or {} for anything else."""
        return self.body if isinstance(self.body, dict) else {}


def git_blob_sha(data: bytes) -> str:
    """Return the git object id of a blob with these bytes (what ``git hash-object`` prints)."""
    return _git_object_sha("blob", data)


def tree_sha(files: Mapping[str, str]) -> str:
    """Return the git object id of the tree holding ``files`` (path -> blob sha)."""
    payload = b"".join(
        f"{mode.lstrip('0')} {name}".encode() + b"\0" + bytes.fromhex(sha)
        for name, mode, sha, _ in tree_entries(files)
    )
    return _git_object_sha("tree", payload)


def tree_entries(files: Mapping[str, str]) -> list[tuple[str, str, str, dict[str, str]]]:
    """The top level of a tree of files, in git's order: (name, mode, sha, files below)."""
    blobs: dict[str, str] = {}
    below: dict[str, dict[str, str]] = {}
    for path, sha in files.items():
        head, sep, rest = path.partition("/")
        if sep:
            below.setdefault(head, {})[rest] = sha
        else:
            blobs[head] = sha
    entries: list[tuple[str, str, str, dict[str, str]]]
    entries = [(name, "100644", sha, {}) for name, sha in blobs.items()]
    entries += [(name, "040000", tree_sha(sub), sub) for name, sub in below.items()]
    # Git orders entries by name, a tree's name as if it ended in "/".
    return sorted(entries, key=lambda e: (e[0] + "/" * (e[1] == "040000")).encode())


def _git_object_sha(kind: str, payload: bytes) -> str:
    header = f"{kind} {len(payload)}\0".encode()
    return hashlib.sha1(header + payload, usedforsecurity=False).hexdigest()


def job_display_name(name: str, matrix: Iterable[object] = (), caller: str | None = None) -> str:
    """Build the name the jobs API shows: matrix values appended, reusable-workflow prefix, 97+...

    ``tests`` with matrix ``("torch", "3.11")`` becomes ``tests (torch, 3.11)``; empty and None
    values are skipped; ``caller="ci"`` gives ``ci / tests (torch, 3.11)``.
    """
    values = [str(v) for v in matrix if v not in (None, "")]
    shown = f"{name} ({', '.join(values)})" if values else name
    if caller:
        shown = f"{caller} / {shown}"
    if len(shown) > JOB_NAME_LIMIT:
        shown = shown[:97] + "..."
    return shown


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeGitHub

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a benchmark's leg killed at its cap) is not an error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    # Buffer headers and body into one send: separate small writes on a keep-alive connection
    # meet Nagle plus delayed ACK and cost ~40 ms per request.
    wbufsize = -1
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self) -> None:
        self.server.fake._serve(self)

    do_GET = do_POST = do_PATCH = do_DELETE = _serve  # noqa: N815  -- http.server's names

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  -- base signature
        """Stay quiet; the request log is ``fake.requests``."""


class FakeGitHub:
    """A stateful, threaded fake GitHub REST API; use as ``with FakeGitHub() as fake:``.

    State (read it in tests, under ``fake.lock`` if a server thread may be writing):
    ``repos`` full name -> {default_branch}; ``runs`` run id -> {repo, attempts: {n: [job
    ids]}, ...}; ``jobs`` job id -> job; ``issues`` number -> issue (PRs included, with
    ``pull_request: True``); ``comments`` issue number -> [comment]; ``labels`` repo -> lower
    name -> label; ``blobs`` sha -> bytes; ``trees`` sha -> {path: blob sha}; ``commits`` sha
    -> commit; ``refs`` repo -> "refs/heads/x" -> sha; ``statuses`` repo -> commit sha ->
    [status], oldest first; ``requests`` -> [RequestRecord];
    ``budget`` the rate limits and what each token spent (``fake.budget.spent("t")``).

    ``limits`` are GitHub's for a ``GITHUB_TOKEN`` unless a test passes others (and says why);
    ``clock`` is the time they are kept by (a ``ManualClock`` makes an hour pass at once).

    Issue numbers and comment ids are unique across the whole fake (one counter), so
    ``fake.comments[5]`` needs no repository key; each record names its ``repo``.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        limits: Limits = GITHUB_TOKEN,
        clock: Clock = time.time,
        read_only: bool = False,
    ) -> None:
        self.lock = threading.RLock()
        self.config = FakeConfig(limits=limits, read_only=read_only)
        self.budget = Budget(limits, clock=clock)
        self._rng = random.Random(0)
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.repos: dict[str, JSON] = {}
        self.runs: dict[int, JSON] = {}
        self.jobs: dict[int, JSON] = {}
        self.issues: dict[int, JSON] = {}
        self.comments: dict[int, list[JSON]] = {}
        self.labels: dict[str, dict[str, JSON]] = {}
        self.blobs: dict[str, bytes] = {}
        self.trees: dict[str, dict[str, str]] = {}
        self.commits: dict[str, JSON] = {}
        self.refs: dict[str, dict[str, str]] = {}
        # repo -> commit sha -> the statuses set on it, oldest first.
        self.statuses: dict[str, dict[str, list[JSON]]] = {}
        self._next_status = 7_000_000_001
        self.requests: list[RequestRecord] = []
        self.faults: list[Fault] = []
        self._next_issue = 1
        self._next_comment = 1_000_000_001
        self._next_label = 5_000_000_001
        self._next_job = FIRST_JOB_ID
        self._routes = self._route_table()
        self.add_repo("acme/widgets")

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        """Bind the port and serve in a daemon thread."""
        server = _Server(("127.0.0.1", self._port), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (after ``start``)."""
        assert self._server is not None, "FakeGitHub is not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``, the github.com-style API root."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def ghes_url(self) -> str:
        """``http://127.0.0.1:PORT/api/v3``, the GitHub Enterprise Server-style API root."""
        return self.base_url + GHES_PREFIX

    # ----------------------------------------------------------------- knobs and the log

    def configure(self, **changes: Any) -> FakeConfig:
        """Change ``FakeConfig`` fields; new ``limits`` start every budget window afresh."""
        with self.lock:
            for key, given in changes.items():
                if not hasattr(self.config, key):
                    raise TypeError(f"unknown FakeGitHub setting {key!r}")
                value = given
                if key == "limits" and isinstance(given, Mapping):
                    value = Limits(**given)  # from POST /_fake/config
                tuples = {"latency", "fail_kinds", "retry_after", "slow"}
                setattr(self.config, key, tuple(value) if key in tuples else value)
            if "seed" in changes:
                self._rng.seed(self.config.seed)
            if "limits" in changes:
                self.budget.configure(self.config.limits)
            return self.config

    def inject(self, **fields: Any) -> Fault:
        """Queue a :class:`Fault` (built from ``fields``) for the next matching requests."""
        fault = Fault(**fields)
        with self.lock:
            self.faults.append(fault)
        return fault

    def request_counts(self) -> Counter[str]:
        """Requests served so far per HTTP method."""
        with self.lock:
            return Counter(r.method for r in self.requests)

    def writes(self) -> list[RequestRecord]:
        """Requests that used POST, PATCH or DELETE (applied or not)."""
        with self.lock:
            return [r for r in self.requests if r.write]

    def requests_to(self, method: str, path: str) -> list[RequestRecord]:
        """Requests with this method whose path matches the regex ``path`` (``re.search``)."""
        with self.lock:
            return [r for r in self.requests if r.method == method and re.search(path, r.path)]

    # ----------------------------------------------------------------- arrange and inspect

    def add_repo(self, full_name: str, *, default_branch: str = "main") -> JSON:
        """Create a repository whose default branch has one commit (README.md)."""
        with self.lock:
            self.repos[full_name] = {"full_name": full_name, "default_branch": default_branch}
            self.labels.setdefault(full_name, {})
            readme = {"README.md": self._store_blob(f"# {full_name}\n".encode())}
            commit = self._store_commit(self._store_tree(readme), [], "Initial commit")
            self.refs.setdefault(full_name, {})[f"refs/heads/{default_branch}"] = commit
            return self.repos[full_name]

    def add_run(
        self, repo: str, run_id: int, attempt: int = 1, jobs: Iterable[Mapping[str, Any]] = ()
    ) -> list[JSON]:
        """Add (or extend) workflow run ``run_id`` with one attempt's jobs; return the new jobs.

        Each job mapping needs ``name``; it may give ``matrix`` (values appended as GitHub does)
        and ``caller`` (reusable-workflow prefix), plus any job field (``status``,
        ``conclusion``, ``runner_name``, ``labels``, ...). Job ids increase across the fake.
        """
        with self.lock:
            branch = self._repo_or_404(repo)["default_branch"]
            tip = self.refs[repo][f"refs/heads/{branch}"]
            run = self.runs.setdefault(run_id, {"id": run_id, "repo": repo, "attempts": {}})
            created = [self._new_job(run, attempt, spec, branch, tip) for spec in jobs]
            run["attempts"].setdefault(attempt, []).extend(job["id"] for job in created)
            return created

    def _new_job(
        self, run: JSON, attempt: int, spec: Mapping[str, Any], branch: str, tip: str
    ) -> JSON:
        job_id, now, runner = self._next_job, self._now(), self._next_job % 1000 + 1
        self._next_job += 1
        self.jobs[job_id] = {
            "id": job_id,
            "repo": run["repo"],
            "run_id": run["id"],
            "run_attempt": attempt,
            "name": job_display_name(spec["name"], spec.get("matrix", ()), spec.get("caller")),
            "status": "in_progress",
            "conclusion": None,
            "created_at": now,
            "started_at": now,
            "completed_at": None,
            "runner_id": runner,
            "runner_name": f"GitHub Actions {runner}",
            "runner_group_id": 2,
            "runner_group_name": "GitHub Actions",
            "labels": ["ubuntu-latest"],
            "workflow_name": "ci",
            "head_branch": branch,
            "head_sha": tip,
            "steps": [],
            **{k: v for k, v in spec.items() if k not in {"name", "matrix", "caller"}},
        }
        return self.jobs[job_id]

    def add_issue(
        self,
        repo: str = "acme/widgets",
        *,
        title: str = "Issue",
        body: str | None = None,
        labels: Iterable[str] = (),
        state: str = "open",
        pull_request: bool = False,
    ) -> JSON:
        """Create an issue (or, with ``pull_request=True``, a PR item) directly in state."""
        with self.lock:
            self._repo_or_404(repo)
            issue = self._create_issue(repo, title, body, list(labels))
            issue["pull_request"] = pull_request
            if state == "closed":
                issue.update(state="closed", state_reason="completed", closed_at=self._now())
            return issue

    def add_comment(self, number: int, body: str, *, login: str | None = None) -> JSON:
        """Add a comment to issue ``number`` directly in state (by ``login``, else the bot)."""
        with self.lock:
            comment = self._create_comment(self.issues[number], body)
            if login is not None:
                comment["login"] = login
            return comment

    def add_commit(self, repo: str = "acme/widgets", message: str = "a pull request") -> str:
        """A new commit on the default branch's tip that no branch points at (a pull request's
        head, say); its sha."""
        with self.lock:
            tip = self.refs[repo][f"refs/heads/{self.repos[repo]['default_branch']}"]
            return self._store_commit(self.commits[tip]["tree"], [tip], message)

    def push(self, branch: str, files: Mapping[str, str], repo: str = "acme/widgets") -> str:
        """Commit ``files`` (path -> text) on ``branch`` (creating it from nothing) and move it,
        as a person pushing would; the commit's sha. Not a request: nothing is spent."""
        with self.lock:
            ref = f"refs/heads/{branch}"
            tip = self.refs[repo].get(ref)
            tree = dict(self.trees[self.commits[tip]["tree"]]) if tip else {}
            tree |= {path: self._store_blob(text.encode()) for path, text in files.items()}
            sha = self._store_commit(self._store_tree(tree), [tip] if tip else [], "a push")
            self.refs[repo][ref] = sha
            return sha

    def commit_statuses(self, sha: str, repo: str = "acme/widgets") -> dict[str, JSON]:
        """The newest status of each context on commit ``sha`` (context -> status)."""
        with self.lock:
            return self._latest_statuses(repo, sha)

    def ref_sha(self, ref: str, repo: str = "acme/widgets") -> str | None:
        """The commit sha ``ref`` (``heads/x`` or ``refs/heads/x``) points at, or None."""
        with self.lock:
            return self.refs.get(repo, {}).get(ref if ref.startswith("refs/") else f"refs/{ref}")

    def files(self, branch: str | None = None, repo: str = "acme/widgets") -> dict[str, bytes]:
        """Every file on ``branch`` (default branch if None) as path -> bytes."""
        with self.lock:
            name = branch or self.repos[repo]["default_branch"]
            return self._files_at(self.refs[repo][f"refs/heads/{name}"])

    def read_file(self, path: str, branch: str | None = None, repo: str = "acme/widgets") -> str:
        """The text of one file on ``branch``; KeyError if absent."""
        return self.files(branch, repo)[path].decode()

    def snapshot(self) -> JSON:
        """The whole state as JSON-serialisable data (what ``GET /_fake/state`` returns)."""
        with self.lock:
            files = {
                repo: {
                    ref.removeprefix("refs/heads/"): {
                        path: data.decode(errors="replace")
                        for path, data in self._files_at(sha).items()
                    }
                    for ref, sha in refs.items()
                }
                for repo, refs in self.refs.items()
            }
            state = {
                "config": dataclasses.asdict(self.config),
                "jobs": self.jobs,
                "issues": self.issues,
                "comments": self.comments,
                "labels": self.labels,
                "refs": self.refs,
                "statuses": self.statuses,
                "files": files,
                "requests": [dataclasses.asdict(r) for r in self.requests],
                "request_counts": Counter(r.method for r in self.requests),
            }
            read_back: JSON = json.loads(json.dumps(state))  # as JSON readers see it: str keys
            return read_back

    def seed_data(self, data: Mapping[str, Any]) -> None:
        """Add repos, runs and issues (with comments) from JSON (``--seed``, ``/_fake/seed``)."""
        for repo in data.get("repos", []):
            self.add_repo(repo)
        for run in data.get("runs", []):
            repo, attempt = run.get("repo", "acme/widgets"), int(run.get("attempt", 1))
            self.add_run(repo, int(run["run_id"]), attempt, run.get("jobs", []))
        for issue in data.get("issues", []):
            spec = dict(issue)
            comments = spec.pop("comments", [])
            created = self.add_issue(spec.pop("repo", "acme/widgets"), **spec)
            for body in comments:
                self.add_comment(created["number"], body)

    # ----------------------------------------------------------------- serving

    def _serve(self, h: _Handler) -> None:
        split = urllib.parse.urlsplit(h.path)
        path = split.path
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(split.query).items()}
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        method = h.command
        if path.startswith("/_fake/"):
            self._send(h, *self._control(method, path, raw))
            return
        prefix = GHES_PREFIX if path == GHES_PREFIX or path.startswith(GHES_PREFIX + "/") else ""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = _INVALID_JSON
        req = _Req(method, path[len(prefix) :] or "/", query, body, self.base_url + prefix)
        # Requests without a token get 401 and spend nothing; every other one is counted,
        # and is in flight (for the concurrency limit) until its answer is ready: released
        # before the answer is sent, so a client that has its answer never finds its own
        # request still counted (however late this thread runs again).
        token = _token(h.headers.get("Authorization", ""))
        admission = None if token is None else self.budget.admit(token, method, size=len(raw))
        try:
            answer = self._respond(h, req, admission, prefix=prefix, size=len(raw))
        finally:
            if token is not None:
                self.budget.release(token)
        self._send(h, *answer)

    def _respond(
        self, h: _Handler, req: _Req, admission: Admission | None, *, prefix: str, size: int
    ) -> tuple[int, Any, Mapping[str, str], bytes]:
        """The answer to one API request (status, payload, headers, encoded body), after its
        latency and any fault queued for it; logged."""
        with self.lock:
            low, high = self.config.latency
            pause = self._rng.uniform(low, high) if high > 0 else 0.0
            for method, path, least, most in self.config.slow:
                if re.fullmatch(method, req.method) and re.search(path, req.path):
                    pause += self._rng.uniform(least, most)
        if pause > 0:
            time.sleep(pause)
        refused = admission is not None and admission.refusal is not None
        # A request refused for a rate limit never reaches the endpoint: no fault applies.
        fault = None if refused else self._take_fault(req.method, req.path)
        if fault is not None and fault.wait is not None:
            fault.wait.wait(timeout=30)
        if fault is not None and fault.status is None:
            fault = None
        with self.lock:
            status, payload, headers = self._answer(req, h.headers, fault, admission)
            keep = req.body is not _INVALID_JSON and self.config.keep_bodies
        data = self._encode(payload)  # outside the lock, as before: answers may be large
        with self.lock:
            record = RequestRecord(
                req.method,
                req.path,
                req.query,
                status,
                req.method in WRITE_METHODS,
                req.body if keep else None,
                h.headers.get("Authorization"),
                prefix,
                at=time.time(),
                bytes_in=size,
                bytes_out=len(data),
            )
            self.requests.append(record)
        return status, payload, headers, data

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.matches(method, path):
                    fault.times -= 1
                    fault.hits += 1
                    if fault.times <= 0:
                        self.faults.remove(fault)
                    return fault
        return None

    def _answer(
        self, req: _Req, headers_in: Any, fault: Fault | None, admission: Admission | None
    ) -> Response:
        if admission is not None and admission.refusal is not None:
            refusal = admission.refusal
            return refusal.status, refusal.body, dict(admission.headers)
        try:
            status, payload, headers = self._guarded(req, headers_in, fault)
        except _Fail as fail:
            status, payload, headers = fail.status, fail.body, {}
        except Exception as exc:  # noqa: BLE001  -- a bug in the fake must answer, not hang
            traceback.print_exc()
            status, payload, headers = 500, {"message": f"FakeGitHub bug: {exc!r}"}, {}
        if admission is not None:
            headers.update(admission.headers)
        return status, payload, headers

    def _guarded(self, req: _Req, headers_in: Any, fault: Fault | None) -> Response:
        write = req.method in WRITE_METHODS
        if _token(headers_in.get("Authorization", "")) is None:
            raise _Fail(401, "Requires authentication")
        if write and any(headers_in.get(name) for name in CONDITIONAL_HEADERS):
            raise _Fail(
                400,
                "Conditional request headers are not allowed in unsafe requests unless supported "
                "by the endpoint",
            )
        if fault is not None and fault.silent:  # the answer of a GET of the same object
            handler, req.params = self._route("GET", req.path)
            return handler(req)
        if fault is not None and not fault.after_write:
            return self._fault_response(fault)
        landed = False
        if self.config.fail_rate and self._rng.random() < self.config.fail_rate:
            landed = write and self._rng.random() < self.config.fail_landed
            if not landed:
                return self._random_fault()
        if req.body is _INVALID_JSON:
            raise _Fail(400, "Problems parsing JSON")
        handler, req.params = self._route(req.method, req.path)
        self._repo_or_404(req.repo_name)  # every route is under /repos/{owner}/{repo}
        if write and self.config.read_only:
            raise _Fail(403, "Resource not accessible by integration")
        status, payload, headers = handler(req)
        if fault is not None and status < 400:
            return self._fault_response(fault)
        if landed and status < 400:
            return self._fault_response(Fault(status=502))
        return status, payload, headers

    def serves(self, method: str, path: str) -> bool:
        """Tell whether a route exists for this method and API path (no prefix, no query)."""
        try:
            self._route(method, path)
        except _Fail:
            return False
        return True

    def _route(self, method: str, path: str) -> tuple[Callable[[_Req], Response], dict[str, str]]:
        for verb, pattern, handler in self._routes:
            match = pattern.fullmatch(path)
            if match and verb == method:
                params = {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()}
                return handler, params
        raise _not_found()

    def _fault_response(self, fault: Fault) -> Response:
        status = fault.status or 502
        headers = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
        messages = {403: SECONDARY_MESSAGE, 429: SECONDARY_MESSAGE, 502: "Server Error"}
        messages[503] = "Service Unavailable"
        message = fault.message or messages.get(status, "Injected fault")
        return status, _Fail(status, message).body, headers

    def _random_fault(self) -> Response:
        kind = self._rng.choice(self.config.fail_kinds)
        retry_after = self._rng.choice(self.config.retry_after)
        status = int(kind[:3])
        with_wait = kind in {"403-secondary", "429"}
        return self._fault_response(
            Fault(status=status, retry_after=retry_after if with_wait else None)
        )

    @staticmethod
    def _encode(payload: Any) -> bytes:
        return b"" if payload is None else json.dumps(payload, ensure_ascii=False).encode()

    @classmethod
    def _send(
        cls,
        h: _Handler,
        status: int,
        payload: Any,
        headers: Mapping[str, str],
        data: bytes | None = None,
    ) -> None:
        data = cls._encode(payload) if data is None else data
        h.send_response(status)
        for key, value in headers.items():
            h.send_header(key, value)
        if status != 204:
            h.send_header("Content-Type", "application/json; charset=utf-8")
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if data:
            h.wfile.write(data)
        h.wfile.flush()

    def _control(self, method: str, path: str, raw: bytes) -> Response:
        def seed(body: Any) -> Response:
            self.seed_data(body)
            return 201, {"ok": True}, {}

        def inject(body: Any) -> Response:
            fault = self.inject(**body)
            return 201, {k: v for k, v in dataclasses.asdict(fault).items() if k != "wait"}, {}

        actions: dict[tuple[str, str], Callable[[Any], Response]] = {
            ("GET", "/_fake/state"): lambda _: (200, self.snapshot(), {}),
            ("POST", "/_fake/config"): lambda b: (200, dataclasses.asdict(self.configure(**b)), {}),
            ("POST", "/_fake/inject"): inject,
            ("POST", "/_fake/seed"): seed,
        }
        action = actions.get((method, path))
        if action is None:
            return 404, {"message": "Not Found"}, {}
        try:
            return action(json.loads(raw) if raw else {})
        except (TypeError, ValueError, KeyError) as exc:
            return 400, {"message": f"bad control request: {exc}"}, {}

    def _route_table(self) -> list[tuple[str, re.Pattern[str], Callable[[_Req], Response]]]:
        repo = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
        issue = repo + r"/issues/(?P<number>\d+)"
        comment = repo + r"/issues/comments/(?P<id>\d+)"
        table: list[tuple[str, str, Callable[[_Req], Response]]] = [
            ("GET", repo + r"/actions/runs/(?P<run>\d+)/attempts/(?P<n>\d+)/jobs", self._jobs),
            ("GET", repo + r"/issues", self._list_issues),
            ("POST", repo + r"/issues", self._post_issue),
            ("GET", issue, self._get_issue),
            ("PATCH", issue, self._patch_issue),
            ("GET", issue + r"/comments", self._list_comments),
            ("GET", repo, self._get_repo),
            ("GET", repo + r"/pulls", self._list_pulls),
            ("POST", repo + r"/pulls", self._post_pull),
            ("GET", repo + r"/pulls/(?P<number>\d+)", self._get_pull),
            ("PATCH", repo + r"/pulls/(?P<number>\d+)", self._patch_pull),
            ("POST", issue + r"/comments", self._post_comment),
            ("PATCH", comment, self._patch_comment),
            ("DELETE", comment, self._delete_comment),
            ("POST", repo + r"/labels", self._post_label),
            ("GET", repo + r"/labels/(?P<name>[^/]+)", self._get_label),
            ("GET", repo + r"/git/ref/(?P<ref>.+)", self._get_ref),
            ("POST", repo + r"/git/refs", self._post_ref),
            ("PATCH", repo + r"/git/refs/(?P<ref>.+)", self._patch_ref),
            ("DELETE", repo + r"/git/refs/(?P<ref>.+)", self._delete_ref),
            ("GET", repo + r"/git/matching-refs/(?P<ref>.+)", self._matching_refs),
            ("GET", repo + r"/git/blobs/(?P<sha>[0-9a-f]{40})", self._get_blob),
            ("POST", repo + r"/git/blobs", self._post_blob),
            ("POST", repo + r"/git/trees", self._post_tree),
            ("GET", repo + r"/git/trees/(?P<sha>[^/]+)", self._get_tree),
            ("POST", repo + r"/git/commits", self._post_commit),
            ("GET", repo + r"/git/commits/(?P<sha>[0-9a-f]{40})", self._get_commit),
            ("POST", repo + r"/statuses/(?P<sha>[^/]+)", self._post_status),
            ("GET", repo + r"/commits/(?P<ref>.+)/status", self._combined_status),
        ]
        return [(verb, re.compile(pattern), handler) for verb, pattern, handler in table]

    # ----------------------------------------------------------------- shapes

    def _html(self, *parts: object) -> str:
        return "/".join(["https://github.com", *(str(p) for p in parts)])

    def _user(self, api: str) -> JSON:
        url = f"{api}/users/{urllib.parse.quote(BOT_LOGIN)}"
        links = (
            "followers", "following{/other_user}", "gists{/gist_id}", "starred{/owner}{/repo}",
            "subscriptions", "organizations:orgs", "repos", "events{/privacy}", "received_events",
        )  # fmt: skip
        user: JSON = {"login": BOT_LOGIN, "id": BOT_ID, "node_id": f"MDM6Qm90{BOT_ID}"}
        for link in links:
            name, _, path = link.partition(":")
            user[re.sub(r"\{.*", "", name) + "_url"] = f"{url}/{path or name}"
        return user | {
            "avatar_url": f"https://avatars.githubusercontent.com/in/{BOT_ID}?v=4",
            "gravatar_id": "",
            "url": url,
            "html_url": self._html("apps/github-actions"),
            "type": "Bot",
            "site_admin": False,
        }

    def _repo_json(self, api: str, name: str) -> JSON:
        """A repository as the pull-request answer embeds it (every field the schema requires)."""
        url = f"{api}/repos/{name}"
        links = (
            "archive/{archive_format}{/ref}", "assignees{/user}", "git/blobs{/sha}:blobs",
            "branches{/branch}", "collaborators{/collaborator}", "comments{/number}",
            "commits{/sha}", "compare/{base}...{head}", "contents/{+path}", "contributors",
            "deployments", "downloads", "events", "forks", "git/commits{/sha}:git_commits",
            "git/refs{/sha}:git_refs", "git/tags{/sha}:git_tags", "hooks",
            "issues/comments{/number}:issue_comment", "issues/events{/number}:issue_events",
            "issues{/number}", "keys{/key_id}", "labels{/name}", "languages", "merges",
            "milestones{/number}", "notifications{?since,all,participating}", "pulls{/number}",
            "releases{/id}", "stargazers", "statuses/{sha}", "subscribers", "subscription",
            "tags", "teams", "git/trees{/sha}:trees",
        )  # fmt: skip
        data: JSON = {"id": 1, "node_id": "R_kgDOfake", "name": name.split("/")[1]}
        for link in links:
            path, _, key = link.partition(":")
            data[(key or re.sub(r"[/{].*", "", path)) + "_url"] = f"{url}/{path}"
        numbers = (
            "forks", "forks_count", "open_issues", "open_issues_count", "size",
            "stargazers_count", "watchers", "watchers_count",
        )  # fmt: skip
        flags = ("has_downloads", "has_issues", "has_projects", "has_wiki", "has_pages")
        return (
            data
            | dict.fromkeys(numbers, 0)
            | dict.fromkeys(flags, True)
            | {
                "full_name": name,
                "owner": self._user(api),
                "private": False,
                "fork": False,
                "archived": False,
                "disabled": False,
                "description": None,
                "homepage": None,
                "language": None,
                "mirror_url": None,
                "license": None,
                "url": url,
                "html_url": self._html(name),
                "clone_url": self._html(f"{name}.git"),
                "git_url": f"git://github.com/{name}.git",
                "ssh_url": f"git@github.com:{name}.git",
                "svn_url": self._html(name),
                "default_branch": self.repos[name]["default_branch"],
                "pushed_at": None,
                "created_at": None,
                "updated_at": None,
            }
        )

    def _pull_json(self, api: str, issue: JSON) -> JSON:
        """A pull request (``GET /pulls/{n}``): the issue's fields and a head and base."""
        name, number = issue["repo"], issue["number"]
        url = f"{api}/repos/{name}/pulls/{number}"
        data = self._issue_json(api, issue)
        side = {"user": self._user(api), "repo": self._repo_json(api, name)}
        head_ref, head_sha = issue.get("head") or ("feature", "0" * 40)
        base_ref, base_sha = issue.get("base") or ("main", "1" * 40)
        if issue.get("opened"):  # opened through the API: head and base follow their branches
            refs = self.refs.get(name, {})
            head_sha = refs.get(f"refs/heads/{head_ref}", head_sha)
            base_sha = refs.get(f"refs/heads/{base_ref}", base_sha)
        links = {
            "self": url,
            "html": self._html(name, "pull", number),
            "issue": f"{api}/repos/{name}/issues/{number}",
            "comments": f"{api}/repos/{name}/issues/{number}/comments",
            "review_comments": f"{url}/comments",
            "review_comment": f"{api}/repos/{name}/pulls/comments{{/number}}",
            "commits": f"{url}/commits",
            "statuses": f"{api}/repos/{name}/statuses/{head_sha}",
        }
        return {
            key: data[key]
            for key in ("id", "node_id", "html_url", "number", "state", "locked", "title")
        } | {
            "url": url,
            "body": data["body"],
            "user": data["user"],
            "labels": [],
            "milestone": None,
            "assignee": None,
            "created_at": data["created_at"],
            "updated_at": data["updated_at"],
            "closed_at": data["closed_at"],
            "merged_at": None,
            "merge_commit_sha": None,
            "diff_url": self._html(name, "pull", f"{number}.diff"),
            "patch_url": self._html(name, "pull", f"{number}.patch"),
            "issue_url": links["issue"],
            "comments_url": links["comments"],
            "commits_url": links["commits"],
            "review_comments_url": links["review_comments"],
            "review_comment_url": links["review_comment"],
            "statuses_url": links["statuses"],
            "head": side
            | {"label": f"{name.split('/')[0]}:{head_ref}", "ref": head_ref, "sha": head_sha},
            "base": side
            | {"label": f"{name.split('/')[0]}:{base_ref}", "ref": base_ref, "sha": base_sha},
            "_links": {key: {"href": href} for key, href in links.items()},
            "author_association": "NONE",
            "auto_merge": None,
            "merged": False,
            "mergeable": None,
            "mergeable_state": "unknown",
            "merged_by": None,
            "comments": data["comments"],
            "review_comments": 0,
            "maintainer_can_modify": False,
            "commits": 1,
            "additions": 0,
            "deletions": 0,
            "changed_files": 0,
        }

    def _job_json(self, api: str, job: JSON) -> JSON:
        name = job["repo"]
        fields = (
            "id", "run_id", "run_attempt", "head_sha", "status", "conclusion", "created_at",
            "started_at", "completed_at", "name", "steps", "labels", "runner_id", "runner_name",
            "runner_group_id", "runner_group_name", "workflow_name", "head_branch",
        )  # fmt: skip
        return {
            **{key: job[key] for key in fields},
            "node_id": f"CR_kwDO{job['id']}",
            "run_url": f"{api}/repos/{name}/actions/runs/{job['run_id']}",
            "url": f"{api}/repos/{name}/actions/jobs/{job['id']}",
            "html_url": self._html(name, "actions/runs", job["run_id"], "job", job["id"]),
            "check_run_url": f"{api}/repos/{name}/check-runs/{job['id']}",
        }

    def _label_json(self, api: str, repo: str, label: JSON) -> JSON:
        quoted = urllib.parse.quote(label["name"], safe="")
        return {
            "id": label["id"],
            "node_id": f"LA_kwDO{label['id']}",
            "url": f"{api}/repos/{repo}/labels/{quoted}",
            "name": label["name"],
            "description": label["description"],
            "color": label["color"],
            "default": False,
        }

    def _issue_json(self, api: str, issue: JSON) -> JSON:
        name, number = issue["repo"], issue["number"]
        url = f"{api}/repos/{name}/issues/{number}"
        data: JSON = {
            "id": issue["id"],
            "node_id": f"I_kwDO{issue['id']}",
            "url": url,
            "repository_url": f"{api}/repos/{name}",
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": self._html(name, "pull" if issue["pull_request"] else "issues", number),
            "number": number,
            "state": issue["state"],
            "state_reason": issue["state_reason"],
            "title": issue["title"],
            "body": issue["body"],
            "user": self._user(api),
            "labels": [self._label_json(api, name, self.labels[name][n]) for n in issue["labels"]],
            "assignee": None,
            "milestone": None,
            "locked": False,
            "comments": len(self.comments.get(number, [])),
            "closed_at": issue["closed_at"],
            "created_at": issue["created_at"],
            "updated_at": issue["updated_at"],
            "author_association": "NONE",
        }
        if issue["pull_request"]:
            data["pull_request"] = {
                "url": f"{api}/repos/{name}/pulls/{number}",
                "html_url": self._html(name, "pull", number),
                "diff_url": self._html(name, "pull", f"{number}.diff"),
                "patch_url": self._html(name, "pull", f"{number}.patch"),
            }
        return data

    def _comment_json(self, api: str, comment: JSON) -> JSON:
        name, number = comment["repo"], comment["issue"]
        return {
            "id": comment["id"],
            "node_id": f"IC_kwDO{comment['id']}",
            "url": f"{api}/repos/{name}/issues/comments/{comment['id']}",
            "html_url": self._html(name, "issues", f"{number}#issuecomment-{comment['id']}"),
            "body": comment["body"],
            "user": self._user(api)
            | ({"login": comment["login"], "type": "User"} if "login" in comment else {}),
            "created_at": comment["created_at"],
            "updated_at": comment["updated_at"],
            "issue_url": f"{api}/repos/{name}/issues/{number}",
            "author_association": "NONE",
        }

    def _ref_json(self, api: str, repo: str, ref: str, sha: str) -> JSON:
        return {
            "ref": ref,
            "node_id": "REF_" + base64.b64encode(f"{repo}:{ref}".encode()).decode().rstrip("="),
            "url": f"{api}/repos/{repo}/git/{ref}",
            "object": {
                "type": "commit",
                "sha": sha,
                "url": f"{api}/repos/{repo}/git/commits/{sha}",
            },
        }

    def _commit_json(self, api: str, repo: str, sha: str) -> JSON:
        commit = self.commits[sha]
        url = f"{api}/repos/{repo}/git"
        parents = [
            {"sha": p, "url": f"{url}/commits/{p}", "html_url": self._html(repo, "commit", p)}
            for p in commit["parents"]
        ]
        unsigned = {"verified": False, "reason": "unsigned", "signature": None, "payload": None}
        return {
            "sha": sha,
            "node_id": f"C_kwDO{sha[:20]}",
            "url": f"{url}/commits/{sha}",
            "html_url": self._html(repo, "commit", sha),
            "author": commit["author"],
            "committer": commit["author"],
            "tree": {"sha": commit["tree"], "url": f"{url}/trees/{commit['tree']}"},
            "message": commit["message"],
            "parents": parents,
            "verification": unsigned | {"verified_at": None},
        }

    def _tree_json(self, api: str, repo: str, sha: str, *, recursive: bool = False) -> JSON:
        def walk(files: Mapping[str, str], prefix: str) -> list[JSON]:
            entries: list[JSON] = []
            for name, mode, entry_sha, below in tree_entries(files):
                kind = "tree" if below else "blob"
                path = prefix + name
                entries.append(
                    {"path": path, "mode": mode, "type": kind, "sha": entry_sha}
                    | {"url": f"{api}/repos/{repo}/git/{kind}s/{entry_sha}"}
                    | ({} if below else {"size": len(self.blobs[entry_sha])})
                )
                if below and recursive:
                    entries += walk(below, path + "/")
            return entries

        url = f"{api}/repos/{repo}/git/trees/{sha}"
        entries = walk(self.trees[sha], "")
        limit = self.config.tree_limit
        truncated = recursive and 0 < limit < len(entries)
        return {"sha": sha, "url": url, "tree": entries[:limit] if truncated else entries} | {
            "truncated": truncated
        }

    # ----------------------------------------------------------------- state helpers

    def _repo_or_404(self, name: str) -> JSON:
        repo = self.repos.get(name)
        if repo is None:
            raise _not_found()
        return repo

    def _now(self) -> str:
        return _iso(datetime.now(UTC))

    def _paginate(self, req: _Req, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
        try:
            per_page = min(max(int(req.query.get("per_page", 30)), 1), 100)
            page = max(int(req.query.get("page", 1)), 1)
        except ValueError as exc:
            raise _Fail(422, "Invalid request.\n\nInvalid value for per_page or page.") from exc
        last = max((len(items) + per_page - 1) // per_page, 1)

        def link(number: int, rel: str) -> str:
            query = {**req.query, "per_page": str(per_page), "page": str(number)}
            return f'<{req.api}{req.path}?{urllib.parse.urlencode(query)}>; rel="{rel}"'

        links = [link(page - 1, "prev"), link(1, "first")] if page > 1 else []
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        headers = {"Link": ", ".join(links)} if links else {}
        return items[(page - 1) * per_page : page * per_page], headers

    def _create_issue(self, repo: str, title: str, body: str | None, labels: list[str]) -> JSON:
        number, now = self._next_issue, self._now()
        self._next_issue += 1
        issue = {"number": number, "id": 2_000_000_000 + number, "repo": repo, "title": title}
        issue |= {"body": body, "state": "open", "state_reason": None, "pull_request": False}
        issue |= {"created_at": now, "updated_at": now, "closed_at": None}
        self._set_issue_labels(issue, labels)
        self.issues[number] = issue
        self.comments[number] = []
        return issue

    def _set_issue_labels(self, issue: JSON, names: Iterable[str]) -> None:
        kept: list[str] = []
        for name in names:
            key = name.lower()
            if key not in self.labels[issue["repo"]]:
                # GitHub creates unknown labels on the fly with the default colour.
                self._create_label(issue["repo"], name, "ededed", None)
            if key not in kept:
                kept.append(key)
        issue["labels"] = kept

    def _create_label(self, repo: str, name: str, color: str, description: str | None) -> JSON:
        label = {"id": self._next_label, "name": name, "color": color.removeprefix("#")}
        self._next_label += 1
        self.labels[repo][name.lower()] = label | {"description": description}
        return self.labels[repo][name.lower()]

    def _create_comment(self, issue: JSON, body: str) -> JSON:
        comment = {"id": self._next_comment, "repo": issue["repo"], "issue": issue["number"]}
        self._next_comment += 1
        comment |= {"body": body, "created_at": self._now(), "updated_at": self._now()}
        self.comments[issue["number"]].append(comment)
        return comment

    def _issue_or_404(self, req: _Req) -> JSON:
        issue = self.issues.get(int(req.params["number"]))
        if issue is None or issue["repo"] != req.repo_name:
            raise _not_found()
        return issue

    def _comment_or_404(self, req: _Req) -> JSON:
        wanted = int(req.params["id"])
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] == wanted and comment["repo"] == req.repo_name:
                    return comment
        raise _not_found()

    def _store_blob(self, data: bytes) -> str:
        sha = git_blob_sha(data)
        self.blobs[sha] = data
        return sha

    def _store_commit(self, tree: str, parents: list[str], message: str) -> str:
        now = self._now()
        author = {"name": BOT_LOGIN, "email": BOT_EMAIL, "date": now}
        stamp = f"{BOT_LOGIN} <{BOT_EMAIL}> {int(datetime.fromisoformat(now).timestamp())} +0000"
        parent_lines = "".join(f"parent {p}\n" for p in parents)
        text = f"tree {tree}\n{parent_lines}author {stamp}\ncommitter {stamp}\n\n{message}"
        sha = _git_object_sha("commit", text.encode())
        self.commits[sha] = {
            "tree": tree,
            "parents": list(parents),
            "message": message,
            "author": author,
        }
        return sha

    def _store_tree(self, files: dict[str, str]) -> str:
        """Store a tree of path -> blob sha, and its subtrees; return its git id."""
        for *_, below in tree_entries(files):
            if below:
                self._store_tree(below)
        sha = tree_sha(files)
        self.trees[sha] = files
        return sha

    def _files_at(self, commit_sha: str) -> dict[str, bytes]:
        files = self.trees[self.commits[commit_sha]["tree"]]
        return {path: self.blobs[sha] for path, sha in sorted(files.items())}

    def _is_ancestor(self, ancestor: str, sha: str) -> bool:
        seen: set[str] = set()
        todo = [sha]
        while todo:
            current = todo.pop()
            if current == ancestor:
                return True
            if current not in seen:
                seen.add(current)
                todo.extend(self.commits[current]["parents"])
        return False

    # ----------------------------------------------------------------- handlers: jobs

    def _jobs(self, req: _Req) -> Response:
        run = self.runs.get(int(req.params["run"]))
        if run is None or run["repo"] != req.repo_name:
            raise _not_found()
        ids = run["attempts"].get(int(req.params["n"]))
        if ids is None:
            raise _not_found()
        jobs = [self._job_json(req.api, self.jobs[i]) for i in ids]
        page, headers = self._paginate(req, jobs)
        return 200, {"total_count": len(jobs), "jobs": page}, headers

    # ----------------------------------------------------------------- handlers: issues

    def _list_issues(self, req: _Req) -> Response:
        state = req.query.get("state", "open")
        if state not in {"open", "closed", "all"}:
            raise _validation_failed("Issue", "state", "invalid")
        wanted = {n.strip().lower() for n in req.query.get("labels", "").split(",") if n.strip()}
        items = [
            self._issue_json(req.api, i)
            for _, i in sorted(self.issues.items(), reverse=True)  # newest first
            if i["repo"] == req.repo_name
            and state in {"all", i["state"]}
            and wanted <= set(i["labels"])
        ]
        page, headers = self._paginate(req, items)
        return 200, page, headers

    def _check_body(self, resource: str, body: Any, *, required: bool = False) -> None:
        if required and body in (None, ""):
            raise _validation_failed(resource, "body", "missing_field")
        if body is not None and not isinstance(body, str):
            raise _validation_failed(resource, "body", "invalid")
        if body is not None and len(body) > BODY_LIMIT:
            raise _validation_failed(
                resource, "body", "custom", f"body is too long (maximum is {BODY_LIMIT} characters)"
            )

    @staticmethod
    def _label_names(raw: Iterable[Any]) -> list[str]:
        return [label if isinstance(label, str) else label["name"] for label in raw]

    def _post_issue(self, req: _Req) -> Response:
        body = req.fields
        if body.get("title") in (None, ""):
            raise _validation_failed("Issue", "title", "missing_field")
        self._check_body("Issue", body.get("body"))
        labels = self._label_names(body.get("labels", []))
        issue = self._create_issue(req.repo_name, str(body["title"]), body.get("body"), labels)
        return 201, self._issue_json(req.api, issue), {}

    def _get_issue(self, req: _Req) -> Response:
        return 200, self._issue_json(req.api, self._issue_or_404(req)), {}

    def _get_repo(self, req: _Req) -> Response:
        """``GET /repos/{owner}/{repo}``: the repository (``full-repository``)."""
        now = self._now()
        extra: JSON = {"has_discussions": False, "network_count": 0, "subscribers_count": 0}
        extra |= {"pushed_at": now, "created_at": now, "updated_at": now}
        return 200, self._repo_json(req.api, req.repo_name) | extra, {}

    def _get_pull(self, req: _Req) -> Response:
        return 200, self._pull_json(req.api, self._pull_or_404(req)), {}

    def _pull_or_404(self, req: _Req) -> JSON:
        issue = self._issue_or_404(req)
        if not issue["pull_request"]:
            raise _not_found()
        return issue

    def _list_pulls(self, req: _Req) -> Response:
        """``GET /pulls``: the repository's pull requests, newest first, filtered by ``state``
        (open by default), ``head`` (``owner:branch``) and ``base``, as ``pull-request-simple``."""
        state = req.query.get("state", "open")
        if state not in {"open", "closed", "all"}:
            raise _validation_failed("PullRequest", "state", "invalid")
        head, base = req.query.get("head"), req.query.get("base")
        owner = req.repo_name.split("/")[0]
        simple = set(PULL_SIMPLE_FIELDS)
        items = []
        for _, issue in sorted(self.issues.items(), reverse=True):
            if issue["repo"] != req.repo_name or not issue["pull_request"]:
                continue
            pull = self._pull_json(req.api, issue)
            if state not in {"all", issue["state"]}:
                continue
            if head is not None and head != f"{owner}:{pull['head']['ref']}":
                continue
            if base is not None and base != pull["base"]["ref"]:
                continue
            items.append({key: value for key, value in pull.items() if key in simple})
        page, headers = self._paginate(req, items)
        return 200, page, headers

    def _post_pull(self, req: _Req) -> Response:
        """``POST /pulls``: open a pull request from branch ``head`` (``branch`` or
        ``owner:branch`` of this repository) into ``base``. 422 as GitHub answers: a missing
        field, a branch that does not exist, or an open pull request from the same head."""
        fields, refs = req.fields, self.refs[req.repo_name]
        for name in ("head", "base", "title"):
            if not isinstance(fields.get(name), str) or not fields[name]:
                raise _validation_failed("PullRequest", name, "missing_field")
        self._check_body("PullRequest", fields.get("body"))
        owner = req.repo_name.split("/")[0]
        head = str(fields["head"]).removeprefix(f"{owner}:")
        base = str(fields["base"])
        for name, branch in (("head", head), ("base", base)):
            if f"refs/heads/{branch}" not in refs:
                raise _validation_failed("PullRequest", name, "invalid")
        if any(
            i["repo"] == req.repo_name and i["pull_request"] and i["state"] == "open"
            and (i.get("head") or ("",))[0] == head
            for i in self.issues.values()
        ):  # fmt: skip
            raise _Fail(
                422,
                "Validation Failed",
                errors=[{"resource": "PullRequest", "code": "custom",
                         "message": f"A pull request already exists for {owner}:{head}."}],
            )  # fmt: skip
        issue = self._create_issue(req.repo_name, str(fields["title"]), fields.get("body"), [])
        issue |= {"pull_request": True, "opened": True}
        issue |= {
            "head": (head, refs[f"refs/heads/{head}"]),
            "base": (base, refs[f"refs/heads/{base}"]),
        }
        return 201, self._pull_json(req.api, issue), {}

    def _patch_pull(self, req: _Req) -> Response:
        """``PATCH /pulls/{n}``: a new title, body or state (open, closed)."""
        issue, fields = self._pull_or_404(req), req.fields
        if "body" in fields:
            self._check_body("PullRequest", fields["body"])
        if fields.get("state") not in {None, "open", "closed"}:
            raise _validation_failed("PullRequest", "state", "invalid")
        if "title" in fields and (not isinstance(fields["title"], str) or not fields["title"]):
            raise _validation_failed("PullRequest", "title", "missing_field")
        issue.update({k: fields[k] for k in ("title", "body") if k in fields})
        if fields.get("state") == "closed" and issue["state"] == "open":
            issue.update(state="closed", closed_at=self._now())
        elif fields.get("state") == "open":
            issue.update(state="open", closed_at=None)
        issue["updated_at"] = self._now()
        return 200, self._pull_json(req.api, issue), {}

    def _patch_issue(self, req: _Req) -> Response:
        issue = self._issue_or_404(req)
        body = req.fields
        if "body" in body:
            self._check_body("Issue", body["body"])
        if body.get("state") not in {None, "open", "closed"}:
            raise _validation_failed("Issue", "state", "invalid")
        if "body" in body:
            issue["body"] = body["body"]
        if "labels" in body:
            self._set_issue_labels(issue, self._label_names(body["labels"]))
        state = body.get("state")
        if state == "closed" and issue["state"] == "open":
            reason = body.get("state_reason") or "completed"
            issue.update(state="closed", state_reason=reason, closed_at=self._now())
        elif state == "open" and issue["state"] == "closed":
            issue.update(state="open", state_reason="reopened", closed_at=None)
        issue["updated_at"] = self._now()
        return 200, self._issue_json(req.api, issue), {}

    def _list_comments(self, req: _Req) -> Response:
        issue = self._issue_or_404(req)
        items = [self._comment_json(req.api, c) for c in self.comments[issue["number"]]]
        page, headers = self._paginate(req, items)
        return 200, page, headers

    def _post_comment(self, req: _Req) -> Response:
        issue = self._issue_or_404(req)
        self._check_body("IssueComment", req.fields.get("body"), required=True)
        comment = self._create_comment(issue, req.fields["body"])
        issue["updated_at"] = comment["created_at"]
        return 201, self._comment_json(req.api, comment), {}

    def _patch_comment(self, req: _Req) -> Response:
        comment = self._comment_or_404(req)
        self._check_body("IssueComment", req.fields.get("body"), required=True)
        comment.update(body=req.fields["body"], updated_at=self._now())
        return 200, self._comment_json(req.api, comment), {}

    def _delete_comment(self, req: _Req) -> Response:
        comment = self._comment_or_404(req)
        self.comments[comment["issue"]].remove(comment)
        return 204, None, {}

    def _post_label(self, req: _Req) -> Response:
        name = req.fields.get("name")
        if not name:
            raise _validation_failed("Label", "name", "missing_field")
        if name.lower() in self.labels[req.repo_name]:
            raise _validation_failed("Label", "name", "already_exists")
        color = str(req.fields.get("color") or "ededed")
        if not re.fullmatch(r"#?[0-9a-fA-F]{6}", color):
            raise _validation_failed("Label", "color", "invalid")
        label = self._create_label(req.repo_name, name, color, req.fields.get("description"))
        return 201, self._label_json(req.api, req.repo_name, label), {}

    def _get_label(self, req: _Req) -> Response:
        label = self.labels[req.repo_name].get(req.params["name"].lower())
        if label is None:
            raise _not_found()
        return 200, self._label_json(req.api, req.repo_name, label), {}

    # ----------------------------------------------------------------- handlers: statuses

    def _latest_statuses(self, repo: str, sha: str) -> dict[str, JSON]:
        """The newest status of each context (GitHub compares contexts case-insensitively)."""
        found: dict[str, JSON] = {}
        for status in reversed(self.statuses.get(repo, {}).get(sha, [])):
            found.setdefault(status["context"].lower(), status)
        return {status["context"]: status for status in found.values()}

    def _commit_of(self, repo: str, ref: str) -> str | None:
        """The commit ``ref`` names: a sha, or a ref under ``refs/`` (``heads/x``, ``x``)."""
        if ref in self.commits:
            return ref
        refs = self.refs.get(repo, {})
        return refs.get(f"refs/{ref}") or refs.get(f"refs/heads/{ref}")

    def _status_json(self, api: str, repo: str, sha: str, status: JSON) -> JSON:
        return {
            "url": f"{api}/repos/{repo}/statuses/{sha}",
            "avatar_url": f"https://avatars.githubusercontent.com/in/{BOT_ID}?v=4",
            "id": status["id"],
            "node_id": f"SC_kwDO{status['id']}",
            **{key: status[key] for key in ("state", "description", "target_url", "context")},
            "created_at": status["created_at"],
            "updated_at": status["created_at"],
            "creator": self._user(api),
        }

    def _post_status(self, req: _Req) -> Response:
        repo, sha, body = req.repo_name, req.params["sha"], req.fields
        if sha not in self.commits:
            raise _Fail(422, f"No commit found for SHA: {sha}")
        state, description = body.get("state"), body.get("description")
        if state not in STATUS_STATES:
            raise _validation_failed(
                "Status", "state", "custom", "state is not included in the list"
            )
        if description is not None and len(str(description)) > STATUS_DESCRIPTION_LIMIT:
            message = f"description is too long (maximum is {STATUS_DESCRIPTION_LIMIT} characters)"
            raise _validation_failed("Status", "description", "custom", message)
        context = str(body.get("context") or "default")
        kept = self.statuses.setdefault(repo, {}).setdefault(sha, [])
        if sum(s["context"].lower() == context.lower() for s in kept) >= STATUSES_PER_CONTEXT:
            message = "This SHA and context has reached the maximum number of statuses."
            raise _validation_failed("Status", "context", "custom", message)
        status = {"id": self._next_status, "state": state, "context": context}
        status |= {"description": description, "target_url": body.get("target_url")}
        status["created_at"] = self._now()
        self._next_status += 1
        kept.append(status)
        headers = {"Location": f"{req.api}/repos/{repo}/statuses/{sha}"}
        return 201, self._status_json(req.api, repo, sha, status), headers

    def _combined_status(self, req: _Req) -> Response:
        repo, ref = req.repo_name, req.params["ref"]
        sha = self._commit_of(repo, ref)
        if sha is None:
            raise _Fail(404, f"No commit found for SHA: {ref}")
        latest = sorted(self._latest_statuses(repo, sha).values(), key=lambda s: -s["id"])
        states = {s["state"] for s in latest}
        if states & {"error", "failure"}:
            combined = "failure"
        elif not latest or "pending" in states:
            combined = "pending"
        else:
            combined = "success"
        items = [
            {
                **{
                    k: v
                    for k, v in self._status_json(req.api, repo, sha, s).items()
                    if k != "creator"
                },
                "required": None,
            }
            for s in latest
        ]
        page, headers = self._paginate(req, items)
        return (
            200,
            {
                "state": combined,
                "statuses": page,
                "sha": sha,
                "total_count": len(items),
                "repository": self._repo_json(req.api, repo),
                "commit_url": f"{req.api}/repos/{repo}/commits/{sha}",
                "url": f"{req.api}/repos/{repo}/commits/{sha}/status",
            },
            headers,
        )

    # ----------------------------------------------------------------- handlers: git data

    def _get_ref(self, req: _Req) -> Response:
        name = "refs/" + req.params["ref"]
        sha = self.refs[req.repo_name].get(name)
        if sha is None:
            raise _not_found()
        return 200, self._ref_json(req.api, req.repo_name, name, sha), {}

    def _post_ref(self, req: _Req) -> Response:
        ref, sha = req.fields.get("ref"), req.fields.get("sha")
        if not isinstance(ref, str) or not ref.startswith("refs/") or ref.count("/") < 2:
            raise _Fail(422, "Reference name is not valid")
        if ref.endswith("/") or ".." in ref or any(c in ref for c in " ~^:?*[\\"):
            raise _Fail(422, "Reference name is not valid")
        if sha not in self.commits:
            raise _Fail(422, "Object does not exist")
        refs = self.refs[req.repo_name]
        if ref in refs:
            raise _Fail(422, "Reference already exists")
        refs[ref] = sha
        return 201, self._ref_json(req.api, req.repo_name, ref, sha), {}

    def _patch_ref(self, req: _Req) -> Response:
        name = "refs/" + req.params["ref"].removeprefix("refs/")
        sha = req.fields.get("sha")
        refs = self.refs[req.repo_name]
        if name not in refs:
            raise _Fail(422, "Reference does not exist")
        if sha not in self.commits:
            raise _Fail(422, "Object does not exist")
        if not req.fields.get("force") and not self._is_ancestor(refs[name], sha):
            raise _Fail(422, "Update is not a fast forward")
        refs[name] = sha
        return 200, self._ref_json(req.api, req.repo_name, name, sha), {}

    def _delete_ref(self, req: _Req) -> Response:
        name = "refs/" + req.params["ref"].removeprefix("refs/")
        if self.refs[req.repo_name].pop(name, None) is None:
            raise _Fail(422, "Reference does not exist")
        return 204, None, {}

    def _matching_refs(self, req: _Req) -> Response:
        prefix = "refs/" + req.params["ref"]
        refs = self.refs[req.repo_name]
        found = [
            self._ref_json(req.api, req.repo_name, name, sha)
            for name, sha in sorted(refs.items())
            if name.startswith(prefix)
        ]
        return 200, found, {}

    def _get_blob(self, req: _Req) -> Response:
        sha = req.params["sha"]
        data = self.blobs.get(sha)
        if data is None:
            raise _not_found()
        encoded = base64.b64encode(data).decode()
        blob = {
            "sha": sha,
            "node_id": f"B_kwDO{sha[:20]}",
            "size": len(data),
            "url": f"{req.api}/repos/{req.repo_name}/git/blobs/{sha}",
            # GitHub wraps the base64 at 60 columns; b64decode ignores the newlines.
            "content": "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60)),
            "encoding": "base64",
        }
        return 200, blob, {}

    def _post_blob(self, req: _Req) -> Response:
        content, encoding = req.fields.get("content"), req.fields.get("encoding", "utf-8")
        if not isinstance(content, str):
            raise _Fail(422, 'Invalid request.\n\n"content" wasn\'t supplied.')
        if encoding not in {"utf-8", "base64"}:
            raise _Fail(422, f"encoding {encoding!r} is not supported")
        data = base64.b64decode(content) if encoding == "base64" else content.encode()
        sha = self._store_blob(data)
        return 201, {"sha": sha, "url": f"{req.api}/repos/{req.repo_name}/git/blobs/{sha}"}, {}

    def _post_tree(self, req: _Req) -> Response:
        entries, base = req.fields.get("tree"), req.fields.get("base_tree")
        if not isinstance(entries, list):
            raise _Fail(422, 'Invalid request.\n\n"tree" wasn\'t supplied.')
        if base is not None and base not in self.trees:
            raise _Fail(422, "Invalid tree info", f"{DOCS}/git/trees#create-a-tree")
        files = dict(self.trees[base]) if base else {}
        for entry in entries:
            self._apply_tree_entry(files, entry)
        return 201, self._tree_json(req.api, req.repo_name, self._store_tree(files)), {}

    def _apply_tree_entry(self, files: dict[str, str], entry: Any) -> None:
        """Set one path (``content``, or the ``sha`` of a blob) or delete it (``sha: null``)."""
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise _Fail(422, "Invalid tree info", f"{DOCS}/git/trees#create-a-tree")
        path = entry["path"].strip("/")
        if "sha" in entry and "content" in entry:
            raise _Fail(
                422,
                "Must supply either tree.sha or tree.content. Request will be rejected if both "
                "are present.",
            )
        for existing in [p for p in files if p == path or p.startswith(path + "/")]:
            del files[existing]
        if "content" in entry:
            files[path] = self._store_blob(str(entry["content"]).encode())
        elif entry.get("sha") is not None:
            if entry["sha"] not in self.blobs:
                raise _Fail(422, f"tree.sha {entry['sha']} is not a valid blob")
            files[path] = entry["sha"]

    def _get_tree(self, req: _Req) -> Response:
        sha = req.params["sha"]
        if sha in self.commits:
            sha = self.commits[sha]["tree"]
        if sha not in self.trees:
            raise _not_found()
        recursive = req.query.get("recursive", "") not in {"", "0", "false"}
        return 200, self._tree_json(req.api, req.repo_name, sha, recursive=recursive), {}

    def _post_commit(self, req: _Req) -> Response:
        message, tree = req.fields.get("message"), req.fields.get("tree")
        parents = req.fields.get("parents", [])
        if not isinstance(message, str):
            raise _Fail(422, 'Invalid request.\n\n"message" wasn\'t supplied.')
        if tree not in self.trees:
            raise _Fail(422, "Tree SHA does not exist")
        if any(p not in self.commits for p in parents):
            raise _Fail(422, "Parent SHA does not exist or is not a commit object")
        sha = self._store_commit(tree, parents, message)
        return 201, self._commit_json(req.api, req.repo_name, sha), {}

    def _get_commit(self, req: _Req) -> Response:
        if req.params["sha"] not in self.commits:
            raise _not_found()
        return 200, self._commit_json(req.api, req.repo_name, req.params["sha"]), {}


_INVALID_JSON = object()


def _token(authorization: str) -> str | None:
    """The token of an ``Authorization: token X`` (or ``Bearer X``) header; None without one."""
    found = re.fullmatch(r"(?:token|bearer) (\S+)", authorization.strip(), re.IGNORECASE)
    return found.group(1) if found else None


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT, then write the state JSON to ``--state-file``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--state-file", type=Path)
    parser.add_argument("--seed", type=Path, help="JSON with repos, runs and issues")
    parser.add_argument(
        "--rate-limit", type=int, default=GITHUB_TOKEN.requests_per_hour, help="requests an hour"
    )
    parser.add_argument("--no-limits", action="store_true", help="record the spend, refuse nothing")
    parser.add_argument("--read-only", action="store_true")
    args = parser.parse_args(argv)
    limits = (
        UNLIMITED if args.no_limits else replace(GITHUB_TOKEN, requests_per_hour=args.rate_limit)
    )
    fake = FakeGitHub(port=args.port, limits=limits, read_only=args.read_only)
    if args.seed:
        fake.seed_data(json.loads(args.seed.read_text()))
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with fake:
        sys.stdout.write(fake.base_url + "\n")
        sys.stdout.flush()
        while not stop.wait(0.1):
            pass
        if args.state_file:
            args.state_file.write_text(json.dumps(fake.snapshot(), indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
