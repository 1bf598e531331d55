"""The Actions and git-data calls: the run's jobs, branch tips, trees, blobs, commits, refs.

I/O through :class:`~ivy_matrix.github.http.Transport` (no PyGithub here). Every call returns
our own types (``jobs.Job``, ``github.types.Tree``, shas) and is retried by the transport;
each is idempotent at our level (see github/client.py). ``update_branch`` is the compare-and-swap
the branch store relies on.
"""

from __future__ import annotations

import base64
import threading
import urllib.parse
from collections.abc import Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ivy_matrix.errors import GitHubAPIError
from ivy_matrix.github.http import (
    ACTIONS_READ,
    CONTENTS_READ,
    CONTENTS_WRITE,
    HTTPError,
    Transport,
    bind,
    branch_path,
    error_message,
    repo_path,
)
from ivy_matrix.github.types import Tree
from ivy_matrix.results.jobs import Job

# Files bigger than this (bytes of UTF-8) are sent as blobs of their own, not inside the tree.
INLINE_LIMIT = 1 << 20


class GitCalls(Transport):
    """The Actions and git-data calls of :class:`~ivy_matrix.github.client.GitHubClient`."""

    # Job listings, one per (repository, run, attempt): set up by the client.
    _jobs: dict[tuple[str, int, int], list[Job]]
    _lock: threading.Lock

    def list_run_jobs(self, repo: str, run_id: int, attempt: int) -> list[Job]:
        """Every job of one run attempt (all pages); listed once per client and cached."""
        key = (repo, run_id, attempt)
        with self._lock:
            cached = self._jobs.get(key)
        if cached is not None:
            return list(cached)
        url = f"{repo_path(repo)}/actions/runs/{run_id}/attempts/{attempt}/jobs"
        what = f"listing the jobs of run {run_id} attempt {attempt} in {repo}"
        jobs = [
            job_from_json(item, attempt)
            for page in self._get_all(what, ACTIONS_READ, url, {"per_page": 100})
            for item in (page.get("jobs") or [] if isinstance(page, dict) else [])
        ]
        with self._lock:
            self._jobs[key] = jobs
        return list(jobs)

    def get_branch_head(self, repo: str, branch: str) -> str | None:
        """The commit sha ``branch`` points at, or None if there is no such branch."""
        path = f"heads/{branch_path(branch)}"
        return self._read_ref(repo, path, f"reading branch {branch!r} of {repo}")

    def _read_ref(self, repo: str, path: str, what: str) -> str | None:
        """The commit ``git/ref/{path}`` points at, or None if there is no such ref."""
        url = f"{repo_path(repo)}/git/ref/{path}"

        def request() -> str | None:
            try:
                _, data = self._json("GET", url)
            except HTTPError as error:
                # 404: no such ref; 409: "Git Repository is empty."
                if error.status in {404, 409}:
                    return None
                raise
            return str(data["object"]["sha"])

        return self._call(what, CONTENTS_READ, request)

    def get_tree(self, repo: str, tree_ish: str) -> Tree:
        """A tree (or a commit's tree) with every file in it: one request, recursive.

        When GitHub cuts a recursive listing short (``truncated``: over 100,000 entries or
        7 MB), the tree's top level is listed alone and each folder in it the same way, so
        the answer is whole however big the branch is.
        """
        data = self._list_tree(repo, tree_ish, recursive=True)
        sha = str(data["sha"])
        if not data.get("truncated"):
            return Tree(sha=sha, files=_blobs(data, ""))
        return Tree(sha=sha, files=self._tree_files(repo, sha, ""))

    def _tree_files(self, repo: str, sha: str, prefix: str) -> dict[str, str]:
        """Every file of a tree whose recursive listing was cut short, folder by folder."""
        files: dict[str, str] = {}
        for entry in self._list_tree(repo, sha, recursive=False).get("tree") or []:
            path = prefix + str(entry["path"])
            if entry.get("type") == "blob":
                files[path] = str(entry["sha"])
            elif entry.get("type") == "tree":
                below = self._list_tree(repo, str(entry["sha"]), recursive=True)
                if below.get("truncated"):
                    files.update(self._tree_files(repo, str(entry["sha"]), path + "/"))
                else:
                    files.update(_blobs(below, path + "/"))
        return files

    def _list_tree(self, repo: str, tree_ish: str, *, recursive: bool) -> Any:
        url = f"{repo_path(repo)}/git/trees/{urllib.parse.quote(tree_ish, safe='')}"
        _, data = self._call(
            f"listing the files of {tree_ish[:12]} in {repo}",
            CONTENTS_READ,
            bind(self._json, "GET", url, {"recursive": "1"} if recursive else None),
        )
        return data

    def get_blob_text(self, repo: str, sha: str) -> str:
        """The UTF-8 text of one blob."""
        url = f"{repo_path(repo)}/git/blobs/{sha}"
        what = f"reading blob {sha[:12]} of {repo}"
        _, data = self._call(what, CONTENTS_READ, bind(self._json, "GET", url, None))
        content = str(data.get("content") or "")
        raw = base64.b64decode(content) if data.get("encoding") == "base64" else content.encode()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise GitHubAPIError(f"{what} failed: it is not UTF-8 text") from None

    @property
    def parallel_reads(self) -> int:
        """How many reads :meth:`get_blob_texts` sends at once (the client says)."""
        return 1

    def get_blob_texts(self, repo: str, shas: Collection[str]) -> dict[str, str]:
        """The text of each blob (sha -> text), read ``parallel_reads`` at a time."""
        wanted = list(dict.fromkeys(shas))
        workers = min(self.parallel_reads, len(wanted))
        if workers <= 1:
            return {sha: self.get_blob_text(repo, sha) for sha in wanted}
        with ThreadPoolExecutor(max_workers=workers) as pool:
            texts = list(pool.map(lambda sha: self.get_blob_text(repo, sha), wanted))
        return dict(zip(wanted, texts, strict=True))

    # ------------------------------------------------------------------ git data: writes

    def create_tree(self, repo: str, base_tree: str | None, files: Mapping[str, str | None]) -> str:
        """A tree: ``base_tree`` with each path set to its text, or deleted where it is None.

        Texts up to ``INLINE_LIMIT`` bytes go inside the tree request; bigger ones (a dashboard
        of tens of MB) are sent first as blobs of their own and named by sha, so no request
        carries more than one big file.
        """
        entries: list[dict[str, Any]] = []
        for path, text in sorted(files.items()):
            entry: dict[str, Any] = {"path": path, "mode": "100644", "type": "blob"}
            if text is None:
                entry["sha"] = None
            elif len(text) > INLINE_LIMIT // 4 and len(text.encode()) > INLINE_LIMIT:
                entry["sha"] = self.create_blob(repo, text)
            else:
                entry["content"] = text
            entries.append(entry)
        body: dict[str, Any] = {"tree": entries}
        if base_tree is not None:
            body["base_tree"] = base_tree
        _, data = self._call(
            f"writing a tree of {len(entries)} file(s) to {repo}",
            CONTENTS_WRITE,
            bind(self._json, "POST", f"{repo_path(repo)}/git/trees", None, body),
        )
        return str(data["sha"])

    def create_blob(self, repo: str, text: str) -> str:
        """Store ``text`` (UTF-8) as a blob; return its sha (content-addressed: safe to retry)."""
        body = {"content": text, "encoding": "utf-8"}
        _, data = self._call(
            f"writing a blob of {len(text)} characters to {repo}",
            CONTENTS_WRITE,
            bind(self._json, "POST", f"{repo_path(repo)}/git/blobs", None, body),
        )
        return str(data["sha"])

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str:
        """A commit of ``tree`` on ``parents``; return its sha (no branch moves)."""
        body = {"message": message, "tree": tree, "parents": list(parents)}
        _, data = self._call(
            f"writing a commit to {repo}",
            CONTENTS_WRITE,
            bind(self._json, "POST", f"{repo_path(repo)}/git/commits", None, body),
        )
        return str(data["sha"])

    def create_branch(self, repo: str, branch: str, sha: str) -> bool:
        """Create ``branch`` at ``sha``; False if it already exists (re-read it then)."""
        body = {"ref": f"refs/heads/{branch.removeprefix('refs/heads/')}", "sha": sha}
        what = f"creating branch {branch!r} in {repo}"

        def request() -> bool:
            try:
                self._json("POST", f"{repo_path(repo)}/git/refs", body=body)
            except HTTPError as error:
                message = error_message(error.data).lower()
                if error.status == 422 and "already exists" in message:  # noqa: PLR2004
                    return False
                if error.status == 409:  # noqa: PLR2004  -- "Git Repository is empty."
                    raise GitHubAPIError(
                        f"{what} failed: the repository is empty; push a first commit to its "
                        f"default branch and re-run",
                        status=409,
                    ) from None
                raise
            return True

        return self._call(what, CONTENTS_WRITE, request)

    def update_branch(self, repo: str, branch: str, sha: str) -> bool:
        """Move ``branch`` to ``sha`` if that is a fast-forward; False if the branch moved on.

        ``force`` is always false, so this is a compare-and-swap on the branch tip: False means
        another writer got there first (422 "not a fast forward", 409, or the branch was
        deleted), and the caller re-reads and tries again.
        """
        url = f"{repo_path(repo)}/git/refs/heads/{branch_path(branch)}"

        def request() -> bool:
            try:
                self._json("PATCH", url, body={"sha": sha, "force": False})
            except HTTPError as error:
                message = error_message(error.data).lower()
                if error.status == 409:  # noqa: PLR2004
                    return False
                if error.status == 422 and (  # noqa: PLR2004
                    "fast forward" in message or "reference does not exist" in message
                ):
                    return False
                raise
            return True

        return self._call(f"moving branch {branch!r} of {repo}", CONTENTS_WRITE, request)

    def replace_branch(self, repo: str, branch: str, sha: str, *, old: str) -> bool:
        """Point ``branch`` at ``sha`` (not necessarily a descendant) if it still points at
        ``old``; False if it moved on or is gone.

        The REST API has no compare-and-swap for a forced move, so the lease is a read of the
        ref just before the forced ``PATCH``: another writer that moves the branch between the
        two requests is overwritten. Only for branches ivy-matrix owns (the expectations pull
        request's), where the other writer is a person pushing by hand.
        """
        if self.get_branch_head(repo, branch) != old:
            return False
        url = f"{repo_path(repo)}/git/refs/heads/{branch_path(branch)}"

        def request() -> bool:
            try:
                self._json("PATCH", url, body={"sha": sha, "force": True})
            except HTTPError as error:
                if error.status == 422 and "does not exist" in error_message(error.data).lower():  # noqa: PLR2004
                    return False
                raise
            return True

        return self._call(f"moving branch {branch!r} of {repo}", CONTENTS_WRITE, request)

    def get_default_branch(self, repo: str) -> str:
        """The repository's default branch (``GET /repos/{owner}/{repo}``)."""
        _, data = self._call(
            f"reading the default branch of {repo}",
            CONTENTS_READ,
            bind(self._json, "GET", repo_path(repo), None),
        )
        return str(data["default_branch"])

    # ------------------------------------------------------------------ other refs (queues, verdicts)

    def get_ref(self, repo: str, ref: str) -> str | None:
        """The commit a full ref name (``refs/...``) points at, or None if there is none."""
        return self._read_ref(repo, _ref_path(ref), f"reading ref {ref!r} of {repo}")

    def create_ref(self, repo: str, ref: str, sha: str) -> bool:
        """Create ``ref`` at ``sha`` if absent (atomic); False if it already exists."""
        what = f"creating ref {ref!r} in {repo}"

        def request() -> bool:
            try:
                self._json("POST", f"{repo_path(repo)}/git/refs", body={"ref": ref, "sha": sha})
            except HTTPError as error:
                message = error_message(error.data).lower()
                if error.status == 422 and "already exists" in message:  # noqa: PLR2004
                    return False
                raise
            return True

        return self._call(what, CONTENTS_WRITE, request)

    def move_ref(self, repo: str, ref: str, sha: str) -> bool:
        """Move ``ref`` to ``sha`` if that is a fast-forward (compare-and-swap); else False."""
        url = f"{repo_path(repo)}/git/refs/{_ref_path(ref)}"

        def request() -> bool:
            try:
                self._json("PATCH", url, body={"sha": sha, "force": False})
            except HTTPError as error:
                message = error_message(error.data).lower()
                if error.status == 409 or (  # noqa: PLR2004
                    error.status == 422  # noqa: PLR2004
                    and ("fast forward" in message or "does not exist" in message)
                ):
                    return False
                raise
            return True

        return self._call(f"moving ref {ref!r} of {repo}", CONTENTS_WRITE, request)

    def list_refs(self, repo: str, prefix: str) -> dict[str, str]:
        """Every ref whose full name starts with ``prefix`` (``refs/...``): name -> sha.

        One request (``GET /repos/{owner}/{repo}/git/matching-refs/{ref}``, not paginated).
        """
        url = f"{repo_path(repo)}/git/matching-refs/{_ref_path(prefix)}"
        _, data = self._call(
            f"listing refs {prefix!r} of {repo}",
            CONTENTS_READ,
            bind(self._json, "GET", url, None),
        )
        return {
            str(item["ref"]): str(item["object"]["sha"])
            for item in data or []
            if str(item.get("ref") or "").startswith(prefix)
        }


def _ref_path(ref: str) -> str:
    """A full ref name as the path after ``git/ref/`` (without ``refs/``, slashes kept)."""
    return urllib.parse.quote(ref.removeprefix("refs/"), safe="/")


def _blobs(listing: Any, prefix: str) -> dict[str, str]:
    """The files (path -> blob sha) of one tree listing, under ``prefix``."""
    return {
        prefix + str(entry["path"]): str(entry["sha"])
        for entry in listing.get("tree") or []
        if entry.get("type") == "blob"
    }


def job_from_json(item: Any, attempt: int) -> Job:
    runner = item.get("runner_name")
    return Job(
        id=int(item["id"]),
        name=str(item.get("name") or ""),
        runner_name=str(runner) if runner else None,
        html_url=str(item.get("html_url") or ""),
        status=str(item.get("status") or ""),
        run_attempt=int(item.get("run_attempt") or attempt),
    )
