"""Every workflow in the README and docs/ is a whole file that zizmor and GitHub's schema pass.

Each ```yaml block is either a whole workflow (it has ``jobs``) or a config file
(tests/config/test_schema.py checks those); a fragment of a workflow is neither, so none is
left unchecked. The workflows are written into a scratch ``.github/workflows/`` and checked
with zizmor at its default persona (offline) and check-jsonschema's workflow schema, the tools
``scripts/check`` runs on this repository's own workflows.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PIN = re.compile(r"^\s*(?:- )?uses: ([^@\s]+)@([0-9a-f]{40}) # v\d+\.\d+\.\d+$")


def yaml_blocks() -> list[tuple[str, str]]:
    """Every ```yaml block of README.md and docs/*.md, as (where, text)."""
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for index, block in enumerate(
            re.findall(r"^```yaml\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
        ):
            found.append((f"{doc.name}-{index}", block))
    return found


def workflows() -> list[tuple[str, str]]:
    """The blocks that are whole workflows."""
    return [(where, text) for where, text in yaml_blocks() if "jobs" in yaml.safe_load(text)]


def test_every_yaml_block_is_a_whole_workflow_or_a_config_file():
    """No block is a fragment: a workflow has on and jobs; anything else is a config mapping."""
    for where, text in yaml_blocks():
        document = yaml.safe_load(text)
        assert isinstance(document, dict), where
        if "jobs" in document:
            assert {"name", True, "permissions", "jobs"} <= set(document), where  # "on" is True
    assert len(workflows()) >= 7


def test_the_workflows_pin_every_action_and_never_run_after_cancelling():
    """Every uses: is pinned by commit with its version; no if: always()."""
    for where, text in workflows():
        assert "always()" not in text, where
        for line in text.splitlines():
            if re.match(r"\s*(?:- )?uses:", line):  # not statuses: write
                assert PIN.match(line), (where, line)


def test_zizmor_and_the_workflow_schema_find_nothing(tmp_path):
    """zizmor (default persona, offline) and check-jsonschema pass every workflow."""
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    for where, text in workflows():
        (folder / f"{where.replace('.', '-')}.yml").write_text(text, encoding="utf-8")
    files = sorted(str(p) for p in folder.glob("*.yml"))
    zizmor = subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--no-progress", "--format", "plain", *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert zizmor.returncode == 0, zizmor.stdout + zizmor.stderr
    assert "No findings to report" in zizmor.stdout + zizmor.stderr
    schema = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr
