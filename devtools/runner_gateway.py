"""API Gateway's own answers, as the template declares them (README: The local runner).

Some answers never reach a function: a Cognito route called without a token (401 UNAUTHORIZED),
an IAM route called unsigned or a path no route has (403 MISSING_AUTHENTICATION_TOKEN; API
Gateway cannot tell the two apart and says the same), a body past API Gateway's 10 MB
(REQUEST_TOO_LARGE), a function that failed or returned no proxy response (502, DEFAULT_5XX) or
took longer than 29 s (INTEGRATION_TIMEOUT). API Gateway answers them with its "gateway
responses": the template's own (``GatewayResponses`` on the ``AWS::Serverless::Api``, or
``AWS::ApiGateway::GatewayResponse`` resources of that API) when it declares one for the type,
else the template's ``DEFAULT_4XX`` / ``DEFAULT_5XX`` for the type's class, else AWS's
``{"message":$context.error.messageString}`` with the type's default status
(https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html;
a ``DEFAULT_4XX`` / ``DEFAULT_5XX`` status code, when set, replaces every status of its class).

The runner answers the same way, reading those declarations from the template (never a copy of
them): status, static headers (``'value'``) and headers copied from the request
(``method.request.header.<name>``), and the ``application/json`` template with its ``$context``
variables filled. Gateway response templates are not run through VTL, only their variables
substituted; a variable the runner cannot fill, or a header it cannot resolve, is a
``TemplateError`` when the runner starts, not a wrong answer later. AWS also names the type in an
``x-amzn-ErrorType`` header; the runner sends it too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .runner_api import HttpResponse
from .runner_template import TemplateError

# The default status of each response type AWS documents; the two DEFAULT_ types have none.
DEFAULT_STATUS: dict[str, int | None] = {
    "ACCESS_DENIED": 403,
    "API_CONFIGURATION_ERROR": 500,
    "AUTHORIZER_CONFIGURATION_ERROR": 500,
    "AUTHORIZER_FAILURE": 500,
    "BAD_REQUEST_PARAMETERS": 400,
    "BAD_REQUEST_BODY": 400,
    "DEFAULT_4XX": None,
    "DEFAULT_5XX": None,
    "EXPIRED_TOKEN": 403,
    "INTEGRATION_FAILURE": 504,
    "INTEGRATION_TIMEOUT": 504,
    "INVALID_API_KEY": 403,
    "INVALID_SIGNATURE": 403,
    "MISSING_AUTHENTICATION_TOKEN": 403,
    "QUOTA_EXCEEDED": 429,
    "REQUEST_TOO_LARGE": 413,
    "RESOURCE_NOT_FOUND": 404,
    "THROTTLED": 429,
    "UNAUTHORIZED": 401,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "WAF_FILTERED": 403,
}
# What API Gateway says ($context.error.message) and names (x-amzn-ErrorType) for the answers the
# runner gives in its stead; DEFAULT_5XX here is a Lambda proxy integration that failed (502).
AWS_MESSAGES = {
    "UNAUTHORIZED": ("Unauthorized", "UnauthorizedException"),
    "MISSING_AUTHENTICATION_TOKEN": ("Missing Authentication Token", "MissingAuthenticationTokenException"),
    "REQUEST_TOO_LARGE": ("Request Too Long", "RequestTooLargeException"),
    "INTEGRATION_TIMEOUT": ("Endpoint request timed out", "InternalServerErrorException"),
    "DEFAULT_5XX": ("Internal server error", "InternalServerErrorException"),
}
AWS_DEFAULT_TEMPLATE = '{"message":$context.error.messageString}'
JSON = "application/json"
# $context variables a gateway response of the runner can fill (the rest of a request's context
# is a route's, which these answers have not reached).
CONTEXT_VARIABLES = frozenset(
    {
        "error.message",
        "error.messageString",
        "error.responseType",
        "requestId",
        "extendedRequestId",
        "httpMethod",
        "path",
        "stage",
        "domainName",
        "apiId",
        "accountId",
        "protocol",
        "requestTime",
        "requestTimeEpoch",
        "identity.sourceIp",
        "identity.userAgent",
    }
)
_VARIABLE = re.compile(r"\$context((?:\.[A-Za-z_][A-Za-z0-9_]*)+)|\$\{context((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\}")
_STATIC_HEADER = re.compile(r"^'(.*)'$", re.DOTALL)
_REQUEST_HEADER = "method.request.header."


@dataclass(frozen=True)
class GatewayResponse:
    """One declared gateway response: ``status`` None keeps the type's own."""

    response_type: str
    status: int | None
    headers: tuple[tuple[str, str], ...]  # name -> "'static'" or "method.request.header.<name>"
    template: str | None  # the application/json template; None: AWS's default


def _status(value: Any, where: str) -> int | None:
    if value is None:
        return None
    text = str(value)
    if not text.isdigit() or not 400 <= int(text) <= 599:
        raise TemplateError(f"{where}: StatusCode must be a 4xx or 5xx status, got {value!r}")
    return int(text)


