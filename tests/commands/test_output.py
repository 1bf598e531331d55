"""End to end: what update, render and dry runs write, and errors that must not look like success."""

from __future__ import annotations

import pytest

from ivy_matrix.cli import main
from tests.commands.results import LAYERS, tree, write_junit

pytestmark = pytest.mark.timeout(60)

ENV = {"GITHUB_REPOSITORY": "o/r", "IVY_MATRIX_JOB_ID": "3"}


def update(*argv: str, env: dict[str, str] | None = None) -> int:
    """Run ``ivy-matrix update`` with a run id and the repository for links."""
    return main(["update", *argv], {**ENV, **(env or {})})


def test_output_dir_catches_up_with_updates_that_did_not_write_it(workdir, capsys):
    """An update that changes no cell still rewrites files left behind the state: they equal render."""
    write_junit(workdir / "torch" / "r.xml", [("test_grad", "passed"), ("test_jac", "failed")])
    write_junit(workdir / "jax" / "r.xml", [("test_grad", "failed"), ("test_jac", "passed")])
    assert (
        update(
            "--junit", "torch/*.xml", "--backend", "torch", "--run-id", "1", "--output-dir", "out"
        )
        == 0
    )
    assert update("--junit", "jax/*.xml", "--backend", "jax", "--run-id", "2") == 0
    capsys.readouterr()

    code = update(
        "--junit", "jax/*.xml", "--backend", "jax", "--run-id", "2", "--output-dir", "out"
    )

    log = capsys.readouterr().err
    assert code == 0
    # The page, the index, the trend (run 2's point) and its two pictures were behind the
    # store.
    assert "0 cell(s) changed; 5 file(s) written" in log
    dashboard = (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")
    assert "torch" in dashboard.splitlines()[0]
    assert "jax" in dashboard.splitlines()[0]
    assert main(["render", "--output-dir", "rendered"], {}) == 0
    assert tree(workdir / "out") == tree(workdir / "rendered")


def test_a_dashboard_named_readme_does_not_overwrite_the_index(workdir):
    """Dashboards called README and readme get files of their own; README.md stays the index."""
    write_junit(workdir / "a.xml", [("test_grad", "passed")])
    write_junit(workdir / "b.xml", [("test_linear", "failed")], classname=LAYERS)
    assert (
        update(
            "--junit", "a.xml", "--backend", "torch", "--dashboard", "README", "--output-dir", "out"
        )
        == 0
    )
    assert (
        update(
            "--junit", "b.xml", "--backend", "torch", "--dashboard", "readme", "--output-dir", "out"
        )
        == 0
    )

    files = tree(workdir / "out")
    index = files.pop("README.md").decode()
    for trend_file in ("trend.json", "charts/pass-rate.svg", "charts/parity.svg"):
        files.pop(trend_file)
    assert index.startswith("# Test dashboards\n")
    assert len(files) == 2
    for path in files:
        assert path.casefold() != "readme.md"
        assert f"]({path})" in index
    assert sorted(b"test_grad" in text for text in files.values()) == [False, True]


@pytest.mark.parametrize(
    ("mode", "code", "phrase"),
    [
        (None, 3, "::error::no result files matched the junit pattern(s) 'reslts/*.xml', 'x.xml'"),
        ("error", 3, "::error::no result files matched the junit pattern(s) 'reslts/*.xml'"),
        ("warn", 0, "::warning::no result files matched the junit pattern(s) 'reslts/*.xml'"),
        ("ignore", 0, None),
    ],
)
def test_if_no_files_found_decides_what_a_wrong_path_does(workdir, capsys, mode, code, phrase):
    """Patterns that select no file fail the step by default; warn and ignore exit 0."""
    env = {"GITHUB_ACTIONS": "true"}
    if mode is not None:
        env["IVY_MATRIX_IF_NO_FILES_FOUND"] = mode

    got = update("--junit", "reslts/*.xml", "--junit", "x.xml", "--backend", "t", env=env)

    out = capsys.readouterr().err
    assert got == code
    if phrase is None:
        assert "no result files" not in out
        assert "::warning" not in out
    else:
        assert phrase in out
    if code == 3:
        assert not (workdir / ".ivy-matrix").exists()


def test_a_pattern_that_matches_nothing_beside_others_that_match_is_a_warning(workdir, capsys):
    """With some result files found, a pattern that selects none is a warning and the run goes on."""
    write_junit(workdir / "a.xml", [("test_grad", "passed")])

    code = update(
        "--junit",
        "a.xml",
        "--junit",
        "typo/*.xml",
        "--backend",
        "t",
        env={"GITHUB_ACTIONS": "true"},
    )

    assert code == 0
    assert "::warning::no result files matched 'typo/*.xml'" in capsys.readouterr().err


def dry_run_plan(log: str) -> list[str]:
    """The output files a dry run's log says it would write."""
    prefix = "dry run: would write out/"
    return sorted(line.removeprefix(prefix) for line in log.splitlines() if line.startswith(prefix))


def test_a_dry_run_writes_nothing_and_lists_what_the_real_run_writes(workdir, capsys):
    """On a fresh store the dry run creates no store, lock or output dir, and plans every file."""
    write_junit(workdir / "a.xml", [("test_grad", "passed"), ("test_jac", "failed")])
    write_junit(workdir / "b.xml", [("test_linear", "passed")], classname=LAYERS)
    argv = ("--junit", "*.xml", "--backend", "torch", "--run-id", "1", "--output-dir", "out")

    assert update(*argv, "--summary-json", "out/s.json", "--dry-run", "true") == 0

    log = capsys.readouterr().err
    assert sorted(p.name for p in workdir.iterdir()) == ["a.xml", "b.xml"]
    plan = dry_run_plan(log)
    assert "6 file(s) to write" in log
    assert update(*argv) == 0
    assert "6 file(s) written" in capsys.readouterr().err
    assert plan == sorted(tree(workdir / "out"))


def test_a_dry_run_on_a_used_store_plans_exactly_the_files_that_change(workdir, capsys):
    """After earlier runs, the dry run names the files the real run then changes, and no others."""
    write_junit(workdir / "a.xml", [("test_grad", "passed")])
    write_junit(workdir / "b.xml", [("test_linear", "passed")], classname=LAYERS)
    assert (
        update("--junit", "*.xml", "--backend", "torch", "--run-id", "1", "--output-dir", "out")
        == 0
    )
    write_junit(workdir / "a.xml", [("test_grad", "failed")])
    argv = ("--junit", "a.xml", "--backend", "torch", "--run-id", "2", "--output-dir", "out")
    store, out = tree(workdir / ".ivy-matrix"), tree(workdir / "out")
    capsys.readouterr()

    assert update(*argv, "--dry-run", "true") == 0

    plan = dry_run_plan(capsys.readouterr().err)
    assert (tree(workdir / ".ivy-matrix"), tree(workdir / "out")) == (store, out)
    assert update(*argv) == 0
    after = tree(workdir / "out")
    assert plan == sorted(path for path in after if after[path] != out.get(path))
    assert plan == [
        "README.md",
        "charts/parity.svg",
        "charts/pass-rate.svg",
        "core/gradients.md",
        "trend.json",
    ]


def test_adopt_with_dry_run_writes_no_store(workdir, capsys):
    """adopt --dry-run true reads the table and says what it would save, but creates no store."""
    write_junit(workdir / "a.xml", [("test_grad", "passed")])
    assert update("--junit", "a.xml", "--backend", "torch", "--output-dir", "out") == 0
    table = (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")
    (workdir / "t.md").write_text(table, encoding="utf-8")
    capsys.readouterr()

    code = main(["adopt", "--dashboard", "x", "t.md", "--store", "fresh", "--dry-run", "true"], {})

    assert code == 0
    assert "dry run: would save the state of x in fresh" in capsys.readouterr().err
    assert not (workdir / "fresh").exists()


@pytest.mark.parametrize(
    "flags",
    [
        ["--dry-run"],
        ["--dry-run", "true"],
        ["--dry-run=true"],
    ],
)
def test_a_bare_dry_run_flag_means_true_and_never_takes_the_file(workdir, capsys, flags):
    """adopt --dry-run FILE is a dry run of FILE: the bare flag does not swallow the file."""
    write_junit(workdir / "a.xml", [("test_grad", "passed")])
    assert update("--junit", "a.xml", "--backend", "torch", "--output-dir", "out") == 0
    table = (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")
    (workdir / "t.md").write_text(table, encoding="utf-8")
    capsys.readouterr()

    code = main(["adopt", "--dashboard", "x", *flags, "t.md", "--store", "fresh"], {})

    assert code == 0
    assert "dry run: would save the state of x in fresh" in capsys.readouterr().err
    assert not (workdir / "fresh").exists()


def test_dry_run_false_still_writes(workdir):
    """--dry-run false (as the action passes it) is a real run."""
    write_junit(workdir / "a.xml", [("test_grad", "passed")])

    code = update(
        "--junit", "a.xml", "--backend", "torch", "--output-dir", "out", "--dry-run", "false"
    )

    assert code == 0
    assert (workdir / "out" / "core" / "gradients.md").is_file()
