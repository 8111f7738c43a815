from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from aws_lambda_powertools.event_handler.openapi.params import Header
from lambda_agents.api.errors import NotFound, TooManyRequests, Unauthorized
from lambda_agents.api.identity import caller_admin_arn, caller_user_id
from lambda_agents.api.resolver import build_resolver
from lambda_agents.storage.dynamodb import ConditionFailed, StorageError, StorageThrottled
from pydantic import BaseModel, Field


class Body(BaseModel):
    name: str = Field(min_length=1)


def _event(method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": {"content-type": "application/json"},
        "queryStringParameters": query,
        "pathParameters": None,
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
        "requestContext": {
            "resourcePath": path,
            "httpMethod": method,
            "stage": "v1",
            "requestId": "r1",
            "authorizer": {"claims": {"sub": "u-1"}},
        },
    }


# Routes that only raise: the tests read what the resolver's one error mapping answers for each error.
FAILING_ROUTES: dict[str, Exception] = {
    "/missing": NotFound("thing t1 not found"),
    "/busy": TooManyRequests("slow down", retry_after_s=7),
    "/throttled": StorageThrottled("ProvisionedThroughputExceededException"),
    "/conflict": ConditionFailed("ConditionalCheckFailedException"),
    "/storage": StorageError("InternalServerError"),
    "/bug": KeyError("secret-internal-detail"),
}


def _raising(error: Exception) -> Callable[[], dict[str, str]]:
    def route() -> dict[str, str]:
        raise error.with_traceback(None)  # the same error every app: no traceback kept from the last

    return route


def _app() -> Any:
    app = build_resolver()

    @app.post("/things")
    def create(body: Body) -> dict[str, str]:
        return {"name": body.name}

    for path, error in FAILING_ROUTES.items():
        app.get(path)(_raising(error))
    return app


def _flat_headers(response: dict[str, Any]) -> dict[str, str]:
    flat = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
    flat.update({k.lower(): v[0] for k, v in (response.get("multiValueHeaders") or {}).items()})
    return flat


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/throttled", 503, "STORAGE_BUSY"),
        ("/conflict", 409, "CONCURRENT_UPDATE"),
        ("/storage", 503, "STORAGE_UNAVAILABLE"),
        ("/bug", 500, "INTERNAL_ERROR"),
    ],
)
def test_storage_failures_and_bugs_map_to_one_envelope_without_internals(path: str, status: int, code: str) -> None:
    response = _app().resolve(_event("GET", path), None)
    assert response["statusCode"] == status
    assert json.loads(response["body"])["error"]["code"] == code
    assert "secret-internal-detail" not in response["body"]
    if path == "/throttled":
        assert _flat_headers(response)["retry-after"] == "1"


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({"content-type": "multipart/form-data"}, '{"name": "a"}', 415),
        ({"Content-Type": "text/plain"}, "name=a", 415),
        ({"content-type": "application/json; charset=utf-8"}, '{"name": "a"}', 200),
        ({}, '{"name": "a"}', 415),  # no Content-Type: not guessed to be JSON
        ({"Content-Type": "  "}, '{"name": "a"}', 415),
        ({}, "", 400),  # no body: no media type to check; the route says the body is missing
    ],
)
def test_a_body_that_is_not_json_is_415_before_any_parsing(headers: dict[str, str], body: str, status: int) -> None:
    event = {**_event("POST", "/things"), "headers": headers, "body": body}
    assert _app().resolve(event, None)["statusCode"] == status


@pytest.mark.parametrize("body", ['[{"name": "a"}]', '  ["a"]', '"a"', "42"])
def test_a_body_that_is_not_a_json_object_is_a_400(body: str) -> None:
    response = _app().resolve({**_event("POST", "/things"), "body": body}, None)
    assert response["statusCode"] == 400
    assert "JSON object" in json.loads(response["body"])["error"]["message"]


def test_a_base64_body_that_is_not_utf8_is_a_400() -> None:
    event = {**_event("POST", "/things"), "body": "//79", "isBase64Encoded": True}
    response = _app().resolve(event, None)
    assert response["statusCode"] == 400
    assert "UTF-8" in json.loads(response["body"])["error"]["message"]


def test_a_request_without_any_identity_is_401_before_its_body_is_validated() -> None:
    event = _event("POST", "/things", {"name": ""})
    event["requestContext"].pop("authorizer")
    response = _app().resolve(event, None)
    assert response["statusCode"] == 401
    assert json.loads(response["body"])["error"]["code"] == "UNAUTHORIZED"


def test_a_path_no_route_matches_gets_the_error_envelope() -> None:
    response = _app().resolve(_event("GET", "/nowhere"), None)
    assert response["statusCode"] == 404
    assert json.loads(response["body"])["error"]["code"] == "NOT_FOUND"


