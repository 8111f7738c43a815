"""HTTP <-> API Gateway REST (v1 proxy) events for the local runner (docs/local.md#the-local-runner-no-docker).

Routes come from the template's ``Api`` events. Matching follows API Gateway: a literal path
segment beats ``{param}``, which beats ``{proxy+}``. An unknown path or method gets what API
Gateway answers, 403 MISSING_AUTHENTICATION_TOKEN as the template's gateway responses word it
(``runner_gateway``); the runner's log says which it was and which methods the path accepts.

Where a route answers: as the deployed API does, under the stage of the execute-api URL
(``/v1/...``) and, with the template's ``ApiBasePath`` (a custom domain's API mapping), under that
base path (``/agents/...``); at the root too, for convenience, as a custom domain mapped without a base
path would. Each ``Entrance`` fills ``path`` and ``requestContext.path`` as API Gateway fills them for
that way in (``lambda_agents.api.called_path`` lists them), so a URL a function hands out resolves
here exactly where it would deployed.

Identity: handlers read it only from ``requestContext`` (lambda_agents/api/identity.py). The
runner builds that context from headers only it reads, ``X-Local-User`` (Cognito claims on
Cognito-authorised routes) and ``X-Local-Admin`` (``identity.userArn`` on AWS_IAM routes), and
strips them from the event. An AWS_IAM route also takes a request signed with SigV4 as the deployed
API does, checked for its shape and scope (``runner_sigv4``: the signature itself needs the caller's
secret key, which only AWS has). A route with an authorizer and no such header is refused by the
runner itself, without invoking the function, as API Gateway would: a Cognito route 401
UNAUTHORIZED, an IAM route 403 MISSING_AUTHENTICATION_TOKEN. Nothing in the deployed
template can turn these headers into an identity.

A Cognito user may rewrite their own writable attributes and refresh the token (every standard
attribute when the app client names no ``WriteAttributes``): ``X-Local-Zoneinfo`` puts the claim
such a user would choose into the token's claims, so a test can check that no claim the user
controls decides anything.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import formatdate
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote

from .runner_sigv4 import signed_caller
from .runner_template import LOCAL_ACCOUNT_ID, RouteSpec

# API Gateway (REST) ends every request this long after receiving it, whatever the Lambda's timeout.
API_GATEWAY_TIMEOUT_S = 29.0
# The largest request payload API Gateway (REST) accepts; past it, REQUEST_TOO_LARGE.
API_GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024
USER_HEADER = "x-local-user"
ZONEINFO_HEADER = "x-local-zoneinfo"
ADMIN_HEADER = "x-local-admin"
STAGE = "v1"  # template.yaml's AgentsApi StageName; a template's own is read by ``api_stage_name``
IDENTITY_VALUE = re.compile(r"^[A-Za-z0-9_+=,.@:/-]{1,128}$")


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str  # without the query string, still percent-encoded
    query: str
    headers: Sequence[tuple[str, str]]
    body: bytes
    source_ip: str = "127.0.0.1"
    host: str = "127.0.0.1"


@dataclass(frozen=True)
class Entrance:
    """One way a client reaches the deployed API, and how API Gateway tells the function about it:
    ``requestContext.path`` is always the path as called; ``path`` drops the execute-api URL's stage
    but keeps a custom domain's base path (which the function strips itself, ``API_BASE_PATH``)."""

    kind: Literal["stage", "base path", "root"]
    prefix: str  # "/v1", "/agents", ""
    stage: str

    def owns(self, path: str) -> bool:
        return not self.prefix or path == self.prefix or path.startswith(f"{self.prefix}/")

    def route_path(self, path: str) -> str:
        """The path the API's resource tree matches (the stage or base path removed)."""
        return path[len(self.prefix) :] or "/"

    def event_path(self, path: str) -> str:
        return unquote(self.route_path(path) if self.kind == "stage" else path)


