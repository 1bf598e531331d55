"""A stateful fake of the GitHub REST API, served over plain HTTP on 127.0.0.1 for tests.

Stdlib only. ``FakeGitHub`` keeps GitHub's state (repositories, workflow runs and jobs, issues,
comments, labels, git blobs/trees/commits/refs) as plain dicts guarded by one lock, and serves
36 of the 42 operations ivy-matrix uses, with the shapes of
``../shared/github-api/openapi-subset.json`` and the observed error texts of
``../shared/design/PLATFORM.md`` (sections 1-3). Not served: pulls get/list, commits/{sha}/pulls,
checks/get, comment pin/unpin. Real PyGithub talks to it; tests arrange state, act, then assert
on state.

Fidelity notes (each is something PyGithub or GitHub actually does):

* every ``url``/``*_url`` is built from the base the request came in on (root or ``/api/v3``),
  because PyGithub asserts that the URLs it follows share its host, port and prefix;
* ``html_url`` values use ``server_url`` (default ``https://github.com``) and are never followed;
* lists paginate with ``Link`` headers (``per_page`` default 30, max 100);
* every response carries ``x-ratelimit-*`` headers from a budget (1,000/h like GITHUB_TOKEN);
  ``GET /rate_limit`` and 304s do not count;
* GET responses carry a weak ETag and answer 304 to a matching ``If-None-Match``;
* conditional headers on unsafe methods are rejected with 400, as GitHub does for issues.

Run standalone for subprocess and act tests::

    python tests/fake_github.py --port 0 --state-file state.json [--seed seed.json]

It prints its base URL on stdout, serves until SIGTERM/SIGINT, then writes its state as JSON to
``--state-file``. ``GET /_fake/state`` returns the same JSON at any time; ``POST /_fake/config``,
``POST /_fake/inject`` and ``POST /_fake/seed`` change knobs, queue faults and add data.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

DOCS = "https://docs.github.com/rest"
BODY_LIMIT = 65_536
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CONDITIONAL_HEADERS = ("If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since")
BOT_LOGIN = "github-actions[bot]"
BOT_ID = 41898282
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
INSTALLATION_ID = 12345678
GHES_PREFIX = "/api/v3"
FAIL_KINDS = ("502", "503", "403-secondary", "429", "429-no-retry-after")
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID 0000:FAKE."
)
JOB_NAME_LIMIT = 100
FIRST_JOB_ID = 30_000_000_001

Response = tuple[int, Any, dict[str, str]]
JSON = dict[str, Any]


class _Fail(Exception):  # noqa: N818  -- an HTTP answer, not a failure of the fake
    """Raised by handlers to answer with an error status and GitHub's JSON error body."""

    def __init__(self, status: int, message: str, doc: str = DOCS, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.body: JSON = {"message": message, **extra, "documentation_url": doc}
        if status >= 400:
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

    rate_limit: int = 1000
    latency: tuple[float, float] = (0.0, 0.0)
    fail_rate: float = 0.0
    fail_kinds: tuple[str, ...] = FAIL_KINDS
    retry_after: tuple[int, ...] = (0, 1)
    seed: int = 0
    read_only: bool = False
    require_auth: bool = True
    server_url: str = "https://github.com"


@dataclass
class Fault:
    """A queued one-shot (or ``times``-shot) answer for requests matching method and path.

    ``path`` is a regex searched in the API path without the ``/api/v3`` prefix. ``status=None``
    only delays (``delay`` seconds, or until ``wait`` is set) and then serves normally, which
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
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
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


@dataclass
class _Req:
    method: str
    path: str
    query: dict[str, str]
    headers: Any  # email.message.Message: case-insensitive .get()
    body: Any
    api: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def repo_name(self) -> str:
        return f"{self.params['owner']}/{self.params['repo']}"

    def int_param(self, name: str) -> int:
        return int(self.params[name])


def git_blob_sha(data: bytes) -> str:
    """Return the git object id of a blob with these bytes (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _git_object_sha(kind: str, payload: bytes) -> str:
    header = f"{kind} {len(payload)}\0".encode()
    return hashlib.sha1(header + payload, usedforsecurity=False).hexdigest()


def _tree_sort_key(entry: JSON) -> bytes:
    name: str = entry["path"]
    return (name + "/" if entry["type"] == "tree" else name).encode()


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

    def do_GET(self) -> None:
        self.server.fake._serve(self)

    def do_POST(self) -> None:
        self.server.fake._serve(self)

    def do_PUT(self) -> None:
        self.server.fake._serve(self)

    def do_PATCH(self) -> None:
        self.server.fake._serve(self)

    def do_DELETE(self) -> None:
        self.server.fake._serve(self)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  -- base signature
        """Stay quiet; the request log is ``fake.requests``."""


class FakeGitHub:
    """A stateful, threaded fake GitHub REST API; use as ``with FakeGitHub() as fake:``.

    State (read it in tests, under ``fake.lock`` if a server thread may be writing):
    ``repos`` full name -> {id, default_branch, private}; ``runs`` run id -> {repo, attempts:
    {n: [job ids]}, ...}; ``jobs`` job id -> job; ``issues`` number -> issue (PRs included, with
    ``pull_request: True``); ``comments`` issue number -> [comment]; ``labels`` repo -> name ->
    label; ``blobs`` sha -> bytes; ``trees`` sha -> entries; ``commits`` sha -> commit;
    ``refs`` repo -> "refs/heads/x" -> sha; ``requests`` -> [RequestRecord].

    Issue numbers and comment ids are unique across the whole fake (one counter), so
    ``fake.comments[5]`` needs no repository key; each record names its ``repo``.
    """

    def __init__(
        self,
        *,
        repos: Iterable[str] = ("acme/widgets",),
        host: str = "127.0.0.1",
        port: int = 0,
        server_url: str = "https://github.com",
        rate_limit: int = 1000,
        latency: tuple[float, float] = (0.0, 0.0),
        fail_rate: float = 0.0,
        seed: int = 0,
        read_only: bool = False,
        require_auth: bool = True,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.lock = threading.RLock()
        self.config = FakeConfig(
            rate_limit=rate_limit,
            latency=latency,
            fail_rate=fail_rate,
            seed=seed,
            read_only=read_only,
            require_auth=require_auth,
            server_url=server_url.rstrip("/"),
        )
        self._clock = clock or (lambda: datetime.now(UTC))
        self._rng = random.Random(seed)
        self._host = host
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
        self.trees: dict[str, list[JSON]] = {}
        self.commits: dict[str, JSON] = {}
        self.refs: dict[str, dict[str, str]] = {}
        self.requests: list[RequestRecord] = []
        self.faults: list[Fault] = []
        self.rate_used = 0
        self.rate_reset = int(time.time()) + 3600
        self._next_issue = 1
        self._next_comment = 1_000_000_001
        self._next_label = 5_000_000_001
        self._next_job = FIRST_JOB_ID
        self._next_repo_id = 700_000_001
        self._routes = self._route_table()
        for name in repos:
            self.add_repo(name)

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        """Bind the port and serve in a daemon thread."""
        server = _Server((self._host, self._port), _Handler)
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
        return f"http://{self._host}:{self.port}"

    @property
    def ghes_url(self) -> str:
        """``http://127.0.0.1:PORT/api/v3``, the GitHub Enterprise Server-style API root."""
        return self.base_url + GHES_PREFIX

    # ----------------------------------------------------------------- knobs

    def configure(self, **changes: Any) -> FakeConfig:
        """Change ``FakeConfig`` fields; a new ``rate_limit`` refills the budget."""
        with self.lock:
            for key, value in changes.items():
                if not hasattr(self.config, key):
                    raise TypeError(f"unknown FakeGitHub setting {key!r}")
                tuples = {"latency", "fail_kinds", "retry_after"}
                setattr(self.config, key, tuple(value) if key in tuples else value)
            if "seed" in changes:
                self._rng.seed(self.config.seed)
            if "rate_limit" in changes:
                self.rate_used = 0
            self.config.server_url = self.config.server_url.rstrip("/")
            return self.config

    def inject(
        self,
        *,
        method: str = ".*",
        path: str = ".*",
        status: int | None = 502,
        after_write: bool = False,
        silent: bool = False,
        times: int = 1,
        retry_after: int | None = None,
        message: str | None = None,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
        wait: threading.Event | None = None,
    ) -> Fault:
        """Queue a fault for the next ``times`` requests matching ``method`` and ``path``."""
        fault = Fault(
            method=method,
            path=path,
            status=status,
            after_write=after_write,
            silent=silent,
            times=times,
            retry_after=retry_after,
            message=message,
            headers=dict(headers or {}),
            delay=delay,
            wait=wait,
        )
        with self.lock:
            self.faults.append(fault)
        return fault

    @property
    def rate_remaining(self) -> int:
        """Requests left in the primary rate-limit budget."""
        return max(self.config.rate_limit - self.rate_used, 0)

    # ----------------------------------------------------------------- request log

    def request_counts(self) -> Counter[str]:
        """Requests served so far per HTTP method."""
        with self.lock:
            return Counter(r.method for r in self.requests)

    def writes(self) -> list[RequestRecord]:
        """Requests that used POST, PUT, PATCH or DELETE (applied or not)."""
        with self.lock:
            return [r for r in self.requests if r.write]

    def requests_to(self, method: str, path: str) -> list[RequestRecord]:
        """Requests with this method whose path matches the regex ``path`` (``re.search``)."""
        with self.lock:
            return [r for r in self.requests if r.method == method and re.search(path, r.path)]

    # ----------------------------------------------------------------- arrange helpers

    def add_repo(
        self,
        full_name: str,
        *,
        default_branch: str = "main",
        private: bool = False,
        files: Mapping[str, str | bytes] | None = None,
    ) -> JSON:
        """Create a repository whose default branch has one commit (README.md, plus ``files``)."""
        with self.lock:
            repo = {
                "full_name": full_name,
                "id": self._next_repo_id,
                "default_branch": default_branch,
                "private": private,
                "created_at": _iso(self._clock()),
            }
            self._next_repo_id += 1
            self.repos[full_name] = repo
            self.labels.setdefault(full_name, {})
            self.refs.setdefault(full_name, {})
            content: dict[str, str | bytes] = {"README.md": f"# {full_name}\n", **(files or {})}
            flat = {
                path: {"mode": "100644", "type": "blob", "sha": self._store_blob(_as_bytes(data))}
                for path, data in content.items()
            }
            commit = self._store_commit(self._build_tree(flat), [], "Initial commit")
            self.refs[full_name][f"refs/heads/{default_branch}"] = commit
            return repo

    def add_run(
        self,
        repo: str,
        run_id: int,
        attempt: int = 1,
        jobs: Iterable[Mapping[str, Any]] = (),
        **run_fields: Any,
    ) -> list[JSON]:
        """Add (or extend) workflow run ``run_id`` with one attempt's jobs; return the new jobs.

        Each job mapping needs ``name``; it may give ``matrix`` (values appended as GitHub does)
        and ``caller`` (reusable-workflow prefix), plus any job field (``status``,
        ``conclusion``, ``runner_name``, ``labels``, ...). Job ids increase across the fake.
        """
        with self.lock:
            self._repo_or_404(repo)
            run = self.runs.get(run_id)
            if run is None:
                now = _iso(self._clock())
                run = {
                    "id": run_id,
                    "repo": repo,
                    "name": "ci",
                    "path": ".github/workflows/ci.yml",
                    "event": "push",
                    "head_branch": self.repos[repo]["default_branch"],
                    "head_sha": self._branch_tip(repo, self.repos[repo]["default_branch"]),
                    "run_number": run_id % 10_000 or 1,
                    "workflow_id": 161335,
                    "status": "in_progress",
                    "conclusion": None,
                    "created_at": now,
                    "attempts": {},
                }
                self.runs[run_id] = run
            run.update(run_fields)
            created: list[JSON] = []
            ids = run["attempts"].setdefault(attempt, [])
            for spec in jobs:
                job = self._new_job(run, attempt, spec)
                ids.append(job["id"])
                created.append(job)
            return created

    def _new_job(self, run: JSON, attempt: int, spec: Mapping[str, Any]) -> JSON:
        extra = {k: v for k, v in spec.items() if k not in {"name", "matrix", "caller"}}
        job_id = self._next_job
        self._next_job += 1
        now = _iso(self._clock())
        job: JSON = {
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
            "runner_id": job_id % 1000 + 1,
            "runner_name": f"GitHub Actions {job_id % 1000 + 1}",
            "runner_group_id": 2,
            "runner_group_name": "GitHub Actions",
            "labels": ["ubuntu-latest"],
            "workflow_name": run["name"],
            "head_branch": run["head_branch"],
            "head_sha": run["head_sha"],
            "steps": [],
            **extra,
        }
        self.jobs[job_id] = job
        return job

    def add_issue(
        self,
        repo: str = "acme/widgets",
        *,
        title: str = "Issue",
        body: str | None = None,
        labels: Iterable[str] = (),
        state: str = "open",
        user: str = BOT_LOGIN,
        pull_request: bool = False,
    ) -> JSON:
        """Create an issue (or, with ``pull_request=True``, a PR item) directly in state."""
        with self.lock:
            self._repo_or_404(repo)
            issue = self._create_issue(repo, title, body, list(labels), user=user)
            issue["pull_request"] = pull_request
            if state == "closed":
                issue.update(
                    state="closed", state_reason="completed", closed_at=issue["created_at"]
                )
            return issue

    def add_comment(self, number: int, body: str, *, user: str = BOT_LOGIN) -> JSON:
        """Add a comment to issue ``number`` directly in state."""
        with self.lock:
            return self._create_comment(self.issues[number], body, user=user)

    def ref_sha(self, ref: str, repo: str = "acme/widgets") -> str | None:
        """The commit sha ``ref`` (``heads/x`` or ``refs/heads/x``) points at, or None."""
        with self.lock:
            name = ref if ref.startswith("refs/") else f"refs/{ref}"
            return self.refs.get(repo, {}).get(name)

    def files(self, branch: str | None = None, repo: str = "acme/widgets") -> dict[str, bytes]:
        """Every file on ``branch`` (default branch if None) as path -> bytes."""
        with self.lock:
            tip = self._branch_tip(repo, branch or self.repos[repo]["default_branch"])
            flat = self._flatten(self.commits[tip]["tree"])
            return {path: self.blobs[e["sha"]] for path, e in sorted(flat.items())}

    def read_file(self, path: str, branch: str | None = None, repo: str = "acme/widgets") -> str:
        """The text of one file on ``branch``; KeyError if absent."""
        return self.files(branch, repo)[path].decode()

    def snapshot(self) -> JSON:
        """The whole state as JSON-serialisable data (what ``GET /_fake/state`` returns)."""
        with self.lock:
            return {
                "base_url": self.base_url if self._server else None,
                "config": dataclasses.asdict(self.config),
                "rate": {"limit": self.config.rate_limit, "used": self.rate_used},
                "repos": self.repos,
                "runs": {str(k): _jsonable(v) for k, v in self.runs.items()},
                "jobs": {str(k): v for k, v in self.jobs.items()},
                "issues": {str(k): v for k, v in self.issues.items()},
                "comments": {str(k): v for k, v in self.comments.items()},
                "labels": self.labels,
                "refs": self.refs,
                "commits": self.commits,
                "trees": self.trees,
                "blobs": {k: base64.b64encode(v).decode() for k, v in self.blobs.items()},
                "files": {
                    repo: {
                        ref.removeprefix("refs/heads/"): {
                            p: _text_or_b64(b) for p, b in self._files_at(sha).items()
                        }
                        for ref, sha in refs.items()
                        if ref.startswith("refs/heads/")
                    }
                    for repo, refs in self.refs.items()
                },
                "requests": [dataclasses.asdict(r) for r in self.requests],
                "request_counts": dict(Counter(r.method for r in self.requests)),
            }

    def seed_data(self, data: Mapping[str, Any]) -> None:
        """Add repos, runs, issues, comments and labels from JSON (``--seed``, ``/_fake/seed``)."""
        for repo in data.get("repos", []):
            spec: dict[str, Any] = {"full_name": repo} if isinstance(repo, str) else dict(repo)
            self.add_repo(
                spec["full_name"],
                default_branch=spec.get("default_branch", "main"),
                private=bool(spec.get("private", False)),
                files=spec.get("files"),
            )
        for run in data.get("runs", []):
            spec = dict(run)
            self.add_run(
                spec.pop("repo", "acme/widgets"),
                int(spec.pop("run_id")),
                int(spec.pop("attempt", 1)),
                spec.pop("jobs", []),
                **spec,
            )
        for issue in data.get("issues", []):
            spec = dict(issue)
            comments = spec.pop("comments", [])
            created = self.add_issue(spec.pop("repo", "acme/widgets"), **spec)
            for body in comments:
                self.add_comment(created["number"], body)
        for label in data.get("labels", []):
            with self.lock:
                self._create_label(
                    label.get("repo", "acme/widgets"),
                    label["name"],
                    label.get("color", "ededed"),
                    label.get("description"),
                )

    # ----------------------------------------------------------------- serving

    def _serve(self, h: _Handler) -> None:
        split = urllib.parse.urlsplit(h.path)
        path = split.path
        query = {
            k: v[-1] for k, v in urllib.parse.parse_qs(split.query, keep_blank_values=True).items()
        }
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        method = h.command
        if path.startswith("/_fake/"):
            self._send(h, *self._control(method, path, raw))
            return
        prefix = GHES_PREFIX if path == GHES_PREFIX or path.startswith(GHES_PREFIX + "/") else ""
        api_path = path[len(prefix) :] or "/"
        low, high = self.config.latency
        if high > 0:
            with self.lock:
                pause = self._rng.uniform(low, high)
            time.sleep(pause)
        fault = self._take_fault(method, api_path)
        if fault is not None:
            if fault.wait is not None:
                fault.wait.wait(timeout=30)
            if fault.delay:
                time.sleep(fault.delay)
            if fault.status is None:
                fault = None
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = _INVALID_JSON
        with self.lock:
            req = _Req(method, api_path, query, h.headers, body, self.base_url + prefix)
            status, payload, headers = self._answer(req, fault)
            self.requests.append(
                RequestRecord(
                    method=method,
                    path=api_path,
                    query=query,
                    status=status,
                    write=method in WRITE_METHODS,
                    body=None if body is _INVALID_JSON else body,
                    authorization=h.headers.get("Authorization"),
                    prefix=prefix,
                )
            )
        self._send(h, status, payload, headers)

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

    def _answer(self, req: _Req, fault: Fault | None) -> Response:
        counted = req.path != "/rate_limit"
        try:
            status, payload, headers = self._guarded(req, fault)
        except _Fail as fail:
            status, payload, headers = fail.status, fail.body, {}
        except Exception as exc:  # noqa: BLE001  -- a bug in the fake must answer, not hang
            traceback.print_exc()
            status, payload, headers = 500, {"message": f"FakeGitHub bug: {exc!r}"}, {}
        if status == 304:
            counted = False
        if counted and self.rate_remaining > 0:
            self.rate_used += 1
        headers.update(self._rate_headers())
        return status, payload, headers

    def _guarded(self, req: _Req, fault: Fault | None) -> Response:
        method, path, headers_in = req.method, req.path, req.headers
        write = method in WRITE_METHODS
        if self.config.require_auth and not re.match(
            r"(token|bearer) \S", headers_in.get("Authorization", ""), re.IGNORECASE
        ):
            raise _Fail(401, "Requires authentication")
        if path != "/rate_limit" and self.rate_remaining <= 0:
            raise _Fail(
                403,
                f"API rate limit exceeded for installation ID {INSTALLATION_ID}. If you reach out "
                "to GitHub Support for help, please include the request ID 0000:FAKE and "
                "timestamp 2026-01-01 00:00:00 UTC.",
                f"{DOCS}/overview/rate-limits-for-the-rest-api",
            )
        if write and any(headers_in.get(name) for name in CONDITIONAL_HEADERS):
            raise _Fail(
                400,
                "Conditional request headers are not allowed in unsafe requests unless supported "
                "by the endpoint",
            )
        if fault is not None and fault.silent:
            handler, req.params = self._route("GET", path)
            return handler(req)
        if fault is not None and not fault.after_write:
            return self._fault_response(fault)
        if self.config.fail_rate and self._rng.random() < self.config.fail_rate:
            return self._random_fault()
        if req.body is _INVALID_JSON:
            raise _Fail(400, "Problems parsing JSON")
        handler, req.params = self._route(method, path)
        if write and self.config.read_only:
            raise _Fail(403, "Resource not accessible by integration")
        status, payload, headers = handler(req)
        if fault is not None and status < 400:
            return self._fault_response(fault)
        if method == "GET" and status == 200:
            etag = 'W/"' + hashlib.sha256(_dump(payload)).hexdigest() + '"'
            headers["ETag"] = etag
            if headers_in.get("If-None-Match") in {etag, etag.removeprefix("W/")}:
                return 304, None, headers
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
        headers = dict(fault.headers)
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
        message = fault.message or {
            403: SECONDARY_MESSAGE,
            429: SECONDARY_MESSAGE,
            502: "Server Error",
            503: "Service Unavailable",
        }.get(status, "Injected fault")
        return (
            status,
            {"message": message, "documentation_url": DOCS, "status": str(status)},
            headers,
        )

    def _random_fault(self) -> Response:
        kind = self._rng.choice(self.config.fail_kinds)
        retry_after = self._rng.choice(self.config.retry_after)
        if kind in {"502", "503"}:
            return self._fault_response(Fault(status=int(kind)))
        if kind == "403-secondary":
            return self._fault_response(Fault(status=403, retry_after=retry_after))
        if kind == "429":
            return self._fault_response(Fault(status=429, retry_after=retry_after))
        return self._fault_response(Fault(status=429))

    def _rate_headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.config.rate_limit),
            "X-RateLimit-Remaining": str(self.rate_remaining),
            "X-RateLimit-Used": str(min(self.rate_used, self.config.rate_limit)),
            "X-RateLimit-Reset": str(self.rate_reset),
            "X-RateLimit-Resource": "core",
            "X-GitHub-Api-Version-Selected": "2022-11-28",
            "X-GitHub-Media-Type": "github.v3; format=json",
        }

    @staticmethod
    def _send(h: _Handler, status: int, payload: Any, headers: Mapping[str, str]) -> None:
        data = b"" if status in {204, 304} or payload is None else _dump(payload)
        h.send_response(status)
        for key, value in headers.items():
            h.send_header(key, value)
        if status not in {204, 304}:
            h.send_header("Content-Type", "application/json; charset=utf-8")
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if data:
            h.wfile.write(data)
        h.wfile.flush()

    def _control_seed(self, body: Any) -> Response:
        self.seed_data(body)
        return 201, {"ok": True}, {}

    def _control(self, method: str, path: str, raw: bytes) -> Response:
        actions: dict[tuple[str, str], Callable[[Any], Response]] = {
            ("GET", "/_fake/state"): lambda _: (200, self.snapshot(), {}),
            ("GET", "/_fake/requests"): lambda _: (200, self.snapshot()["requests"], {}),
            ("POST", "/_fake/config"): lambda b: (200, dataclasses.asdict(self.configure(**b)), {}),
            ("POST", "/_fake/inject"): lambda b: (201, _fault_json(self.inject(**b)), {}),
            ("POST", "/_fake/seed"): self._control_seed,
        }
        action = actions.get((method, path))
        if action is None:
            return 404, {"message": "Not Found"}, {}
        try:
            return action(json.loads(raw) if raw else {})
        except (TypeError, ValueError, KeyError) as exc:
            return 400, {"message": f"bad control request: {exc}"}, {}

    # ----------------------------------------------------------------- routes

    def _route_table(self) -> list[tuple[str, re.Pattern[str], Callable[[_Req], Response]]]:
        repo = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
        table: list[tuple[str, str, Callable[[_Req], Response]]] = [
            ("GET", r"/rate_limit", self._get_rate_limit),
            ("GET", repo, self._get_repo),
            # actions
            ("GET", repo + r"/actions/runs/(?P<run>\d+)", self._get_run),
            ("GET", repo + r"/actions/runs/(?P<run>\d+)/attempts/(?P<n>\d+)", self._get_run),
            ("GET", repo + r"/actions/runs/(?P<run>\d+)/jobs", self._list_run_jobs),
            (
                "GET",
                repo + r"/actions/runs/(?P<run>\d+)/attempts/(?P<n>\d+)/jobs",
                self._list_run_jobs,
            ),
            ("GET", repo + r"/actions/jobs/(?P<job>\d+)", self._get_job),
            # issues, comments, labels
            ("GET", repo + r"/issues", self._list_issues),
            ("POST", repo + r"/issues", self._post_issue),
            ("GET", repo + r"/issues/comments/(?P<id>\d+)", self._get_comment),
            ("PATCH", repo + r"/issues/comments/(?P<id>\d+)", self._patch_comment),
            ("DELETE", repo + r"/issues/comments/(?P<id>\d+)", self._delete_comment),
            ("GET", repo + r"/issues/(?P<number>\d+)", self._get_issue),
            ("PATCH", repo + r"/issues/(?P<number>\d+)", self._patch_issue),
            ("PUT", repo + r"/issues/(?P<number>\d+)/lock", self._lock_issue),
            ("GET", repo + r"/issues/(?P<number>\d+)/comments", self._list_comments),
            ("POST", repo + r"/issues/(?P<number>\d+)/comments", self._post_comment),
            ("GET", repo + r"/issues/(?P<number>\d+)/labels", self._list_issue_labels),
            ("POST", repo + r"/issues/(?P<number>\d+)/labels", self._add_issue_labels),
            ("GET", repo + r"/labels", self._list_labels),
            ("POST", repo + r"/labels", self._post_label),
            ("GET", repo + r"/labels/(?P<name>[^/]+)", self._get_label),
            # git data
            ("GET", repo + r"/git/ref/(?P<ref>.+)", self._get_ref),
            ("GET", repo + r"/git/matching-refs/(?P<ref>.*)", self._matching_refs),
            ("POST", repo + r"/git/refs", self._post_ref),
            ("PATCH", repo + r"/git/refs/(?P<ref>.+)", self._patch_ref),
            ("DELETE", repo + r"/git/refs/(?P<ref>.+)", self._delete_ref),
            ("POST", repo + r"/git/blobs", self._post_blob),
            ("GET", repo + r"/git/blobs/(?P<sha>[0-9a-f]{40})", self._get_blob),
            ("POST", repo + r"/git/trees", self._post_tree),
            ("GET", repo + r"/git/trees/(?P<sha>[^/]+)", self._get_tree),
            ("POST", repo + r"/git/commits", self._post_commit),
            ("GET", repo + r"/git/commits/(?P<sha>[0-9a-f]{40})", self._get_commit),
            ("GET", repo + r"/branches/(?P<branch>.+)", self._get_branch),
            # contents
            ("GET", repo + r"/contents/?(?P<path>.*)", self._get_contents),
            ("PUT", repo + r"/contents/(?P<path>.+)", self._put_contents),
            ("DELETE", repo + r"/contents/(?P<path>.+)", self._delete_contents),
        ]
        return [(verb, re.compile(pattern), handler) for verb, pattern, handler in table]

    # ----------------------------------------------------------------- shapes

    def _html(self, *parts: object) -> str:
        return "/".join([self.config.server_url, *(str(p) for p in parts)])

    def _user(self, api: str, login: str = BOT_LOGIN) -> JSON:
        bot = login.endswith("[bot]")
        user_id = BOT_ID if login == BOT_LOGIN else 1000 + sum(login.encode())
        url = f"{api}/users/{urllib.parse.quote(login)}"
        return {
            "login": login,
            "id": user_id,
            "node_id": f"MDM6Qm90{user_id}",
            "avatar_url": f"https://avatars.githubusercontent.com/in/{user_id}?v=4",
            "gravatar_id": "",
            "url": url,
            "html_url": self._html("apps/github-actions" if bot else login),
            "followers_url": f"{url}/followers",
            "following_url": f"{url}/following{{/other_user}}",
            "gists_url": f"{url}/gists{{/gist_id}}",
            "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{url}/subscriptions",
            "organizations_url": f"{url}/orgs",
            "repos_url": f"{url}/repos",
            "events_url": f"{url}/events{{/privacy}}",
            "received_events_url": f"{url}/received_events",
            "type": "Bot" if bot else "User",
            "user_view_type": "public",
            "site_admin": False,
        }

    def _repo_json(self, api: str, name: str, *, full: bool) -> JSON:
        repo = self.repos[name]
        owner, short = name.split("/")
        url = f"{api}/repos/{name}"
        owner_user = self._user(api, owner)
        owner_user["type"] = "Organization"
        data: JSON = {
            "id": repo["id"],
            "node_id": f"R_kgDO{repo['id']}",
            "name": short,
            "full_name": name,
            "private": repo["private"],
            "owner": owner_user,
            "html_url": self._html(name),
            "description": None,
            "fork": False,
            "url": url,
            "archive_url": f"{url}/{{archive_format}}{{/ref}}",
            "assignees_url": f"{url}/assignees{{/user}}",
            "blobs_url": f"{url}/git/blobs{{/sha}}",
            "branches_url": f"{url}/branches{{/branch}}",
            "collaborators_url": f"{url}/collaborators{{/collaborator}}",
            "comments_url": f"{url}/comments{{/number}}",
            "commits_url": f"{url}/commits{{/sha}}",
            "compare_url": f"{url}/compare/{{base}}...{{head}}",
            "contents_url": f"{url}/contents/{{+path}}",
            "contributors_url": f"{url}/contributors",
            "deployments_url": f"{url}/deployments",
            "downloads_url": f"{url}/downloads",
            "events_url": f"{url}/events",
            "forks_url": f"{url}/forks",
            "git_commits_url": f"{url}/git/commits{{/sha}}",
            "git_refs_url": f"{url}/git/refs{{/sha}}",
            "git_tags_url": f"{url}/git/tags{{/sha}}",
            "git_url": f"git://{_host(self.config.server_url)}/{name}.git",
            "issue_comment_url": f"{url}/issues/comments{{/number}}",
            "issue_events_url": f"{url}/issues/events{{/number}}",
            "issues_url": f"{url}/issues{{/number}}",
            "keys_url": f"{url}/keys{{/key_id}}",
            "labels_url": f"{url}/labels{{/name}}",
            "languages_url": f"{url}/languages",
            "merges_url": f"{url}/merges",
            "milestones_url": f"{url}/milestones{{/number}}",
            "notifications_url": f"{url}/notifications{{?since,all,participating}}",
            "pulls_url": f"{url}/pulls{{/number}}",
            "releases_url": f"{url}/releases{{/id}}",
            "ssh_url": f"git@{_host(self.config.server_url)}:{name}.git",
            "stargazers_url": f"{url}/stargazers",
            "statuses_url": f"{url}/statuses/{{sha}}",
            "subscribers_url": f"{url}/subscribers",
            "subscription_url": f"{url}/subscription",
            "tags_url": f"{url}/tags",
            "teams_url": f"{url}/teams",
            "trees_url": f"{url}/git/trees{{/sha}}",
            "hooks_url": f"{url}/hooks",
        }
        if not full:
            return data
        open_issues = sum(
            1 for i in self.issues.values() if i["repo"] == name and i["state"] == "open"
        )
        data.update(
            {
                "clone_url": self._html(f"{name}.git"),
                "mirror_url": None,
                "svn_url": self._html(name),
                "homepage": None,
                "language": "Python",
                "forks_count": 0,
                "forks": 0,
                "stargazers_count": 0,
                "watchers_count": 0,
                "watchers": 0,
                "size": 100,
                "default_branch": repo["default_branch"],
                "open_issues_count": open_issues,
                "open_issues": open_issues,
                "is_template": False,
                "topics": [],
                "has_issues": True,
                "has_projects": True,
                "has_wiki": True,
                "has_pages": False,
                "has_downloads": True,
                "has_discussions": False,
                "archived": False,
                "disabled": False,
                "visibility": "private" if repo["private"] else "public",
                "pushed_at": repo["created_at"],
                "created_at": repo["created_at"],
                "updated_at": repo["created_at"],
                "permissions": {
                    "admin": False,
                    "maintain": False,
                    "push": not self.config.read_only,
                    "triage": not self.config.read_only,
                    "pull": True,
                },
                "allow_forking": True,
                "web_commit_signoff_required": False,
                "license": None,
                "network_count": 0,
                "subscribers_count": 0,
            }
        )
        return data

    def _run_json(self, api: str, run: JSON, attempt: int) -> JSON:
        name = run["repo"]
        url = f"{api}/repos/{name}/actions/runs/{run['id']}"
        tip = run["head_sha"]
        commit = self.commits.get(tip)
        author = {"name": BOT_LOGIN, "email": BOT_EMAIL}
        return {
            "id": run["id"],
            "name": run["name"],
            "node_id": f"WFR_kwLO{run['id']}",
            "check_suite_id": run["id"] * 3,
            "check_suite_node_id": f"CS_kwDO{run['id']}",
            "head_branch": run["head_branch"],
            "head_sha": tip,
            "path": run["path"],
            "display_title": commit["message"].splitlines()[0] if commit else run["name"],
            "run_number": run["run_number"],
            "run_attempt": attempt,
            "event": run["event"],
            "status": run["status"],
            "conclusion": run["conclusion"],
            "workflow_id": run["workflow_id"],
            "url": url,
            "html_url": self._html(name, "actions/runs", run["id"]),
            "pull_requests": [],
            "created_at": run["created_at"],
            "updated_at": run["created_at"],
            "run_started_at": run["created_at"],
            "actor": self._user(api, run.get("actor", "octocat")),
            "triggering_actor": self._user(api, run.get("actor", "octocat")),
            "jobs_url": f"{url}/jobs",
            "logs_url": f"{url}/logs",
            "check_suite_url": f"{api}/repos/{name}/check-suites/{run['id'] * 3}",
            "artifacts_url": f"{url}/artifacts",
            "cancel_url": f"{url}/cancel",
            "rerun_url": f"{url}/rerun",
            "previous_attempt_url": f"{url}/attempts/{attempt - 1}" if attempt > 1 else None,
            "workflow_url": f"{api}/repos/{name}/actions/workflows/{run['workflow_id']}",
            "head_commit": {
                "id": tip,
                "tree_id": commit["tree"] if commit else tip,
                "message": commit["message"] if commit else "",
                "timestamp": run["created_at"],
                "author": author,
                "committer": author,
            },
            "repository": self._repo_json(api, name, full=False),
            "head_repository": self._repo_json(api, name, full=False),
        }

    def _job_json(self, api: str, job: JSON) -> JSON:
        name = job["repo"]
        return {
            "id": job["id"],
            "run_id": job["run_id"],
            "run_url": f"{api}/repos/{name}/actions/runs/{job['run_id']}",
            "run_attempt": job["run_attempt"],
            "node_id": f"CR_kwDO{job['id']}",
            "head_sha": job["head_sha"],
            "url": f"{api}/repos/{name}/actions/jobs/{job['id']}",
            "html_url": self._html(name, "actions/runs", job["run_id"], "job", job["id"]),
            "status": job["status"],
            "conclusion": job["conclusion"],
            "created_at": job["created_at"],
            "started_at": job["started_at"],
            "completed_at": job["completed_at"],
            "name": job["name"],
            "steps": job["steps"],
            "check_run_url": f"{api}/repos/{name}/check-runs/{job['id']}",
            "labels": job["labels"],
            "runner_id": job["runner_id"],
            "runner_name": job["runner_name"],
            "runner_group_id": job["runner_group_id"],
            "runner_group_name": job["runner_group_name"],
            "workflow_name": job["workflow_name"],
            "head_branch": job["head_branch"],
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
        name = issue["repo"]
        number = issue["number"]
        url = f"{api}/repos/{name}/issues/{number}"
        kind = "pull" if issue["pull_request"] else "issues"
        data: JSON = {
            "id": issue["id"],
            "node_id": f"I_kwDO{issue['id']}",
            "url": url,
            "repository_url": f"{api}/repos/{name}",
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": self._html(name, kind, number),
            "number": number,
            "state": issue["state"],
            "state_reason": issue["state_reason"],
            "title": issue["title"],
            "body": issue["body"],
            "user": self._user(api, issue["user"]),
            "labels": [
                self._label_json(api, name, self.labels[name][label.lower()])
                for label in issue["labels"]
            ],
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "locked": issue["locked"],
            "active_lock_reason": issue["active_lock_reason"],
            "comments": len(self.comments.get(number, [])),
            "closed_at": issue["closed_at"],
            "created_at": issue["created_at"],
            "updated_at": issue["updated_at"],
            "closed_by": self._user(api) if issue["state"] == "closed" else None,
            "author_association": "NONE",
            "timeline_url": f"{url}/timeline",
        }
        if issue["pull_request"]:
            pulls = f"{api}/repos/{name}/pulls/{number}"
            data["draft"] = False
            data["pull_request"] = {
                "url": pulls,
                "html_url": self._html(name, "pull", number),
                "diff_url": self._html(name, "pull", f"{number}.diff"),
                "patch_url": self._html(name, "pull", f"{number}.patch"),
                "merged_at": None,
            }
        return data

    def _comment_json(self, api: str, comment: JSON) -> JSON:
        name = comment["repo"]
        number = comment["issue"]
        kind = "pull" if self.issues[number]["pull_request"] else "issues"
        return {
            "id": comment["id"],
            "node_id": f"IC_kwDO{comment['id']}",
            "url": f"{api}/repos/{name}/issues/comments/{comment['id']}",
            "html_url": self._html(name, kind, f"{number}#issuecomment-{comment['id']}"),
            "body": comment["body"],
            "user": self._user(api, comment["user"]),
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
        return {
            "sha": sha,
            "node_id": f"C_kwDO{sha[:20]}",
            "url": f"{api}/repos/{repo}/git/commits/{sha}",
            "html_url": self._html(repo, "commit", sha),
            "author": dict(commit["author"]),
            "committer": dict(commit["committer"]),
            "tree": {
                "sha": commit["tree"],
                "url": f"{api}/repos/{repo}/git/trees/{commit['tree']}",
            },
            "message": commit["message"],
            "parents": [
                {
                    "sha": p,
                    "url": f"{api}/repos/{repo}/git/commits/{p}",
                    "html_url": self._html(repo, "commit", p),
                }
                for p in commit["parents"]
            ],
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
        }

    def _tree_json(self, api: str, repo: str, sha: str, *, recursive: bool = False) -> JSON:
        entries: list[JSON] = []

        def walk(tree_sha: str, prefix: str) -> None:
            for entry in self.trees[tree_sha]:
                item: JSON = {
                    "path": prefix + entry["path"],
                    "mode": entry["mode"],
                    "type": entry["type"],
                    "sha": entry["sha"],
                }
                if entry["type"] == "blob":
                    item["size"] = len(self.blobs[entry["sha"]])
                    item["url"] = f"{api}/repos/{repo}/git/blobs/{entry['sha']}"
                elif entry["type"] == "tree":
                    item["url"] = f"{api}/repos/{repo}/git/trees/{entry['sha']}"
                entries.append(item)
                if recursive and entry["type"] == "tree":
                    walk(entry["sha"], item["path"] + "/")

        walk(sha, "")
        return {
            "sha": sha,
            "url": f"{api}/repos/{repo}/git/trees/{sha}",
            "tree": entries,
            "truncated": False,
        }

    def _content_json(self, api: str, repo: str, ref: str, path: str, sha: str) -> JSON:
        data = self.blobs[sha]
        quoted = urllib.parse.quote(path)
        links = self._content_links(api, repo, ref, path, sha=sha, kind="blob")
        encoded = base64.b64encode(data).decode()
        return {
            "type": "file",
            "encoding": "base64",
            "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            # GitHub wraps the base64 at 60 columns; b64decode ignores the newlines.
            "content": "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60)),
            "sha": sha,
            "url": f"{api}/repos/{repo}/contents/{quoted}?ref={urllib.parse.quote(ref)}",
            "git_url": links["git"],
            "html_url": links["html"],
            "download_url": self._raw_url(repo, ref, quoted),
            "_links": links,
        }

    def _content_links(
        self, api: str, repo: str, ref: str, path: str, *, sha: str, kind: str
    ) -> dict[str, str]:
        quoted = urllib.parse.quote(path)
        git = "blobs" if kind == "blob" else "trees"
        return {
            "self": f"{api}/repos/{repo}/contents/{quoted}?ref={urllib.parse.quote(ref)}",
            "git": f"{api}/repos/{repo}/git/{git}/{sha}",
            "html": self._html(repo, kind, ref, quoted),
        }

    def _raw_url(self, repo: str, ref: str, quoted_path: str) -> str:
        if self.config.server_url == "https://github.com":
            return f"https://raw.githubusercontent.com/{repo}/{ref}/{quoted_path}"
        return self._html(repo, "raw", ref, quoted_path)

    def _dir_json(self, api: str, repo: str, ref: str, prefix: str, tree_sha: str) -> list[JSON]:
        items = []
        for entry in self.trees[tree_sha]:
            path = f"{prefix}{entry['path']}"
            is_dir = entry["type"] == "tree"
            kind = "tree" if is_dir else "blob"
            links = self._content_links(api, repo, ref, path, sha=entry["sha"], kind=kind)
            items.append(
                {
                    "type": "dir" if is_dir else "file",
                    "size": 0 if is_dir else len(self.blobs[entry["sha"]]),
                    "name": entry["path"],
                    "path": path,
                    "sha": entry["sha"],
                    "url": links["self"],
                    "git_url": links["git"],
                    "html_url": links["html"],
                    "download_url": None
                    if is_dir
                    else self._raw_url(repo, ref, urllib.parse.quote(path)),
                    "_links": links,
                }
            )
        return items

    # ----------------------------------------------------------------- state helpers

    def _repo_or_404(self, name: str) -> JSON:
        repo = self.repos.get(name)
        if repo is None:
            raise _not_found()
        return repo

    def _now(self) -> str:
        return _iso(self._clock())

    def _paginate(self, req: _Req, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
        try:
            per_page = min(max(int(req.query.get("per_page", 30)), 1), 100)
            page = max(int(req.query.get("page", 1)), 1)
        except ValueError as exc:
            raise _Fail(422, "Invalid request.\n\nInvalid value for per_page or page.") from exc
        last = max((len(items) + per_page - 1) // per_page, 1)
        links = []

        def link(number: int, rel: str) -> str:
            query = {**req.query, "per_page": str(per_page), "page": str(number)}
            return f'<{req.api}{req.path}?{urllib.parse.urlencode(query)}>; rel="{rel}"'

        if page > 1:
            links.append(link(page - 1, "prev"))
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links.append(link(1, "first"))
        headers = {"Link": ", ".join(links)} if links else {}
        return items[(page - 1) * per_page : page * per_page], headers

    def _create_issue(
        self, repo: str, title: str, body: str | None, labels: list[str], *, user: str
    ) -> JSON:
        now = self._now()
        number = self._next_issue
        self._next_issue += 1
        issue = {
            "number": number,
            "id": 2_000_000_000 + number,
            "repo": repo,
            "title": title,
            "body": body,
            "state": "open",
            "state_reason": None,
            "labels": [],
            "user": user,
            "locked": False,
            "active_lock_reason": None,
            "pull_request": False,
            "created_at": now,
            "updated_at": now,
            "closed_at": None,
        }
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
        label = {
            "id": self._next_label,
            "name": name,
            "color": color.removeprefix("#"),
            "description": description,
        }
        self._next_label += 1
        self.labels.setdefault(repo, {})[name.lower()] = label
        return label

    def _create_comment(self, issue: JSON, body: str, *, user: str) -> JSON:
        now = self._now()
        comment = {
            "id": self._next_comment,
            "repo": issue["repo"],
            "issue": issue["number"],
            "body": body,
            "user": user,
            "created_at": now,
            "updated_at": now,
        }
        self._next_comment += 1
        self.comments.setdefault(issue["number"], []).append(comment)
        return comment

    def _issue_or_404(self, req: _Req) -> JSON:
        self._repo_or_404(req.repo_name)
        issue = self.issues.get(req.int_param("number"))
        if issue is None or issue["repo"] != req.repo_name:
            raise _not_found()
        return issue

    def _comment_or_404(self, req: _Req) -> JSON:
        self._repo_or_404(req.repo_name)
        wanted = req.int_param("id")
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] == wanted and comment["repo"] == req.repo_name:
                    return comment
        raise _not_found()

    def _store_blob(self, data: bytes) -> str:
        sha = git_blob_sha(data)
        self.blobs[sha] = data
        return sha

    def _store_tree(self, entries: list[JSON]) -> str:
        ordered = sorted(entries, key=_tree_sort_key)
        payload = b"".join(
            f"{e['mode'].lstrip('0')} {e['path']}".encode() + b"\0" + bytes.fromhex(e["sha"])
            for e in ordered
        )
        sha = _git_object_sha("tree", payload)
        self.trees[sha] = ordered
        return sha

    def _store_commit(
        self,
        tree: str,
        parents: list[str],
        message: str,
        author: Mapping[str, str] | None = None,
        committer: Mapping[str, str] | None = None,
    ) -> str:
        now = self._now()
        who = {"name": BOT_LOGIN, "email": BOT_EMAIL, "date": now}
        author_ = {**who, **(author or {})}
        committer_ = {**who, **committer} if committer else dict(author_)

        def line(role: str, person: Mapping[str, str]) -> str:
            moment = datetime.fromisoformat(person["date"])
            return f"{role} {person['name']} <{person['email']}> {int(moment.timestamp())} +0000"

        text = "".join(
            [
                f"tree {tree}\n",
                *(f"parent {p}\n" for p in parents),
                line("author", author_) + "\n",
                line("committer", committer_) + "\n",
                "\n",
                message,
            ]
        )
        sha = _git_object_sha("commit", text.encode())
        self.commits[sha] = {
            "tree": tree,
            "parents": list(parents),
            "message": message,
            "author": author_,
            "committer": committer_,
        }
        return sha

    def _flatten(self, tree_sha: str, prefix: str = "") -> dict[str, JSON]:
        flat: dict[str, JSON] = {}
        for entry in self.trees[tree_sha]:
            path = prefix + entry["path"]
            if entry["type"] == "tree":
                flat.update(self._flatten(entry["sha"], path + "/"))
            else:
                flat[path] = {"mode": entry["mode"], "type": entry["type"], "sha": entry["sha"]}
        return flat

    def _build_tree(self, flat: Mapping[str, JSON]) -> str:
        here: list[JSON] = []
        below: dict[str, dict[str, JSON]] = {}
        for path, entry in flat.items():
            head, sep, rest = path.partition("/")
            if sep:
                below.setdefault(head, {})[rest] = entry
            else:
                here.append({"path": head, **entry})
        for name, sub in below.items():
            here.append(
                {"path": name, "mode": "040000", "type": "tree", "sha": self._build_tree(sub)}
            )
        return self._store_tree(here)

    def _files_at(self, commit_sha: str) -> dict[str, bytes]:
        flat = self._flatten(self.commits[commit_sha]["tree"])
        return {path: self.blobs[e["sha"]] for path, e in sorted(flat.items())}

    def _branch_tip(self, repo: str, branch: str) -> str:
        sha = self.refs.get(repo, {}).get(f"refs/heads/{branch}")
        if sha is None:
            raise KeyError(f"no branch {branch!r} in {repo}")
        return sha

    def _is_ancestor(self, ancestor: str, sha: str) -> bool:
        seen: set[str] = set()
        todo = [sha]
        while todo:
            current = todo.pop()
            if current == ancestor:
                return True
            if current in seen or current not in self.commits:
                continue
            seen.add(current)
            todo.extend(self.commits[current]["parents"])
        return False

    def _resolve_ref(self, repo: str, ref: str | None) -> tuple[str, str]:
        """Return (ref name as shown, commit sha) for a branch, ``heads/x``, tag or commit sha."""
        name = ref or self.repos[repo]["default_branch"]
        refs = self.refs[repo]
        for candidate in (f"refs/heads/{name}", f"refs/{name}", name, f"refs/tags/{name}"):
            if candidate in refs:
                return name, refs[candidate]
        if re.fullmatch(r"[0-9a-f]{40}", name) and name in self.commits:
            return name, name
        raise _Fail(404, f"No commit found for the ref {name}", f"{DOCS}/repos/contents")

    # ----------------------------------------------------------------- handlers: misc

    def _get_rate_limit(self, _req: _Req) -> Response:
        core = {
            "limit": self.config.rate_limit,
            "remaining": self.rate_remaining,
            "reset": self.rate_reset,
            "used": min(self.rate_used, self.config.rate_limit),
            "resource": "core",
        }
        other = {"limit": 30, "remaining": 30, "reset": self.rate_reset, "used": 0}
        return (
            200,
            {
                "resources": {
                    "core": core,
                    "search": {**other, "resource": "search"},
                    "graphql": {**other, "limit": 1000, "remaining": 1000, "resource": "graphql"},
                },
                "rate": core,
            },
            {},
        )

    def _get_repo(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        return 200, self._repo_json(req.api, req.repo_name, full=True), {}

    # ----------------------------------------------------------------- handlers: actions

    def _run_or_404(self, req: _Req) -> JSON:
        self._repo_or_404(req.repo_name)
        run = self.runs.get(req.int_param("run"))
        if run is None or run["repo"] != req.repo_name:
            raise _not_found()
        return run

    def _get_run(self, req: _Req) -> Response:
        run = self._run_or_404(req)
        attempt = int(req.params["n"]) if "n" in req.params else max(run["attempts"], default=1)
        if "n" in req.params and attempt not in run["attempts"]:
            raise _not_found()
        return 200, self._run_json(req.api, run, attempt), {}

    def _list_run_jobs(self, req: _Req) -> Response:
        run = self._run_or_404(req)
        if "n" in req.params:
            attempt = int(req.params["n"])
            if attempt not in run["attempts"]:
                raise _not_found()
            ids = run["attempts"][attempt]
        else:
            mode = req.query.get("filter", "latest")
            if mode not in {"latest", "all"}:
                raise _validation_failed("Job", "filter", "invalid")
            latest = max(run["attempts"], default=1)
            ids = [
                job_id
                for attempt, attempt_ids in sorted(run["attempts"].items())
                if mode == "all" or attempt == latest
                for job_id in attempt_ids
            ]
        jobs = [self._job_json(req.api, self.jobs[i]) for i in ids]
        page, headers = self._paginate(req, jobs)
        return 200, {"total_count": len(jobs), "jobs": page}, headers

    def _get_job(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        job = self.jobs.get(req.int_param("job"))
        if job is None or job["repo"] != req.repo_name:
            raise _not_found()
        return 200, self._job_json(req.api, job), {}

    # ----------------------------------------------------------------- handlers: issues

    def _list_issues(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        state = req.query.get("state", "open")
        if state not in {"open", "closed", "all"}:
            raise _validation_failed("Issue", "state", "invalid")
        wanted = {n.strip().lower() for n in req.query.get("labels", "").split(",") if n.strip()}
        sort = req.query.get("sort", "created")
        key = {"created": "created_at", "updated": "updated_at"}.get(sort, "created_at")
        items = [
            i
            for i in self.issues.values()
            if i["repo"] == req.repo_name
            and (state == "all" or i["state"] == state)
            and wanted <= set(i["labels"])
            and (not req.query.get("since") or i["updated_at"] >= req.query["since"])
        ]
        items.sort(key=lambda i: (i[key], i["number"]), reverse=req.query.get("direction") != "asc")
        page, headers = self._paginate(req, [self._issue_json(req.api, i) for i in items])
        return 200, page, headers

    def _check_body(self, resource: str, body: Any) -> None:
        if body is not None and not isinstance(body, str):
            raise _validation_failed(resource, "body", "invalid")
        if body is not None and len(body) > BODY_LIMIT:
            raise _validation_failed(
                resource, "body", "custom", f"body is too long (maximum is {BODY_LIMIT} characters)"
            )

    def _post_issue(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        body = req.body if isinstance(req.body, dict) else {}
        title = body.get("title")
        if title in (None, ""):
            raise _validation_failed("Issue", "title", "missing_field")
        self._check_body("Issue", body.get("body"))
        labels = [lab if isinstance(lab, str) else lab["name"] for lab in body.get("labels", [])]
        issue = self._create_issue(
            req.repo_name, str(title), body.get("body"), labels, user=BOT_LOGIN
        )
        data = self._issue_json(req.api, issue)
        return 201, data, {"Location": data["url"]}

    def _get_issue(self, req: _Req) -> Response:
        return 200, self._issue_json(req.api, self._issue_or_404(req)), {}

    def _patch_issue(self, req: _Req) -> Response:
        issue = self._issue_or_404(req)
        body = req.body if isinstance(req.body, dict) else {}
        if "body" in body:
            self._check_body("Issue", body["body"])
        if body.get("state") not in {None, "open", "closed"}:
            raise _validation_failed("Issue", "state", "invalid")
        if "title" in body:
            if body["title"] in (None, ""):
                raise _validation_failed("Issue", "title", "missing_field")
            issue["title"] = str(body["title"])
        if "body" in body:
            issue["body"] = body["body"]
        if "labels" in body:
            names = [lab if isinstance(lab, str) else lab["name"] for lab in body["labels"]]
            self._set_issue_labels(issue, names)
        state = body.get("state")
        if state == "closed" and issue["state"] == "open":
            issue.update(
                state="closed",
                state_reason=body.get("state_reason") or "completed",
                closed_at=self._now(),
            )
        elif state == "open" and issue["state"] == "closed":
            issue.update(state="open", state_reason="reopened", closed_at=None)
        issue["updated_at"] = self._now()
        return 200, self._issue_json(req.api, issue), {}

    def _lock_issue(self, req: _Req) -> Response:
        issue = self._issue_or_404(req)
        reason = (req.body or {}).get("lock_reason")
        issue.update(locked=True, active_lock_reason=reason)
        return 204, None, {}

    def _list_comments(self, req: _Req) -> Response:
        issue = self._issue_or_404(req)
        since = req.query.get("since")
        items = [
            self._comment_json(req.api, c)
            for c in self.comments.get(issue["number"], [])
            if not since or c["updated_at"] >= since
        ]
        page, headers = self._paginate(req, items)
        return 200, page, headers

    def _post_comment(self, req: _Req) -> Response:
        issue = self._issue_or_404(req)
        body = (req.body or {}).get("body") if isinstance(req.body, dict) else None
        if body in (None, ""):
            raise _validation_failed("IssueComment", "body", "missing_field")
        self._check_body("IssueComment", body)
        comment = self._create_comment(issue, body, user=BOT_LOGIN)
        issue["updated_at"] = comment["created_at"]
        data = self._comment_json(req.api, comment)
        return 201, data, {"Location": data["url"]}

    def _get_comment(self, req: _Req) -> Response:
        return 200, self._comment_json(req.api, self._comment_or_404(req)), {}

    def _patch_comment(self, req: _Req) -> Response:
        comment = self._comment_or_404(req)
        body = (req.body or {}).get("body") if isinstance(req.body, dict) else None
        if body in (None, ""):
            raise _validation_failed("IssueComment", "body", "missing_field")
        self._check_body("IssueComment", body)
        comment.update(body=body, updated_at=self._now())
        return 200, self._comment_json(req.api, comment), {}

    def _delete_comment(self, req: _Req) -> Response:
        comment = self._comment_or_404(req)
        self.comments[comment["issue"]].remove(comment)
        return 204, None, {}

    def _list_issue_labels(self, req: _Req) -> Response:
        issue = self._issue_or_404(req)
        repo = req.repo_name
        items = [self._label_json(req.api, repo, self.labels[repo][n]) for n in issue["labels"]]
        page, headers = self._paginate(req, items)
        return 200, page, headers

    def _add_issue_labels(self, req: _Req) -> Response:
        issue = self._issue_or_404(req)
        raw = req.body.get("labels", []) if isinstance(req.body, dict) else req.body or []
        names = [lab if isinstance(lab, str) else lab["name"] for lab in raw]
        if not names:
            raise _validation_failed("Label", "labels", "missing_field")
        self._set_issue_labels(issue, [*issue["labels"], *names])
        repo = req.repo_name
        return (
            200,
            [self._label_json(req.api, repo, self.labels[repo][n]) for n in issue["labels"]],
            {},
        )

    def _list_labels(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        repo = req.repo_name
        items = [self._label_json(req.api, repo, lab) for lab in self.labels[repo].values()]
        page, headers = self._paginate(req, items)
        return 200, page, headers

    def _post_label(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        body = req.body if isinstance(req.body, dict) else {}
        name = body.get("name")
        if not name:
            raise _validation_failed("Label", "name", "missing_field")
        if name.lower() in self.labels[req.repo_name]:
            raise _validation_failed("Label", "name", "already_exists")
        color = str(body.get("color") or "ededed")
        if not re.fullmatch(r"#?[0-9a-fA-F]{6}", color):
            raise _validation_failed("Label", "color", "invalid")
        label = self._create_label(req.repo_name, name, color, body.get("description"))
        data = self._label_json(req.api, req.repo_name, label)
        return 201, data, {"Location": data["url"]}

    def _get_label(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        label = self.labels[req.repo_name].get(req.params["name"].lower())
        if label is None:
            raise _not_found()
        return 200, self._label_json(req.api, req.repo_name, label), {}

    # ----------------------------------------------------------------- handlers: git data

    def _get_ref(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        name = "refs/" + req.params["ref"]
        sha = self.refs[req.repo_name].get(name)
        if sha is None:
            raise _not_found()
        return 200, self._ref_json(req.api, req.repo_name, name, sha), {}

    def _matching_refs(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        prefix = "refs/" + req.params["ref"]
        items = [
            self._ref_json(req.api, req.repo_name, name, sha)
            for name, sha in sorted(self.refs[req.repo_name].items())
            if name.startswith(prefix)
        ]
        page, headers = self._paginate(req, items)
        return 200, page, headers

    def _post_ref(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        body = req.body if isinstance(req.body, dict) else {}
        ref, sha = body.get("ref"), body.get("sha")
        if not isinstance(ref, str) or not ref.startswith("refs/") or ref.count("/") < 2:
            raise _Fail(422, "Reference name is not valid")
        if ref.endswith("/") or ".." in ref or any(c in ref for c in " ~^:?*[\\"):
            raise _Fail(422, "Reference name is not valid")
        if not isinstance(sha, str) or sha not in self.commits:
            raise _Fail(422, "Object does not exist")
        refs = self.refs[req.repo_name]
        if ref in refs:
            raise _Fail(422, "Reference already exists")
        refs[ref] = sha
        data = self._ref_json(req.api, req.repo_name, ref, sha)
        return 201, data, {"Location": data["url"]}

    def _patch_ref(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        name = "refs/" + req.params["ref"].removeprefix("refs/")
        body = req.body if isinstance(req.body, dict) else {}
        sha, force = body.get("sha"), bool(body.get("force", False))
        refs = self.refs[req.repo_name]
        if name not in refs:
            raise _Fail(422, "Reference does not exist")
        if not isinstance(sha, str) or sha not in self.commits:
            raise _Fail(422, "Object does not exist")
        if not force and not self._is_ancestor(refs[name], sha):
            raise _Fail(422, "Update is not a fast forward")
        refs[name] = sha
        return 200, self._ref_json(req.api, req.repo_name, name, sha), {}

    def _delete_ref(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        name = "refs/" + req.params["ref"].removeprefix("refs/")
        if self.refs[req.repo_name].pop(name, None) is None:
            raise _Fail(422, "Reference does not exist")
        return 204, None, {}

    def _post_blob(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        body = req.body if isinstance(req.body, dict) else {}
        content, encoding = body.get("content"), body.get("encoding", "utf-8")
        if not isinstance(content, str):
            raise _validation_failed("Blob", "content", "missing_field")
        if encoding == "base64":
            try:
                data = base64.b64decode(content, validate=False)
            except binascii.Error as exc:
                raise _Fail(422, "content is not valid Base64") from exc
        elif encoding in {"utf-8", "utf8"}:
            data = content.encode()
        else:
            raise _Fail(422, f"encoding must be one of utf-8 or base64, got {encoding}")
        sha = self._store_blob(data)
        url = f"{req.api}/repos/{req.repo_name}/git/blobs/{sha}"
        return 201, {"sha": sha, "url": url}, {"Location": url}

    def _get_blob(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        sha = req.params["sha"]
        data = self.blobs.get(sha)
        if data is None:
            raise _not_found()
        encoded = base64.b64encode(data).decode()
        return (
            200,
            {
                "sha": sha,
                "node_id": f"B_kwDO{sha[:20]}",
                "size": len(data),
                "url": f"{req.api}/repos/{req.repo_name}/git/blobs/{sha}",
                "content": "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60)),
                "encoding": "base64",
            },
            {},
        )

    def _post_tree(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        body = req.body if isinstance(req.body, dict) else {}
        entries = body.get("tree")
        if not isinstance(entries, list):
            raise _Fail(422, 'Invalid request.\n\n"tree" wasn\'t supplied.')
        base = body.get("base_tree")
        if base is not None and base not in self.trees:
            raise _Fail(422, "Invalid tree info", f"{DOCS}/git/trees#create-a-tree")
        flat = self._flatten(base) if base else {}
        for entry in entries:
            self._apply_tree_entry(flat, entry)
        sha = self._build_tree(flat)
        data = self._tree_json(req.api, req.repo_name, sha)
        return 201, data, {"Location": data["url"]}

    def _apply_tree_entry(self, flat: dict[str, JSON], entry: Any) -> None:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise _Fail(422, "Invalid tree info", f"{DOCS}/git/trees#create-a-tree")
        path = entry["path"].strip("/")
        mode = entry.get("mode", "100644")
        kind = entry.get("type", "tree" if mode == "040000" else "blob")
        if mode not in {"100644", "100755", "040000", "160000", "120000"}:
            raise _Fail(422, "Invalid tree info", f"{DOCS}/git/trees#create-a-tree")
        if "sha" in entry and "content" in entry:
            raise _Fail(
                422,
                "Must supply either tree.sha or tree.content. Request will be rejected if both "
                "are present.",
            )
        under = path + "/"
        if "sha" in entry and entry["sha"] is None:
            for existing in [p for p in flat if p == path or p.startswith(under)]:
                del flat[existing]
            return
        if "content" in entry:
            sha = self._store_blob(str(entry["content"]).encode())
        else:
            sha = str(entry.get("sha"))
            store = self.trees if kind == "tree" else self.blobs
            if kind != "commit" and sha not in store:
                raise _Fail(422, f"tree.sha {sha} is not a valid {kind}")
        for existing in [p for p in flat if p.startswith(under)]:
            del flat[existing]
        if kind == "tree":
            for sub, sub_entry in self._flatten(sha).items():
                flat[under + sub] = sub_entry
        else:
            flat[path] = {"mode": mode, "type": kind, "sha": sha}

    def _get_tree(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        sha = req.params["sha"]
        if sha not in self.trees:
            with contextlib.suppress(_Fail):
                sha = self.commits[self._resolve_ref(req.repo_name, sha)[1]]["tree"]
        if sha not in self.trees:
            raise _not_found()
        recursive = req.query.get("recursive", "") not in {"", "0", "false"}
        return 200, self._tree_json(req.api, req.repo_name, sha, recursive=recursive), {}

    def _post_commit(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        body = req.body if isinstance(req.body, dict) else {}
        message, tree = body.get("message"), body.get("tree")
        parents = body.get("parents", [])
        if not isinstance(message, str):
            raise _Fail(422, 'Invalid request.\n\n"message" wasn\'t supplied.')
        if tree not in self.trees:
            raise _Fail(422, "Tree SHA does not exist")
        if any(p not in self.commits for p in parents):
            raise _Fail(422, "Parent SHA does not exist or is not a commit object")
        sha = self._store_commit(tree, parents, message, body.get("author"), body.get("committer"))
        data = self._commit_json(req.api, req.repo_name, sha)
        return 201, data, {"Location": data["url"]}

    def _get_commit(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        if req.params["sha"] not in self.commits:
            raise _not_found()
        return 200, self._commit_json(req.api, req.repo_name, req.params["sha"]), {}

    def _get_branch(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        repo, branch = req.repo_name, req.params["branch"]
        sha = self.refs[repo].get(f"refs/heads/{branch}")
        if sha is None:
            raise _Fail(404, "Branch not found", f"{DOCS}/branches/branches#get-a-branch")
        git = self._commit_json(req.api, repo, sha)
        api_commit = f"{req.api}/repos/{repo}/commits/{sha}"
        commit = {
            "sha": sha,
            "node_id": git["node_id"],
            "url": api_commit,
            "html_url": git["html_url"],
            "comments_url": f"{api_commit}/comments",
            "commit": {
                "url": git["url"],
                "author": git["author"],
                "committer": git["committer"],
                "message": git["message"],
                "tree": git["tree"],
                "comment_count": 0,
                "verification": git["verification"],
            },
            "author": self._user(req.api),
            "committer": self._user(req.api),
            "parents": git["parents"],
        }
        url = f"{req.api}/repos/{repo}/branches/{urllib.parse.quote(branch)}"
        return (
            200,
            {
                "name": branch,
                "commit": commit,
                "_links": {"self": url, "html": self._html(repo, "tree", branch)},
                "protected": False,
                "protection": {"enabled": False},
                "protection_url": f"{url}/protection",
            },
            {},
        )

    # ----------------------------------------------------------------- handlers: contents

    def _get_contents(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        repo, path = req.repo_name, req.params["path"].strip("/")
        ref, tip = self._resolve_ref(repo, req.query.get("ref"))
        tree = self.commits[tip]["tree"]
        if not path:
            return 200, self._dir_json(req.api, repo, ref, "", tree), {}
        parts = path.split("/")
        for index, part in enumerate(parts):
            match = next((e for e in self.trees[tree] if e["path"] == part), None)
            if match is None:
                raise _not_found()
            if index == len(parts) - 1:
                if match["type"] == "tree":
                    return 200, self._dir_json(req.api, repo, ref, path + "/", match["sha"]), {}
                return 200, self._content_json(req.api, repo, ref, path, match["sha"]), {}
            if match["type"] != "tree":
                raise _not_found()
            tree = match["sha"]
        raise _not_found()  # pragma: no cover  -- the loop always returns or raises

    def _contents_branch(self, req: _Req, body: JSON) -> tuple[str, str]:
        repo = req.repo_name
        branch = body.get("branch") or self.repos[repo]["default_branch"]
        branch = str(branch).removeprefix("refs/heads/")
        tip = self.refs[repo].get(f"refs/heads/{branch}")
        if tip is None:
            raise _Fail(404, f"Branch {branch} not found", f"{DOCS}/repos/contents")
        return branch, tip

    def _file_commit(self, req: _Req, branch: str, flat: dict[str, JSON], tip: str) -> str:
        body = req.body
        tree = self._build_tree(flat)
        sha = self._store_commit(
            tree, [tip], body["message"], body.get("author"), body.get("committer")
        )
        self.refs[req.repo_name][f"refs/heads/{branch}"] = sha
        return sha

    def _put_contents(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        body = req.body if isinstance(req.body, dict) else {}
        path = req.params["path"].strip("/")
        if not isinstance(body.get("message"), str):
            raise _Fail(422, 'Invalid request.\n\n"message" wasn\'t supplied.')
        if not isinstance(body.get("content"), str):
            raise _Fail(422, 'Invalid request.\n\n"content" wasn\'t supplied.')
        try:
            data = base64.b64decode(body["content"], validate=True)
        except binascii.Error as exc:
            raise _Fail(422, "content is not valid Base64") from exc
        branch, tip = self._contents_branch(req, body)
        flat = self._flatten(self.commits[tip]["tree"])
        existing = flat.get(path)
        if existing is not None:
            if "sha" not in body or body["sha"] is None:
                raise _Fail(422, 'Invalid request.\n\n"sha" wasn\'t supplied.')
            if body["sha"] != existing["sha"]:
                raise _Fail(409, f"{path} does not match {body['sha']}", f"{DOCS}/repos/contents")
        blob = self._store_blob(data)
        flat[path] = {"mode": "100644", "type": "blob", "sha": blob}
        sha = self._file_commit(req, branch, flat, tip)
        content = self._content_json(req.api, req.repo_name, branch, path, blob)
        for key in ("content", "encoding"):
            content.pop(key)
        return (
            200 if existing is not None else 201,
            {"content": content, "commit": self._commit_json(req.api, req.repo_name, sha)},
            {},
        )

    def _delete_contents(self, req: _Req) -> Response:
        self._repo_or_404(req.repo_name)
        body = req.body if isinstance(req.body, dict) else {}
        path = req.params["path"].strip("/")
        if not isinstance(body.get("message"), str):
            raise _Fail(422, 'Invalid request.\n\n"message" wasn\'t supplied.')
        branch, tip = self._contents_branch(req, body)
        flat = self._flatten(self.commits[tip]["tree"])
        existing = flat.get(path)
        if existing is None:
            raise _not_found()
        if not body.get("sha"):
            raise _Fail(422, 'Invalid request.\n\n"sha" wasn\'t supplied.')
        if body["sha"] != existing["sha"]:
            raise _Fail(409, f"{path} does not match {body['sha']}", f"{DOCS}/repos/contents")
        del flat[path]
        sha = self._file_commit(req, branch, flat, tip)
        return 200, {"content": None, "commit": self._commit_json(req.api, req.repo_name, sha)}, {}


_INVALID_JSON = object()


def _dump(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode()


def _as_bytes(data: str | bytes) -> bytes:
    return data.encode() if isinstance(data, str) else data


def _text_or_b64(data: bytes) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode()


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).hostname or "github.com"


def _fault_json(fault: Fault) -> JSON:
    return {k: v for k, v in dataclasses.asdict(fault).items() if k != "wait"}


def _jsonable(run: JSON) -> JSON:
    return {**run, "attempts": {str(k): v for k, v in run["attempts"].items()}}


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT, then write the state JSON to ``--state-file``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--state-file", type=Path)
    parser.add_argument("--seed", type=Path, help="JSON with repos, runs, issues, labels")
    parser.add_argument(
        "--repo", action="append", help="repository to create (default acme/widgets)"
    )
    parser.add_argument("--server-url", default="https://github.com")
    parser.add_argument("--rate-limit", type=int, default=1000)
    parser.add_argument("--read-only", action="store_true")
    args = parser.parse_args(argv)
    fake = FakeGitHub(
        repos=args.repo or ("acme/widgets",),
        host=args.host,
        port=args.port,
        server_url=args.server_url,
        rate_limit=args.rate_limit,
        read_only=args.read_only,
    )
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
