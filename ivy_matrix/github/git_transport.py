"""The dashboard branch read and written over git's own smart-HTTP protocol.

I/O: a private shallow bare repository in a temporary folder, fetched from and pushed to the
repository's remote with the ``git`` program (``github/git_process.py`` runs it, token in an
HTTP header). :class:`GitTransport` offers what the branch store needs
(``stores/remote.py`` ``BranchRemote``):

- :meth:`read_tip`: one ``git fetch --depth=1`` of the branch tip, with its objects; a fetch
  after the first sends only what changed;
- :meth:`read_ref`: one ``git fetch --depth=1`` of one ref (the pull request's verdict ref),
  with its objects;
- :meth:`list_refs`: one ``git ls-remote`` of a prefix (two HTTP requests, no objects);
- trees, blobs and new objects are read and written locally (no request at all; what they
  hold passes the guard, runner/guard.py);
- :meth:`update_ref`: one ``git push`` of one ref, a compare-and-swap
  (``--force-with-lease=<ref>:<expected>``, empty for "must not exist"); a push that is not a
  fast-forward of what the remote holds is refused.

Why git and not the REST git-data API (chosen by measurement, bench/README.md): git
operations do not count against the REST API's rate limits (GitHub Support, quoted in
community discussion #44515: "Git operations do not consume part of your API rate limit"),
a fetch reads the whole branch in two or three HTTP requests however many files it has, and a
push sends a compressed pack (Ivy's 5 MB of pages fetch as about 40 KB; a change of a few
pages pushes a few KB) where the REST API sends every file whole. GitHub does throttle git
traffic that overloads it (community discussion #24841; create-pull-request#855 saw abuse
detection on pushes), so ivy-matrix still pushes little: one push per run.

Retrying: a transfer that fails transiently (5xx, dropped connection) is retried with backoff;
after a failed push the remote's ref is listed to see whether it landed (a push can land and
still answer an error), and it is pushed again only when the ref still holds what it held. A
throttled request (429, or a 403 that does not say the permission is missing: GitHub's rate
limits answer either) is waited out as the REST calls are (``github/retry.py``:
``retry-after``, else until ``x-ratelimit-reset``, else at least a minute; at most
``max_wait`` in all for one command); a 403 that persists over :data:`DENIED_TRIES` tries, or
says the permission is missing, fails at once naming the permission (``contents: write`` to
push), never taken for a read-only token: a fork's pull request is told from the event,
before any write (``config/event.py``).

Refused, not lost: a push the server itself rejected (``[remote rejected]``: a ``pre-receive``
hook, GitHub's branch protection "GH006: Protected branch update failed", a ruleset's "GH013")
is :class:`~ivy_matrix.errors.PushRefusedError`, at once, with the server's words and what to
do. Only a ref that another writer moved is a lost compare-and-swap, which the store retries:
``[rejected] (stale info)`` (git compared it with what the server advertised), or a
``[remote rejected]`` whose reason is the server's own compare-and-swap losing ("cannot lock
ref ...", "failed to update ref"); a reason of neither kind is a lost race only if the ref no
longer holds what the push expected.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import tempfile
import time
import zlib
from collections.abc import Callable, Collection, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

from ivy_matrix.errors import GitHubAPIError, PushRefusedError
from ivy_matrix.github.git_process import (
    MIN_GIT,
    Failure,
    GitAuth,
    GitCommandError,
    GitProcess,
    GitUnavailableError,
    denied,
    failed,
    git_version,
    origin_of,
    remote_url,
)
from ivy_matrix.github.http import CONTENTS_READ, CONTENTS_WRITE
from ivy_matrix.github.retry import RetryPolicy, Wait
from ivy_matrix.github.types import RefUpdate, Tree
from ivy_matrix.runner.files import write_scrubbed
from ivy_matrix.runner.guard import scrub
from ivy_matrix.runner.pacing import paced
from ivy_matrix.runner.reporter import Reporter
from ivy_matrix.stores.tree import Content
from ivy_matrix.utf8 import utf8_pieces, utf8_size

_T = TypeVar("_T")

# Eight tries with backoff from 1 s ride out about two minutes of failing transfers.
DEFAULT_RETRIES = 8
BACKOFF_START = 1.0
BACKOFF_CAP = 30.0
_ZERO = "0" * 40
_HEADS = "refs/heads/"
# Where the fetched refs are kept in the private repository.
_BRANCH_REF = "refs/ivy/branch"
_READ = "refs/ivy/read/"
# Porcelain flags of ``git push`` that mean the ref now has the value we pushed.
_ACCEPTED = frozenset(" +-*=")
# How a ref the server itself rejected is summarised in ``git push --porcelain``.
_REMOTE_REJECTED = "[remote rejected]"
# Reasons of a ref the server rejected because its own compare-and-swap lost: the ref had moved
# ("cannot lock ref ...: is at X but expected Y", "reference already exists", "incorrect old
# value provided"), or the atomic transaction of such a ref failed.
_RACE = re.compile(
    r"lock|old value|but expected|already exists|failed to update ref|atomic transaction",
    re.IGNORECASE,
)
# Tries of a command answered 403 with no word of why (a rate limit or a missing permission)
# before it is taken for a missing permission.
DENIED_TRIES = 3
# Bytes of a scratch file read at a time (a blob given in pieces: GitTransport._write_blob):
# each is held twice, read and stored, as the object is written (a MiB: 1 MB more at the peak).
_CHUNK = 1 << 18
# Of what the server says about a refused push: this many lines, each cut to this length.
_SAID_LINES = 6
_SAID_WIDTH = 300


class GitTransport:
    """One repository's branch over git (see the module docstring); close it when done."""

    name = "git"
    # --force-with-lease compares and swaps any move, a fast-forward or not.
    swaps_any_move = True

    def __init__(
        self,
        *,
        server_url: str,
        repository: str,
        token: str,
        retries: int = DEFAULT_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        program: str = "git",
        policy: RetryPolicy | None = None,
    ) -> None:
        version = git_version(program)
        if version is None or version < MIN_GIT:
            found = "no git" if version is None else f"git {version[0]}.{version[1]}"
            raise GitUnavailableError(
                f"the git branch transport needs git {MIN_GIT[0]}.{MIN_GIT[1]} or newer; "
                f"found {found}"
            )
        self.url = remote_url(server_url, repository)
        self.repository = repository
        auth = GitAuth(origin=origin_of(self.url), token=token)
        self.directory = tempfile.mkdtemp(prefix="ivy-matrix-git-")
        self._git = GitProcess(self.directory, auth, program=program)
        self._retries = max(retries, 0)
        self._sleep = sleep
        self._rng = rng or random.Random()  # noqa: S311  -- jitter, not cryptography
        # How a throttled command is waited out: as the REST calls are (github/retry.py).
        self._policy = policy or RetryPolicy(retries=self._retries, rng=self._rng)
        self._notify: Callable[[str], None] = _silent
        self._contacted = False
        # What this transport sent, for the log: fetches, listings and pushes.
        self.fetches = self.listings = self.pushes = 0
        self._git.run("init", "--bare", "-q", self.directory, what="creating a git repository")

    def close(self) -> None:
        """Remove the private repository."""
        shutil.rmtree(self.directory, ignore_errors=True)

    def report_to(self, log: Reporter) -> None:
        """Say every wait for a throttled command in ``log``, and wait in steps that keep the
        log talking (as the REST client does)."""
        self._notify = log.info
        self._sleep = paced(log, self._sleep, announce=False)

    # ------------------------------------------------------------------ the remote

    def read_tip(self, branch: str) -> str | None:
        """The branch's tip, its objects fetched; None when the branch does not exist yet."""
        what = f"fetching branch {branch!r} of {self.url}"
        try:
            self._remote(lambda: self._fetch([f"+refs/heads/{branch}:{_BRANCH_REF}"], what), what)
        except GitCommandError as error:
            if "couldn't find remote ref" not in str(error).lower():
                raise
            return None  # the first commit creates it
        return self._local_ref(_BRANCH_REF)

    def _fetch(self, refspecs: Sequence[str], what: str) -> None:
        self.fetches += 1
        self._git.run(
            "fetch", "--no-tags", "--prune", "--quiet", "--depth=1", self.url, *refspecs,
            what=what, remote=True,
        )  # fmt: skip

    def read_ref(self, ref: str) -> str | None:
        """The commit ``ref`` (a full name) points at, its objects fetched; None when the
        remote has no such ref."""
        what = f"fetching {ref} of {self.url}"
        local = _READ + ref.removeprefix("refs/")
        try:
            self._remote(lambda: self._fetch([f"+{ref}:{local}"], what), what)
        except GitCommandError as error:
            if "couldn't find remote ref" not in str(error).lower():
                raise
            return None
        return self._local_ref(local)

    def list_refs(self, prefix: str) -> dict[str, str]:
        """Every ref under ``prefix`` on the remote (full name -> sha); no objects."""
        what = f"listing {prefix}* of {self.url}"
        return self._remote(lambda: self._ls_remote([f"{prefix}*"], what), what)

    def _ls_remote(self, patterns: Sequence[str], what: str) -> dict[str, str]:
        self.listings += 1
        done = self._git.run("ls-remote", self.url, *patterns, what=what, remote=True)
        refs: dict[str, str] = {}
        for line in done.stdout.decode().splitlines():
            sha, _, name = line.partition("\t")
            if name:
                refs[name] = sha
        return refs

    def update_ref(self, update: RefUpdate) -> bool:
        """Push ``update`` (a compare-and-swap); whether the remote took it. A push whose
        answer was lost is checked, not repeated blindly; a push the server refused raises
        :class:`PushRefusedError` (see the module docstring)."""
        what = f"pushing {update.ref} to {self.url}"
        attempt = 0
        waited = 0.0
        while True:
            try:
                landed = self._push(update, what=what)
            except GitCommandError as error:
                seconds = self._wait(error, attempt, waited, what, CONTENTS_WRITE)
                self._sleep(seconds)
                waited += seconds
                attempt += 1
                if _before_sending(str(error)):
                    continue  # the push never started: nothing can have landed
                now = self._remote(lambda: self._ls_remote([update.ref], what), what)
                found = now.get(update.ref)
                if found != update.old:  # ours, or another writer's: pushing again is moot
                    return found == update.new
                continue
            self._contacted = True
            return landed

    def _push(self, update: RefUpdate, *, what: str) -> bool:
        self.pushes += 1
        done = self._git.run(
            "push", "--porcelain", "--no-verify",
            f"--force-with-lease={update.ref}:{update.old or ''}", self.url,
            f"{update.new}:{update.ref}", what=what, check=False, remote=True,
        )  # fmt: skip
        stderr = done.stderr.decode("utf-8", errors="replace")
        for line in done.stdout.decode(errors="replace").splitlines():
            flag, _, rest = line.partition("\t")
            spec, _, summary = rest.partition("\t")
            if len(flag) == 1 and spec.endswith(f":{update.ref}"):
                if flag == "!" and summary.startswith(_REMOTE_REJECTED):
                    reason = summary.removeprefix(_REMOTE_REJECTED).strip()
                    self._refused_unless_moved(update, reason, stderr, what)
                return flag in _ACCEPTED
        raise failed(what, stderr, self._git.answer, CONTENTS_WRITE)

    def _refused_unless_moved(self, update: RefUpdate, reason: str, stderr: str, what: str) -> None:
        """The server rejected ``update`` for ``reason``: a lost race if its own
        compare-and-swap found the ref moved (git: "cannot lock ref ...", "failed to update
        ref"), or if another writer moved it since; else a refusal that no retry can change
        (:class:`PushRefusedError`, in the server's words). The reason comes first: a ref that
        another writer created and deleted in between holds what was expected again."""
        if _RACE.search(reason):
            return
        current = self._remote(lambda: self._ls_remote([update.ref], what), what)
        if current.get(update.ref) != update.old:
            return
        said = server_words(stderr)
        ref = update.ref
        where = f"branch {ref.removeprefix(_HEADS)!r}" if ref.startswith(_HEADS) else ref
        raise PushRefusedError(
            f"{what} failed: the server refused it ({_REMOTE_REJECTED} {reason}), though no "
            f"other writer had moved {where}"
            + (f'; it said: "{said}"' if said else "")
            + f". Retrying cannot help: let this workflow push to {where}. Exclude it from "
            f"branch protection rules and rulesets (Settings > Branches, Settings > Rules), or "
            f"let GitHub Actions (or the app whose token this is) bypass them; or keep the "
            f"dashboards on another branch (the 'branch' input)"
        )

    def _remote(self, request: Callable[[], _T], what: str) -> _T:
        """``request`` (a command that talks to the remote), retried while it fails
        transiently or is throttled; the first contact failing for want of a git server is
        :class:`GitUnavailableError`."""
        attempt = 0
        waited = 0.0
        while True:
            try:
                result = request()
            except GitCommandError as error:
                first = not self._contacted
                if first and error.failure in {Failure.MISSING, Failure.UNREACHABLE}:
                    raise GitUnavailableError(
                        f"{what}: no git remote answers there ({error})"
                    ) from None
                seconds = self._wait(error, attempt, waited, what, CONTENTS_READ)
                self._sleep(seconds)
                waited += seconds
                attempt += 1
                continue
            self._contacted = True
            return result

    def _wait(
        self, error: GitCommandError, attempt: int, waited: float, what: str, permission: str
    ) -> float:
        """How long to wait before trying ``what`` again after ``error`` (its ``attempt``-th
        failure, ``waited`` seconds waited so far); raises when it is not to be tried again:
        ``error`` itself, a :class:`RateLimitError` past the budget, or the missing
        ``permission`` for a 403 that persists (see the module docstring)."""
        if error.failure is Failure.TRANSIENT and attempt < self._retries:
            return self._backoff(attempt)
        if error.failure is not Failure.THROTTLED:
            raise error
        answer = error.answer
        status = answer.status if answer.status in {403, 429} else _status_in(error.said)
        wait = self._policy.wait_for(status, answer.headers, error.said, attempt)
        if wait is None:
            # A 403 that says neither why nor for how long: GitHub's secondary rate limits
            # answer so too, and ask for a wait of at least a minute.
            if attempt + 1 >= DENIED_TRIES:
                raise denied(what, f"{error.said}; {attempt + 1} time(s) in a row", permission)
            wait = Wait(
                max(self._policy.secondary_wait, self._backoff(attempt)),
                rate_limited=True,
                why="403 without a reason: perhaps a secondary rate limit",
            )
        said = error.said or f"HTTP {status}"
        self._policy.give_up_unless_retryable(
            what, wait, status=status, said=said, attempt=attempt, waited=waited
        )
        self._notify(
            f"git: {what} failed ({wait.why}: {said}); retry {attempt + 1} in {wait.seconds:.0f} s"
        )
        return wait.seconds

    def _backoff(self, attempt: int) -> float:
        return min(BACKOFF_CAP, BACKOFF_START * 2.0**attempt) * self._rng.uniform(0.5, 1.5)

    # ------------------------------------------------------------------ local objects

    def _local_ref(self, name: str) -> str | None:
        done = self._git.run(
            "rev-parse", "--verify", "--quiet", name, what="reading a ref", check=False
        )
        sha = done.stdout.decode().strip()
        return sha or None

    def tree(self, commit: str) -> Tree:
        """The files of ``commit`` (path -> blob sha) and its tree's sha."""
        what = f"listing the files of {commit[:12]}"
        root = self._git.run("rev-parse", f"{commit}^{{tree}}", what=what).stdout.decode().strip()
        listing = self._git.run("ls-tree", "-r", "-z", "--full-tree", root, what=what).stdout
        files = {}
        for entry in listing.decode("utf-8", errors="surrogateescape").split("\0"):
            head, _, path = entry.partition("\t")
            parts = head.split(" ")
            if len(parts) == 3 and parts[1] == "blob":  # noqa: PLR2004  -- mode, type, sha
                files[path] = parts[2]
        return Tree(sha=root, files=files)

    def texts(self, shas: Collection[str]) -> dict[str, str]:
        """The UTF-8 text of each blob (sha -> text)."""
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return {}
        what = f"reading {len(wanted)} blob(s)"
        stdin = "".join(f"{sha}\n" for sha in wanted).encode()
        out = self._git.run("cat-file", "--batch", what=what, stdin=stdin).stdout
        texts: dict[str, str] = {}
        at = 0
        for sha in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            if len(header) != 3:  # noqa: PLR2004  -- sha, type, size
                raise GitHubAPIError(f"{what} failed: blob {sha[:12]} is missing")
            size = int(header[2])
            data = out[end + 1 : end + 1 + size]
            at = end + 2 + size
            try:
                texts[sha] = data.decode("utf-8")
            except UnicodeDecodeError:
                raise GitHubAPIError(f"{what} failed: blob {sha[:12]} is not UTF-8 text") from None
        return texts

    def _write_blob(self, content: Content) -> str:
        """Store ``content`` as UTF-8, as the last guard scrubs it, as a loose object (git's
        own format); return its sha. A text is scrubbed whole; pieces (a durations file: 5 MB
        at 200k tests) are made, scrubbed and written to a scratch file a piece at a time,
        since git's header, which comes first, needs the size of what the guard left; the
        object is then hashed as it is written. No text is held again as bytes, nor a
        durations file's text whole."""
        if isinstance(content, str):
            text = scrub(content)
            return self._store(utf8_size(text), utf8_pieces(text))
        with tempfile.TemporaryFile(dir=self.directory) as scratch:
            size = write_scrubbed(scratch, content())
            scratch.seek(0)
            return self._store(size, iter(partial(scratch.read, _CHUNK), b""))

    def _store(self, size: int, data: Iterable[bytes]) -> str:
        """The loose object of a blob of ``size`` bytes, ``data``, written as it comes and
        hashed as it is written; its sha.

        Stored, not compressed (zlib level 0): the push inflates it and compresses it once,
        into the pack it sends, so compressing it here too was work done twice."""
        header = b"blob %d\0" % size
        digest = hashlib.sha1(header, usedforsecurity=False)
        objects = Path(self.directory, "objects")
        temporary = objects / f".blob.{os.getpid()}.tmp"
        store = zlib.compressobj(0)
        with temporary.open("wb") as handle:
            handle.write(store.compress(header))
            for piece in data:
                digest.update(piece)
                handle.write(store.compress(piece))
            handle.write(store.flush())
        sha = digest.hexdigest()
        path = objects / sha[:2] / sha[2:]
        if path.exists():
            temporary.unlink()
        else:
            path.parent.mkdir(exist_ok=True)
            temporary.replace(path)
        return sha

    def write_tree(self, base_tree: str | None, files: Iterable[tuple[str, Content | None]]) -> str:
        """A tree: ``base_tree`` with each path set to its content, or removed where None.
        Each is written as a blob as it comes, so ``files`` may make them one at a time
        (the branch store renders a page, and lets it go once written); a durations file,
        given as what makes its pieces, is written a piece at a time (:meth:`_write_blob`)."""
        records = []
        for path, content in files:
            if content is None:
                records.append((path, f"0 {_ZERO}\t{path}"))
            else:
                blob = self._write_blob(content)
                records.append((path, f"100644 {blob}\t{path}"))
            del content  # let go before the next is made
        records.sort()
        with tempfile.TemporaryDirectory(dir=self.directory) as scratch:
            index = str(Path(scratch, "index"))
            what = "writing a tree"
            base = [base_tree] if base_tree else ["--empty"]
            self._git.run("read-tree", *base, what=what, index=index)
            stdin = "".join(f"{record}\0" for _, record in records).encode()
            self._git.run("update-index", "-z", "--index-info", what=what, index=index, stdin=stdin)
            return self._git.run("write-tree", what=what, index=index).stdout.decode().strip()

    def write_commit(self, message: str, tree: str, parents: Sequence[str]) -> str:
        """A commit of ``tree`` on ``parents`` (no ref moves)."""
        args = [arg for parent in parents for arg in ("-p", parent)]
        done = self._git.run(
            "commit-tree",
            tree,
            *args,
            "-F",
            "-",
            what="writing a commit",
            stdin=scrub(message).encode(),
        )
        return done.stdout.decode().strip()


