"""Spec: a URL the API hands out resolves against the URL the client called, on the
execute-api URL (its stage, ``/v1``) and behind a custom domain's base path (``/agents``) alike.
The events are shaped as API Gateway fills them for each way in (``api.called_path``)."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from aws_lambda_powertools.event_handler import Response
from lambda_agents.api.called_path import CalledPathMismatch, called_base_path, handed_out
from lambda_agents.api.resolver import build_resolver
from lambda_agents.api.turn_routes import TurnRoutes
from pydantic import BaseModel, ConfigDict

ROUTE = "/sessions/s1/messages"


def _event(path: str, called: str | None, method: str = "POST") -> dict[str, Any]:
    context: dict[str, Any] = {"stage": "v1", "authorizer": {"claims": {"sub": "u-1"}}}
    if called is not None:
        context["path"] = called
    return {
        "resource": "/sessions/{id}/messages",
        "path": path,
        "httpMethod": method,
        "headers": None,
        "queryStringParameters": None,
        "pathParameters": {"id": "s1"},
        "body": None,
        "isBase64Encoded": False,
        "requestContext": context,
    }


@pytest.mark.parametrize(
    ("path", "called", "prefixes", "base"),
    [
        pytest.param(ROUTE, f"/v1{ROUTE}", None, "/v1", id="execute_api_url_the_stage"),
        pytest.param(f"/agents{ROUTE}", f"/agents{ROUTE}", ["/agents"], "/agents", id="custom_domain_base_path"),
        pytest.param(f"/a/b{ROUTE}", f"/a/b{ROUTE}", ["/a/b"], "/a/b", id="a_base_path_of_two_segments"),
        pytest.param(ROUTE, ROUTE, None, "", id="custom_domain_without_base_path"),
        pytest.param(ROUTE, "/sessions/{id}/messages", None, "", id="sam_local_gives_the_resource"),
        pytest.param(ROUTE, None, None, "", id="a_direct_invocation_without_api_gateway"),
        pytest.param(f"{ROUTE}/", f"/v1{ROUTE}/", None, "/v1", id="a_trailing_slash"),
        pytest.param("/sessions/a b/messages", "/v1/sessions/a%20b/messages", None, "/v1", id="percent_encoded"),
        pytest.param("/sessions/a%41/messages", "/v1/sessions/a%2541/messages", None, "/v1", id="encoded_twice"),
        pytest.param("/sessions/a/b/messages", "/v1/sessions/a%2Fb/messages", None, "/v1", id="an_encoded_slash"),
        pytest.param("/v1/x", "/v1/v1/x", None, "/v1", id="a_route_that_starts_like_the_stage"),
        pytest.param("/v1/x", "/v1/x", None, "", id="that_route_on_a_root_mapping"),
        pytest.param(f"/agents{ROUTE}", f"/agents{ROUTE}", None, "", id="a_base_path_the_function_is_not_told"),
    ],
)
def test_the_called_base_is_what_the_client_called_before_the_route(
    path: str, called: str | None, prefixes: list[str] | None, base: str
) -> None:
    assert called_base_path(_event(path, called), prefixes) == base


@pytest.mark.parametrize(
    ("called", "stage", "prefixes"),
    [
        pytest.param(f"/v 1{ROUTE}", "v 1", None, id="a_stage_api_gateway_refuses"),
        pytest.param(f"/a?b{ROUTE}", "v1", ["/a?b"], id="a_base_path_api_gateway_refuses"),
        pytest.param(7, "v1", None, id="a_path_not_a_string"),
        pytest.param(f"/v1{ROUTE}", ["v1"], None, id="a_stage_not_a_string"),
    ],
)
def test_a_context_that_cannot_be_api_gateways_is_refused(called: Any, stage: Any, prefixes: list[str] | None) -> None:
    event = _event(f"{prefixes[0]}{ROUTE}" if prefixes else ROUTE, called)
    event["requestContext"]["stage"] = stage
    with pytest.raises(CalledPathMismatch):
        called_base_path(event, prefixes)


@pytest.mark.parametrize("route", ["sessions/s1", "/a b", "//x", "/x/../y", "/x?q=1", "/" + "a/" * 40])
def test_only_an_absolute_path_of_plain_segments_is_handed_out(route: str) -> None:
    with pytest.raises(ValueError, match="not a URL the API may hand out"):
        handed_out("/v1", route)


class Done(BaseModel):
    status: Literal["done"]


class Pending(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["pending"]
    answerUrl: str  # noqa: N815 - the wire's name
    retry_after_seconds: int


def _app(answer: dict[str, Any]) -> Any:
    app = build_resolver()
    answers = TurnRoutes(
        Done, Pending, url_field="answerUrl", request=app, answered_description="", pending_description=""
    )

    @app.post("/sessions/<id>/messages")
    def post(id: str) -> Response[Done | Pending]:
        return answers.response(answer, False)

    @app.get("/sessions/<id>/messages/<seq>")
    def read(id: str, seq: str) -> Response[Done | Pending]:
        return answers.response(answer, False)

    return app


PENDING = {"status": "pending", "answerUrl": "/sessions/s1/messages/2", "retry_after_seconds": 3}


@pytest.mark.parametrize(
    ("path", "called", "base_path", "location"),
    [
        pytest.param(ROUTE, f"/v1{ROUTE}", "", "/v1/sessions/s1/messages/2", id="execute_api_url"),
        pytest.param(f"/agents{ROUTE}", f"/agents{ROUTE}", "/agents", "/agents/sessions/s1/messages/2", id="domain"),
        pytest.param(ROUTE, ROUTE, "", "/sessions/s1/messages/2", id="root_mapping"),
        pytest.param(ROUTE, f"/v1{ROUTE}", "/agents", "/v1/sessions/s1/messages/2", id="stage_url_of_a_mapped_api"),
    ],
)
def test_a_202_hands_out_the_same_url_in_its_location_and_body_under_the_called_stage_or_base_path(
    path: str, called: str, base_path: str, location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_BASE_PATH", base_path)
    answer = _app(PENDING).resolve(_event(path, called), None)

    assert answer["statusCode"] == 202
    headers = {**answer.get("headers", {}), **{k: v[-1] for k, v in (answer.get("multiValueHeaders") or {}).items()}}
    assert headers["Location"] == json.loads(answer["body"])["answerUrl"] == location


def test_the_pending_answer_read_again_points_where_the_reading_request_came_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stored answer keeps the route path; each request's own stage or base path goes before it,
    so an answer accepted on one URL and read on the other points to the reader's URL."""
    monkeypatch.setenv("API_BASE_PATH", "/agents")
    app = _app(PENDING)
    first = app.resolve(_event(ROUTE, f"/v1{ROUTE}"), None)
    again = app.resolve(_event(f"/agents{ROUTE}/2", f"/agents{ROUTE}/2", "GET"), None)

    assert json.loads(first["body"])["answerUrl"] == "/v1/sessions/s1/messages/2"
    assert json.loads(again["body"])["answerUrl"] == "/agents/sessions/s1/messages/2"


def test_an_event_whose_context_cannot_be_api_gateways_is_a_500_before_any_route_runs() -> None:
    ran: list[str] = []
    app = build_resolver()

    @app.post("/sessions/<id>/messages")
    def post(id: str) -> dict[str, str]:
        ran.append(id)
        return {}

    event = _event(ROUTE, f"/v 1{ROUTE}")
    event["requestContext"]["stage"] = "v 1"
    answer = app.resolve(event, None)

    assert answer["statusCode"] == 500 and json.loads(answer["body"])["error"]["code"] == "INTERNAL_ERROR"
    assert ran == []
