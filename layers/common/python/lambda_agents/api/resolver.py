"""The Powertools REST resolver every API function uses, with the one error mapping.

Answers are JSON ``{"error": {"code", "message", "details"?}}``, bounded in size whatever the
request (``api.error_body``). Body and query validation errors become 400s that name the field;
a body that is not JSON by its media type 415, one past the size cap 413, one Python cannot
parse or DynamoDB cannot hold 400 (``api.request_body``); storage throttling a 503 with
Retry-After, a refused conditional write a 409, another storage failure a 503; a model
provider that is unavailable (or the deadline) a 503 with Retry-After and one that refuses the
request a 502, in every function alike (``errors.model_failure``); anything unexpected a 500
without internals. A query parameter given more than once is a 400 that names it (API Gateway
would pass its values as a list a scalar cannot take). Behind a custom domain whose API mapping
has a base path (``API_BASE_PATH``, e.g. ``/agents``), the path arrives with it: it is stripped
before routing (Powertools' ``strip_prefixes``). The stage or base path the client called through
(``api.called_path``) is read from the request context before any route runs and kept for the URLs
the route hands out (``called_base_path``).
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from typing import Any, Literal

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.shared.json_encoder import Encoder
from pydantic import BaseModel

from ..errors import DomainError
from ..llm.errors import DeadlineReached, ProviderFailed
from ..observability import logger
from ..storage.dynamodb import ConditionFailed, StorageError, StorageThrottled
from .answer_json import answer_json
from .called_path import CalledPathMismatch, called_base_path
from .error_body import MAX_DETAIL_ITEMS, MAX_MESSAGE_CHARS, error_body
from .errors import model_failure, storage_failure
from .request_body import (
    JSON_MEDIA_TYPE,
    BodyRefused,
    check_media_type,
    check_size,
    parse_json_object,
)
from .sam_local import with_sam_local_identity

AuthKind = Literal["cognito", "iam"]
MAX_FIELD_NAME_CHARS = 120


def error_response(
    status: int, code: str, message: str, details: Any = None, headers: dict[str, str] | None = None
) -> Response[str]:
    return Response(
        status_code=status,
        content_type="application/json",
        body=error_body(code, message, details),
        headers=headers or {},
    )


class JsonApiResolver(APIGatewayRestResolver):
    """The Powertools REST resolver with two checks before any route runs.

    - Every route of the bundle is authenticated, and all routes of one function the same way
      (``auth``: Cognito claims or an IAM caller): a request without that identity in its request
      context is a 401 before its body is even validated, so an anonymous caller learns nothing
      about the API. API Gateway checks first in AWS; this holds if a route is misconfigured.
    - Every route takes a JSON object, read once here: the media type by its essence (any letter
      case, any parameters; ``application/jsonx`` is not JSON), a size cap, then a strict parse
      (``api.request_body``). Powertools then gets the parsed object and a plain
      ``application/json`` Content-Type, so its own form and multipart parsers never run and its
      validation never sees a JSON array (it would validate the first element as the body).
    """

    def __init__(self, auth: AuthKind, **kwargs: Any) -> None:
        super().__init__(json_body_deserializer=self._parsed_body, serializer=_answer_text, **kwargs)
        self.auth = auth
        self._parsed: tuple[str, dict[str, Any]] | None = None
        self._prefixes: list[str] = []
        self.cold_start()
        # The stage or base path of the request being answered (``api.called_path``).
        self.called_base_path = ""

    def cold_start(self) -> None:
        """Read what the routes depend on from the environment (API_BASE_PATH), as a new container
        does when it imports the handler; the local runner calls it again when a later runner
        reuses a module imported under another runner's environment."""
        self._prefixes = base_path_prefixes() or []
        self._strip_prefixes = list(self._prefixes) or None  # Powertools' own setting of strip_prefixes

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        self._parsed = None
        event = with_sam_local_identity(event, self.auth)  # unchanged unless AWS_SAM_LOCAL=true
        if not _has_identity(event, self.auth):
            return _proxy_answer(401, "UNAUTHORIZED", "authentication required: no identity on the request")
        try:
            self.called_base_path = called_base_path(event, self._prefixes)
        except CalledPathMismatch as mismatch:
            # Before any route runs, so nothing is written that its answer could not point to.
            logger.error("request context does not fit the request", extra={"reason": str(mismatch)})
            return _proxy_answer(500, "INTERNAL_ERROR", "internal error")
        try:
            _check_query(event)
            checked = self._read_body(event)
        except BodyRefused as refused:
            return _proxy_answer(refused.status, refused.code, refused.message, refused.details)
        return super().resolve(checked, context)

    def _read_body(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        body = event.get("body")
        if not body:
            # Nothing to parse, whatever the Content-Type says: Powertools would still refuse a
            # media type it has no parser for (a 500) on a route whose body is optional.
            return _with_content_type(event, None)
        content_type = _header(event, "content-type")
        check_media_type(content_type)
        text = _body_text(body, bool(event.get("isBase64Encoded")))
        if text is None:
            raise BodyRefused(400, "VALIDATION_ERROR", "invalid body: the request body is not UTF-8 text")
        check_size(text)
        self._parsed = (text, parse_json_object(text))
        return _with_content_type(event, JSON_MEDIA_TYPE)

    def _parsed_body(self, text: str) -> dict[str, Any]:
        """Powertools' JSON deserializer: the object ``resolve`` already parsed and checked."""
        if self._parsed is not None and self._parsed[0] == text:
            return self._parsed[1]
        return parse_json_object(text)


def _answer_text(value: Any) -> str:
    """Powertools' serializer (its own Encoder: pydantic models, dataclasses, Decimals) with the
    characters as they are: ``日本語``, not ``\\u65e5\\u672c\\u8a9e`` (``api.answer_json``)."""
    return answer_json(value, cls=Encoder)


def _with_content_type(event: Mapping[str, Any], content_type: str | None) -> Mapping[str, Any]:
    """The event with its Content-Type spelt exactly ``content_type`` (or none): Powertools' prefix
    check would send ``APPLICATION/JSON`` to no parser, a 500."""
    changed = dict(event)
    for field, value in (("headers", content_type), ("multiValueHeaders", [content_type])):
        if not event.get(field):  # Powertools reads header parameters from multiValueHeaders when set
            continue
        kept = {k: v for k, v in event[field].items() if k.lower() != "content-type"}
        changed[field] = kept if content_type is None else {**kept, "Content-Type": value}
    return changed


def _has_identity(event: Mapping[str, Any], auth: AuthKind) -> bool:
    request_context = event.get("requestContext") or {}
    if auth == "iam":
        return bool((request_context.get("identity") or {}).get("userArn"))
    claims = (request_context.get("authorizer") or {}).get("claims") or {}
    return bool(claims.get("sub"))


def _body_text(body: object, is_base64: bool) -> str | None:
    """The body as text; None when a base64 body is not UTF-8."""
    if not is_base64:
        return str(body)
    try:
        return base64.b64decode(str(body), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _header(event: Mapping[str, Any], name: str) -> str | None:
    for key, value in (event.get("headers") or {}).items():
        if key.lower() == name and isinstance(value, str):
            return value.strip()
    return None


def _proxy_answer(status: int, code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": error_body(code, message, details),
        "isBase64Encoded": False,
    }


def _check_query(event: Mapping[str, Any]) -> None:
    """Every query parameter at most once: ``?limit=50&limit=5`` is ambiguous, so it is refused
    naming the parameter instead of reaching validation as a list."""
    repeated = sorted(
        str(name)
        for name, values in (event.get("multiValueQueryStringParameters") or {}).items()
        if isinstance(values, list) and len(values) > 1
    )
    if repeated:
        names = ", ".join(repr(name[:MAX_FIELD_NAME_CHARS]) for name in repeated[:MAX_DETAIL_ITEMS])
        raise BodyRefused(
            400,
            "VALIDATION_ERROR",
            f"query parameter {names} is given more than once; give each once",
            [{"field": f"query.{name[:MAX_FIELD_NAME_CHARS]}", "message": "given more than once"} for name in repeated],
        )


def base_path_prefixes() -> list[str] | None:
    """The custom domain's API mapping base path to strip (``API_BASE_PATH``), if any."""
    base = os.environ.get("API_BASE_PATH", "").strip().rstrip("/")
    return [base if base.startswith("/") else f"/{base}"] if base else None


def build_resolver(auth: AuthKind = "cognito") -> JsonApiResolver:
    """The resolver for one function's routes; ``auth`` is how all of them are authorised."""
    app = JsonApiResolver(auth, enable_validation=True)

    @app.exception_handler(DomainError)  # type: ignore[untyped-decorator]
    def _domain_error(error: DomainError) -> Response[str]:
        return domain_error_answer(error)

    @app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
    def _validation_error(error: RequestValidationError) -> Response[str]:
        return error_response(400, "VALIDATION_ERROR", *validation_problems(error.errors(), body_fields(app)))

    @app.exception_handler(BodyRefused)  # type: ignore[untyped-decorator]
    def _body_refused(error: BodyRefused) -> Response[str]:
        return error_response(error.status, error.code, error.message, error.details)

    @app.exception_handler(StorageThrottled)  # type: ignore[untyped-decorator]
    def _storage_throttled(error: StorageThrottled) -> Response[str]:
        logger.warning("storage throttled", extra={"error_type": type(error).__name__})
        return domain_error_answer(storage_failure(error))

    @app.exception_handler(ConditionFailed)  # type: ignore[untyped-decorator]
    def _storage_conflict(error: ConditionFailed) -> Response[str]:
        # Only reached when a domain did not turn the refused write into its own answer.
        logger.warning("conditional write refused", extra={"error_type": type(error).__name__})
        return domain_error_answer(storage_failure(error))

    @app.exception_handler(StorageError)  # type: ignore[untyped-decorator]
    def _storage_failed(error: StorageError) -> Response[str]:
        logger.exception("storage failed", extra={"error_type": type(error).__name__})
        return domain_error_answer(storage_failure(error))

    @app.exception_handler([ProviderFailed, DeadlineReached])  # type: ignore[untyped-decorator]
    def _model_failed(error: Exception) -> Response[str]:
        # Every function's model outage answers alike: 503 + Retry-After (or 502 for a refused request).
        answer = model_failure(error)
        logger.warning("model call failed", extra={"error_type": type(error).__name__, "status": answer.status})
        return error_response(answer.status, answer.code, answer.message, headers=answer.headers)

    @app.exception_handler(Exception)  # type: ignore[untyped-decorator]
    def _unexpected(error: Exception) -> Response[str]:
        return log_unexpected(error)

    @app.not_found  # type: ignore[untyped-decorator]
    def _no_route(error: Exception) -> Response[str]:
        # API Gateway only forwards declared routes; this answers what its path patterns let
        # through but the resolver's do not (e.g. a path parameter with unusual characters).
        return error_response(404, "NOT_FOUND", "no such resource")

    return app


def domain_error_answer(error: DomainError) -> Response[str]:
    """Every failure a caller can act on, whichever domain raised it (``lambda_agents/errors.py``);
    a function that counts one kind registers its own handler and answers through this one."""
    return error_response(error.status, error.code, error.message, error.details, error.headers)


BodyFields = list[tuple[str, bool]]  # a body's JSON field names, each with whether it is required


def body_fields(app: APIGatewayRestResolver) -> BodyFields | None:
    """The JSON fields the body of the route being answered takes (its model's, by the names a
    client sends), read from the route Powertools matched; None when it takes no body model."""
    route = app.context.get("_route")
    params = list(getattr(getattr(route, "dependant", None), "body_params", None) or [])
    if not params:
        return None
    if len(params) > 1 or getattr(params[0].field_info, "embed", None):  # fields named by the parameters
        return [(param.alias, bool(param.required)) for param in params]
    model = params[0].type_
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return None
    return [(field.alias or name, field.is_required()) for name, field in model.model_fields.items()]


def validation_problems(errors: Any, fields: BodyFields | None = None) -> tuple[str, list[dict[str, str]]]:
    """(message, details) for pydantic's errors: the first MAX_DETAIL_ITEMS, each field name cut
    to MAX_FIELD_NAME_CHARS, and how many more there were (a body of unknown keys has one error
    per key). A body missing a field or holding one it does not take gets the body's ``fields``
    named in the message, so a client that guessed a name (``text`` for the chat's ``message``)
    reads the right one."""
    items = list(errors)
    problems = []
    for item in items[:MAX_DETAIL_ITEMS]:
        location = ".".join(str(part) for part in item.get("loc", ()))
        if len(location) > MAX_FIELD_NAME_CHARS:
            location = f"{location[:MAX_FIELD_NAME_CHARS]}..."
        problems.append({"field": location, "message": str(item.get("msg", "invalid"))[:200]})
    names = ", ".join(problem["field"] for problem in problems) or "request"
    hint = _body_hint(items[:MAX_DETAIL_ITEMS], fields)
    more = len(items) - len(problems)
    suffix = f" and {more} more problems (the first {len(problems)} are listed)" if more else ""
    message = f"invalid {names}: {hint}" if hint else f"invalid {names}"
    return message[: MAX_MESSAGE_CHARS - len(suffix)] + suffix, problems


def _body_hint(items: list[Any], fields: BodyFields | None) -> str:
    """What is wrong with the body's field names, and the names it takes (empty when the
    problems are about values only)."""

    def quoted(name: Any) -> str:
        return repr(str(name)[:MAX_FIELD_NAME_CHARS])

    top = [item for item in items if tuple(item.get("loc", ()))[:1] == ("body",)]
    no_body = any(item.get("type") == "missing" and len(item.get("loc", ())) == 1 for item in top)
    missing = [quoted(item["loc"][1]) for item in top if item.get("type") == "missing" and len(item["loc"]) == 2]
    unknown = [
        quoted(item["loc"][1]) for item in top if item.get("type") == "extra_forbidden" and len(item["loc"]) == 2
    ]
    said = []
    if no_body:
        said.append("the request has no body")
    if missing:
        said.append(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required")
    if unknown:
        said.append(f"{', '.join(unknown)} {'is not a field' if len(unknown) == 1 else 'are not fields'} of this body")
    if not said:
        return ""
    if fields:
        listed = ", ".join(f"{name} (required)" if required else name for name, required in fields)
        said.append(f"send a JSON object with: {listed}")
    return "; ".join(said)


def log_unexpected(error: Exception) -> Response[str]:
    logger.exception("unhandled error", extra={"error_type": type(error).__name__})
    return error_response(500, "INTERNAL_ERROR", "internal error")


ERROR_STATUSES = {
    "400": "Invalid input; the message names the field or parameter",
    "401": "No identity on the request",
    "403": "The caller may not do this",
    "404": "Not found, or not the caller's",
    "409": "Conflicting concurrent change",
    "413": "The request body is larger than the API accepts",
    "415": "The request body is not application/json",
    "422": "Valid input that cannot be processed; the message says why",
    "429": "Too many requests (RATE_LIMITED: the API's throttling); see Retry-After",
    "500": "Internal error (no details)",
    "502": "The model failed and no fallback applies",
    "503": "A dependency is unavailable",
}
# The 429 of a route that spends the user's model tokens: the codes tell its refusals apart.
USER_TOKEN_REFUSALS = (
    "Too many requests; see Retry-After. DAILY_BUDGET_EXCEEDED: the user's model tokens of the last "
    "24 hours are at the budget (details: spentTokens, reservedTokens, budgetTokens, and reason: "
    "`spent`, retry once enough of them are 24 hours old; `turns_in_flight`, the user's turns still "
    "being answered hold the rest, retry once they settle). RATE_LIMITED: the API's throttling, or the "
    "chat's per-user message limit."
)


def spending_user_tokens(responses: dict[int, OpenAPIResponse]) -> dict[int, OpenAPIResponse]:
    """A route's ``responses`` with the 429 of a route that spends the user's model tokens."""
    return {**responses, 429: {"description": USER_TOKEN_REFUSALS}}


ERROR_BODY = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string", "maxLength": MAX_MESSAGE_CHARS},
                "details": {},
                "truncated": {"type": "boolean"},
            },
        }
    },
}


def openapi_document(app: APIGatewayRestResolver, title: str) -> dict[str, Any]:
    """The resolver's OpenAPI with the bundle's real error contract: every route answers its
    errors with the error envelope, request-validation failures as 400 (Powertools documents 422
    with its own body)."""
    document: dict[str, Any] = app.get_openapi_schema(title=title).model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            if "204" in responses:  # No Content: the route's return annotation describes no body
                responses["204"] = {"description": "Done; no body"}
            for status, description in ERROR_STATUSES.items():
                if status == "422" or status not in responses:  # Powertools' own 422 body is not ours
                    responses[status] = {
                        "description": description,
                        "content": {"application/json": {"schema": ERROR_BODY}},
                    }
                else:  # the route's own words for an error: its body is still the envelope
                    responses[status]["content"] = {"application/json": {"schema": ERROR_BODY}}
    document.get("components", {}).get("schemas", {}).pop("HTTPValidationError", None)
    document.get("components", {}).get("schemas", {}).pop("ValidationError", None)
    return document
