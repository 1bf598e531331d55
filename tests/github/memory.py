"""An in-memory GitHub for store and target tests: git data and issues, no HTTP.

``MemoryGitHub`` has the methods of :class:`ivy_matrix.github.client.GitHubClient` that the stores
and targets call, with the same signatures, return types and errors, so store logic can be
tested in-process, with many threads racing, in milliseconds. It keeps the GitHub behaviours
the stores rely on:

* refs are compare-and-swap: ``update_branch`` is a fast-forward or False, ``create_branch``
  is False when the branch exists (GitHub's "Reference already exists");
* blobs, trees and commits are content-addressed (git's own ids for blobs and trees, from
  ``tests/github/fake_server.py``);
* issue and comment bodies over 65,536 characters are refused with the 422
  :class:`GitHubAPIError` the client raises; writes with a read-only token raise
  :class:`ReadOnlyTokenError`; missing objects raise a 404 :class:`GitHubAPIError`;
* a commit shows the newest status of each context; a status of a commit it does not have, of
  a state GitHub does not know or with a description over 140 characters is refused with 422;
* one lock guards all state, so every call is atomic and threads can race on it.

Faults (``inject``) stand for what the client sees after its own retries: an error, a write
that landed and then failed, a write that landed and was repeated by the client's retry (a
second issue; the same ref move again), and a ``before`` hook that runs just before the call,
outside the lock, so a test can let a competing writer move the branch between read and write.
``tests/github/test_memory.py`` runs the same scenarios here and through the HTTP fake.

**GitHub's budgets** (``tests/github/budget.py``) apply as on the HTTP fake: every call costs
the requests the client's call sends (one, plus a page per 100 items listed, a blob per file
over 1 MB written, a label create after its read), charged to the token of the view it came
through (``for_token(token)``; the model itself is ``GITHUB_TOKEN``). A refused request is handled as the client handles it:
``github/retry.py``'s policy, from the client's own :class:`Transport`, waits what GitHub asks
with the model's ``sleep`` (by default none at all, so a refusal is asked again at once and
the client's limits on tries and waiting end in its :class:`RateLimitError`; a test that
passes a clock and a sleep that moves it sees the wait succeed). ``budget.spent(token)`` says
what each token sent.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from ivy_matrix.errors import GitHubAPIError, ReadOnlyTokenError
from ivy_matrix.github.client import GitHubClient
from ivy_matrix.github.git import INLINE_LIMIT
from ivy_matrix.github.http import HTTPError, Transport
from ivy_matrix.github.retry import RetryPolicy
from ivy_matrix.github.types import CommitStatus, Issue, IssueComment, PullRequest, Spend, Tree
from ivy_matrix.results.jobs import Job
from ivy_matrix.runner.reporter import Reporter
from tests.github.budget import GITHUB_TOKEN, Budget, Clock, Limits
from tests.github.fake_server import (
    BOT_LOGIN,
    STATUS_DESCRIPTION_LIMIT,
    STATUS_STATES,
    STATUSES_PER_CONTEXT,
    git_blob_sha,
    tree_sha,
)

_T = TypeVar("_T")
BODY_LIMIT = 65_536
MAX_PINS = 3  # GitHub pins at most three issues per repository
SERVER = "https://github.com"
JSON = dict[str, Any]
DEFAULT_TOKEN = "GITHUB_TOKEN"  # the token of calls made on the model itself
PAGE = 100  # items per page of the client's listings (per_page=100)
# The HTTP method of the (first) request each client call sends; the others send a GET.
VERBS = {
    **dict.fromkeys(
        ("create_tree", "create_commit", "create_branch", "create_ref", "create_issue",
         "create_issue_comment", "pin_issue", "create_commit_status"),
        "POST",
    ),
    **dict.fromkeys(("create_pull_request",), "POST"),
    **dict.fromkeys(
        ("update_branch", "replace_branch", "move_ref", "update_issue", "update_issue_comment",
         "update_pull_request"),
        "PATCH",
    ),
    **dict.fromkeys(("delete_issue_comment",), "DELETE"),
}  # fmt: skip


def _no_wait(_seconds: float) -> None:
    """The model's default sleep: a refused request is asked again at once."""


@dataclass
class MemoryFault:
    """A queued answer for the next ``times`` calls of the client method named ``method``.

    ``status`` is raised as a :class:`GitHubAPIError` (None: no error). With ``after_write``
    the call is applied first; then ``retried`` applies it once more and returns that answer
    (what the client's retry makes of a write that landed before a 5xx), otherwise the error
    is raised. ``before`` runs just before the call, outside the lock.
    """

    method: str
    status: int | None = 502
    after_write: bool = False
    retried: bool = False
    before: Callable[[], object] | None = None
    times: int = 1
    hits: int = 0


