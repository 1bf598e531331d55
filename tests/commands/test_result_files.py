"""Tests for ivy_matrix.commands.result_files: which result files a set of patterns selects."""

from __future__ import annotations

from pathlib import Path

import pytest

from ivy_matrix.commands.result_files import find_result_files

pytestmark = pytest.mark.timeout(10)


@pytest.fixture(name="tree")
def _tree(tmp_path: Path) -> Path:
    """A results tree: two backends, a nested folder, a non-XML file and a hidden folder."""
    for rel in (
        "torch/results-1.xml",
        "torch/results-2.xml",
        "numpy/results-1.xml",
        "numpy/deep/er/results-3.xml",
        "numpy/notes.txt",
        "numpy/.cache/stale.xml",
        "top.xml",
        "odd[cpu].xml",
    ):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"<testsuite/>")
    return tmp_path


def rel(paths: list[Path], root: Path) -> list[str]:
    """Return the paths relative to root, in POSIX form, keeping their order."""
    return [p.relative_to(root).as_posix() for p in paths]


def test_a_recursive_glob_finds_nested_files_sorted(tree: Path) -> None:
    """``**`` matches any depth, and the result is sorted."""
    files, warnings = find_result_files(["**/results-*.xml"], root=tree)
    assert rel(files, tree) == [
        "numpy/deep/er/results-3.xml",
        "numpy/results-1.xml",
        "torch/results-1.xml",
        "torch/results-2.xml",
    ]
    assert warnings == []


def test_a_directory_means_every_xml_file_below_it(tree: Path) -> None:
    """A directory pattern takes its *.xml files at any depth, skipping other files and dot-folders."""
    files, _ = find_result_files(["numpy"], root=tree)
    assert rel(files, tree) == ["numpy/deep/er/results-3.xml", "numpy/results-1.xml"]


def test_a_glob_that_matches_directories_expands_them(tree: Path) -> None:
    """Directories matched by a glob stand for their *.xml files."""
    files, _ = find_result_files(["t*"], root=tree)
    assert rel(files, tree) == ["top.xml", "torch/results-1.xml", "torch/results-2.xml"]


def test_overlapping_patterns_give_each_file_once(tree: Path) -> None:
    """Files matched by several patterns, or by differently spelled paths, appear once."""
    files, _ = find_result_files(
        ["torch", "torch/*.xml", "numpy/../torch/results-1.xml", "./top.xml", "top.xml"], root=tree
    )
    assert rel(files, tree) == ["top.xml", "torch/results-1.xml", "torch/results-2.xml"]