def _checked(response: GatewayResponse, where: str) -> GatewayResponse:
    if response.response_type not in DEFAULT_STATUS:
        known = ", ".join(sorted(DEFAULT_STATUS))
        raise TemplateError(f"{where}: {response.response_type!r} is not a gateway response type; types: {known}")
    for name, value in response.headers:
        if not (_STATIC_HEADER.match(value) or value.startswith(_REQUEST_HEADER)):
            raise TemplateError(
                f"{where}: header {name} = {value!r}: the runner fills 'static' values and "
                f"{_REQUEST_HEADER}<name>; declare one of those"
            )
    for match in _VARIABLE.finditer(response.template or ""):
        variable = (match.group(1) or match.group(2)).lstrip(".")
        if variable not in CONTEXT_VARIABLES:
            raise TemplateError(
                f"{where}: $context.{variable} is not a variable the runner fills in a gateway response; "
                f"it fills {', '.join(sorted(CONTEXT_VARIABLES))}"
            )
    return response


def gateway_responses(
    template: Mapping[str, Any], resolve: Callable[[Any], Any] = lambda value: value
) -> dict[str, GatewayResponse]:
    """The gateway responses the template declares for its API, by type (``resolve`` evaluates
    intrinsics). Both forms: the SAM API's ``GatewayResponses`` and ``AWS::ApiGateway::GatewayResponse``."""
    resources = template.get("Resources", {})
    apis = [name for name, body in resources.items() if body.get("Type") == "AWS::Serverless::Api"]
    declared: dict[str, GatewayResponse] = {}
    for api in apis:
        for response_type, written in (resources[api].get("Properties", {}).get("GatewayResponses") or {}).items():
            where = f"{api}.GatewayResponses.{response_type}"
            body = resolve(written)
            parameters = body.get("ResponseParameters") or {}
            unsupported = set(parameters) - {"Headers"}
            if unsupported:
                raise TemplateError(f"{where}: ResponseParameters {sorted(unsupported)}: the runner fills Headers")
            response = GatewayResponse(
                response_type=str(response_type),
                status=_status(body.get("StatusCode"), where),
                headers=tuple((str(k), str(v)) for k, v in (parameters.get("Headers") or {}).items()),
                template=_json_template(body.get("ResponseTemplates"), where),
            )
            declared[response.response_type] = _checked(response, where)
    for name, body in resources.items():
        if body.get("Type") != "AWS::ApiGateway::GatewayResponse":
            continue
        props = resolve(body.get("Properties", {}))
        headers = []
        for key, value in (props.get("ResponseParameters") or {}).items():
            if not str(key).startswith("gatewayresponse.header."):
                raise TemplateError(f"{name}: ResponseParameters {key}: the runner fills gatewayresponse.header.*")
            headers.append((str(key).removeprefix("gatewayresponse.header."), str(value)))
        response = GatewayResponse(
            response_type=str(props.get("ResponseType")),
            status=_status(props.get("StatusCode"), name),
            headers=tuple(headers),
            template=_json_template(props.get("ResponseTemplates"), name),
        )
        declared[response.response_type] = _checked(response, name)
    return declared


def _json_template(templates: Any, where: str) -> str | None:
    if not templates:
        return None
    if JSON not in templates:
        raise TemplateError(f"{where}: ResponseTemplates has no {JSON} template; the runner answers JSON")
    return str(templates[JSON])


class GatewayAnswers:
    """API Gateway's answers for one API, from its declared gateway responses."""

    def __init__(self, declared: Mapping[str, GatewayResponse]) -> None:
        self.declared = dict(declared)

    def resolved(self, response_type: str, status: int | None = None) -> tuple[int, GatewayResponse | None]:
        """(status, the declared response that applies or None for AWS's default) for an answer
        of ``response_type``; ``status`` is the answer's own when the type has none (a 502)."""
        natural = DEFAULT_STATUS[response_type] or status
        if natural is None:
            raise ValueError(f"{response_type} needs the answer's status")
        own = self.declared.get(response_type)
        if own is not None:
            return own.status or natural, own
        fallback = self.declared.get("DEFAULT_5XX" if natural >= 500 else "DEFAULT_4XX")
        if fallback is not None:
            return fallback.status or natural, fallback
        return natural, None

    def answer(
        self,
        response_type: str,
        context: Mapping[str, str],
        request_headers: Sequence[tuple[str, str]] = (),
        status: int | None = None,
        said: tuple[str, str] | None = None,
    ) -> HttpResponse:
        """The answer API Gateway gives; ``context`` holds the request's variables (requestId, path, ...);
        ``said`` its (message, error type) when not the type's usual ones (a refused signature's)."""
        message, error_type = said or AWS_MESSAGES[response_type]
        code, declared = self.resolved(response_type, status)
        variables = {
            **context,
            "error.message": message,
            "error.messageString": json.dumps(message),
            "error.responseType": response_type,
        }
        template = declared.template if declared is not None and declared.template is not None else AWS_DEFAULT_TEMPLATE
        body = _VARIABLE.sub(lambda match: variables.get((match.group(1) or match.group(2)).lstrip("."), ""), template)
        headers: list[tuple[str, str]] = [("Content-Type", JSON), ("x-amzn-ErrorType", error_type)]
        for name, value in declared.headers if declared is not None else ():
            static = _STATIC_HEADER.match(value)
            if static:
                headers.append((name, static.group(1)))
                continue
            wanted = value.removeprefix(_REQUEST_HEADER).lower()
            found = [v for k, v in request_headers if k.lower() == wanted]
            if found:
                headers.append((name, found[-1]))
        return HttpResponse(code, headers, body.encode("utf-8"))
