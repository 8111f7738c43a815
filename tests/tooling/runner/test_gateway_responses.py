"""The runner answers what API Gateway answers itself (no token, unsigned, no such route, a failed
function) exactly as the template's gateway responses word it, read from the template
(the local 401 was ``{"message": "Unauthorized"}``, not the documented error shape)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from devtools.local_aws import LocalAws
from devtools.runner import LocalRunner, serving
from devtools.runner_api import STAGE
from devtools.runner_template import TemplateError
from devtools.template import load_template
from tests.support.http_json import exchange
from tests.tooling.runner import fake_app

pytestmark = pytest.mark.integration

DECLARED = {
    "UNAUTHORIZED": {
        "StatusCode": "401",
        "ResponseParameters": {"Headers": {"X-Why": "'no token'", "X-Trace": "method.request.header.X-Trace"}},
        "ResponseTemplates": {
            "application/json": '{"problem": {"type": "$context.error.responseType",'
            ' "said": $context.error.messageString, "path": "$context.path", "request": "$context.requestId"}}'
        },
    },
    "DEFAULT_4XX": {"ResponseTemplates": {"application/json": '{"fallback": "$context.error.responseType"}'}},
    "DEFAULT_5XX": {
        "StatusCode": "500",
        "ResponseTemplates": {"application/json": '{"five": $context.error.messageString}'},
    },
}


def _without_local(body: dict[str, Any]) -> dict[str, Any]:
    """The body as the template words it: without the fix the runner adds locally."""
    return {key: value for key, value in body.items() if key != "local"}


def _runner(local_aws: LocalAws, template: dict[str, Any]) -> LocalRunner:
    return LocalRunner(template, environ={}, local_aws=local_aws, handler_loader=fake_app.fake_loader).start()


@pytest.fixture
def declared_url(local_aws: LocalAws) -> Iterator[str]:
    template = fake_app.mini_template()
    template["Resources"]["Api"]["Properties"]["GatewayResponses"] = copy.deepcopy(DECLARED)
    runner = _runner(local_aws, template)
    try:
        with serving(runner) as url:
            yield url
    finally:
        local_aws.reset()


def test_given_a_declared_response_then_the_runner_answers_its_status_headers_and_filled_template(
    declared_url: str, calls: list[tuple[str, Any]]
) -> None:
    status, headers, body = exchange(f"{declared_url}/v1/items/i1", headers={"X-Trace": "t-42"})

    assert status == 401
    assert body["problem"]["type"] == "UNAUTHORIZED"
    assert body["problem"]["said"] == "Unauthorized"
    assert body["problem"]["path"] == "/v1/items/i1"
    assert len(body["problem"]["request"]) == 36  # a request id, as API Gateway fills it
    assert (headers["X-Why"], headers["X-Trace"], headers["x-amzn-ErrorType"]) == (
        "no token",
        "t-42",
        "UnauthorizedException",
    )
    assert headers["Content-Type"] == "application/json"
    assert "X-Local-User: <user id>" in headers["X-Local-Runner"]  # the body is the template's; this is local
    assert calls == []


def test_given_no_response_of_the_type_then_the_declared_default_of_its_class_answers_with_the_types_status(
    declared_url: str,
) -> None:
    unknown, _, unknown_body = exchange(f"{declared_url}/v1/nothing/here")
    unsigned, _, unsigned_body = exchange(f"{declared_url}/v1/admin/items")

    # The template's words, and beside them (without an "error" object to hold it) the local fix.
    assert (unknown, _without_local(unknown_body)) == (403, {"fallback": "MISSING_AUTHENTICATION_TOKEN"})
    assert (unsigned, _without_local(unsigned_body)) == (403, {"fallback": "MISSING_AUTHENTICATION_TOKEN"})
    assert "nearest" in unknown_body["local"]["fix"] or "no route" in unknown_body["local"]["fix"]
    assert unsigned_body["local"]["header"] == "X-Local-Admin"


def test_a_default_5xx_status_code_replaces_the_502_of_a_failed_function(
    local_aws: LocalAws, calls: list[tuple[str, Any]]
) -> None:
    template = fake_app.mini_template()
    template["Resources"]["Api"]["Properties"]["GatewayResponses"] = copy.deepcopy(DECLARED)
    template["Resources"]["BrokenFunction"]["Properties"]["Events"]["Get"] = {
        "Type": "Api",
        "Properties": {"RestApiId": {"Ref": "Api"}, "Path": "/broken", "Method": "GET", "Auth": {"Authorizer": "NONE"}},
    }
    try:
        with serving(_runner(local_aws, template)) as url:
            status, headers, body = exchange(f"{url}/v1/broken")
    finally:
        local_aws.reset()

    assert (status, body) == (500, {"five": "Internal server error"})
    assert headers["x-amzn-ErrorType"] == "InternalServerErrorException"


def test_the_gateway_response_resource_form_is_read_too(local_aws: LocalAws) -> None:
    template = fake_app.mini_template()
    template["Resources"]["Unauthorized"] = {
        "Type": "AWS::ApiGateway::GatewayResponse",
        "Properties": {
            "RestApiId": {"Ref": "Api"},
            "ResponseType": "UNAUTHORIZED",
            "ResponseParameters": {"gatewayresponse.header.X-Form": "'resource'"},
            "ResponseTemplates": {"application/json": '{"form": "resource"}'},
        },
    }
    try:
        with serving(_runner(local_aws, template)) as url:
            status, headers, body = exchange(f"{url}/v1/items/i1")
    finally:
        local_aws.reset()

    assert (status, _without_local(body), headers["X-Form"]) == (401, {"form": "resource"}, "resource")


@pytest.mark.parametrize(
    ("declared", "names"),
    [
        ({"UNAUTHORISED": {}}, "not a gateway response type"),
        (
            {"UNAUTHORIZED": {"ResponseTemplates": {"application/json": '{"x": "$context.authorizer.claims.sub"}'}}},
            "authorizer.claims.sub",
        ),
        ({"THROTTLED": {"ResponseParameters": {"Headers": {"X-A": "stageVariables.a"}}}}, "X-A"),
        ({"THROTTLED": {"StatusCode": "200"}}, "StatusCode"),
    ],
)
def test_a_gateway_response_the_runner_cannot_answer_faithfully_stops_it_at_start(
    local_aws: LocalAws, declared: dict[str, Any], names: str
) -> None:
    template = fake_app.mini_template()
    template["Resources"]["Api"]["Properties"]["GatewayResponses"] = declared

    with pytest.raises(TemplateError, match=names):
        LocalRunner(template, environ={}, local_aws=local_aws, handler_loader=fake_app.fake_loader)


# -- the real template --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_url() -> Iterator[str]:
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1"}) as runner, serving(runner) as url:
        yield url


def _declared_body(response_type: str) -> dict[str, Any]:
    """The template's own words for the type (variables filled as API Gateway fills them)."""
    declared = load_template()["Resources"]["AgentsApi"]["Properties"]["GatewayResponses"][response_type]
    text = declared["ResponseTemplates"]["application/json"]
    messages = {"UNAUTHORIZED": "Unauthorized", "MISSING_AUTHENTICATION_TOKEN": "Missing Authentication Token"}
    text = text.replace("$context.error.messageString", json.dumps(messages[response_type]))
    return dict(json.loads(text))


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "response_type"),
    [
        pytest.param("GET", "/nudges/profile", {}, 401, "UNAUTHORIZED", id="a_cognito_route_without_a_user"),
        pytest.param("POST", "/judge", {}, 403, "MISSING_AUTHENTICATION_TOKEN", id="an_iam_route_unsigned"),
        pytest.param(
            "GET", "/nudges/profiles", {"X-Local-User": "u"}, 403, "MISSING_AUTHENTICATION_TOKEN", id="no_such_path"
        ),
        pytest.param(
            "DELETE",
            "/nudges/schedule",
            {"X-Local-User": "u"},
            403,
            "MISSING_AUTHENTICATION_TOKEN",
            id="no_such_method",
        ),
    ],
)
def test_given_the_real_template_then_api_gateways_own_answers_are_its_declared_error_shape(
    real_url: str, method: str, path: str, headers: dict[str, str], status: int, response_type: str
) -> None:
    got, answer_headers, body = exchange(f"{real_url}/{STAGE}{path}", method, headers)

    assert got == status
    local = body["error"].pop("local")  # the runner's own addition: what to send instead
    assert body == _declared_body(response_type)
    assert set(body) == {"error"} and body["error"]["code"] == response_type
    assert local["fix"]
    assert answer_headers["Content-Type"] == "application/json"