def test_absolute_patterns_are_used_as_they_are(
    tree: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """An absolute glob is not joined to root."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    files, warnings = find_result_files([f"{tree}/torch/*.xml"], root=elsewhere)
    assert files == [tree / "torch/results-1.xml", tree / "torch/results-2.xml"]
    assert warnings == []


@pytest.mark.parametrize(
    "patterns",
    [
        ["**/*.xml", "!torch/results-2.xml", "!numpy"],
        ["!numpy", "!torch/results-2.xml", "**/*.xml"],
        ["!**/results-2.xml", "**/*.xml", "!numpy/**"],
    ],
)
def test_exclusions_apply_after_inclusions_in_any_order(tree: Path, patterns: list[str]) -> None:
    """``!pattern`` removes its matches wherever it appears in the list."""
    files, warnings = find_result_files(patterns, root=tree)
    assert rel(files, tree) == ["odd[cpu].xml", "top.xml", "torch/results-1.xml"]
    assert warnings == []


def test_a_pattern_that_matches_nothing_gives_a_warning(tree: Path) -> None:
    """Each inclusion with no match is named in a warning; the others still work."""
    files, warnings = find_result_files(["nope/*.xml", "top.xml", "numpy/*.txt.gz"], root=tree)
    assert rel(files, tree) == ["top.xml"]
    assert warnings == [
        "no result files matched 'nope/*.xml'",
        "no result files matched 'numpy/*.txt.gz'",
    ]


def test_a_directory_without_xml_files_matches_nothing(tree: Path) -> None:
    """An empty directory gives the same warning as a pattern with no match."""
    (tree / "empty").mkdir()
    assert find_result_files(["empty"], root=tree) == ([], ["no result files matched 'empty'"])


def test_exclusions_and_fully_excluded_patterns_give_no_warning(tree: Path) -> None:
    """An exclusion that removes nothing, or an inclusion that was all excluded, is not a warning."""
    files, warnings = find_result_files(["torch", "!torch", "!nothing/here"], root=tree)
    assert files == []
    assert warnings == []


def test_an_existing_path_with_glob_characters_is_taken_literally(tree: Path) -> None:
    """``odd[cpu].xml`` names that file, not a character class."""
    files, _ = find_result_files(["odd[cpu].xml"], root=tree)
    assert rel(files, tree) == ["odd[cpu].xml"]


def test_blank_patterns_are_ignored(tree: Path) -> None:
    """Empty lines (from a multi-line input) and a bare ``!`` select and warn nothing."""
    assert find_result_files(["", "  ", "!"], root=tree) == ([], [])


def test_explicitly_named_non_xml_files_are_included(tree: Path) -> None:
    """A file the user names is taken whatever its extension."""
    files, _ = find_result_files(["numpy/notes.txt"], root=tree)
    assert rel(files, tree) == ["numpy/notes.txt"]


# --- symbolic links ----------------------------------------------------------------------------


def _results(root: Path, *rels: str) -> None:
    for rel_path in rels:
        path = root / rel_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"<testsuite/>")


@pytest.mark.parametrize("pattern", ["**/*.xml", "a", "a/**", "a/**/", "*/**/*.xml", "**/b/**"])
def test_a_symlink_loop_ends_and_each_file_is_found_once(tmp_path: Path, pattern: str) -> None:
    """A link back to a folder above it (``a/b -> a``) neither hangs nor repeats files."""
    _results(tmp_path, "a/one.xml", "a/sub/two.xml")
    (tmp_path / "a" / "b").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "a" / "sub" / "up").symlink_to("..", target_is_directory=True)
    files, warnings = find_result_files([pattern], root=tmp_path)
    assert len(files) == 2
    assert sorted(p.resolve() for p in files) == [
        (tmp_path / "a/one.xml").resolve(),
        (tmp_path / "a/sub/two.xml").resolve(),
    ]
    assert warnings == []


def test_a_link_to_the_parent_counts_each_file_once(tmp_path: Path) -> None:
    """A link to the folder holding it gives every file once, under its name without links."""
    _results(tmp_path, "results/torch/r.xml", "results/numpy/r.xml")
    (tmp_path / "results" / "torch" / "all").symlink_to("..", target_is_directory=True)
    files, _ = find_result_files(["**/*.xml"], root=tmp_path)
    assert rel(files, tmp_path) == ["results/numpy/r.xml", "results/torch/r.xml"]


def test_a_file_linked_twice_is_read_once_under_its_real_name(tmp_path: Path) -> None:
    """Two links to one file, found before the file in sorted order, still give one path."""
    _results(tmp_path, "z-real/r.xml")
    (tmp_path / "a-link.xml").symlink_to(tmp_path / "z-real" / "r.xml")
    (tmp_path / "b-link.xml").symlink_to(tmp_path / "z-real" / "r.xml")
    files, _ = find_result_files(["**/*.xml", "a-link.xml"], root=tmp_path)
    assert rel(files, tmp_path) == ["z-real/r.xml"]


def test_an_excluded_file_is_excluded_under_every_name(tmp_path: Path) -> None:
    """Excluding a file removes it also where a link makes it appear again."""
    _results(tmp_path, "keep/k.xml", "drop/d.xml")
    (tmp_path / "keep" / "also").symlink_to(tmp_path / "drop", target_is_directory=True)
    files, _ = find_result_files(["**/*.xml", "!drop/d.xml"], root=tmp_path)
    assert rel(files, tmp_path) == ["keep/k.xml"]


def test_links_outside_any_loop_are_followed(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A results folder that is a link, and a linked file, are read like real ones."""
    elsewhere = tmp_path_factory.mktemp("artifacts")
    _results(elsewhere, "torch/r.xml", "torch/deep/d.xml", "single.xml")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "torch").symlink_to(elsewhere / "torch", target_is_directory=True)
    (tmp_path / "results" / "single.xml").symlink_to(elsewhere / "single.xml")
    expected = ["results/single.xml", "results/torch/deep/d.xml", "results/torch/r.xml"]
    for pattern in ("results", "results/**/*.xml", "**/*.xml"):
        files, _ = find_result_files([pattern], root=tmp_path)
        assert rel(files, tmp_path) == expected


def test_a_web_of_links_ends_quickly(tmp_path: Path) -> None:
    """Every folder linking to every other folder is walked once each, not once per path."""
    names = [f"d{i}" for i in range(8)]
    for name in names:
        _results(tmp_path, f"{name}/{name}.xml")
    for name in names:
        for other in names:
            (tmp_path / name / f"to-{other}").symlink_to(tmp_path / other, target_is_directory=True)
    files, _ = find_result_files(["**/*.xml"], root=tmp_path)
    assert rel(files, tmp_path) == [f"{name}/{name}.xml" for name in names]
