"""The JSON Schema of the config file, built from ``OPTIONS``.

Pure: no I/O. The package ships it as ``config/config.schema.json`` (``scripts/schema`` writes
that file from :func:`config_schema`; a test checks that they agree), so that editors and
``check-jsonschema --schemafile`` can validate a config file before ivy-matrix reads it. It
accepts what config/file.py accepts: every option in kebab-case or snake_case (not ``config``
nor ``token``), and the ``dashboards`` rules.
"""

from __future__ import annotations

import json

from ivy_matrix.config.options import (
    MAX_RETIRE_AFTER_RUNS,
    OPTIONS,
    RETIRED,
    Kind,
    Option,
)

SCHEMA_FILE = "config.schema.json"
# Settings a config file may not give (config/file.py refuses them).
NOT_IN_FILE = frozenset({"config", "token"})
_WHOLE = r"^\s*-?[0-9]+\s*$"
_LIMITS = {
    "history": {"minimum": 1},
    "lock_timeout": {"minimum": 0},
    "run_attempt": {"minimum": 1},
    "retire_after_runs": {"minimum": 0, "maximum": MAX_RETIRE_AFTER_RUNS},
    "run_id": {"minimum": 0},
    "job_id": {"minimum": 0},
    "pr": {"minimum": 0},
}


def _value_schema(option: Option) -> dict[str, object]:
    """What one option's value may be in a YAML file (the forms ``options.convert`` takes)."""
    if option.kind is Kind.LIST:
        return {
            "oneOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": ["string", "number"]}},
            ]
        }
    if option.kind is Kind.BOOL:
        return {"oneOf": [{"type": "boolean"}, {"enum": ["true", "false"]}]}
    if option.choices:
        return {"enum": list(option.choices)}
    if option.kind is Kind.INT:
        return {
            "oneOf": [
                {"type": "integer", **_LIMITS.get(option.name, {})},
                {"type": "string", "pattern": _WHOLE},
            ]
        }
    return {"type": ["string", "number"]}


def _rules_schema() -> dict[str, object]:
    return {
        "description": "the first rule whose 'match' regex is found in a test id "
        "(classname::name) names its dashboard",
        "type": "array",
        "items": {
            "type": "object",
            "required": ["match", "title"],
            "additionalProperties": False,
            "properties": {
                "match": {"type": "string", "description": "a regex searched in the test id"},
                "title": {"type": "string", "description": "the title; may use {group}"},
                "category": {"type": "string", "description": "the category; may use {group}"},
            },
        },
    }


def config_schema() -> dict[str, object]:
    """The schema, as a JSON document."""
    properties: dict[str, object] = {}
    for option in OPTIONS:
        if option.name in NOT_IN_FILE or option.name in RETIRED:  # retired: flagged as unknown
            continue
        default = f" (default: {option.default})" if option.default else ""
        entry = {"description": option.help + default, **_value_schema(option)}
        properties[option.flag.removeprefix("--")] = entry
        if "_" in option.name:
            properties[option.name] = entry
    properties["dashboards"] = _rules_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ivy-matrix config file",
        "description": "Settings of ivy-matrix (--config FILE): any option in kebab-case, "
        "plus dashboard rules. The token is never set here.",
        "type": ["object", "null"],
        "additionalProperties": False,
        "properties": properties,
    }


def schema_text() -> str:
    """The schema file's text, as ``scripts/schema`` writes it."""
    return json.dumps(config_schema(), indent=2) + "\n"
