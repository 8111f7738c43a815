"""Errors a caller can act on.

``ProviderError`` subclasses are what a model adapter raises for one failed HTTP call.
``StructuredOutputError`` subclasses are what the engine raises when it gives up; each carries
the attempt log and the usage of every attempt, failed ones included, so nothing goes uncounted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .types import Attempt, ChatResponse, ModelCall, Usage

if TYPE_CHECKING:
    from .accounting import ModelAccount


class ProviderError(Exception):
    """One call to the model failed before it produced a whole answer. ``partial`` is what a
    stream had delivered before it failed (None when nothing had): its usage is what the provider
    billed for the failed call, as far as it is known."""

    kind = "provider_error"
    retryable = True
    retry_after_s: float | None = None  # when the provider (or our breaker) says to come back

    # The calls of the same attempt to a chain's links that failed before this one (``model_chain``):
    # billed, so the attempt's usage counts them (``usage``) though this call's ``partial`` does not.
    earlier_calls: tuple[ModelCall, ...] = ()

    def __init__(self, message: str, partial: ChatResponse | None = None) -> None:
        super().__init__(message)
        self.partial = partial

    @property
    def usage(self) -> Usage:
        """What the attempt that failed here was billed for: this call's partial answer and the
        chain's links it went through before."""
        own = self.partial.usage if self.partial is not None else Usage()
        return sum((call.usage for call in self.earlier_calls), own)


class RateLimited(ProviderError):
    """HTTP 429. ``retry_after_s`` from ``retry-after-ms`` / ``retry-after``; ``limits`` holds the
    ``x-ratelimit-*`` headers (name without the prefix -> value) for callers that pace themselves.
    ``account_limit_reached``: the headers show the account's own limit spent for this request,
    and the container's rate budget now waits it out (``pacing``): the caller's pace, not a sign
    that the provider is unwell, so a breaker does not count it."""

    kind = "rate_limit"

    def __init__(self, message: str, retry_after_s: float | None = None, limits: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.limits = dict(limits or {})
        self.account_limit_reached = False


class RateShareSpent(RateLimited):
    """Not sent: this container's share of the provider's rate limit (``rate_budget``) has room for
    the request only after ``retry_after_s``, later than its answer could finish by the deadline.
    Not retried in the call: its caller may come back then (the generator defers the user)."""

    retryable = False


class ProviderUnavailable(ProviderError):
    """HTTP 5xx."""

    kind = "server_error"


class ProviderTimeout(ProviderError):
    """No first token, or a stall between chunks, within the model's timeout: the call is closed.
    ``partial`` is what arrived before (its usage is what the provider billed, as far as known)."""

    kind = "timeout"


class AnswerCut(ProviderError):
    """The caller's deadline came while the answer was still arriving: the stream was closed
    (the provider stops generating and billing) and ``partial`` is what had arrived. Not
    retried: the time is spent. Callers that can use a partial answer read it from
    ``DeadlineReached.partial``."""

    kind = "deadline"
    retryable = False


class ProviderConnectionError(ProviderError):
    """The connection failed or dropped; ``partial`` is what a dropped stream had delivered."""

    kind = "connection"


class RequestRejected(ProviderError):
    """HTTP 400/404/422: e.g. the provider does not accept the schema or the model name."""

    kind = "rejected"
    retryable = False


class ProviderAuthError(ProviderError):
    kind = "auth"
    retryable = False


class StructuredOutputError(Exception):
    """The engine gave up. ``kind`` is a stable metric / audit label. ``retry_after_s``: the
    provider's Retry-After when a 429 was the last thing it said (a caller may wait it out later)."""

    kind = "error"

    def __init__(self, message: str, attempts: list[Attempt], usage: Usage) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.usage = usage
        self.retry_after_s: float | None = None
        # What every call of the work it ended was billed for, when the caller that made them says
        # (an interview turn's calls): a turn handed over after it still shows all it cost.
        self.account: ModelAccount | None = None


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
    """Not enough of the invocation's time was left for another attempt or wait, or the deadline
    cut an answer while it arrived (``partial``: what had arrived, usable like a truncated one)."""

    kind = "deadline"

    def __init__(
        self, message: str, attempts: list[Attempt], usage: Usage, partial: ChatResponse | None = None
    ) -> None:
        super().__init__(message, attempts, usage)
        self.partial = partial


class SchemaNotSupported(ValueError):
    """The output model's JSON schema is outside the provider's strict-mode subset."""