def test_an_invalid_body_is_a_400_that_names_the_field() -> None:
    response = _app().resolve(_event("POST", "/things", {"name": ""}), None)
    assert response["statusCode"] == 400
    error = json.loads(response["body"])["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert "name" in error["message"]


def test_a_domain_error_maps_to_its_status_and_code() -> None:
    response = _app().resolve(_event("GET", "/missing"), None)
    assert response["statusCode"] == 404
    assert json.loads(response["body"])["error"] == {"code": "NOT_FOUND", "message": "thing t1 not found"}


def test_rate_limit_answers_429_with_retry_after() -> None:
    response = _app().resolve(_event("GET", "/busy"), None)
    assert response["statusCode"] == 429
    assert _flat_headers(response)["retry-after"] == "7"


def test_identity_comes_only_from_the_request_context() -> None:
    event = {"headers": {"X-User": "mallory"}, "requestContext": {"authorizer": {"claims": {"sub": "u-1"}}}}
    assert caller_user_id(event) == "u-1"
    with pytest.raises(Unauthorized):
        caller_user_id({"headers": {"X-User": "mallory"}, "requestContext": {}})


def test_admin_identity_needs_an_iam_signed_request() -> None:
    arn = "arn:aws:iam::123456789012:user/ops"
    assert caller_admin_arn({"requestContext": {"identity": {"userArn": arn}}}) == arn
    with pytest.raises(Unauthorized):
        caller_admin_arn({"requestContext": {"identity": {"userArn": None}}})


def test_every_model_outage_maps_to_one_answer_503_with_retry_after_and_no_provider_text() -> None:
    from lambda_agents.api.errors import ModelFailed, ModelUnavailable, model_failure
    from lambda_agents.llm import Usage
    from lambda_agents.llm.errors import (
        DeadlineReached,
        ProviderAuthError,
        ProviderConnectionError,
        ProviderFailed,
        ProviderTimeout,
        ProviderUnavailable,
        RateLimited,
        RequestRejected,
    )

    canary = "provider said CANARY-5c2e"
    outages = [
        ProviderFailed("x", [], Usage(), ProviderUnavailable(canary)),
        ProviderFailed("x", [], Usage(), ProviderTimeout(canary)),
        ProviderFailed("x", [], Usage(), ProviderConnectionError(canary)),
        ProviderFailed("x", [], Usage(), RateLimited(canary, retry_after_s=12.2)),
        DeadlineReached(canary, [], Usage()),
        ProviderFailed("x", [], Usage(), ProviderAuthError(canary)),  # the key: the operator's to fix
    ]
    for error in outages:
        answer = model_failure(error)
        assert isinstance(answer, ModelUnavailable) and answer.status == 503 and answer.code == "MODEL_UNAVAILABLE"
        assert int(answer.headers["Retry-After"]) >= 1 and canary not in answer.message
    assert model_failure(outages[3]).headers["Retry-After"] == "13"
    for error in (ProviderFailed("x", [], Usage(), RequestRejected(canary)),):
        answer = model_failure(error)
        assert isinstance(answer, ModelFailed) and answer.status == 502 and canary not in answer.message


@pytest.mark.parametrize("with_multi_value_headers", [False, True])
def test_a_case_varied_json_media_type_keeps_every_other_header_for_the_route(with_multi_value_headers: bool) -> None:
    app = build_resolver()

    @app.post("/keyed")
    def keyed(body: Body, key: Annotated[str, Header(alias="x-key")]) -> dict[str, str]:
        return {"name": body.name, "key": key}

    headers = {"Content-Type": "APPLICATION/JSON; charset=UTF-8", "X-Key": "k-1"}
    event = {**_event("POST", "/keyed", {"name": "a"}), "headers": headers}
    if with_multi_value_headers:
        event["multiValueHeaders"] = {name: [value] for name, value in headers.items()}
    response = app.resolve(event, None)
    assert (response["statusCode"], json.loads(response["body"])) == (200, {"name": "a", "key": "k-1"})


def test_a_query_parameter_given_twice_is_a_400_that_names_it() -> None:
    event = _event("GET", "/missing")
    event["multiValueQueryStringParameters"] = {"limit": ["50", "5"], "cursor": ["c"]}
    event["queryStringParameters"] = {"limit": "5", "cursor": "c"}
    response = _app().resolve(event, None)
    assert response["statusCode"] == 400
    error = json.loads(response["body"])["error"]
    assert error["code"] == "VALIDATION_ERROR" and "'limit'" in error["message"]
    assert error["details"] == [{"field": "query.limit", "message": "given more than once"}]


@pytest.mark.parametrize("base", ["/agents", "agents/", "/api/v1"])
def test_behind_a_custom_domains_base_path_the_routes_still_match(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_BASE_PATH", base)
    prefix = "/" + base.strip("/")
    response = _app().resolve(_event("POST", f"{prefix}/things", {"name": "a"}), None)
    assert response["statusCode"] == 200 and json.loads(response["body"]) == {"name": "a"}
    assert _app().resolve(_event("POST", "/things", {"name": "b"}), None)["statusCode"] == 200  # the stage URL


def test_without_a_base_path_a_prefixed_path_is_no_route(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("API_BASE_PATH", raising=False)
    assert _app().resolve(_event("POST", "/agents/things", {"name": "a"}), None)["statusCode"] == 404
