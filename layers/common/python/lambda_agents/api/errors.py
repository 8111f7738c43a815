"""One error type per failure a client can act on, mapped to HTTP in one place."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An answer other than success. ``code`` is stable for clients; ``message`` says what is wrong."""

    status = 400
    code = "BAD_REQUEST"

    def __init__(
        self, message: str, *, code: str | None = None, details: Any = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details
        self.headers = headers or {}


class BadRequest(ApiError):
    status = 400
    code = "BAD_REQUEST"


class Unauthorized(ApiError):
    status = 401
    code = "UNAUTHORIZED"


class Forbidden(ApiError):
    status = 403
    code = "FORBIDDEN"


class NotFound(ApiError):
    status = 404
    code = "NOT_FOUND"


class Conflict(ApiError):
    status = 409
    code = "CONFLICT"


class TooManyRequests(ApiError):
    status = 429
    code = "RATE_LIMITED"

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, retry_after_s))})


class ServiceUnavailable(ApiError):
    status = 503
    code = "SERVICE_UNAVAILABLE"