class ApiEntrances:
    """The ways in, most specific first: the base path, the stage, the root."""

    def __init__(self, stage: str, base_path: str = "") -> None:
        base = base_path.rstrip("/")
        self.stage = Entrance("stage", f"/{stage}", stage)
        self.base_path = Entrance("base path", base, stage) if base else None
        self.root = Entrance("root", "", stage)

    def servers(self) -> list[dict[str, str]]:
        """The OpenAPI ``servers`` a client of this runner calls: the stage first, as the execute-api URL."""
        servers = [{"url": self.stage.prefix, "description": f"the stage {self.stage.stage} (the execute-api URL)"}]
        if self.base_path is not None:
            description = "the base path of a custom domain's API mapping (ApiBasePath)"
            servers.append({"url": self.base_path.prefix, "description": description})
        return servers

    def of(self, path: str) -> Entrance:
        for entrance in (self.base_path, self.stage):
            if entrance is not None and entrance.owns(path):
                return entrance
        return self.root


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Sequence[tuple[str, str]]
    body: bytes


@dataclass(frozen=True)
class RouteMatch:
    route: RouteSpec
    path_parameters: dict[str, str]


@dataclass(frozen=True)
class MethodNotAllowed:
    allowed: tuple[str, ...]


def json_response(
    status: int, document: Any, extra_headers: Sequence[tuple[str, str]] = (), *, indent: int | None = None
) -> HttpResponse:
    """The runner's own JSON answer, its text as it is in UTF-8 (as the API's: ``api.answer_json``)."""
    body = json.dumps(document, ensure_ascii=False, indent=indent).encode("utf-8")
    return HttpResponse(status, [("Content-Type", "application/json"), *extra_headers], body)


def _segments(path: str) -> list[str]:
    return [segment for segment in path.strip("/").split("/") if segment != ""]


def _match_path(template: str, path: str) -> tuple[tuple[int, ...], dict[str, str]] | None:
    """(specificity, path parameters) when ``path`` fits ``template``, else None."""
    pattern, actual = _segments(template), _segments(path)
    params: dict[str, str] = {}
    score: list[int] = []
    for index, part in enumerate(pattern):
        if part.startswith("{") and part.endswith("+}"):
            rest = actual[index:]
            if not rest:
                return None
            params[part[1:-2]] = "/".join(unquote(segment) for segment in rest)
            score.append(0)
            return tuple(score), params
        if index >= len(actual):
            return None
        if part.startswith("{") and part.endswith("}"):
            params[part[1:-1]] = unquote(actual[index])
            score.append(1)
        elif part == unquote(actual[index]):
            score.append(2)
        else:
            return None
    if len(actual) != len(pattern):
        return None
    return tuple(score), params


class RouteTable:
    def __init__(self, routes: Sequence[RouteSpec]) -> None:
        self.routes = list(routes)

    def match(self, method: str, path: str) -> RouteMatch | MethodNotAllowed | None:
        method = method.upper()
        best: tuple[tuple[int, ...], str] | None = None
        candidates: list[tuple[RouteSpec, dict[str, str]]] = []
        for route in self.routes:
            matched = _match_path(route.path, path)
            if matched is None:
                continue
            score, params = matched
            # Only the most specific resource answers, as in API Gateway's resource tree.
            if best is None or score > best[0]:
                best = (score, route.path)
                candidates = []
            if score == best[0] and route.path == best[1]:
                candidates.append((route, params))
        if not candidates:
            return None
        for route, params in candidates:
            if route.method == method:
                return RouteMatch(route, params)
        for route, params in candidates:
            if route.method == "ANY":
                return RouteMatch(route, params)
        return MethodNotAllowed(tuple(sorted({route.method for route, _ in candidates})))


class Unauthenticated(Exception):
    """The route needs an identity and the request carries none (API Gateway's 401)."""


