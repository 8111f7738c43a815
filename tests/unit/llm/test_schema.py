"""Spec: the wire schema (docs/engine.md#structured-output): pydantic model -> OpenAI strict schema, and
the strict-subset lint."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from lambda_agents.llm.errors import SchemaNotSupported
from lambda_agents.llm.schema import (
    MAX_ENUM_VALUES,
    MAX_NAME_AND_ENUM_CHARS,
    MAX_NESTING,
    MAX_PROPERTIES,
    assert_strict,
    lint_strict,
    strict_schema,
)
from pydantic import BaseModel, Field


class Inner(BaseModel):
    label: str = Field(max_length=20)
    weight: float | None = None


class Outer(BaseModel):
    title: str = Field(min_length=2, max_length=80, json_schema_extra={"x-examples": ["a title"]})
    tone: Literal["gentle", "firm"]
    note: str | None = None
    items: list[Inner] = Field(min_length=3, max_length=3)
    tags: list[str] = Field(default_factory=list)


def _objects(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("type") == "object":
            found.append(node)
        for value in node.values():
            found.extend(_objects(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_objects(value))
    return found


def _ok_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def test_given_a_nested_model_when_converted_then_every_object_is_closed_and_requires_every_property() -> None:
    schema = strict_schema(Outer)
    objects = _objects(schema)
    assert len(objects) == 2
    for node in objects:
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])
    assert lint_strict(schema) == []


def test_given_optional_fields_when_converted_then_they_are_a_union_with_null_and_still_required() -> None:
    schema = strict_schema(Outer)
    assert {"type": "null"} in schema["properties"]["note"]["anyOf"]
    assert "note" in schema["required"]
    inner = schema["properties"]["items"]["items"]
    assert {"type": "null"} in inner["properties"]["weight"]["anyOf"]
    assert "weight" in inner["required"]


def test_given_list_lengths_when_converted_then_min_and_max_items_are_kept() -> None:
    items = strict_schema(Outer)["properties"]["items"]
    assert (items["minItems"], items["maxItems"]) == (3, 3)


def test_given_refs_defaults_and_hints_when_converted_then_none_reach_the_wire() -> None:
    keys: set[str] = set()

    def collect(node: Any, under_properties: bool = False) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if not under_properties:
                    keys.add(key)
                collect(value, key == "properties" and not under_properties)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(strict_schema(Outer))
    assert keys.isdisjoint({"$ref", "$defs", "default", "x-examples", "title", "minLength", "maxLength"})
    assert "at most 80 characters" in strict_schema(Outer)["properties"]["title"]["description"]


@pytest.mark.parametrize(
    "keyword, value",
    [
        ("allOf", [{"type": "string"}]),
        ("not", {"type": "string"}),
        ("if", {"type": "string"}),
        ("then", {"type": "string"}),
        ("else", {"type": "string"}),
        ("dependentRequired", {"a": ["b"]}),
        ("dependentSchemas", {"a": {}}),
        ("patternProperties", {"^x": {"type": "string"}}),
    ],
)
def test_given_an_unsupported_keyword_anywhere_when_linted_then_it_is_reported(keyword: str, value: Any) -> None:
    schema = _ok_object({"field": {"type": "string", keyword: value}})
    problems = lint_strict(schema)
    assert any(f"'{keyword}'" in problem and "root.field" in problem for problem in problems)


def test_given_any_of_at_the_root_when_linted_then_it_is_reported() -> None:
    schema = {"anyOf": [_ok_object({"a": {"type": "string"}}), _ok_object({"b": {"type": "string"}})]}
    assert any("anyOf is not allowed at the root" in problem for problem in lint_strict(schema))


def test_given_an_open_object_when_linted_then_additional_properties_is_reported() -> None:
    schema = _ok_object({"child": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}})
    assert lint_strict(schema) == ["root.child: additionalProperties must be false"]


def test_given_a_property_not_required_when_linted_then_it_is_named() -> None:
    schema = _ok_object({"a": {"type": "string"}, "b": {"type": "string"}})
    schema["required"] = ["a"]
    assert lint_strict(schema) == ["root: properties not required: b"]


def test_given_too_many_properties_when_linted_then_the_count_is_reported() -> None:
    schema = _ok_object({f"p{i}": {"type": "string"} for i in range(MAX_PROPERTIES + 1)})
    assert any(f"max {MAX_PROPERTIES}" in problem for problem in lint_strict(schema))
    assert lint_strict(_ok_object({f"p{i}": {"type": "string"} for i in range(MAX_PROPERTIES)})) == []


def _nested(levels: int) -> dict[str, Any]:
    node = _ok_object({"leaf": {"type": "string"}})
    for _ in range(levels - 1):
        node = _ok_object({"child": node})
    return node


def test_given_nesting_past_the_limit_when_linted_then_the_depth_is_reported() -> None:
    assert lint_strict(_nested(MAX_NESTING)) == []
    assert any(f"max {MAX_NESTING}" in problem for problem in lint_strict(_nested(MAX_NESTING + 1)))


def test_given_too_many_enum_values_when_linted_then_the_count_is_reported() -> None:
    ok = _ok_object({"e": {"type": "string", "enum": [f"v{i}" for i in range(MAX_ENUM_VALUES)]}})
    too_many = _ok_object({"e": {"type": "string", "enum": [f"v{i}" for i in range(MAX_ENUM_VALUES + 1)]}})
    assert lint_strict(ok) == []
    assert any(f"max {MAX_ENUM_VALUES}" in problem for problem in lint_strict(too_many))


def test_given_too_many_characters_of_names_and_enum_values_when_linted_then_it_is_reported() -> None:
    long_value = "x" * (MAX_NAME_AND_ENUM_CHARS // 10 + 1)
    schema = _ok_object({"e": {"type": "string", "enum": [long_value + str(i) for i in range(10)]}})
    assert any(f"max {MAX_NAME_AND_ENUM_CHARS}" in problem for problem in lint_strict(schema))


def test_given_a_schema_outside_the_subset_when_asserted_then_schema_not_supported_lists_every_problem() -> None:
    schema = _ok_object({"a": {"type": "string", "not": {"const": "x"}, "if": {}}})
    with pytest.raises(SchemaNotSupported, match=r"'not'.*'if'"):
        assert_strict(schema)


def test_given_a_dict_field_when_converted_then_the_lint_rejects_it_before_any_call() -> None:
    class WithMap(BaseModel):
        scores: dict[str, int]

    with pytest.raises(SchemaNotSupported, match="additionalProperties"):
        strict_schema(WithMap)


def test_given_a_recursive_model_when_converted_then_it_is_rejected_with_its_name() -> None:
    class Node(BaseModel):
        name: str
        children: list[Node]

    with pytest.raises(SchemaNotSupported, match="Node"):
        strict_schema(Node)
