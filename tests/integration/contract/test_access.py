"""Access: every API route declared in template.yaml, invoked like API Gateway would
through the local runner (the function's template environment, moto), answers 401 when the
request carries no identity or the wrong kind of identity for its authorizer. API Gateway rejects
such calls before the Lambda in AWS; the handlers check again, so a misconfigured route cannot
open data up. Cross-user access (404) is tested per function with real data."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import pytest

from devtools.openapi import api_functions
from devtools.runner import LocalRunner
from devtools.runner_template import RouteSpec, route_specs
from devtools.template import load_template

pytestmark = pytest.mark.integration

ROUTES = route_specs(load_template())
USER = {"authorizer": {"claims": {"sub": "access-user"}}}
ADMIN = {"identity": {"userArn": "arn:aws:iam::123456789012:user/ops"}}


def _event(route: RouteSpec, identity: dict[str, Any]) -> dict[str, Any]:
    path = re.sub(r"\{[^}]+\}", "x-1", route.path)
    params = {name.rstrip("+"): "x-1" for name in re.findall(r"\{([^}]+)\}", route.path)} or None
    return {
        "resource": route.path,
        "path": path,
        "httpMethod": route.method,
        "headers": {"content-type": "application/json"},
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": params,
        "body": json.dumps({}) if route.method in {"POST", "PUT", "PATCH"} else None,
        "isBase64Encoded": False,
        "requestContext": {"resourcePath": route.path, "httpMethod": route.method, "requestId": "r", **identity},
    }


def _ids(route: RouteSpec) -> str:
    return f"{route.method} {route.path}"


def _status(runner: LocalRunner, route: RouteSpec, identity: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(route.function_id, _event(route, identity))
    return result["statusCode"], json.loads(result["body"])


@pytest.mark.parametrize("route", ROUTES, ids=_ids)
def test_a_request_without_identity_is_401_with_the_error_envelope(runner: LocalRunner, route: RouteSpec) -> None:
    status, body = _status(runner, route, {})
    assert status == 401
    assert body["error"]["code"] == "UNAUTHORIZED"


@pytest.mark.parametrize("route", ROUTES, ids=_ids)
def test_the_wrong_kind_of_identity_for_the_route_is_401(runner: LocalRunner, route: RouteSpec) -> None:
    wrong = USER if route.auth == "iam" else ADMIN
    status, body = _status(runner, route, wrong)
    assert status == 401, body


@pytest.mark.parametrize("function_id", sorted({route.function_id for route in ROUTES}))
def test_each_functions_resolver_checks_the_authorizer_its_template_routes_declare(
    runner: LocalRunner, function_id: str
) -> None:
    kinds = {route.auth for route in ROUTES if route.function_id == function_id}
    assert len(kinds) == 1, f"{function_id} mixes authorizers {kinds}: one resolver checks one kind"
    route = next(route for route in ROUTES if route.function_id == function_id)
    runner.invoke(function_id, _event(route, {}))  # imports the handler with its template environment
    app = sys.modules[api_functions()[function_id]].app
    assert app.auth == kinds.pop()
