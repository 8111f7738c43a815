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
