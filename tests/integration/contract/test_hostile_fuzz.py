"""Generated requests seeded with hostile shapes, over every operation of the merged OpenAPI.

schemathesis draws a request that fits the operation's schema; hypothesis then plants one shape
that once reached a 500 or an oversized answer: ``application/json`` in another letter case or
with parameters, a media type that only resembles it, an integer past Python's digit limit,
nesting past the recursion limit, NaN / Infinity / 1e999, a lone surrogate, thousands of unknown
keys, a far-future time, an over-long id in the path or the query. Every answer must be below
500, an error must be the envelope within its size bound, a refused literal a 400 and a
lookalike media type a 415, and no answer may echo a long path id.

The gate's run is derandomized and bounded (FUZZ_EXAMPLES per operation, 15 by default);
FUZZ_EXAMPLES=200 HYPOTHESIS_PROFILE=explore hunts further.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lambda_agents.api.error_body import MAX_ERROR_BYTES

from devtools.openapi import merged_document
from devtools.runner import LocalRunner
from devtools.runner_api import STAGE, HttpRequest

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))
IDENTITY = [("X-Local-User", "fuzz-user"), ("X-Local-Admin", "fuzz-admin")]
SENTINEL = "\u0000hostile\u0000"
DUMPED_SENTINEL = json.dumps(SENTINEL)
REFUSED_LITERALS = [
    "9" * 5000,
    "-" + "1" * 4400,
    "[" * 20_000 + "]" * 20_000,
    '{"a":' * 40 + "1" + "}" * 40,
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    '"\\ud800"',
    '"tail \\udfff"',
]
ODD_STRINGS = [
    "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00Z",
    "9999-12-31",
    "x" * 5000,
    "\u202e\u0000\ufeff",
    "../../etc/passwd",
    "' OR 1=1 --",
]
JSON_VARIANTS = ["APPLICATION/JSON", "Application/Json; charset=UTF-8", "application/json;charset=utf-8;q=1"]
LOOKALIKES = ["application/jsonx", "application/json-patch+json", "text/json", "application/x-json"]


def _document() -> dict[str, Any]:
    saved = dict(os.environ)
    try:
        return merged_document()
    finally:
        os.environ.clear()
        os.environ.update(saved)


DOCUMENT = _document()
SCHEMA = schemathesis.openapi.from_dict(DOCUMENT)
OPERATIONS = [(method.upper(), path) for path, operations in DOCUMENT["paths"].items() for method in operations]
QUERY_PARAMETERS = {
    (method.upper(), path): [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
    for path, operations in DOCUMENT["paths"].items()
    for method, operation in operations.items()
}


@pytest.fixture(scope="module")
def runner() -> Iterator[LocalRunner]:
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1", "AI_AGENT_MODE": "mock"}) as started:
        yield started
        started.aws.reset()  # moto's state is process-wide: leave none for the next module


@st.composite
def planted(draw: st.DrawFn, body: Any, value: Any) -> Any:
    """``body`` with ``value`` put in place of one of its values, or as a new key of one of its objects."""
    containers: list[Any] = []
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, dict | list):
            containers.append(node)
            stack.extend(node.values() if isinstance(node, dict) else node)
    if not containers:
        return {"planted": value}
    target = draw(st.sampled_from(containers))
    if isinstance(target, list):
        if target and draw(st.booleans()):
            target[draw(st.integers(0, len(target) - 1))] = value
        else:
            target.append(value)
    elif target and draw(st.booleans()):
        target[draw(st.sampled_from(sorted(target)))] = value
    else:
        target[draw(st.sampled_from(["planted", "id", "time", "localDate"]))] = value
    return body


def _send(
    runner: LocalRunner, method: str, path: str, query: dict[str, Any], headers: list[tuple[str, str]], body: bytes
) -> tuple[int, bytes]:
    called = f"/{STAGE}{path}"  # the stage URL, as a deployed client calls it
    answer = runner.handle_http(HttpRequest(method, called, urlencode(query, doseq=True), [*IDENTITY, *headers], body))
    return answer.status, answer.body


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_generated_requests_with_a_planted_hostile_shape_get_a_bounded_declared_answer(
    runner: LocalRunner, method: str, path: str
) -> None:
    shapes = st.sampled_from(
        [
            "none",
            "json variant",
            "lookalike",
            "refused literal",
            "unknown keys",
            "odd string",
            "long path id",
            "odd query",
        ]
    )

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(case=SCHEMA[path][method].as_strategy(), shape=shapes, data=st.data())
    def run(case: Any, shape: str, data: st.DataObject) -> None:
        body = case.body if isinstance(case.body, dict) else {}
        content_type = "application/json"
        literal: str | None = None
        params = dict(case.path_parameters or {})
        query = {key: value for key, value in (case.query or {}).items() if value is not None}
        if shape == "json variant":
            content_type = data.draw(st.sampled_from(JSON_VARIANTS))
        elif shape == "lookalike":
            content_type = data.draw(st.sampled_from(LOOKALIKES))
            body = body or {"a": 1}
        elif shape == "refused literal":
            literal = data.draw(st.sampled_from(REFUSED_LITERALS))
            body = data.draw(planted(body, SENTINEL))
        elif shape == "unknown keys":
            body = {**body, **{f"unknown-{index}-{'k' * 30}": index for index in range(5000)}}
        elif shape == "odd string":
            body = data.draw(planted(body, data.draw(st.sampled_from(ODD_STRINGS))))
        elif shape == "long path id" and params:
            name = data.draw(st.sampled_from(sorted(params)))
            params[name] = data.draw(st.sampled_from(["idz" * 1000, "x" * 101, "a" * 33, "tiktok-" + "z" * 200]))
        elif shape == "odd query":
            for name in QUERY_PARAMETERS[(method, path)]:
                query[name] = data.draw(st.sampled_from([*ODD_STRINGS, "-1", "1" * 400]))
        text = json.dumps(body, ensure_ascii=False)
        if literal is not None:
            text = text.replace(DUMPED_SENTINEL, literal, 1)
        concrete = path
        for name, value in params.items():
            concrete = concrete.replace("{" + name + "}", quote(str(value), safe=""))
        headers = [(str(k), str(v)) for k, v in (case.headers or {}).items() if k.lower() != "content-type"]
        sent = text.encode("utf-8", "surrogatepass") if (body or literal) else b""
        status, answer = _send(runner, method, concrete, query, [*headers, ("Content-Type", content_type)], sent)

        assert status < 500, (shape, status, answer[:300])
        if status >= 400:
            error = json.loads(answer)["error"]
            assert isinstance(error["code"], str) and isinstance(error["message"], str)
            assert len(answer) <= MAX_ERROR_BYTES
        if shape == "refused literal":
            assert status == 400, (literal[:40], answer[:300])
        if shape == "lookalike":
            assert status == 415
        for value in params.values():
            if len(str(value)) > 100:
                assert str(value)[:100] not in answer.decode("utf-8", "replace")

    run()
