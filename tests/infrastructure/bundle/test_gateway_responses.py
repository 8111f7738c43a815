"""What API Gateway answers itself (no token, an unsigned or denied call, a path no route has,
throttling, a body past 10 MB, a function that failed) has the API's documented error shape
``{"error": {"code", "message"}}``, read from the API definition SAM deploys (the 401
was ``{"message": "Unauthorized"}``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from devtools.template import load_template
from tests.support.sam_template import transformed

# The answers API Gateway gives for this API: Cognito (401 / invalid tokens), IAM (unsigned,
# denied, expired, a bad signature), unknown routes, the stage's throttling, a usage plan's quota,
# the payload limit, the 29 s limit, and the two catch-alls.
EXPECTED = {
    "UNAUTHORIZED": 401,
    "MISSING_AUTHENTICATION_TOKEN": 403,
    "ACCESS_DENIED": 403,
    "EXPIRED_TOKEN": 403,
    "INVALID_SIGNATURE": 403,
    "THROTTLED": 429,
    "QUOTA_EXCEEDED": 429,
    "REQUEST_TOO_LARGE": 413,
    "INTEGRATION_TIMEOUT": 504,
    "DEFAULT_4XX": None,
    "DEFAULT_5XX": None,
}
# What API Gateway may put in its variables: a message with quotes, backslashes and a line break
# (an IAM signature error spans lines), and a response type.
HOSTILE_MESSAGE = 'The request signature we calculated does not match.\n\nThe Canonical String "POST\\n/v1/judge"'


def _deployed_gateway_responses() -> dict[str, Any]:
    [api] = [body for body in transformed()["Resources"].values() if body["Type"] == "AWS::ApiGateway::RestApi"]
    responses: dict[str, Any] = api["Properties"]["Body"]["x-amazon-apigateway-gateway-responses"]
    return responses


def _render(template: str, response_type: str) -> str:
    """API Gateway's substitution of the variables these templates use (no VTL runs on them)."""
    variables = {
        "error.messageString": json.dumps(HOSTILE_MESSAGE),
        "error.message": HOSTILE_MESSAGE,
        "error.responseType": response_type,
    }
    rendered = re.sub(r"\$context((?:\.[A-Za-z_]+)+)", lambda m: variables[m.group(1).lstrip(".")], template)
    assert "$" not in rendered, f"{response_type}: a variable left unfilled"
    return rendered


def test_the_deployed_api_declares_a_gateway_response_for_each_answer_api_gateway_gives_itself() -> None:
    responses = _deployed_gateway_responses()

    assert set(responses) == set(EXPECTED)
    for response_type, status in EXPECTED.items():
        # A DEFAULT_ type's status code would replace the status of every answer of its class.
        assert responses[response_type].get("statusCode") == (str(status) if status else None), response_type


@pytest.mark.parametrize("response_type", sorted(EXPECTED))
def test_each_gateway_response_is_the_documented_error_shape_whatever_the_message(response_type: str) -> None:
    declared = _deployed_gateway_responses()[response_type]

    body = json.loads(_render(declared["responseTemplates"]["application/json"], response_type))

    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    assert re.fullmatch(r"[A-Z][A-Z0-9_]+", body["error"]["code"]), body
    assert body["error"]["message"].strip(), body


def test_throttling_says_when_to_retry_as_the_apis_own_429_does() -> None:
    throttled = _deployed_gateway_responses()["THROTTLED"]

    assert throttled["responseParameters"]["gatewayresponse.header.Retry-After"] == "'1'"
    assert json.loads(throttled["responseTemplates"]["application/json"])["error"]["code"] == "RATE_LIMITED"


def test_gateway_responses_carry_cors_headers_exactly_when_the_api_sets_cors() -> None:
    [api] = [body for body in load_template()["Resources"].values() if body["Type"] == "AWS::Serverless::Api"]
    with_cors = {
        response_type
        for response_type, declared in _deployed_gateway_responses().items()
        if "gatewayresponse.header.Access-Control-Allow-Origin" in declared.get("responseParameters", {})
    }

    assert with_cors == (set(EXPECTED) if "Cors" in api["Properties"] else set())
