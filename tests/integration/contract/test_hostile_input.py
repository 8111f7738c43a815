"""Hostile input on every route of the merged OpenAPI document, through the local runner.

Each test is a class of defect, run over every operation the document lists, so a route added
later is covered without touching this file:

- media types: ``application/json`` in any letter case and with parameters is JSON; a type that
  only starts with it (``application/jsonx``) is a 415;
- JSON that Python refuses or mis-reads (a number past the int digit limit, nesting past the
  recursion limit, NaN / Infinity / 1e999, lone surrogates) is a 400 naming it, never a 500;
- an error answer is bounded: tens of thousands of unknown keys, or a body past the size cap, get
  an answer of a few KB, never one larger than the request;
- ids: every path parameter and every id-like request field has a pattern and a maxLength in
  the document, and an over-long id is refused without being echoed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from lambda_agents.api.error_body import MAX_ERROR_BYTES
from lambda_agents.api.request_body import MAX_BODY_BYTES

from devtools.openapi import merged_document
from devtools.runner import LocalRunner
from devtools.runner_api import STAGE, HttpRequest

pytestmark = pytest.mark.integration

IDENTITY = [("X-Local-User", "hostile-user"), ("X-Local-Admin", "hostile-admin")]
ID_LIKE = re.compile(r"(^id$|_id$|Id$)")


DOCUMENT = merged_document()  # imports every handler in its own environment, then restores os.environ
OPERATIONS = [
    (method.upper(), path, operation)
    for path, operations in DOCUMENT["paths"].items()
    for method, operation in operations.items()
]
OPERATION_IDS = [f"{method} {path}" for method, path, _ in OPERATIONS]


def _concrete(path: str, value: str = "hostile-1") -> str:
    return re.sub(r"\{[^}]+\}", value, path)


def _send(
    runner: LocalRunner, method: str, path: str, body: bytes, content_type: str = "application/json"
) -> tuple[int, bytes]:
    headers = [*IDENTITY, ("Content-Type", content_type)]
    answer = runner.handle_http(HttpRequest(method, f"/{STAGE}{path}", "", headers, body))  # the stage URL
    return answer.status, answer.body


def _error(body: bytes) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(body)["error"]
    return error


def _assert_answered_as_plain_json(runner: LocalRunner, method: str, path: str, body: bytes, content_type: str) -> None:
    """``body`` labelled ``content_type`` gets the status it gets as ``application/json``, never a 5xx."""
    plain = _send(runner, method, _concrete(path), body)
    labelled = _send(runner, method, _concrete(path), body, content_type)
    assert labelled[0] == plain[0] and labelled[0] < 500, (labelled, plain)


# -- media types ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS, ids=OPERATION_IDS)
@pytest.mark.parametrize(
    "content_type", ["APPLICATION/JSON", "Application/Json; Charset=UTF-8", "application/json ;x=1"]
)
def test_json_in_any_letter_case_or_with_parameters_is_read_as_json(
    runner: LocalRunner, method: str, path: str, operation: dict[str, Any], content_type: str
) -> None:
    _assert_answered_as_plain_json(runner, method, path, b"{}", content_type)


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS, ids=OPERATION_IDS)
@pytest.mark.parametrize("content_type", ["application/jsonx", "application/json-seq", "text/json", "json", "x"])
def test_a_media_type_that_only_resembles_json_is_415(
    runner: LocalRunner, method: str, path: str, operation: dict[str, Any], content_type: str
) -> None:
    status, body = _send(runner, method, _concrete(path), b"{}", content_type)
    assert (status, _error(body)["code"]) == (415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS, ids=OPERATION_IDS)
@pytest.mark.parametrize("content_type", ["APPLICATION/JSON", "text/plain", "multipart/form-data; boundary=x"])
def test_without_a_body_the_content_type_does_not_matter(
    runner: LocalRunner, method: str, path: str, operation: dict[str, Any], content_type: str
) -> None:
    _assert_answered_as_plain_json(runner, method, path, b"", content_type)


# -- JSON that Python refuses or mis-reads --------------------------------------------------------

REFUSED_JSON = {
    "an int past the digit limit": b'{"a": ' + b"9" * 5000 + b"}",
    "nesting past the recursion limit": b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "nesting past DynamoDB's 32 levels": b'{"a": ' + b'{"b": ' * 40 + b"1" + b"}" * 40 + b"}",
    "NaN": b'{"a": NaN}',
    "-Infinity": b'{"a": [1, -Infinity]}',
    "a float past its range": b'{"a": 1e999}',
    "a lone surrogate in a value": b'{"a": ["ok", "\\ud800"]}',
    "a lone surrogate in a key": b'{"\\udfff": 1}',
    "not JSON": b'{"a": ',
    "a JSON array": b'[{"a": 1}]',
}


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS, ids=OPERATION_IDS)
@pytest.mark.parametrize("shape", sorted(REFUSED_JSON))
def test_json_python_refuses_or_dynamodb_cannot_hold_is_a_400_naming_it(
    runner: LocalRunner, method: str, path: str, operation: dict[str, Any], shape: str
) -> None:
    status, body = _send(runner, method, _concrete(path), REFUSED_JSON[shape])
    error = _error(body)
    assert (status, error["code"]) == (400, "VALIDATION_ERROR"), body[:300]
    assert error["message"].startswith("invalid body")


# -- bounded error answers -----------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS, ids=OPERATION_IDS)
def test_a_body_of_thousands_of_unknown_keys_gets_a_bounded_answer_that_counts_them(
    runner: LocalRunner, method: str, path: str, operation: dict[str, Any]
) -> None:
    body = json.dumps({f"unknown-{index:05d}-{'k' * 40}": index for index in range(20_000)}).encode()
    status, answer = _send(runner, method, _concrete(path), body)
    assert status < 500 and len(answer) <= MAX_ERROR_BYTES, (status, len(answer))
    if "requestBody" in operation:  # a route without a body ignores it, as API Gateway passes it on
        error = _error(answer)
        assert status == 400 and "more problems" in error["message"] and len(error["details"]) <= 20


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS, ids=OPERATION_IDS)
def test_a_body_past_the_size_cap_is_413_before_it_is_parsed(
    runner: LocalRunner, method: str, path: str, operation: dict[str, Any]
) -> None:
    body = b'{"a": "' + b"x" * MAX_BODY_BYTES + b'"}'
    status, answer = _send(runner, method, _concrete(path), body)
    assert (status, _error(answer)["code"]) == (413, "PAYLOAD_TOO_LARGE")


# -- ids ------------------------------------------------------------------------------------------


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = DOCUMENT["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _string_shapes(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The string alternatives of a (possibly nullable) schema."""
    schema = _resolved(schema)
    alternatives = schema.get("anyOf") or schema.get("oneOf") or [schema]
    return [_resolved(item) for item in alternatives if _resolved(item).get("type") == "string"]