def _header(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    values = [value for key, value in headers if key.lower() == name]
    return values[-1].strip() if values else None


def request_identity(
    route: RouteSpec, headers: Sequence[tuple[str, str]], region: str | None = None, now: datetime | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(authorizer block, identity additions) for ``route`` from the runner's local headers, or on an
    IAM route from a SigV4 signature for ``region`` (``runner_sigv4.SignatureRefused`` when malformed)."""
    if route.auth == "none":
        return {}, {}
    name = USER_HEADER if route.auth == "cognito" else ADMIN_HEADER
    value = _header(headers, name)
    if route.auth == "iam" and not value and region is not None and _header(headers, "authorization"):
        signer = signed_caller(headers, region, now)
        arn = f"arn:aws:iam::{LOCAL_ACCOUNT_ID}:user/{signer.access_key_id}"
        return {}, {
            "userArn": arn,
            "user": signer.access_key_id,
            "caller": signer.access_key_id,
            "accessKey": signer.access_key_id,
            "accountId": LOCAL_ACCOUNT_ID,
        }
    if not value or not IDENTITY_VALUE.match(value):
        raise Unauthenticated(f"{route.auth} route {route.method} {route.path} needs header {name}")
    if route.auth == "cognito":
        claims = {"sub": value, "cognito:username": value, "token_use": "id"}
        zone = _header(headers, ZONEINFO_HEADER)
        if zone and IDENTITY_VALUE.match(zone):
            claims["zoneinfo"] = zone  # what the user wrote into their own attribute
        return {"claims": claims}, {}
    arn = value if value.startswith("arn:") else f"arn:aws:iam::{LOCAL_ACCOUNT_ID}:user/{value}"
    return {}, {"userArn": arn, "user": value, "caller": value, "accountId": LOCAL_ACCOUNT_ID}


# The identity fields API Gateway sends as null unless the route's authorization sets them.
UNSET_IDENTITY = (
    "userArn",
    "user",
    "caller",
    "accountId",
    "accessKey",
    "cognitoIdentityId",
    "cognitoIdentityPoolId",
    "cognitoAuthenticationType",
    "cognitoAuthenticationProvider",
)


def build_proxy_event(
    match: RouteMatch,
    request: HttpRequest,
    entrance: Entrance | None = None,
    now: float | None = None,
    region: str | None = None,
) -> dict[str, Any]:
    """The REST API (v1) Lambda proxy event API Gateway would send for ``request``, which came in
    through ``entrance`` (the root when not given: ``request.path`` is then the route's path); with
    ``region``, an IAM route also takes a request SigV4-signed for that region's execute-api."""
    entrance = entrance or Entrance("root", "", STAGE)
    epoch = time.time() if now is None else now
    authorizer, identity_extra = request_identity(
        match.route, request.headers, region, datetime.fromtimestamp(epoch, UTC)
    )
    local = {USER_HEADER, ZONEINFO_HEADER, ADMIN_HEADER}
    headers = [(key, value) for key, value in request.headers if key.lower() not in local]
    single_headers, multi_headers = _single_and_multi(headers)
    single_query, multi_query = _single_and_multi(parse_qsl(request.query, keep_blank_values=True))
    body, is_base64 = _event_body(request.body)
    identity: dict[str, Any] = {
        "sourceIp": request.source_ip,
        "userAgent": _header(headers, "user-agent"),
        **dict.fromkeys(UNSET_IDENTITY),
        **identity_extra,
    }
    request_context = _request_context(match, request, entrance, epoch, identity)
    if authorizer:
        request_context["authorizer"] = authorizer
    return {
        "resource": match.route.path,
        "path": entrance.event_path(request.path),
        "httpMethod": request.method.upper(),
        "headers": single_headers or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": single_query or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": match.path_parameters or None,
        "stageVariables": None,
        "requestContext": request_context,
        "body": body,
        "isBase64Encoded": is_base64,
    }


def _single_and_multi(pairs: list[tuple[str, str]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Headers or query parameters as API Gateway passes both: the last value of a repeated name, and all of them."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for key, value in pairs:
        single[key] = value
        multi.setdefault(key, []).append(value)
    return single, multi


def _event_body(raw: bytes) -> tuple[str | None, bool]:
    """The event's body and ``isBase64Encoded``: text as it came, anything else base64-encoded."""
    if not raw:
        return None, False
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode(), True


def _request_context(
    match: RouteMatch, request: HttpRequest, entrance: Entrance, epoch: float, identity: dict[str, Any]
) -> dict[str, Any]:
    request_id = str(uuid.uuid4())
    domain = request.host.rsplit(":", 1)[0] if request.host.count(":") == 1 else request.host  # no port, as AWS
    return {
        "accountId": LOCAL_ACCOUNT_ID,
        "apiId": "local",
        "resourceId": "local",
        "resourcePath": match.route.path,
        "httpMethod": request.method.upper(),
        "path": request.path,
        "protocol": "HTTP/1.1",
        "stage": entrance.stage,
        "requestId": request_id,
        "extendedRequestId": request_id,
        "requestTime": formatdate(epoch, usegmt=True),
        "requestTimeEpoch": int(epoch * 1000),
        "domainName": domain,
        "domainPrefix": domain.split(".")[0],
        "identity": identity,
    }


def gateway_context(request: HttpRequest, entrance: Entrance, now: float | None = None) -> dict[str, str]:
    """The ``$context`` variables of an answer API Gateway gives itself (``runner_gateway``), for a
    request that reached no function."""
    epoch = time.time() if now is None else now
    request_id = str(uuid.uuid4())
    domain = request.host.rsplit(":", 1)[0] if request.host.count(":") == 1 else request.host
    return {
        "requestId": request_id,
        "extendedRequestId": request_id,
        "httpMethod": request.method.upper(),
        "path": request.path,
        "stage": entrance.stage,
        "domainName": domain,
        "apiId": "local",
        "accountId": LOCAL_ACCOUNT_ID,
        "protocol": "HTTP/1.1",
        "requestTime": formatdate(epoch, usegmt=True),
        "requestTimeEpoch": str(int(epoch * 1000)),
        "identity.sourceIp": request.source_ip,
        "identity.userAgent": _header(request.headers, "user-agent") or "",
    }


class MalformedProxyResponse(ValueError):
    """The function's result is not a Lambda proxy response (API Gateway answers 502)."""


def proxy_response_to_http(result: Any) -> HttpResponse:
    if not isinstance(result, Mapping):
        raise MalformedProxyResponse(f"expected an object with statusCode, got {type(result).__name__}")
    status = result.get("statusCode")
    if isinstance(status, str) and status.isdigit():
        status = int(status)
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise MalformedProxyResponse(f"statusCode must be an HTTP status, got {status!r}")
    headers: list[tuple[str, str]] = []
    single = result.get("headers") or {}
    multi = result.get("multiValueHeaders") or {}
    if not isinstance(single, Mapping) or not isinstance(multi, Mapping):
        raise MalformedProxyResponse("headers and multiValueHeaders must be objects")
    for key, values in multi.items():
        headers.extend((str(key), str(value)) for value in values)
    headers.extend((str(key), str(value)) for key, value in single.items() if key not in multi)
    raw_body = result.get("body")
    if raw_body is None:
        body = b""
    elif not isinstance(raw_body, str):
        raise MalformedProxyResponse(f"body must be a string, got {type(raw_body).__name__}")
    elif result.get("isBase64Encoded"):
        try:
            body = base64.b64decode(raw_body, validate=True)
        except binascii.Error as exc:
            raise MalformedProxyResponse(f"isBase64Encoded is true but the body is not base64: {exc}") from exc
    else:
        body = raw_body.encode()
    return HttpResponse(status, headers, body)
