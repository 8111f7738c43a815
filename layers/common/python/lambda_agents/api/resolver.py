"""The Powertools REST resolver every API function uses, with the one error mapping.

Answers are JSON ``{"error": {"code", "message", "details"?}}``. Body and query validation
errors become 400s that name the field; a non-JSON body 415; storage throttling a 503 with
Retry-After, a refused conditional write a 409, another storage failure a 503; a model
provider that is unavailable (or the deadline) a 503 with Retry-After and one that refuses the
request a 502, in every function alike (``errors.model_failure``); anything unexpected a 500
without internals.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from ..llm.errors import DeadlineReached, ProviderFailed
from ..observability import logger
from ..storage.dynamodb import ConditionFailed, StorageError, StorageThrottled
from .errors import ApiError, model_failure
from .sam_local import with_sam_local_identity

RETRY_AFTER_S = 1
AuthKind = Literal["cognito", "iam"]
_NOT_AN_OBJECT = re.compile(r"\s*[^\s{]")  # the first non-blank character of the body is not "{"


def error_response(
    status: int, code: str, message: str, details: Any = None, headers: dict[str, str] | None = None
) -> Response[str]:
    payload: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        payload["details"] = details
    return Response(
        status_code=status,
        content_type="application/json",
        body=json.dumps({"error": payload}, ensure_ascii=False, default=str),
        headers=headers or {},
    )


class JsonApiResolver(APIGatewayRestResolver):
    """The Powertools REST resolver with two checks before any route runs.

    - Every route of the bundle is authenticated, and all routes of one function the same way
      (``auth``: Cognito claims or an IAM caller): a request without that identity in its request
      context is a 401 before its body is even validated, so an anonymous caller learns nothing
      about the API. API Gateway checks first in AWS; this holds if a route is misconfigured.
    - Every route takes a JSON object: another body type is a 415 before Powertools' form and
      multipart parsers can turn a malformed Content-Type into a 500, and a JSON array a 400
      (Powertools would validate its first element as the body).
    """

    def __init__(self, auth: AuthKind, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.auth = auth

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        event = with_sam_local_identity(event, self.auth)  # unchanged unless AWS_SAM_LOCAL=true
        if not _has_identity(event, self.auth):
            return _proxy_answer(401, "UNAUTHORIZED", "authentication required: no identity on the request")
        content_type = _header(event, "content-type")
        body = event.get("body")
        if body and content_type and not content_type.lower().startswith("application/json"):
            return _proxy_answer(
                415, "UNSUPPORTED_MEDIA_TYPE", f"request bodies must be application/json, got {content_type[:100]!r}"
            )
        text = _body_text(body, bool(event.get("isBase64Encoded"))) if body else ""
        if text is None:
            return _proxy_answer(400, "VALIDATION_ERROR", "invalid body: the request body is not UTF-8 text")
        if _NOT_AN_OBJECT.match(text):
            # Powertools would validate the first element of a JSON array as if it were the body.
            return _proxy_answer(400, "VALIDATION_ERROR", "invalid body: the request body must be a JSON object")
        return super().resolve(event, context)


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


def _proxy_answer(status: int, code: str, message: str) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False),
        "isBase64Encoded": False,
    }


def build_resolver(auth: AuthKind = "cognito") -> APIGatewayRestResolver:
    """The resolver for one function's routes; ``auth`` is how all of them are authorised."""
    app = JsonApiResolver(auth, enable_validation=True)

    @app.exception_handler(ApiError)  # type: ignore[untyped-decorator]
    def _api_error(error: ApiError) -> Response[str]:
        return error_response(error.status, error.code, error.message, error.details, error.headers)

    @app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
    def _validation_error(error: RequestValidationError) -> Response[str]:
        problems = []
        for item in error.errors():
            location = ".".join(str(part) for part in item.get("loc", ()))
            problems.append({"field": location, "message": item.get("msg", "invalid")})
        names = ", ".join(problem["field"] for problem in problems) or "request"
        return error_response(400, "VALIDATION_ERROR", f"invalid {names}", problems)

    @app.exception_handler(StorageThrottled)  # type: ignore[untyped-decorator]
    def _storage_throttled(error: StorageThrottled) -> Response[str]:
        logger.warning("storage throttled", extra={"error_type": type(error).__name__})
        return error_response(
            503, "STORAGE_BUSY", "storage is busy; retry shortly", headers={"Retry-After": str(RETRY_AFTER_S)}
        )

    @app.exception_handler(ConditionFailed)  # type: ignore[untyped-decorator]
    def _storage_conflict(error: ConditionFailed) -> Response[str]:
        # Only reached when a domain did not turn the refused write into its own answer.
        logger.warning("conditional write refused", extra={"error_type": type(error).__name__})
        return error_response(409, "CONCURRENT_UPDATE", "the data changed during the request; retry")

    @app.exception_handler(StorageError)  # type: ignore[untyped-decorator]
    def _storage_failed(error: StorageError) -> Response[str]:
        logger.exception("storage failed", extra={"error_type": type(error).__name__})
        return error_response(503, "STORAGE_UNAVAILABLE", "storage is unavailable; retry later")

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


def log_unexpected(error: Exception) -> Response[str]:
    logger.exception("unhandled error", extra={"error_type": type(error).__name__})
    return error_response(500, "INTERNAL_ERROR", "internal error")


ERROR_STATUSES = {
    "400": "Invalid input; the message names the field or parameter",
    "401": "No identity on the request",
    "403": "The caller may not do this",
    "404": "Not found, or not the caller's",
    "409": "Conflicting concurrent change",
    "415": "The request body is not application/json",
    "422": "Valid input that cannot be processed; the message says why",
    "429": "Rate limited; see Retry-After",
    "500": "Internal error (no details)",
    "502": "The model failed and no fallback applies",
    "503": "A dependency is unavailable",
}
ERROR_BODY = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {}},
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
    document.get("components", {}).get("schemas", {}).pop("HTTPValidationError", None)
    document.get("components", {}).get("schemas", {}).pop("ValidationError", None)
    return document