def _silent(_message: str) -> None:
    pass


def _status_in(said: str) -> int:
    """The HTTP status git names in its message (403 when it names none of 403 and 429)."""
    return 429 if "error: 429" in said.lower() else 403


def server_words(stderr: str) -> str:
    """What the server said about a refused push (its ``remote:`` lines, else git's error
    lines), on one line: control characters dropped, each line and their number capped."""
    lines = [line for line in stderr.splitlines() if line.startswith("remote:")]
    if lines:
        lines = [line.removeprefix("remote:") for line in lines]
    else:
        lines = [line for line in stderr.splitlines() if line.startswith(("error:", "fatal:"))]
    kept = []
    for line in lines:
        clean = "".join(c if c.isprintable() else " " for c in line).strip()
        if clean:
            kept.append(clean[:_SAID_WIDTH])
    if len(kept) > _SAID_LINES:
        kept = [*kept[:_SAID_LINES], f"... ({len(kept) - _SAID_LINES} more line(s))"]
    return " / ".join(kept)


def _before_sending(message: str) -> bool:
    """Whether a push failed at its first request (git's discovery of the remote's refs), so
    it sent nothing: git says "unable to access" there, "RPC failed" once it sends the pack."""
    said = message.lower()
    return "unable to access" in said and "rpc failed" not in said
