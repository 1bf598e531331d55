"""The package as it is published: metadata, and what the sdist and the wheel hold.

Both are built from a copy of the tracked files (a clean checkout), with the pinned setuptools
and no build isolation, so no network is needed.
"""

from __future__ import annotations

import email.parser
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from ivy_matrix import __version__

ROOT = Path(__file__).resolve().parents[1]
BUILD = "import sys; from setuptools import build_meta as b; getattr(b, sys.argv[1])(sys.argv[2])"


def tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False, timeout=60
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout (an sdist, say): nothing to build from")
    return [name for name in listed.stdout.decode().split("\0") if name]


@pytest.fixture(name="built", scope="module")
def built_fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str], str]:
    """The sdist's and the wheel's file lists, and the wheel's METADATA."""
    source = tmp_path_factory.mktemp("checkout")
    for name in tracked_files():
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    for hook in ("build_sdist", "build_wheel"):
        subprocess.run(
            [sys.executable, "-c", BUILD, hook, str(out)],
            cwd=source,
            capture_output=True,
            check=True,
            timeout=300,
        )
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    with tarfile.open(sdist) as archive:
        in_sdist = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = archive.namelist()
        metadata = next(n for n in in_wheel if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode("utf-8")
    return in_sdist, in_wheel, text


def test_the_sdist_leaves_the_tests_out_and_keeps_the_package_and_its_documents(built):
    """No test file ships without the fakes and data it needs: the tests stay out entirely."""
    in_sdist, _, _ = built
    assert not [name for name in in_sdist if name.startswith(("tests/", "bench/", "scripts/"))]
    for needed in (
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "docs/options.md",
        "ivy_matrix/cli.py",
        "ivy_matrix/__main__.py",
        "ivy_matrix/py.typed",
        "ivy_matrix/config/config.schema.json",
    ):
        assert needed in in_sdist, needed
    assert not [name for name in in_sdist if "__pycache__" in name]


def test_the_wheel_ships_the_schema_and_the_typing_marker(built):
    """The wheel holds the config schema and py.typed beside the modules, and no tests."""
    _, in_wheel, _ = built
    assert "ivy_matrix/config/config.schema.json" in in_wheel
    assert "ivy_matrix/py.typed" in in_wheel
    assert not [name for name in in_wheel if name.startswith("tests/")]


def test_the_metadata_has_classifiers_urls_and_the_version(built):
    """The wheel's metadata: the version, classifiers, project URLs and the console script."""
    _, _, text = built
    metadata = email.parser.Parser().parsestr(text)
    assert metadata["Version"] == __version__
    assert metadata["License-Expression"] == "MIT"
    classifiers = metadata.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert "Topic :: Software Development :: Testing" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    urls = dict(line.split(", ", 1) for line in metadata.get_all("Project-URL") or [])
    assert set(urls) == {"Homepage", "Documentation", "Repository", "Issues", "Changelog"}
    assert all(url.startswith("https://github.com/ivy-matrix/ivy-matrix") for url in urls.values())


def test_the_version_is_stated_once_in_each_place_and_agrees():
    """pyproject.toml and ivy_matrix.__version__ state the same version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == __version__
