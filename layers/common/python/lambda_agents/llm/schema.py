"""Pydantic model -> OpenAI strict JSON schema, and a lint against the strict-mode subset.

The wire schema differs from pydantic's in the ways strict mode requires: every property is
required (optional fields become a union with null), ``additionalProperties: false`` on every
object, ``$ref`` inlined, and keywords outside the subset (default, string length limits,
``x-`` hints for the offline model) removed. String length limits move into the description;
pydantic still enforces them, and a violation is retried with the error fed back.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from .errors import SchemaNotSupported

MAX_PROPERTIES = 5000
MAX_NESTING = 10
MAX_ENUM_VALUES = 1000
MAX_NAME_AND_ENUM_CHARS = 120_000
UNSUPPORTED_KEYWORDS = (
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
)
_DROPPED_KEYWORDS = ("default", "title", "examples")


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Pydantic's own schema with $defs inlined (the offline model reads this one)."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    inlined: dict[str, Any] = _inline(raw, defs, ())
    return inlined


def _inline(node: Any, defs: dict[str, Any], stack: tuple[str, ...]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in stack:
                raise SchemaNotSupported(f"recursive model {name!r} cannot be inlined")
            merged = {**_inline(defs[name], defs, (*stack, name))}
            merged.update({k: v for k, v in node.items() if k != "$ref"})
            return merged
        return {key: _inline(value, defs, stack) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(item, defs, stack) for item in node]
    return node


def to_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Rewrite a (pydantic, inlined) schema into OpenAI's strict form."""
    strict: dict[str, Any] = _strict_node(copy.deepcopy(schema))
    return strict


def _strict_node(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict_node(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    limits = []
    for key, value in node.items():
        if key in _DROPPED_KEYWORDS or key.startswith("x-"):
            continue
        if key in ("minLength", "maxLength"):
            limits.append(f"{'at least' if key == 'minLength' else 'at most'} {value} characters")
            continue
        if key == "properties":
            out[key] = {name: _strict_node(sub) for name, sub in value.items()}
        elif key in ("items", "anyOf", "additionalProperties", "prefixItems"):
            out[key] = _strict_node(value)
        else:
            out[key] = value
    if limits:
        text = "; ".join(limits)
        out["description"] = f"{out['description']} ({text})" if out.get("description") else text
    if out.get("type") == "object" or "properties" in out:
        out["type"] = "object"
        if isinstance(out.get("additionalProperties"), dict) and not out.get("properties"):
            # A map (dict[str, X]) has no strict form: closing it would make the model always
            # answer {} and validate silently. Leave it open so the lint rejects the model.
            pass
        else:
            out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    return out


@lru_cache(maxsize=256)
def _strict_for(model: type[BaseModel]) -> str:
    return json.dumps(to_strict(model_schema(model)))


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The wire schema for ``model``, linted; cached per class (dynamic models included)."""
    schema: dict[str, Any] = json.loads(_strict_for(model))
    assert_strict(schema)
    return schema


def lint_strict(schema: dict[str, Any]) -> list[str]:
    """Every way ``schema`` falls outside OpenAI's documented strict-mode subset."""
    problems: list[str] = []
    if "anyOf" in schema:
        problems.append("root: anyOf is not allowed at the root")
    if schema.get("type") != "object":
        problems.append("root: the root must be an object")
    counters = {"properties": 0, "enum": 0, "chars": 0}
    _lint(schema, "root", 1, problems, counters)
    if counters["properties"] > MAX_PROPERTIES:
        problems.append(f"{counters['properties']} object properties (max {MAX_PROPERTIES})")
    if counters["enum"] > MAX_ENUM_VALUES:
        problems.append(f"{counters['enum']} enum values (max {MAX_ENUM_VALUES})")
    if counters["chars"] > MAX_NAME_AND_ENUM_CHARS:
        problems.append(f"{counters['chars']} characters of names and enum values (max {MAX_NAME_AND_ENUM_CHARS})")
    return problems


def _lint(node: Any, path: str, depth: int, problems: list[str], counters: dict[str, int]) -> None:
    if not isinstance(node, dict):
        return
    for keyword in UNSUPPORTED_KEYWORDS:
        if keyword in node:
            problems.append(f"{path}: '{keyword}' is not supported")
    if "$ref" in node and not str(node["$ref"]).startswith("#"):
        problems.append(f"{path}: external $ref")
    is_object = node.get("type") == "object" or "properties" in node
    if is_object:
        if depth > MAX_NESTING:
            problems.append(f"{path}: nested {depth} levels deep (max {MAX_NESTING})")
        if node.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        properties = node.get("properties", {})
        missing = sorted(set(properties) - set(node.get("required", [])))
        if missing:
            problems.append(f"{path}: properties not required: {', '.join(missing)}")
        counters["properties"] += len(properties)
        counters["chars"] += sum(len(name) for name in properties)
        for name, sub in properties.items():
            _lint(sub, f"{path}.{name}", depth + 1, problems, counters)
    if "enum" in node:
        counters["enum"] += len(node["enum"])
        counters["chars"] += sum(len(str(value)) for value in node["enum"])
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _lint(node[key], f"{path}[]", depth, problems, counters)
    for index, sub in enumerate(node.get("anyOf", [])):
        _lint(sub, f"{path}|{index}", depth, problems, counters)


def assert_strict(schema: dict[str, Any]) -> None:
    problems = lint_strict(schema)
    if problems:
        raise SchemaNotSupported("schema outside the strict-mode subset: " + "; ".join(problems))
