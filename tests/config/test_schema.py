"""The config file's JSON Schema: shipped, in step with the options, and agreeing with the reader."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from ivy_matrix.config.schema import SCHEMA_FILE, config_schema, schema_text
from ivy_matrix.config.settings import load_settings
from ivy_matrix.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "ivy_matrix" / "config" / SCHEMA_FILE


def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SHIPPED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_shipped_schema_is_the_one_the_options_give():
    """ivy_matrix/config/config.schema.json is what scripts/schema writes from OPTIONS."""
    assert SHIPPED.read_text(encoding="utf-8") == schema_text()
    assert json.loads(schema_text()) == config_schema()


def config_blocks() -> list[str]:
    """Every ```yaml block of the docs and README that is a config file (no 'jobs:')."""
    blocks = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        found = re.findall(r"^```yaml\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
        blocks += [block for block in found if "jobs" not in (yaml.safe_load(block) or {})]
    return blocks


def test_the_examples_and_the_docs_config_blocks_pass_the_schema():
    """examples/*.yml and the docs' config blocks are valid config files."""
    check = validator()
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").glob("*.yml"))]
    texts += config_blocks()
    assert len(texts) >= 2
    for text in texts:
        check.validate(yaml.safe_load(text))


@pytest.mark.parametrize(
    "text",
    [
        "backend: torch\nhistory: 20\n",
        "backend_from_path: 'r/(?P<backend>\\w+)/'\njunit: a.xml\n",
        "junit: [a.xml, b.xml]\ndry-run: true\npin-index: 'false'\nretire-after-runs: 0\n",
        "fail-on: new\nstyle: compact\nlock-timeout: '30'\n",
        "dashboards:\n  - match: x\n    title: y\n",
        "",
        "backends: torch\n",
        "token: ghp_x\n",
        "config: other.yml\n",
        "fail-on: always\n",
        "history: 0\n",
        "history: many\n",
        "dry-run: yes-please\n",
        "retire-after-runs: 5000\n",
        "dashboards:\n  - title: y\n",
        "dashboards:\n  - match: x\n    title: y\n    colour: red\n",
        "junit: {a: 1}\n",
    ],
)
def test_the_schema_and_the_reader_agree(tmp_path, text):
    """A config file the schema accepts is one ivy-matrix reads, and one it refuses is refused."""
    path = tmp_path / "ivy.yml"
    path.write_text(text, encoding="utf-8")
    by_schema = validator().is_valid(yaml.safe_load(text))
    try:
        load_settings({"config": path}, {})
    except UsageError:
        by_reader = False
    else:
        by_reader = True
    assert by_schema == by_reader
