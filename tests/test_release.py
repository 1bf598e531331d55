"""scripts/release, run on a clone: the version, CHANGELOG, tags and pins a maintainer gets;
and the README's pin is a real release of this repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"uses: ivy-matrix/ivy-matrix@([0-9a-f]{40}) # v(\d+\.\d+\.\d+)")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def require_history() -> None:
    probe = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if probe.returncode != 0 or probe.stdout.strip() != "false":
        pytest.skip("not a full git checkout: the release history is not here")


@pytest.fixture(name="clone")
def clone_fixture(tmp_path: Path) -> Path:
    """A clone of this checkout's HEAD with an Unreleased entry, on branch main."""
    require_history()
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-hardlinks", str(ROOT), str(clone))
    git(clone, "checkout", "-q", "-B", "main")
    for key, value in (("user.name", "Release Test"), ("user.email", "release@example.invalid")):
        git(clone, "config", key, value)
    for tag in git(clone, "tag").split():
        git(clone, "tag", "-d", tag)
    changelog = clone / "CHANGELOG.md"
    text = changelog.read_text(encoding="utf-8")
    changelog.write_text(
        text.replace("## Unreleased\n", "## Unreleased\n\n- A change to release.\n", 1),
        encoding="utf-8",
    )
    git(clone, "commit", "-q", "-am", "A change to release")
    return clone


def release(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/release", *args],
        cwd=clone,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_release_bumps_tags_moves_the_major_and_pins_the_docs(clone):
    """Version, CHANGELOG section, tags vX.Y.Z and vX on the release commit, README pinned to it."""
    done = release(clone, "7.3.1", "--no-checks")

    assert done.returncode == 0, done.stdout + done.stderr
    released = git(clone, "rev-parse", "v7.3.1^{commit}")
    assert git(clone, "rev-parse", "v7^{commit}") == released
    assert git(clone, "log", "-1", "--format=%s", released) == "Release v7.3.1"
    assert git(clone, "rev-parse", "HEAD^") == released
    assert 'version = "7.3.1"' in git(clone, "show", f"{released}:pyproject.toml")
    assert '__version__ = "7.3.1"' in git(clone, "show", f"{released}:ivy_matrix/__init__.py")
    changelog = git(clone, "show", f"{released}:CHANGELOG.md")
    assert re.search(
        r"## Unreleased\n\n## \[7\.3\.1\] - \d{4}-\d{2}-\d{2}\n\n- A change", changelog
    )
    pins = PIN.findall((clone / "README.md").read_text(encoding="utf-8"))
    pins += PIN.findall((clone / "docs" / "workflows.md").read_text(encoding="utf-8"))
    assert pins
    assert set(pins) == {(released, "7.3.1")}
    assert "git push --force origin v7" in done.stdout


@pytest.mark.parametrize(
    ("args", "code", "phrase"),
    [
        (["1.2"], 2, "give a version such as 1.2.3"),
        (["v1.2.3"], 2, "give a version such as 1.2.3"),
    ],
)
def test_a_bad_version_is_refused(clone, args, code, phrase):
    """Only X.Y.Z is a version."""
    done = release(clone, *args, "--no-checks")
    assert (done.returncode, phrase in done.stderr) == (code, True)


def test_a_dirty_checkout_an_existing_tag_or_nothing_to_release_is_refused(clone):
    """No release from uncommitted changes, over an existing tag, or of an empty Unreleased."""
    (clone / "stray.txt").write_text("x", encoding="utf-8")
    assert "has changes" in release(clone, "1.0.0", "--no-checks").stderr
    (clone / "stray.txt").unlink()
    assert release(clone, "1.0.0", "--no-checks").returncode == 0
    again = release(clone, "1.0.0", "--no-checks")
    assert (again.returncode, "exists already" in again.stderr) == (3, True)
    nothing = release(clone, "1.0.1", "--no-checks")
    assert (nothing.returncode, "Unreleased section is empty" in nothing.stderr) == (3, True)


def test_the_readme_pins_a_release_commit_of_this_repository():
    """Every pin of ivy-matrix in the README and docs is one commit of this repository, whose
    version and CHANGELOG are those of the release its comment names."""
    require_history()
    if git(ROOT, "log", "-1", "--format=%s").startswith("Release v"):
        pytest.skip("the release commit itself: its pins move to it in the next commit")
    pins = set()
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        pins |= set(PIN.findall(doc.read_text(encoding="utf-8")))
    assert len(pins) == 1
    ((sha, version),) = pins
    assert f'__version__ = "{version}"' in git(ROOT, "show", f"{sha}:ivy_matrix/__init__.py")
    assert f"## [{version}] - " in git(ROOT, "show", f"{sha}:CHANGELOG.md")
    assert git(ROOT, "log", "-1", "--format=%s", sha) == f"Release v{version}"