def _commit_sha(tree: str, parents: list[str], message: str) -> str:
    """A content-addressed id for a commit (git's, but without author and time)."""
    text = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents) + "\n" + message
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def _error(what: str, status: int, message: str) -> GitHubAPIError:
    return GitHubAPIError(f"{what} failed: GitHub answered '{status} {message}'", status=status)


class MemoryGitHub:
    """Git data and issues of some repositories, in memory; see the module docstring.

    State, readable in tests (under ``lock`` while threads run): ``blobs`` sha -> text,
    ``trees`` sha -> {path: blob sha}, ``commits`` sha -> {tree, parents, message},
    ``refs`` repo -> {"refs/heads/x": sha}, ``issues`` number -> issue dict (as in
    ``FakeGitHub``: body, state, labels (lower case), pull_request, ...), ``comments`` number
    -> [comment dict], ``labels`` repo -> lower-case name -> label dict, ``calls`` the client
    methods called, in order.
    """

    def __init__(
        self,
        repos: Iterable[str] = ("acme/widgets",),
        *,
        read_only: bool = False,
        latency: tuple[float, float] = (0.0, 0.0),
        seed: int = 0,
        limits: Limits = GITHUB_TOKEN,
        clock: Clock = time.time,
        sleep: Callable[[float], None] = _no_wait,
    ) -> None:
        self.lock = threading.Lock()
        self.read_only = read_only
        self.latency = latency
        self._rng = random.Random(seed)
        self.budget = Budget(limits, clock=clock)
        # The client's own retries, as a GitHubClient with default settings makes them.
        policy = RetryPolicy(clock=clock, rng=random.Random(seed))
        self._client_retry = Transport(retry=policy, sleep=sleep)
        self.blobs: dict[str, str] = {}
        self.trees: dict[str, dict[str, str]] = {tree_sha({}): {}}
        self.commits: dict[str, JSON] = {}
        self.refs: dict[str, dict[str, str]] = {repo: {} for repo in repos}
        self.issues: dict[int, JSON] = {}
        self.comments: dict[int, list[JSON]] = {}
        self.labels: dict[str, dict[str, JSON]] = {repo: {} for repo in repos}
        self.jobs: dict[tuple[str, int, int], list[Job]] = {}
        self.pinned: list[str] = []
        # repo -> commit sha -> the statuses set on it (CommitStatus), oldest first.
        self.statuses: dict[str, dict[str, list[CommitStatus]]] = {repo: {} for repo in repos}
        self.faults: list[MemoryFault] = []
        self.calls: list[str] = []
        self._written: list[str] = []
        self._next_issue = 1
        self._next_comment = 1_000_000_001

    # ----------------------------------------------------------------- test side

    def for_token(self, token: str) -> MemoryGitHub:
        """This model, as the client of ``token``: every call through it is charged to
        ``token`` (each leg of a race can have its own, so ``budget.spent(token)`` tells them
        apart). It shares all state with this model, settings and faults included."""
        view = TokenView.__new__(TokenView)
        # The same attribute dict, not a copy: the view *is* this model, bar its token.
        view.__dict__ = self.__dict__
        view.token = token
        return view

    def close(self) -> None:
        """Nothing to close (the client's method)."""

    def report_to(self, log: Reporter) -> None:
        """Say the client's retries in ``log``, as the real client does (the client's method)."""
        self._client_retry.report_to(log)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def inject(
        self,
        method: str,
        *,
        status: int | None = 502,
        after_write: bool = False,
        retried: bool = False,
        before: Callable[[], object] | None = None,
        times: int = 1,
    ) -> MemoryFault:
        """Queue a fault for the next ``times`` calls of ``method`` (see :class:`MemoryFault`)."""
        if not callable(getattr(self, method, None)) or not _is_client_method(method):
            raise TypeError(f"GitHubClient has no method {method!r}")
        fault = MemoryFault(method, status, after_write, retried, before, times)
        with self.lock:
            self.faults.append(fault)
        return fault

    def writes(self) -> list[str]:
        """The client methods called that wrote (or tried to write), in order."""
        with self.lock:
            return list(self._written)

    def ref_sha(self, ref: str, repo: str = "acme/widgets") -> str | None:
        """The commit ``ref`` (``heads/x`` or ``refs/heads/x``) points at, or None."""
        with self.lock:
            return self.refs[repo].get(ref if ref.startswith("refs/") else f"refs/{ref}")

    def files(self, branch: str, repo: str = "acme/widgets") -> dict[str, bytes]:
        """Every file on ``branch`` as path -> bytes (as ``FakeGitHub.files``)."""
        with self.lock:
            tree = self.trees[self.commits[self.refs[repo][f"refs/heads/{branch}"]]["tree"]]
            return {path: self.blobs[sha].encode() for path, sha in sorted(tree.items())}

    def read_file(self, path: str, branch: str, repo: str = "acme/widgets") -> str:
        """The text of one file on ``branch``; KeyError if absent."""
        return self.files(branch, repo)[path].decode()

    def push(self, branch: str, files: Mapping[str, str], repo: str = "acme/widgets") -> str:
        """Commit ``files`` on ``branch`` (creating it) and move it, as another writer would.

        Not a client call: no fault applies and nothing is logged, so hooks can use it.
        """
        with self.lock:
            ref = f"refs/heads/{branch}"
            tip = self.refs[repo].get(ref)
            tree = self._store_tree(self.commits[tip]["tree"] if tip else None, files)
            sha = self._store_commit(tree, [tip] if tip else [], "push")
            self.refs[repo][ref] = sha
            return sha

    def add_issue(
        self,
        repo: str = "acme/widgets",
        *,
        title: str = "Issue",
        body: str = "",
        labels: Iterable[str] = (),
        state: str = "open",
        pull_request: bool = False,
        head: tuple[str, str] | None = None,
    ) -> JSON:
        """Create an issue (or a pull request item, whose ``head`` is its ``owner:branch``
        label and head sha) directly in state."""
        with self.lock:
            issue = self._new_issue(repo, title, body, list(labels))
            issue.update(pull_request=pull_request, state=state)
            if head is not None:
                issue["head"] = head
            return issue

    def add_comment(
        self, number: int, body: str, *, login: str = BOT_LOGIN, repo: str = "acme/widgets"
    ) -> JSON:
        """Add a comment by ``login`` to issue ``number`` directly in state."""
        with self.lock:
            self._issue(repo, number)
            comment = {"id": self._next_comment, "repo": repo, "issue": number, "body": body}
            comment["login"] = login
            self._next_comment += 1
            self.comments[number].append(comment)
            return comment

    def add_jobs(self, repo: str, run_id: int, attempt: int, jobs: Iterable[Job]) -> None:
        """Make ``jobs`` the jobs of one run attempt."""
        with self.lock:
            self.jobs[(repo, run_id, attempt)] = list(jobs)

    # ----------------------------------------------------------------- the machinery

    def _token(self) -> str:
        """Who pays for the calls made through this object (a view has its own token)."""
        return DEFAULT_TOKEN

    def spent(self) -> Spend:
        """What this token spent, as the client reports it (the client's method)."""
        token = self._token()
        spend = self.budget.spent(token)
        headers = self.budget.headers(token)
        return Spend(
            requests=spend.requests,
            content_requests=spend.content_requests,
            rate_limit_remaining=int(headers["X-RateLimit-Remaining"]),
            rate_limit=int(headers["X-RateLimit-Limit"]),
        )

    def _take_fault(self, method: str) -> MemoryFault | None:
        with self.lock:
            for queued in self.faults:
                if queued.method == method and queued.times > 0:
                    queued.times -= 1
                    queued.hits += 1
                    return queued
        return None

    def _call(self, method: str, apply: Callable[[], _T], *, size: int = 0) -> _T:
        """One client call: its fault, its budget (retried as the client retries), its latency.

        ``size``: the bytes the call sends (bodies and file texts), for the spend.
        """
        fault = self._take_fault(method)
        if fault is not None and fault.before is not None:
            fault.before()
        token = self._token()

        def attempt() -> _T:
            self._charge(VERBS.get(method, "GET"), size=size, token=token)
            try:
                low, high = self.latency
                if high > 0:
                    time.sleep(self._rng.uniform(low, high))
                with self.lock:
                    self.calls.append(method)
                    if fault is None or fault.status is None:
                        return apply()
                    if fault.after_write:
                        apply()
                        if fault.retried:
                            return apply()
                    raise _error(method, fault.status, "injected fault")
            finally:
                self.budget.release(token)

        return self._client_retry._call(method, "", attempt)

    def _charge(self, verb: str, *, size: int = 0, token: str | None = None) -> None:
        """Count one request; GitHub's refusal as the client sees it (:class:`HTTPError`).

        Admitted requests are in flight until the caller releases them; extra requests of
        one call (pages, big blobs) are released at once, their latency being the call's.
        """
        admission = self.budget.admit(token or self._token(), verb, size=size)
        refusal = admission.refusal
        if refusal is not None:
            self.budget.release(token or self._token())
            raise HTTPError(refusal.status, refusal.body, admission.headers)

    def _charge_more(self, verb: str, count: int) -> None:
        """Count ``count`` more requests of the running call (released at once)."""
        for _ in range(count):
            self._charge(verb)
            self.budget.release(self._token())

    def _charge_pages(self, items: int) -> None:
        """The pages after the first of a listing of ``items`` (100 a page, as the client asks)."""
        self._charge_more("GET", max(math.ceil(items / PAGE), 1) - 1)

    def _writable(self, method: str) -> None:
        self._written.append(method)
        if self.read_only:
            raise ReadOnlyTokenError(
                f"{method} failed: GitHub answered '403 Resource not accessible by "
                f"integration': the token is read-only here",
                status=403,
            )

    def _repo(self, repo: str) -> dict[str, str]:
        refs = self.refs.get(repo)
        if refs is None:
            raise _error(f"reading {repo}", 404, "Not Found")
        return refs

    # ----------------------------------------------------------------- git data

    def get_branch_head(self, repo: str, branch: str) -> str | None:
        """The commit ``branch`` points at, or None."""
        # The client reads a 404 (no such branch, or repository) as None.
        ref = f"refs/heads/{branch}"
        return self._call("get_branch_head", lambda: self.refs.get(repo, {}).get(ref))

    def get_tree(self, repo: str, tree_ish: str) -> Tree:
        """A tree, or a commit's tree, with every file in it."""

        def apply() -> Tree:
            self._repo(repo)
            sha = self.commits[tree_ish]["tree"] if tree_ish in self.commits else tree_ish
            if sha not in self.trees:
                raise _error(f"listing the files of {tree_ish[:12]}", 404, "Not Found")
            return Tree(sha=sha, files=dict(self.trees[sha]))

        return self._call("get_tree", apply)

    def get_blob_text(self, repo: str, sha: str) -> str:
        """The text of one blob."""

        def apply() -> str:
            self._repo(repo)
            if sha not in self.blobs:
                raise _error(f"reading blob {sha[:12]}", 404, "Not Found")
            return self.blobs[sha]

        return self._call("get_blob_text", apply)

    @property
    def parallel_reads(self) -> int:
        """How many reads get_blob_texts makes at once (as the client's)."""
        return 8

    def get_blob_texts(self, repo: str, shas: Collection[str]) -> dict[str, str]:
        """The text of each blob, read 8 at a time (each read is a call, with its latency)."""
        wanted = list(dict.fromkeys(shas))
        with ThreadPoolExecutor(max_workers=max(min(8, len(wanted)), 1)) as pool:
            texts = list(pool.map(lambda sha: self.get_blob_text(repo, sha), wanted))
        return dict(zip(wanted, texts, strict=True))

    def create_tree(self, repo: str, base_tree: str | None, files: Mapping[str, str | None]) -> str:
        """``base_tree`` with each path set to its text, or deleted (with all below it) if None."""

        texts = [text for text in files.values() if text is not None]
        # The client sends files over INLINE_LIMIT bytes as blobs of their own first.
        big = sum(len(t) > INLINE_LIMIT // 4 and len(t.encode()) > INLINE_LIMIT for t in texts)

        def apply() -> str:
            self._repo(repo)
            self._writable("create_tree")
            self._charge_more("POST", big)
            if base_tree is not None and base_tree not in self.trees:
                raise _error("writing a tree", 422, "Invalid tree info")
            return self._store_tree(base_tree, files)

        size = sum(len(t.encode()) for t in texts) + sum(len(p) for p in files)
        return self._call("create_tree", apply, size=size)

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str:
        """A commit of ``tree`` on ``parents`` (content-addressed; no branch moves)."""

        def apply() -> str:
            self._repo(repo)
            self._writable("create_commit")
            if tree not in self.trees:
                raise _error("writing a commit", 422, "Tree SHA does not exist")
            if any(parent not in self.commits for parent in parents):
                raise _error("writing a commit", 422, "Parent SHA does not exist")
            return self._store_commit(tree, parents, message)

        return self._call("create_commit", apply)

    def create_branch(self, repo: str, branch: str, sha: str) -> bool:
        """Create ``branch`` at ``sha``; False if it already exists."""

        def apply() -> bool:
            refs = self._repo(repo)
            self._writable("create_branch")
            if sha not in self.commits:
                raise _error(f"creating branch {branch!r}", 422, "Object does not exist")
            ref = f"refs/heads/{branch.removeprefix('refs/heads/')}"
            if ref in refs:
                return False
            refs[ref] = sha
            return True

        return self._call("create_branch", apply)

    def update_branch(self, repo: str, branch: str, sha: str) -> bool:
        """Move ``branch`` to ``sha`` if that is a fast-forward; False if it moved on (or is gone)."""

        def apply() -> bool:
            refs = self._repo(repo)
            self._writable("update_branch")
            ref = f"refs/heads/{branch.removeprefix('refs/heads/')}"
            if ref not in refs:
                return False  # "Reference does not exist"
            if sha not in self.commits:
                raise _error(f"moving branch {branch!r}", 422, "Object does not exist")
            if not self._is_ancestor(refs[ref], sha):
                return False  # "Update is not a fast forward"
            refs[ref] = sha
            return True

        return self._call("update_branch", apply)

    def replace_branch(self, repo: str, branch: str, sha: str, *, old: str) -> bool:
        """Point ``branch`` at ``sha`` if it still points at ``old`` (the client reads the ref,
        then forces: two requests)."""
        if self.get_branch_head(repo, branch) != old:
            return False

        def apply() -> bool:
            refs = self._repo(repo)
            self._writable("replace_branch")
            ref = f"refs/heads/{branch.removeprefix('refs/heads/')}"
            if ref not in refs:
                return False
            if sha not in self.commits:
                raise _error(f"moving branch {branch!r}", 422, "Object does not exist")
            refs[ref] = sha
            return True

        return self._call("replace_branch", apply)

    def get_default_branch(self, repo: str) -> str:
        """The repository's default branch: ``main`` here."""
        return self._call("get_default_branch", lambda: (self._repo(repo), "main")[1])

    def get_ref(self, repo: str, ref: str) -> str | None:
        """The commit a full ref name points at, or None."""
        return self._call("get_ref", lambda: self._repo(repo).get(ref))

    def create_ref(self, repo: str, ref: str, sha: str) -> bool:
        """Create ``ref`` at ``sha``; False if it exists ("Reference already exists")."""

        def apply() -> bool:
            refs = self._repo(repo)
            self._writable("create_ref")
            if sha not in self.commits:
                raise _error(f"creating ref {ref!r}", 422, "Object does not exist")
            if ref in refs:
                return False
            refs[ref] = sha
            return True

        return self._call("create_ref", apply)

    def move_ref(self, repo: str, ref: str, sha: str) -> bool:
        """Move ``ref`` to ``sha`` if that is a fast-forward; False otherwise."""

        def apply() -> bool:
            refs = self._repo(repo)
            self._writable("move_ref")
            if ref not in refs or not self._is_ancestor(refs[ref], sha):
                return False
            refs[ref] = sha
            return True

        return self._call("move_ref", apply)

    def list_refs(self, repo: str, prefix: str) -> dict[str, str]:
        """Every ref whose full name starts with ``prefix``: name -> sha, by name."""
        return self._call(
            "list_refs",
            lambda: {r: s for r, s in sorted(self._repo(repo).items()) if r.startswith(prefix)},
        )

    def _store_tree(self, base_tree: str | None, files: Mapping[str, str | None]) -> str:
        flat = dict(self.trees[base_tree]) if base_tree else {}
        for path, text in files.items():
            for old in [p for p in flat if p == path or p.startswith(path + "/")]:
                del flat[old]
            if text is not None:
                flat[path] = git_blob_sha(text.encode())
                self.blobs[flat[path]] = text
        sha = tree_sha(flat)
        self.trees[sha] = flat
        return sha

    def _store_commit(self, tree: str, parents: list[str], message: str) -> str:
        sha = _commit_sha(tree, parents, message)
        self.commits[sha] = {"tree": tree, "parents": list(parents), "message": message}
        return sha

    def _is_ancestor(self, ancestor: str, sha: str) -> bool:
        todo, seen = [sha], set()
        while todo:
            current = todo.pop()
            if current == ancestor:
                return True
            if current not in seen:
                seen.add(current)
                todo += self.commits[current]["parents"]
        return False

    # ----------------------------------------------------------------- issues

    def _issue(self, repo: str, number: int) -> JSON:
        self._repo(repo)
        issue = self.issues.get(number)
        if issue is None or issue["repo"] != repo:
            raise _error(f"reading issue #{number} of {repo}", 404, "Not Found")
        return issue

    def _as_issue(self, issue: JSON) -> Issue:
        repo, number = issue["repo"], issue["number"]
        return Issue(
            number=number,
            node_id=f"I_{number}",
            title=issue["title"],
            body=issue["body"],
            state=issue["state"],
            html_url=f"{SERVER}/{repo}/{'pull' if issue['pull_request'] else 'issues'}/{number}",
            labels=tuple(self.labels[repo][name]["name"] for name in issue["labels"]),
            author=issue.get("login", BOT_LOGIN),
        )

    def _as_comment(self, comment: JSON) -> IssueComment:
        url = f"{SERVER}/{comment['repo']}/issues/{comment['issue']}"
        return IssueComment(
            id=comment["id"],
            body=comment["body"],
            html_url=f"{url}#issuecomment-{comment['id']}",
            author=comment.get("login", BOT_LOGIN),
        )

    @staticmethod
    def _check_body(what: str, body: str, *, required: bool) -> None:
        if required and not body:
            raise _error(what, 422, "Validation Failed (missing_field)")
        if len(body) > BODY_LIMIT:
            limit = f"body is too long (maximum is {BODY_LIMIT} characters)"
            raise _error(what, 422, f"Validation Failed ({limit})")

    def _set_labels(self, issue: JSON, names: Iterable[str]) -> None:
        known = self.labels[issue["repo"]]
        issue["labels"] = []
        for name in names:
            # GitHub creates unknown labels on the fly with the default colour.
            known.setdefault(name.lower(), {"name": name, "color": "ededed", "description": ""})
            if name.lower() not in issue["labels"]:
                issue["labels"].append(name.lower())

    def _new_issue(self, repo: str, title: str, body: str, labels: list[str]) -> JSON:
        self._repo(repo)
        number, self._next_issue = self._next_issue, self._next_issue + 1
        issue: JSON = {
            "number": number,
            "repo": repo,
            "title": title,
            "body": body,
            "state": "open",
            "state_reason": None,
            "labels": [],
            "pull_request": False,
        }
        self._set_labels(issue, labels)
        self.issues[number] = issue
        self.comments[number] = []
        return issue

    def list_issues(self, repo: str, *, label: str, state: str = "all") -> list[Issue]:
        """Every issue with ``label`` in ``state``, newest first, pull requests left out."""

        def apply() -> list[Issue]:
            self._repo(repo)
            listed = [
                issue
                for _, issue in sorted(self.issues.items(), reverse=True)
                if issue["repo"] == repo
                and label.lower() in issue["labels"]
                and state in {"all", issue["state"]}
            ]
            self._charge_pages(len(listed))  # GitHub lists pull requests too; the client drops them
            return [self._as_issue(issue) for issue in listed if not issue["pull_request"]]

        return self._call("list_issues", apply)

    def get_issue(self, repo: str, number: int) -> Issue:
        """One issue."""
        return self._call("get_issue", lambda: self._as_issue(self._issue(repo, number)))

    def create_issue(self, repo: str, *, title: str, body: str, labels: list[str]) -> Issue:
        """A new open issue."""

        def apply() -> Issue:
            self._repo(repo)
            self._writable("create_issue")
            if not title:
                raise _error(f"creating an issue in {repo}", 422, "Validation Failed")
            self._check_body(f"creating an issue in {repo}", body, required=False)
            return self._as_issue(self._new_issue(repo, title, body, labels))

        return self._call("create_issue", apply, size=len(title) + len(body.encode()))

    def update_issue(
        self,
        repo: str,
        number: int,
        *,
        body: str | None = None,
        state: str | None = None,
        state_reason: str | None = None,
        labels: list[str] | None = None,
    ) -> Issue:
        """Edit an issue; unset fields stay (last writer wins)."""

        def apply() -> Issue:
            self._repo(repo)
            self._writable("update_issue")
            issue = self._issue(repo, number)
            if body is not None:
                self._check_body(f"editing issue #{number} of {repo}", body, required=False)
                issue["body"] = body
            if labels is not None:
                self._set_labels(issue, labels)
            if state == "closed" and issue["state"] == "open":
                issue.update(state="closed", state_reason=state_reason or "completed")
            elif state == "open" and issue["state"] == "closed":
                issue.update(state="open", state_reason="reopened")
            return self._as_issue(issue)

        return self._call("update_issue", apply, size=len((body or "").encode()))

    def list_pull_requests(self, repo: str, *, head: str) -> list[PullRequest]:
        """The open pull requests whose head label is ``head``."""

        def apply() -> list[PullRequest]:
            self._repo(repo)
            found = [
                self._pull(issue)
                for number, issue in sorted(self.issues.items())
                if issue["repo"] == repo
                and issue["pull_request"]
                and issue["state"] == "open"
                and issue.get("head", ("", ""))[0] == head
            ]
            self._charge_pages(len(found))
            return found

        return self._call("list_pull_requests", apply)

    def get_combined_status(self, repo: str, ref: str) -> list[CommitStatus]:
        """The newest status of each context on commit ``ref``, newest first (404: no commit)."""

        def apply() -> list[CommitStatus]:
            self._repo(repo)
            if ref not in self.commits:
                raise _error(f"reading the commit statuses of {ref}", 404, "No commit found")
            return self._latest_statuses(repo, ref)

        return self._call("get_combined_status", apply)

    def create_commit_status(self, repo: str, sha: str, status: CommitStatus) -> CommitStatus:
        """Set ``status`` on commit ``sha``; 422 as GitHub refuses (no such commit, a state it
        does not know, a description over 140 characters, 1,000 statuses of one context)."""

        def apply() -> CommitStatus:
            self._repo(repo)
            self._writable("create_commit_status")
            what = f"setting the commit status {status.context!r} of {sha}"
            if sha not in self.commits:
                raise _error(what, 422, f"No commit found for SHA: {sha}")
            kept = self.statuses.setdefault(repo, {}).setdefault(sha, [])
            same = sum(s.context.lower() == status.context.lower() for s in kept)
            if (
                status.state not in STATUS_STATES
                or len(status.description) > STATUS_DESCRIPTION_LIMIT
                or same >= STATUSES_PER_CONTEXT
            ):
                raise _error(what, 422, "Validation Failed")
            kept.append(status)
            return status

        size = len(status.description.encode()) + len(status.target_url.encode())
        return self._call("create_commit_status", apply, size=size)

    def _latest_statuses(self, repo: str, sha: str) -> list[CommitStatus]:
        """The newest status of each context (compared case-insensitively), newest first."""
        found: dict[str, CommitStatus] = {}
        for status in reversed(self.statuses.get(repo, {}).get(sha, [])):
            found.setdefault(status.context.lower(), status)
        return list(found.values())

    def commit_statuses(self, sha: str, repo: str = "acme/widgets") -> dict[str, CommitStatus]:
        """The newest status of each context on commit ``sha`` (context -> status)."""
        with self.lock:
            return {status.context: status for status in self._latest_statuses(repo, sha)}

    def add_commit(self, repo: str = "acme/widgets", message: str = "a pull request") -> str:
        """A new commit that no branch points at (a pull request's head, say); its sha."""
        with self.lock:
            self._repo(repo)
            return self._store_commit(self._store_tree(None, {}), [], message)

    def create_pull_request(
        self, repo: str, *, title: str, head: str, base: str, body: str
    ) -> PullRequest:
        """Open a pull request from branch ``head`` (422 when it has no such branch, or an
        open pull request already has that head, as GitHub answers)."""

        def apply() -> PullRequest:
            refs = self._repo(repo)
            self._writable("create_pull_request")
            self._check_body("opening a pull request", body, required=False)
            sha = refs.get(f"refs/heads/{head}")
            if sha is None or f"refs/heads/{base}" not in refs:
                raise _error("opening a pull request", 422, "Validation Failed")
            label = f"{repo.partition('/')[0]}:{head}"
            if any(
                i["repo"] == repo and i["pull_request"] and i["state"] == "open"
                and i.get("head", ("", ""))[0] == label
                for i in self.issues.values()
            ):  # fmt: skip
                raise _error("opening a pull request", 422, "A pull request already exists")
            issue = self._new_issue(repo, title, body, [])
            issue.update(pull_request=True, head=(label, sha), branch=head)
            return self._pull(issue)

        return self._call("create_pull_request", apply, size=len(body.encode()))

    def update_pull_request(self, repo: str, number: int, *, title: str, body: str) -> PullRequest:
        """Set a pull request's title and body."""

        def apply() -> PullRequest:
            issue = self._issue(repo, number)
            self._writable("update_pull_request")
            self._check_body("updating a pull request", body, required=False)
            if not issue["pull_request"]:
                raise _error(f"updating pull request #{number} of {repo}", 404, "Not Found")
            issue.update(title=title, body=body)
            return self._pull(issue)

        return self._call("update_pull_request", apply, size=len(body.encode()))

    def _pull(self, issue: JSON) -> PullRequest:
        """A pull request as the client returns it; its head follows its branch."""
        _label, sha = issue.get("head", ("", ""))
        branch = issue.get("branch")
        if branch is not None:
            sha = self.refs[issue["repo"]].get(f"refs/heads/{branch}", sha)
        return PullRequest(
            number=issue["number"], head_sha=sha, state=issue["state"], body=issue["body"]
        )

    def get_pull_request(self, repo: str, number: int) -> PullRequest:
        """One pull request (404 for an issue that is not one), with its state."""

        def apply() -> PullRequest:
            issue = self._issue(repo, number)
            if not issue["pull_request"]:
                raise _error(f"reading pull request #{number} of {repo}", 404, "Not Found")
            return PullRequest(
                number=number, head_sha=issue.get("head", ("", ""))[1], state=issue["state"]
            )

        return self._call("get_pull_request", apply)

    def list_issue_comments(self, repo: str, number: int) -> list[IssueComment]:
        """Every comment on an issue, oldest first."""

        def apply() -> list[IssueComment]:
            self._issue(repo, number)
            self._charge_pages(len(self.comments[number]))
            return [self._as_comment(comment) for comment in self.comments[number]]

        return self._call("list_issue_comments", apply)

    def create_issue_comment(self, repo: str, number: int, body: str) -> IssueComment:
        """A new comment on an issue."""

        def apply() -> IssueComment:
            self._repo(repo)
            self._writable("create_issue_comment")
            self._issue(repo, number)
            self._check_body(f"commenting on issue #{number} of {repo}", body, required=True)
            comment = {"id": self._next_comment, "repo": repo, "issue": number, "body": body}
            self._next_comment += 1
            self.comments[number].append(comment)
            return self._as_comment(comment)

        return self._call("create_issue_comment", apply, size=len(body.encode()))

    def _comment(self, repo: str, comment_id: int) -> JSON | None:
        return next(
            (
                comment
                for comments in self.comments.values()
                for comment in comments
                if comment["id"] == comment_id and comment["repo"] == repo
            ),
            None,
        )

    def update_issue_comment(
        self,
        repo: str,
        comment_id: int,
        body: str,
        *,
        retry: bool = True,  # noqa: ARG002  -- this model never retries by itself
    ) -> IssueComment:
        """Replace a comment's body (last writer wins)."""

        def apply() -> IssueComment:
            self._repo(repo)
            self._writable("update_issue_comment")
            comment = self._comment(repo, comment_id)
            if comment is None:
                raise _error(f"editing comment {comment_id} in {repo}", 404, "Not Found")
            self._check_body(f"editing comment {comment_id} in {repo}", body, required=True)
            comment["body"] = body
            return self._as_comment(comment)

        return self._call("update_issue_comment", apply, size=len(body.encode()))

    def delete_issue_comment(self, repo: str, comment_id: int) -> bool:
        """Delete a comment; False if it was already gone."""

        def apply() -> bool:
            self._repo(repo)
            self._writable("delete_issue_comment")
            comment = self._comment(repo, comment_id)
            if comment is None:
                return False
            self.comments[comment["issue"]].remove(comment)
            return True

        return self._call("delete_issue_comment", apply)

    def ensure_label(
        self, repo: str, name: str, *, color: str = "ededed", description: str = ""
    ) -> bool:
        """Create label ``name`` unless it exists; True if this call created it."""

        def apply() -> bool:
            self._repo(repo)
            if name.lower() in self.labels[repo]:
                return False
            self._charge_more("POST", 1)  # the create after the read
            self._writable("ensure_label")
            self.labels[repo][name.lower()] = {
                "name": name,
                "color": color,
                "description": description,
            }
            return True

        return self._call("ensure_label", apply)

    def pin_issue(self, node_id: str, *, graphql_url: str | None = None) -> None:  # noqa: ARG002  -- the client's signature
        """Pin an issue; GitHub refuses a fourth pinned issue (and an unknown one)."""

        def apply() -> None:
            self._writable("pin_issue")
            if not any(f"I_{number}" == node_id for number in self.issues):
                raise GitHubAPIError(f"pinning the index issue failed: no issue {node_id}")
            if node_id not in self.pinned and len(self.pinned) >= MAX_PINS:
                raise GitHubAPIError("pinning the index issue failed: three issues are pinned")
            if node_id not in self.pinned:
                self.pinned.append(node_id)

        self._call("pin_issue", apply)

    # ----------------------------------------------------------------- actions

    def list_run_jobs(self, repo: str, run_id: int, attempt: int) -> list[Job]:
        """Every job of one run attempt."""

        def apply() -> list[Job]:
            jobs = self.jobs.get((repo, run_id, attempt))
            if jobs is None:
                what = f"listing the jobs of run {run_id} attempt {attempt} in {repo}"
                raise _error(what, 404, "Not Found")
            self._charge_pages(len(jobs))
            return list(jobs)

        return self._call("list_run_jobs", apply)


def _is_client_method(name: str) -> bool:
    """Whether GitHubClient has a method ``name`` (its calls live in mixin classes)."""
    return any(name in vars(klass) for klass in GitHubClient.__mro__ if klass is not object)


class TokenView(MemoryGitHub):
    """The model seen through one token (see :meth:`MemoryGitHub.for_token`)."""

    __slots__ = ("token",)  # beside the shared attribute dict: the view's own

    token: str

    def _token(self) -> str:
        return self.token
