"""Answers carry their text as it is: Japanese is UTF-8 on the wire, never ``\\u``-escaped
(a newcomer's first Japanese answer came back as ``\\u4eca\\u591c...``)."""

from __future__ import annotations

import json
from typing import Any

from lambda_agents.api.answer_json import answer_json, utf8_size
from lambda_agents.api.error_body import MAX_ERROR_BYTES, error_body
from lambda_agents.api.errors import NotFound
from lambda_agents.api.resolver import build_resolver
from pydantic import BaseModel

JAPANESE = "今夜はスマホを置いてみよう"


class Greeting(BaseModel):
    text: str
    tags: list[str]


def _event(path: str) -> dict[str, Any]:
    return {
        "resource": path,
        "path": path,
        "httpMethod": "GET",
        "headers": {},
        "body": None,
        "isBase64Encoded": False,
        "requestContext": {"resourcePath": path, "httpMethod": "GET", "authorizer": {"claims": {"sub": "u-1"}}},
    }


def _app() -> Any:
    app = build_resolver()

    @app.get("/dict")
    def as_dict() -> dict[str, str]:
        return {"hook": JAPANESE}

    @app.get("/model")
    def as_model() -> Greeting:
        return Greeting(text=JAPANESE, tags=["夜", "休息"])

    @app.get("/missing")
    def missing() -> dict[str, str]:
        raise NotFound(f"「{JAPANESE}」は見つかりません")

    @app.get("/surrogate")
    def surrogate() -> dict[str, str]:
        return {"text": "a\ud800b"}  # a model's JSON can decode to one

    return app


def test_given_japanese_in_a_route_answer_then_the_body_holds_it_as_utf8_text() -> None:
    for path, expected in (("/dict", {"hook": JAPANESE}), ("/model", {"text": JAPANESE, "tags": ["夜", "休息"]})):
        response = _app().resolve(_event(path), None)

        assert response["statusCode"] == 200
        assert JAPANESE in response["body"] and "\\u" not in response["body"]
        assert json.loads(response["body"]) == expected
        assert response["multiValueHeaders"]["Content-Type"] == ["application/json"]


def test_given_japanese_in_an_error_then_the_envelope_holds_it_as_utf8_text() -> None:
    response = _app().resolve(_event("/missing"), None)

    assert response["statusCode"] == 404
    assert f"「{JAPANESE}」は見つかりません" in response["body"]
    assert json.loads(response["body"])["error"]["code"] == "NOT_FOUND"


def test_given_a_lone_surrogate_then_the_answer_is_escaped_json_that_encodes_to_utf8() -> None:
    response = _app().resolve(_event("/surrogate"), None)

    response["body"].encode("utf-8")  # would raise with the surrogate written as it is
    assert json.loads(response["body"]) == {"text": "a\ud800b"}
    assert answer_json({"a": "日本", "b": "\udfff"}) == '{"a":"\\u65e5\\u672c","b":"\\udfff"}'


def test_the_error_envelopes_limit_counts_utf8_bytes_not_characters() -> None:
    # 20 items of 300 three-byte characters at each of 6 levels: far past 32 KB in bytes.
    wide: object = "語" * 5000
    for _ in range(5):
        wide = [wide] * 50

    body = error_body("E", "見" * 5000, {"problems": wide})

    assert utf8_size(body) <= MAX_ERROR_BYTES
    assert "語" in body or "見" in body
    assert "\\u" not in body
    assert json.loads(body)["error"]["truncated"] is True
