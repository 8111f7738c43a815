"""The Powertools REST resolver every API function uses, with the one error mapping.

Answers are JSON ``{"error": {"code", "message", "details"?}}``. Body and query validation
errors become 400s that name the field; anything unexpected is a 500 without internals.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from ..observability import logger
from .errors import ApiError


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


def build_resolver() -> APIGatewayRestResolver:
    app = APIGatewayRestResolver(enable_validation=True)

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
    """The resolver's OpenAPI with the bundle's real error contract: Powertools documents
    request-validation failures as 422, while every route answers 400 with the error envelope."""
    document: dict[str, Any] = app.get_openapi_schema(title=title).model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status, description in ERROR_STATUSES.items():
                responses.setdefault(
                    status, {"description": description, "content": {"application/json": {"schema": ERROR_BODY}}}
                )
    document.get("components", {}).get("schemas", {}).pop("HTTPValidationError", None)
    document.get("components", {}).get("schemas", {}).pop("ValidationError", None)
    return document
