"""End to end: ``render --html``, and the ``site`` target of ``update`` and ``prune``'s branch.

The site's files land where the options say, only the bytes that change are written (a run
that changed nothing writes no file), and a dashboard that goes takes its data file with it,
in a folder and on the dashboard branch.
"""

from __future__ import annotations

import io
from pathlib import Path

from ivy_matrix.cli import main
from ivy_matrix.errors import ExitCode
from ivy_matrix.site.page import STATIC_FILES
from tests.commands.results import error_lines, write_junit
from tests.commands.test_prune import branch_env as prune_branch_env
from tests.github.fake_server import FakeGitHub
from tests.site.scenes import F, S, dashboard, sample_states, write_store

SITE_FILES = {
    *STATIC_FILES,
    "data/index.js",
    "data/attention.js",
    *(f"data/attention/{group}.js" for group in ("new", "failing", "flaky", "fixed", "stale")),
    "data/groups.js",
    *(f"data/groups/{digit}.js" for digit in "0123456789abcdef"),
    "data/slowest.js",
    "data/d/core/gradients.js",
    "data/d/nn/layers.js",
}


def run(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run one command in-process: its exit code and everything it printed."""
    out = io.StringIO()
    code = main(argv, env if env is not None else {}, stdout=out, stderr=out)
    return code, out.getvalue()


def site_files(folder: Path) -> dict[str, int]:
    """The files under ``folder``, with their modification times in nanoseconds."""
    return {
        path.relative_to(folder).as_posix(): path.stat().st_mtime_ns
        for path in folder.rglob("*")
        if path.is_file()
    }


def test_render_html_writes_the_site_and_an_unchanged_store_writes_nothing(workdir):
    """render --html writes the page and its data; rendering the same store again writes nothing."""
    write_store(workdir / "store", sample_states())

    code, out = run(["render", "--store", "store", "--html", "site"])
    first = site_files(workdir / "site")
    again, out_again = run(["render", "--store", "store", "--html", "site"])

    assert (code, again) == (0, 0)
    assert set(first) == SITE_FILES
    assert f"{len(SITE_FILES)} file(s) changed" in out
    assert "0 file(s) changed" in out_again
    assert site_files(workdir / "site") == first


def test_a_dashboard_that_did_not_change_keeps_its_data_file_untouched(workdir):
    """One dashboard changes: its data file and the cross-dashboard files are rewritten, the
    other dashboard's file is not, and no file of the page is."""
    write_store(workdir / "store", sample_states())
    assert run(["render", "--store", "store", "--html", "site"])[0] == 0
    first = site_files(workdir / "site")
    write_store(workdir / "store", [dashboard("gradients", {"test_green": {"torch": [F, S]}})])

    code, _ = run(["render", "--store", "store", "--html", "site"])

    after = site_files(workdir / "site")
    changed = {path for path in after if after[path] != first.get(path)}
    assert code == 0
    assert "data/d/core/gradients.js" in changed
    assert "data/d/nn/layers.js" not in changed
    assert changed <= {"data/d/core/gradients.js", "data/index.js", "data/slowest.js"} | {
        path for path in SITE_FILES if path.startswith(("data/attention", "data/groups"))
    }


def test_render_html_deletes_the_data_of_a_dashboard_that_is_gone_and_nothing_else(workdir):
    """A dashboard no longer in the store loses its data file; the user's own files stay."""
    write_store(workdir / "store", sample_states())
    assert run(["render", "--store", "store", "--html", "site"])[0] == 0
    (workdir / "site" / "notes.txt").write_text("mine", encoding="utf-8")
    (workdir / "store" / "state" / "nn" / "layers.json").unlink()

    code, _ = run(["render", "--store", "store", "--html", "site"])

    assert code == 0
    assert set(site_files(workdir / "site")) == (SITE_FILES - {"data/d/nn/layers.js"}) | {
        "notes.txt"
    }
    assert b"nn/layers" not in (workdir / "site" / "data" / "index.js").read_bytes()


def test_render_needs_a_folder_for_the_pages_or_the_site(workdir):
    """render with neither --output-dir nor --html is a usage error naming both."""
    write_store(workdir / "store", sample_states())

    code, out = run(["render", "--store", "store"], {"GITHUB_ACTIONS": "true"})

    (line,) = error_lines(out)
    assert code == ExitCode.USAGE
    assert "--output-dir DIR" in line
    assert "--html DIR" in line


def test_the_site_target_needs_the_branch_or_an_html_folder(workdir):
    """update --targets site with no branch target and no --html is a usage error, and records
    nothing."""
    write_junit(workdir / "a.xml", [("test_grad", "passed")])

    code, out = run(
        ["update", "--junit", "a.xml", "--backend", "torch", "--targets", "site"],
        {"GITHUB_ACTIONS": "true"},
    )

    (line,) = error_lines(out)
    assert code == ExitCode.USAGE
    assert "site target" in line
    assert "--html" in line
    assert not (workdir / ".ivy-matrix").exists()


def test_update_with_the_site_target_keeps_the_html_folder_in_step(workdir):
    """Each update writes the site into --html, named by the html step output; the same
    results again write no file of it."""
    write_junit(workdir / "a.xml", [("test_grad", "passed"), ("test_relu", "failed")])
    argv = ["update", "--junit", "a.xml", "--backend", "torch", "--targets", "summary,file,site"]
    argv += ["--output-dir", "md", "--html", "site", "--run-id", "7"]
    env = {"GITHUB_OUTPUT": str(workdir / "outputs.txt")}

    assert run(argv, env)[0] == 0
    first = site_files(workdir / "site")
    code, out = run(argv, env)

    assert code == 0
    assert {"index.html", "data/index.js", "data/d/core/gradients.js"} <= set(first)
    assert site_files(workdir / "site") == first
    assert "0 file(s) written" in out
    assert "html=site\n" in (workdir / "outputs.txt").read_text(encoding="utf-8")


def branch_env(fake: FakeGitHub, run_id: int) -> dict[str, str]:
    """A runner-like environment whose targets are the fake's branch and the site."""
    return {**prune_branch_env(fake, run_id), "IVY_MATRIX_TARGETS": "branch,site"}


def test_the_site_is_committed_to_the_branch_with_the_markdown(fake, workdir):
    """One commit holds the pages and site/; the same results again commit nothing; a pruned
    dashboard's data file leaves the branch with its page."""
    write_junit(workdir / "a.xml", [("test_grad", "passed"), ("test_relu", "failed")])
    write_junit(
        workdir / "b.xml", [("test_dense", "passed")], classname="ivy_tests.test_nn.test_layers"
    )
    argv = ["update", "--junit", "*.xml", "--backend", "torch"]

    assert run(argv, branch_env(fake, 7))[0] == 0
    files = fake.files("ivy-matrix")
    commits = len(fake.requests_to("POST", r"/git/commits"))
    again, _ = run(argv, branch_env(fake, 7))

    assert again == 0
    assert commits == 1
    assert {
        "README.md",
        "core/gradients.md",
        "site/index.html",
        "site/core.js",
        "site/app.css",
        "site/data/index.js",
        "site/data/attention.js",
        "site/data/d/core/gradients.js",
        "site/data/d/nn/layers.js",
    } <= set(files)
    assert len(fake.requests_to("POST", r"/git/commits")) == commits

    assert run(["prune", "--dashboard", "nn/layers"], branch_env(fake, 7))[0] == 0
    files = fake.files("ivy-matrix")
    assert "nn/layers.md" not in files
    assert "site/data/d/nn/layers.js" not in files
    assert b"nn/layers" not in files["site/data/index.js"]