def _request_id_fields(schema: dict[str, Any], where: str, seen: set[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    if "$ref" in schema:
        if schema["$ref"] in seen:
            return
        seen = {*seen, schema["$ref"]}
    schema = _resolved(schema)
    for alternative in schema.get("anyOf") or schema.get("oneOf") or []:
        yield from _request_id_fields(alternative, where, seen)
    if "items" in schema:
        yield from _request_id_fields(schema["items"], f"{where}[]", seen)
    for name, field in (schema.get("properties") or {}).items():
        if ID_LIKE.search(name):
            yield f"{where}.{name}", field
        yield from _request_id_fields(field, f"{where}.{name}", seen)


def _declared_ids() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for method, path, operation in OPERATIONS:
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path" or ID_LIKE.search(parameter["name"]):
                found.append((f"{method} {path} {parameter['in']} {parameter['name']}", parameter["schema"]))
        content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
        if "schema" in content:
            found += [
                (f"{method} {path} {name}", s) for name, s in _request_id_fields(content["schema"], "body", set())
            ]
    return found


def test_every_path_parameter_and_id_field_of_a_request_has_a_pattern_and_a_max_length() -> None:
    declared = _declared_ids()
    assert any(" path " in name for name, _ in declared)  # the walk found the ids it is about
    missing = [
        name
        for name, schema in declared
        if not (shapes := _string_shapes(schema)) or any("pattern" not in s or "maxLength" not in s for s in shapes)
    ]
    assert missing == []


PATH_OPERATIONS = [(m, p, o) for m, p, o in OPERATIONS if "{" in p]


@pytest.mark.parametrize(
    ("method", "path", "operation"), PATH_OPERATIONS, ids=[f"{m} {p}" for m, p, _ in PATH_OPERATIONS]
)
def test_an_over_long_id_in_the_path_is_refused_without_being_echoed(
    runner: LocalRunner, method: str, path: str, operation: dict[str, Any]
) -> None:
    marker = "idz" * 2000
    status, answer = _send(runner, method, _concrete(path, marker), b"{}")
    assert status in (400, 404), answer[:300]
    assert marker[:200] not in answer.decode() and len(answer) < 2000
