"""The HTTP-shaped errors of the API itself (identity, bodies, the model provider), on the one base
every domain error shares (``lambda_agents.errors.DomainError``), so one handler answers both."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import DomainError

if TYPE_CHECKING:  # storage imports boto3: only a failure that happened pays for it here
    from ..storage.dynamodb import StorageError


class BadRequest(DomainError):
    status = 400
    code = "BAD_REQUEST"


class Unauthorized(DomainError):
    status = 401
    code = "UNAUTHORIZED"


class NotFound(DomainError):
    status = 404
    code = "NOT_FOUND"


class Conflict(DomainError):
    status = 409
    code = "CONFLICT"


class TooManyRequests(DomainError):
    status = 429
    code = "RATE_LIMITED"

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message, retry_after_s=retry_after_s)


class ServiceUnavailable(DomainError):
    status = 503
    code = "SERVICE_UNAVAILABLE"


MODEL_RETRY_AFTER_S = 5


class ModelUnavailable(ServiceUnavailable):
    """The model provider is unavailable (429, 5xx, timeouts, the deadline): retry after the header."""

    code = "MODEL_UNAVAILABLE"

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message, retry_after_s=retry_after_s or MODEL_RETRY_AFTER_S)


class ModelFailed(DomainError):
    """The model provider refused the request (bad credentials, a rejected request): retrying will not help."""

    status = 502
    code = "MODEL_ERROR"


def model_failure(error: Exception) -> DomainError:
    """The one answer for a model call that failed, whichever function made it: an outage is a
    503 with Retry-After, a refusal of the request a 502. A key that cannot be read or that the
    provider refuses is an outage for the caller (the operator's to fix; the same request will do
    once it is), not a fault of the request, and so is a chain whose every model is resting after
    repeated failures (Retry-After: when the first may be tried). Only the failure's kind is named, never the
    provider's text."""
    from ..llm.errors import DeadlineReached, ProviderFailed

    if isinstance(error, DeadlineReached):
        return ModelUnavailable("the model did not answer in time; nothing was stored: send the request again")
    if isinstance(error, ProviderFailed) and (error.cause.retryable or error.kind in ("auth", "models_resting")):
        wait = error.cause.retry_after_s
        return ModelUnavailable(
            f"the model provider is unavailable ({error.kind}); nothing was stored: send the request again", wait
        )
    kind = getattr(error, "kind", "error")
    return ModelFailed(f"the model provider rejected the request ({kind})")


STORAGE_RETRY_AFTER_S = 1


def storage_failure(error: StorageError) -> DomainError:
    """The one answer for a storage call a domain did not turn into its own, whichever route (REST
    or socket) made it: throttling a 503 with Retry-After, a refused conditional write a 409,
    any other failure a 503; never the storage's own words."""
    from ..storage.dynamodb import ConditionFailed, StorageThrottled

    if isinstance(error, StorageThrottled):
        return ServiceUnavailable(
            "storage is busy; retry shortly", code="STORAGE_BUSY", retry_after_s=STORAGE_RETRY_AFTER_S
        )
    if isinstance(error, ConditionFailed):
        return Conflict("the data changed during the request; retry", code="CONCURRENT_UPDATE")
    return ServiceUnavailable("storage is unavailable; retry later", code="STORAGE_UNAVAILABLE")
