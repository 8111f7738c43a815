"""Errors a caller can act on.

``ProviderError`` subclasses are what a model adapter raises for one failed HTTP call.
``StructuredOutputError`` subclasses are what the engine raises when it gives up; each carries
the attempt log and the usage of every attempt, failed ones included, so nothing goes uncounted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import Attempt
    from .types import Usage


class ProviderError(Exception):
    """One call to the model failed before it produced an answer."""

    kind = "provider_error"
    retryable = True


class RateLimited(ProviderError):
    kind = "rate_limit"

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ProviderUnavailable(ProviderError):
    """HTTP 5xx."""

    kind = "server_error"


class ProviderTimeout(ProviderError):
    kind = "timeout"


class ProviderConnectionError(ProviderError):
    kind = "connection"


class RequestRejected(ProviderError):
    """HTTP 400/404/422: e.g. the provider does not accept the schema or the model name."""

    kind = "rejected"
    retryable = False


class ProviderAuthError(ProviderError):
    kind = "auth"
    retryable = False


class StructuredOutputError(Exception):
    """The engine gave up. ``kind`` is a stable metric / audit label."""

    kind = "error"

    def __init__(self, message: str, attempts: list[Attempt], usage: Usage) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.usage = usage


class OutputTruncated(StructuredOutputError):
    """finish_reason=length on the last attempt (or the token ceiling was reached)."""

    kind = "length"


class ContentFiltered(StructuredOutputError):
    kind = "content_filter"


class ModelRefused(StructuredOutputError):
    kind = "refusal"


class OutputInvalid(StructuredOutputError):
    """The answer never validated against the output model."""

    kind = "validation"


class UnexpectedFinish(StructuredOutputError):
    kind = "unexpected_finish"


class ProviderFailed(StructuredOutputError):
    """The provider kept failing (429 / 5xx / timeout / connection) or rejected the request."""

    def __init__(self, message: str, attempts: list[Attempt], usage: Usage, cause: ProviderError) -> None:
        super().__init__(message, attempts, usage)
        self.cause = cause
        self.kind = cause.kind


class DeadlineReached(StructuredOutputError):
    """Not enough of the invocation's time was left for another attempt or wait."""

    kind = "deadline"


class SchemaNotSupported(ValueError):
    """The output model's JSON schema is outside the provider's strict-mode subset."""
