"""The bundle's OpenAPI document, merged from every API function's Powertools resolver.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from typing import Any
from unittest import mock

from lambda_agents.api.resolver import openapi_document

from .runner_template import RouteSpec, route_specs
from .template import load_template, resources_of_type

TITLE = "Lambda Agents API"
# The environment the handler modules are imported with to read their routes: nothing is invoked.
DOCUMENT_ENVIRONMENT = {"AI_AGENT_MODE": "mock"}
SECURITY_SCHEMES: dict[str, dict[str, Any]] = {
    "CognitoUserPool": {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": (
            "The ID token of a user of the stack's Cognito user pool (outputs UserPoolId and "
            "UserPoolClientId); the user id is the token's `sub`. Locally: the X-Local-User header."
        ),
        "x-amazon-apigateway-authtype": "cognito_user_pools",
    },
    "SigV4": {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": (
            "An IAM-signed request (Signature Version 4, service `execute-api`) from a principal "
            "allowed execute-api:Invoke on the route. Locally: the X-Local-Admin header."
        ),
        "x-amazon-apigateway-authtype": "awsSigv4",
    },
}
SCHEME_OF_AUTH = {"cognito": "CognitoUserPool", "iam": "SigV4"}
DEPLOYED_SERVERS: list[dict[str, Any]] = [
    {
        "url": "https://{restApiId}.execute-api.{region}.amazonaws.com/{stage}",
        "description": "The stack's API (output ApiUrl); behind a custom domain, https://<domain>/<ApiBasePath>",
        "variables": {
            "restApiId": {"default": "restApiId", "description": "the id of the stack's AgentsApi"},
            "region": {"default": "us-east-1"},
            "stage": {"default": "v1", "enum": ["v1"]},
        },
    }
]
_PARAMETER = re.compile(r"^\{(\w+)\+?\}$")


def api_functions() -> dict[str, str]:
    """Logical ID -> handler module, for functions with an Api event."""
    found = {}
    for logical_id, body in resources_of_type("AWS::Serverless::Function").items():
        events = body["Properties"].get("Events", {})
        if any(event.get("Type") == "Api" for event in events.values()):
            found[logical_id] = str(body["Properties"]["CodeUri"]).strip("/").replace("/", ".") + ".app"
    return found


def merged_document(environment: dict[str, str] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": "1"},
        "servers": DEPLOYED_SERVERS,
        "paths": {},
        "components": {"schemas": {}, "securitySchemes": SECURITY_SCHEMES},
    }
    with mock.patch.dict(os.environ, {**DOCUMENT_ENVIRONMENT, **(environment or {})}):
        for module_name in api_functions().values():
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError:
                continue  # a declared function whose handler is not written yet
            part = openapi_document(module.app, TITLE)
            document["paths"].update(part.get("paths", {}))
            document["components"]["schemas"].update(part.get("components", {}).get("schemas", {}))
    document["paths"] = _as_the_template_routes(document["paths"], route_specs(load_template()))
    return document


def _segments(path: str) -> list[str | None]:
    """Literal segments as they are, parameters as None: the shape two spellings share."""
    return [None if _PARAMETER.match(part) else part for part in path.strip("/").split("/")]


def _as_the_template_routes(paths: dict[str, Any], routes: list[RouteSpec]) -> dict[str, Any]:
    """Paths and path parameters renamed as the template declares them; each operation's security."""
    renamed: dict[str, Any] = {}
    for path, operations in paths.items():
        for method, operation in operations.items():
            route = next(
                (r for r in routes if r.method == method.upper() and _segments(r.path) == _segments(path)), None
            )
            target = route.path if route else path
            if route is not None:
                names = dict(zip(_parameter_names(path), _parameter_names(route.path), strict=True))
                for parameter in operation.get("parameters", []):
                    if parameter.get("in") == "path":
                        parameter["name"] = names.get(parameter["name"], parameter["name"])
                if operation.get("summary") == f"{method.upper()} {path}":  # Powertools' default summary
                    operation["summary"] = f"{method.upper()} {route.path}"
                if route.auth in SCHEME_OF_AUTH:
                    operation["security"] = [{SCHEME_OF_AUTH[route.auth]: []}]
            renamed.setdefault(target, {})[method] = operation
    return renamed


def _parameter_names(path: str) -> list[str]:
    return [match.group(1) for part in path.strip("/").split("/") if (match := _PARAMETER.match(part))]


def main() -> None:
    json.dump(merged_document(), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
