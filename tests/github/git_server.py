"""A real git remote on 127.0.0.1: ``git http-backend`` behind a small threaded HTTP server.

Stdlib and the ``git`` program only; no mock. Each request runs ``git http-backend`` as a CGI
program (its environment built per request: ``PATH_INFO``, ``QUERY_STRING``, ``CONTENT_TYPE``,
``GIT_PROTOCOL`` from the ``Git-Protocol`` header, ``REMOTE_USER``), over bare repositories
under a temporary folder (``<owner>/<name>.git``), so fetches and pushes behave exactly as git
makes them: protocol v2, shallow fetches, packs, ``--atomic`` and ``--force-with-lease``.

Like GitHub it wants ``Authorization: basic base64(x-access-token:<token>)``: a request
without one, or with a token not in ``tokens`` (when given), gets 401; a token in
``read_only`` gets 403 on pushes. It records every request (:class:`GitRequest`: the token,
method, path, bytes each way, when it was answered and its status), answers after a random
``latency``, and can fail a share of requests (``fail_rate``) with a 5xx before or after git
did the work (a push that lands and still answers an error), seeded, for fault tests. Queued
faults: a 5xx (:meth:`GitServer.fail_next`), or an answer of any status with headers and a
plain-text body such as GitHub's refusals and rate limits (:meth:`GitServer.refuse_next`: a 403
or 429 with ``Retry-After``, or the 403 "Permission to ... denied"). :meth:`GitServer.protect`
installs a real ``pre-receive`` hook that refuses updates of a ref as GitHub's branch
protection does (``GH006: Protected branch update failed``).
"""

from __future__ import annotations

import base64
import random
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

