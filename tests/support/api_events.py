"""API Gateway (REST, Lambda proxy) events for calling handlers directly, and their answers read
back: the one builder and the one reader the suites share. A Cognito route's caller is ``user`` (the
ID token's ``sub`` in the authorizer's claims); an IAM route's is ``admin`` (the caller's ARN in the
identity). The sample files under ``events/`` carry everything API Gateway sends; these carry what
the handlers read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


def api_event(
    method: str,
    path: str,
    body: Any = None,
    *,
    user: str | None = None,
    admin: str | None = None,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    path_parameters: dict[str, str] | None = None,
    resource: str | None = None,
    raw_body: str | None = None,
    stage: str = "v1",
) -> dict[str, Any]:
    """``body`` is sent as JSON (a ``str`` as it is); ``raw_body`` as written, whatever it holds."""
    identity: dict[str, Any] = {"sourceIp": "127.0.0.1"}
    if admin is not None:
        identity["userArn"] = admin
    context: dict[str, Any] = {
        "resourcePath": resource or path,
        "httpMethod": method,
        "path": path,
        "stage": stage,
        "requestId": "api-req",
        "identity": identity,
    }
    if user is not None:
        context["authorizer"] = {"claims": {"sub": user, "token_use": "id"}}
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if raw_body is None and body is not None:
        raw_body = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return {
        "resource": resource or path,
        "path": path,
        "httpMethod": method,
        "headers": all_headers,
        "multiValueHeaders": {key: [value] for key, value in all_headers.items()},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in (query or {}).items()} or None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "body": raw_body,
        "isBase64Encoded": False,
        "requestContext": context,
    }


@dataclass
class Answer:
    """A handler's proxy result as a client reads it: the status, the body parsed from JSON (None
    when there is none), the headers with a multi-value header's last value."""

    status: int
    body: Any
    headers: dict[str, str]

    @classmethod
    def of(cls, result: dict[str, Any]) -> Answer:
        headers = dict(result.get("headers") or {})
        multi = result.get("multiValueHeaders") or {}
        headers.update({name: values[-1] for name, values in multi.items() if values})
        return cls(result["statusCode"], json.loads(result["body"]) if result.get("body") else None, headers)
