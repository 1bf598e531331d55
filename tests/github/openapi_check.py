"""Validate JSON bodies against the response schemas of GitHub's OpenAPI 3.0 description.

Used by ``tests/github/test_fake_server.py`` to hold ``FakeGitHub`` to the shapes in
``../shared/github-api/openapi-subset.json`` and, for the commit-status operations that subset
leaves out, ``tests/github/openapi-supplement.json`` (GitHub's published descriptions of the
commit-status operations and of creating and updating a pull request, as data). Pure apart from reading the spec files; stdlib only.

``response_schema`` turns an operation's response into plain JSON Schema: every
``#/components/...`` ``$ref`` is inlined (the subset has no cycles), OpenAPI 3.0's
``nullable: true`` becomes ``type: [X, "null"]`` (or ``anyOf [..., null]`` when there is no
``type``), and annotations (``description``, ``example``, ``x-*`` ...) are dropped. ``oneOf`` is read as
``anyOf`` (see ``_validate_composition``). ``validate`` checks the keyword set the subset uses and refuses any keyword it does not know, so a schema
feature can never be skipped silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

ANNOTATIONS = frozenset(
    {"description", "example", "examples", "title", "default", "deprecated", "discriminator",
     "readOnly", "writeOnly", "externalDocs"}
)  # fmt: skip
KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "oneOf", "anyOf",
     "allOf", "format", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"}
)  # fmt: skip
PARAM = re.compile(r"\{([^}]+)\}")
# The operations ivy-matrix calls that the shared subset leaves out (see load_spec).
SUPPLEMENT = Path(__file__).with_name("openapi-supplement.json")


def load_spec(path: Path, supplement: Path | None = SUPPLEMENT) -> dict[str, Any]:
    """Read the OpenAPI document, joined by ``supplement``'s operations and schemas (the
    commit-status operations and the pull request's create and update, which the shared subset
    leaves out). The supplement only adds: an operation (a path's method) or a schema that both
    hold is refused."""
    spec: dict[str, Any] = json.loads(path.read_text())
    if supplement is None:
        return spec
    extra: dict[str, Any] = json.loads(supplement.read_text())
    both = [
        f"{method.upper()} {template}"
        for template, item in extra["paths"].items()
        for method in item
        if method in spec["paths"].get(template, {})
    ]
    schemas = spec["components"]["schemas"]
    both += sorted(set(extra["components"]["schemas"]) & set(schemas))
    if both:
        raise ValueError(f"{supplement.name} repeats what {path.name} holds: {sorted(both)}")
    for template, item in extra["paths"].items():
        spec["paths"].setdefault(template, {}).update(item)
    schemas.update(extra["components"]["schemas"])
    return spec


def _resolve(spec: Mapping[str, Any], ref: str) -> Any:
    if not ref.startswith("#/"):
        raise ValueError(f"only internal refs are supported, got {ref}")
    node: Any = spec
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def to_json_schema(spec: Mapping[str, Any], node: Any) -> Any:
    """Translate one OpenAPI 3.0 schema object into self-contained JSON Schema."""
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return to_json_schema(spec, _resolve(spec, node["$ref"]))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ANNOTATIONS or key.startswith("x-") or key == "nullable":
            continue
        if key not in KEYWORDS:
            raise ValueError(f"unsupported schema keyword {key!r}")
        if key == "properties":
            out[key] = {name: to_json_schema(spec, sub) for name, sub in value.items()}
        elif key in {"items", "additionalProperties"}:
            out[key] = to_json_schema(spec, value)
        elif key in {"oneOf", "anyOf", "allOf"}:
            out[key] = [to_json_schema(spec, sub) for sub in value]
        else:
            out[key] = value
    return _nullable(out) if node.get("nullable") is True else out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "type" not in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    out = {**schema, "type": [schema["type"], "null"]}
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def _template_regex(template: str) -> str:
    # {path} and {ref} may contain slashes; every other parameter is one segment.
    out, pos = [], 0
    for match in PARAM.finditer(template):
        out.append(re.escape(template[pos : match.start()]))
        out.append("(.+)" if match.group(1) in {"path", "ref"} else "([^/]+)")
        pos = match.end()
    out.append(re.escape(template[pos:]))
    return "".join(out)


def find_operation(
    spec: Mapping[str, Any], method: str, path: str
) -> tuple[str, dict[str, Any]] | None:
    """Return (path template, operation) for a concrete request path, or None.

    When several templates match, the one with the most literal text wins, as in a router.
    """
    found = [
        (len(PARAM.sub("", template)), template, item[method.lower()])
        for template, item in spec["paths"].items()
        if method.lower() in item and re.fullmatch(_template_regex(template), path)
    ]
    if not found:
        return None
    _, template, operation = max(found, key=lambda f: f[0])
    return template, operation


def response_schema(
    spec: Mapping[str, Any], operation: Mapping[str, Any], status: int
) -> dict[str, Any] | None:
    """The JSON Schema for ``status`` of ``operation``; None when it documents no JSON body."""
    response = operation["responses"].get(str(status))
    if response is None:
        raise KeyError(f"status {status} is not documented for {operation['operationId']}")
    if "$ref" in response:
        response = _resolve(spec, response["$ref"])
    media = response.get("content", {}).get("application/json")
    if media is None or "schema" not in media:
        return None
    schema: dict[str, Any] = to_json_schema(spec, media["schema"])
    return schema


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
}


def _has_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _TYPES[name])


def _format_ok(value: str, fmt: str) -> bool:
    if fmt == "date-time":
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return False
        return "T" in value
    if fmt == "uri":
        return re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:\S+$", value) is not None
    if fmt == "email":
        return "@" in value
    return True  # int64, uri-template, ... are annotations here


def validate(instance: Any, schema: Mapping[str, Any], where: str = "$") -> list[str]:
    """Return every violation of ``schema`` by ``instance`` as ``"<json path>: <problem>"``."""
    errors: list[str] = []
    unknown = set(schema) - KEYWORDS
    if unknown:
        return [f"{where}: schema uses unsupported keywords {sorted(unknown)}"]
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_has_type(instance, n) for n in names):
            return [f"{where}: expected {'/'.join(names)}, got {type(instance).__name__}"]
    if "enum" in schema and instance not in schema["enum"]:
        errors.append(f"{where}: {instance!r} not in {schema['enum']}")
    errors += _validate_composition(instance, schema, where)
    if isinstance(instance, dict):
        errors += _validate_object(instance, schema, where)
    elif isinstance(instance, list):
        errors += _validate_array(instance, schema, where)
    else:
        errors += _validate_scalar(instance, schema, where)
    return errors


def _validate_scalar(instance: Any, schema: Mapping[str, Any], where: str) -> list[str]:
    errors: list[str] = []
    if isinstance(instance, str):
        if "format" in schema and not _format_ok(instance, schema["format"]):
            errors.append(f"{where}: {instance!r} is not a valid {schema['format']}")
        if len(instance) < schema.get("minLength", 0):
            errors.append(f"{where}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(instance) > schema["maxLength"]:
            errors.append(f"{where}: longer than {schema['maxLength']}")
    elif _has_type(instance, "number"):
        if "minimum" in schema and instance < schema["minimum"]:
            errors.append(f"{where}: below minimum {schema['minimum']}")
        if "maximum" in schema and instance > schema["maximum"]:
            errors.append(f"{where}: above maximum {schema['maximum']}")
    return errors


def _validate_composition(instance: Any, schema: Mapping[str, Any], where: str) -> list[str]:
    errors: list[str] = []
    for sub in schema.get("allOf", []):
        errors += validate(instance, sub, where)
    if "anyOf" in schema:
        results = [validate(instance, sub, where) for sub in schema["anyOf"]]
        if all(results):
            errors.append(f"{where}: matches no anyOf branch: {min(results, key=len)}")
    if "oneOf" in schema:
        # Read as anyOf: GitHub's description uses oneOf for "one of these shapes" without making
        # the branches exclusive (a 409 is basic-error or repository-rule-violation-error, both
        # all-optional), so strict oneOf would reject every real body, GitHub's own included.
        results = [validate(instance, sub, where) for sub in schema["oneOf"]]
        if all(results):
            errors.append(f"{where}: matches no oneOf branch: {min(results, key=len)}")
    return errors


def _validate_object(instance: dict[str, Any], schema: Mapping[str, Any], where: str) -> list[str]:
    errors = [
        f"{where}: missing required {key!r}"
        for key in schema.get("required", [])
        if key not in instance
    ]
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, value in instance.items():
        if key in properties:
            errors += validate(value, properties[key], f"{where}.{key}")
        elif extra is False:
            errors.append(f"{where}: unexpected property {key!r}")
        elif isinstance(extra, dict):
            errors += validate(value, extra, f"{where}.{key}")
    return errors


def _validate_array(instance: list[Any], schema: Mapping[str, Any], where: str) -> list[str]:
    errors: list[str] = []
    if len(instance) < schema.get("minItems", 0):
        errors.append(f"{where}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(instance) > schema["maxItems"]:
        errors.append(f"{where}: more than {schema['maxItems']} items")
    if "items" in schema:
        for index, item in enumerate(instance):
            errors += validate(item, schema["items"], f"{where}[{index}]")
    return errors