OWNER_REPO = "acme/widgets"
AUTHOR = {
    "GIT_AUTHOR_NAME": "seed",
    "GIT_AUTHOR_EMAIL": "seed@example.com",
    "GIT_COMMITTER_NAME": "seed",
    "GIT_COMMITTER_EMAIL": "seed@example.com",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Fault:
    """A queued answer: to the next request whose path contains ``path``."""

    path: str
    after: bool  # after git did the work (a 5xx only)
    then: Callable[[], object] | None = None
    # An answer of its own (status, headers, body) instead of a 5xx; given before the work.
    answer: tuple[int, tuple[tuple[str, str], ...], bytes] | None = None

    def matches(self, path: str, query: str) -> bool:
        """A 5xx matches the path; an answer of its own the path and query, so that it can
        name the service ("=git-receive-pack": both of a push's requests)."""
        return self.path in (path if self.answer is None else f"{path}?{query}")


@dataclass(frozen=True, slots=True, kw_only=True)
class GitRequest:
    """One request the server answered."""

    token: str | None
    method: str
    path: str
    query: str
    bytes_in: int
    bytes_out: int
    status: int
    at: float

    @property
    def is_push(self) -> bool:
        return self.method == "POST" and self.path.endswith("/git-receive-pack")


class GitServer:
    """The server and its repositories (see the module docstring). Use it as a context."""

    def __init__(
        self,
        *,
        tokens: frozenset[str] | None = None,
        read_only: frozenset[str] = frozenset(),
        latency: tuple[float, float] = (0.0, 0.0),
        fail_rate: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="git-server-"))
        self.tokens = tokens
        self.read_only = read_only
        self.latency = latency
        self.fail_rate = fail_rate
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.requests: list[GitRequest] = []
        # Queued faults, each answering the next request whose path contains its ``path``.
        self._queued: list[_Fault] = []
        self.git = shutil.which("git") or "git"
        self.create(OWNER_REPO)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,))
        self._thread.daemon = True

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def url(self) -> str:
        """The server's address: what ``server-url`` is set to."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # ------------------------------------------------------------------ repositories

    def create(self, repository: str) -> Path:
        """An empty bare repository ``owner/name`` that accepts pushes."""
        path = self.root / f"{repository}.git"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._run("init", "--bare", "-q", str(path))
        for key, value in (
            ("http.receivepack", "true"),
            ("receive.autogc", "false"),
            ("gc.auto", "0"),
            ("uploadpack.allowFilter", "true"),
        ):
            self._run("--git-dir", str(path), "config", key, value)
        return path

    def _run(
        self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        done = subprocess.run(
            [self.git, *args],
            input=stdin,
            capture_output=True,
            check=True,
            env={**AUTHOR, "PATH": "/usr/local/bin:/usr/bin:/bin", **(env or {})},
        )
        return done.stdout.decode()

    def _git(
        self,
        *args: str,
        repository: str = OWNER_REPO,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> str:
        return self._run(
            "--git-dir", str(self.root / f"{repository}.git"), *args, stdin=stdin, env=env
        )

    def ref_sha(self, ref: str, repository: str = OWNER_REPO) -> str | None:
        """The sha a full ref name (``refs/...``) points at, or None."""
        found = self.refs(ref, repository)
        return found.get(ref)

    def refs(self, prefix: str = "refs/", repository: str = OWNER_REPO) -> dict[str, str]:
        """Every ref whose name starts with ``prefix``: name -> sha."""
        out = self._git("for-each-ref", "--format=%(objectname) %(refname)", repository=repository)
        refs = {}
        for line in out.splitlines():
            sha, _, name = line.partition(" ")
            if name.startswith(prefix):
                refs[name] = sha
        return refs

    def files(self, branch: str, repository: str = OWNER_REPO) -> dict[str, bytes]:
        """Every file on ``branch`` (path -> content); empty when there is no such branch."""
        tip = self.ref_sha(f"refs/heads/{branch}", repository)
        if tip is None:
            return {}
        return self.tree_files(tip, repository)

    def tree_files(self, commit: str, repository: str = OWNER_REPO) -> dict[str, bytes]:
        """Every file of ``commit`` (path -> content)."""
        listing = self._git("ls-tree", "-r", "-z", commit, repository=repository)
        entries = []
        for entry in listing.split("\0"):
            head, _, path = entry.partition("\t")
            if path and head.split(" ")[1] == "blob":
                entries.append((path, head.split(" ")[2]))
        path_of = dict(entries)
        repo = str(self.root / f"{repository}.git")
        done = subprocess.run(
            [self.git, "--git-dir", repo, "cat-file", "--batch"],
            input="".join(f"{sha}\n" for _, sha in entries).encode(),
            capture_output=True,
            check=True,
        )
        out, at, files = done.stdout, 0, {}
        for path in path_of:
            end = out.index(b"\n", at)
            size = int(out[at:end].split()[2])
            files[path] = out[end + 1 : end + 1 + size]
            at = end + 2 + size
        return files

    def read_file(self, path: str, branch: str, repository: str = OWNER_REPO) -> str:
        return self.files(branch, repository)[path].decode()

    def history(self, branch: str, repository: str = OWNER_REPO) -> list[str]:
        """The branch's commits, tip first."""
        return self._git("rev-list", f"refs/heads/{branch}", repository=repository).split()

    def parents(self, commit: str, repository: str = OWNER_REPO) -> list[str]:
        return self._git("rev-list", "--parents", "-n1", commit, repository=repository).split()[1:]

    def message(self, commit: str, repository: str = OWNER_REPO) -> str:
        return self._git("log", "-1", "--format=%B", commit, repository=repository)

    def push_files(
        self, ref: str, files: Mapping[str, str | bytes], repository: str = OWNER_REPO
    ) -> str:
        """Commit ``files`` as a root commit and point ``ref`` at it (seeding; no request)."""
        with tempfile.TemporaryDirectory() as scratch:
            index = {"GIT_INDEX_FILE": str(Path(scratch, "index"))}
            for path, data in files.items():
                raw = data.encode() if isinstance(data, str) else data
                blob = self._git("hash-object", "-w", "--stdin", stdin=raw, repository=repository)
                self._git(
                    "update-index", "--add", "--cacheinfo", f"100644,{blob.strip()},{path}",
                    env=index, repository=repository,
                )  # fmt: skip
            tree = self._git("write-tree", env=index, repository=repository).strip()
        commit = self._git("commit-tree", tree, "-m", "seed", repository=repository).strip()
        self._git("update-ref", ref, commit, repository=repository)
        return commit

    def delete_ref(self, ref: str, repository: str = OWNER_REPO) -> None:
        self._git("update-ref", "-d", ref, repository=repository)

    # ------------------------------------------------------------------ what was asked

    def fail_next(
        self,
        path: str,
        *,
        after: bool,
        times: int = 1,
        then: Callable[[], object] | None = None,
    ) -> None:
        """Answer the next ``times`` requests whose path contains ``path`` with a 5xx, after
        git did the work (``after``: a push that lands and still answers an error) or before;
        ``then`` runs once each fault is decided (another writer acting in between)."""
        with self._lock:
            self._queued.extend([_Fault(path=path, after=after, then=then)] * times)

    def refuse_next(
        self,
        path: str,
        status: int,
        *,
        times: int = 1,
        headers: Mapping[str, str] | None = None,
        message: str = "",
    ) -> None:
        """Answer the next ``times`` requests whose path (and query) contains ``path`` with ``status``,
        ``headers`` and ``message`` as a plain-text body (git shows it as ``remote: ...``), as
        GitHub answers a rate limit (429 or 403 with ``Retry-After``) or a token that may not
        push (403 "Permission to ... denied")."""
        body = (message + "\n").encode() if message else b""
        answer = (status, (("Content-Type", "text/plain"), *(headers or {}).items()), body)
        with self._lock:
            self._queued.extend([_Fault(path=path, after=False, answer=answer)] * times)

    def pre_receive(self, script: str, repository: str = OWNER_REPO) -> None:
        """Install ``script`` (a ``sh`` script) as the repository's ``pre-receive`` hook: it
        reads ``<old> <new> <ref>`` lines and refuses the whole push by failing; what it
        prints to stderr reaches the pusher as ``remote: ...`` lines."""
        hook = self.root / f"{repository}.git" / "hooks" / "pre-receive"
        hook.parent.mkdir(parents=True, exist_ok=True)
        hook.write_text(f"#!/bin/sh\n{script}", encoding="utf-8")
        hook.chmod(0o755)

    def protect(self, ref: str, repository: str = OWNER_REPO) -> None:
        """Refuse every push that changes ``ref`` with a real ``pre-receive`` hook, in the words
        of GitHub's branch protection (``remote: error: GH006: ...``)."""
        self.pre_receive(
            "refused=0\n"
            "while read old new ref; do\n"
            f'  if [ "$ref" = "{ref}" ]; then\n'
            '    echo "error: GH006: Protected branch update failed for $ref." >&2\n'
            '    echo "error: Changes must be made through a pull request." >&2\n'
            "    refused=1\n"
            "  fi\n"
            "done\n"
            "exit $refused\n",
            repository,
        )

    def git_dir(self, repository: str = OWNER_REPO) -> Path:
        """The bare repository's folder (for a hook that acts on it)."""
        return self.root / f"{repository}.git"

    def requests_of(self, token: str) -> list[GitRequest]:
        with self._lock:
            return [r for r in self.requests if r.token == token]

    def pushes(self) -> list[GitRequest]:
        with self._lock:
            return [r for r in self.requests if r.is_push]

    # ------------------------------------------------------------------ serving

    def _token(self, header: str | None) -> str | None:
        if not header or not header.lower().startswith("basic "):
            return None
        try:
            user, _, token = base64.b64decode(header[6:].strip()).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        return token if user == "x-access-token" and token else None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def log_message(self, *_: object) -> None:
                return

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while (size := int(self.rfile.readline().strip() or b"0", 16)) > 0:
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    self.rfile.readline()
                    return b"".join(chunks)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _serve(self) -> None:
                path, _, query = self.path.partition("?")
                body = self._body()
                token = server._token(self.headers.get("Authorization"))
                status, headers, payload = server._answer(self, path, query, body, token)
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                with server._lock:
                    server.requests.append(
                        GitRequest(
                            token=token,
                            method=self.command,
                            path=path,
                            query=query,
                            bytes_in=len(body),
                            bytes_out=len(payload),
                            status=status,
                            at=time.monotonic(),
                        )
                    )

        return Handler

    def _answer(
        self,
        request: BaseHTTPRequestHandler,
        path: str,
        query: str,
        body: bytes,
        token: str | None,
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        low, high = self.latency
        with self._lock:
            delay = self._rng.uniform(low, high)
            fault = self._rng.random() < self.fail_rate
            after = self._rng.random() < 0.5  # half the faults land before the error
            queued = next((q for q in self._queued if q.matches(path, query)), None)
            if queued is not None:
                self._queued.remove(queued)
                fault, after = True, queued.after
        if queued is not None and queued.then is not None:
            queued.then()
        if delay:
            time.sleep(delay)
        if queued is not None and queued.answer is not None:
            status, answer_headers, payload = queued.answer
            return status, list(answer_headers), payload
        if token is None or (self.tokens is not None and token not in self.tokens):
            return 401, [("WWW-Authenticate", 'Basic realm="GitHub"')], b"Unauthorized\n"
        pushing = "git-receive-pack" in path or "service=git-receive-pack" in query
        if pushing and token in self.read_only:
            message = b"Permission to acme/widgets.git denied to github-actions[bot].\n"
            return 403, [("Content-Type", "text/plain")], message
        if fault and not after:
            return 502, [("Content-Type", "text/plain")], b"Bad gateway\n"
        status, headers, payload = self._backend(request, path, query, body)
        if fault:
            return 500, [("Content-Type", "text/plain")], b"Internal error after the work\n"
        return status, headers, payload

    def _backend(
        self, request: BaseHTTPRequestHandler, path: str, query: str, body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Run ``git http-backend`` for one request (CGI)."""
        env = {
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "REQUEST_METHOD": request.command,
            "QUERY_STRING": query,
            "CONTENT_TYPE": request.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
            "PATH": "/usr/local/bin:/usr/bin:/bin",
        }
        if request.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = request.headers["Git-Protocol"]
        if request.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = request.headers["Content-Encoding"]
        done = subprocess.run(
            [self.git, "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        return status, headers, payload
