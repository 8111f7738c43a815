"""One logical model call with the engine's retry, backoff and deadline rules, for callers that
read the answer themselves: free text (the chat's fenced answer, the judge's tags) and tool-calling
agent turns (the interview's agent loop).

Only transient provider failures (429 / 5xx / timeout / connection) are retried; what the model
said (finish_reason, refusal, tool calls) is the caller's to judge. As in ``generate_structured``,
the openai client's own retries are off, every request's timeout is cut to the time left, no wait
may pass the deadline, and the usage of every attempt is returned or carried by the error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..observability import elapsed_ms
from .engine import DEADLINE_SLACK_S, Attempt, log_attempt
from .errors import DeadlineReached, ProviderError, ProviderFailed, RateLimited
from .policy import TRANSIENT_KINDS, Deadline, RetryPolicy
from .types import ChatModel, ChatRequest, ChatResponse, Usage

TRANSIENT_RETRIES = RetryPolicy(max_attempts=3, retry_on=TRANSIENT_KINDS, immediate=frozenset())


@dataclass(frozen=True)
class CallResult:
    response: ChatResponse
    attempts: list[Attempt]
    usage: Usage

    @property
    def retries(self) -> int:
        return len(self.attempts) - 1


def complete_with_retries(
    model: ChatModel,
    request: ChatRequest,
    *,
    retry_policy: RetryPolicy = TRANSIENT_RETRIES,
    deadline: Deadline | None = None,
    request_timeout_s: float = 25.0,
    min_attempt_s: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> CallResult:
    """Send ``request`` until the provider answers, or raise ``ProviderFailed`` / ``DeadlineReached``.

    ``ProviderFailed.cause.kind`` says why (``rate_limit``, ``server_error``, ``timeout``,
    ``connection``, ``rejected``, ``auth``); both errors carry every attempt and its usage.
    """
    attempts: list[Attempt] = []
    usage = Usage()
    for index in range(retry_policy.max_attempts):
        timeout = request.timeout_s or request_timeout_s
        if deadline is not None:
            remaining = deadline.remaining_s()
            if remaining < min_attempt_s:
                raise DeadlineReached(
                    f"{request.purpose}: {remaining:.1f}s left, too little for attempt {index + 1}", attempts, usage
                )
            timeout = min(timeout, max(remaining - DEADLINE_SLACK_S, remaining / 2))
        started = time.perf_counter()
        try:
            response = model.complete(replace(request, timeout_s=timeout))
        except ProviderError as error:
            attempts.append(
                Attempt(index + 1, request.max_tokens, error.kind, None, Usage(), elapsed_ms(started), str(error))
            )
            log_attempt(request.purpose, attempts[-1])
            last_try = index == retry_policy.max_attempts - 1
            if not error.retryable or error.kind not in retry_policy.retry_on or last_try:
                raise ProviderFailed(
                    f"{request.purpose}: gave up after {len(attempts)} attempt(s): {error}", attempts, usage, error
                ) from error
            retry_after = error.retry_after_s if isinstance(error, RateLimited) else None
            delay = retry_policy.delay_s(error.kind, index + 1, retry_after)
            if deadline is not None and delay + min_attempt_s > deadline.remaining_s():
                raise DeadlineReached(
                    f"{request.purpose}: waiting {delay:.1f}s before attempt {index + 2} would pass the deadline",
                    attempts,
                    usage,
                ) from error
            if delay > 0:
                sleep(delay)
            continue
        usage = usage + response.usage
        attempts.append(
            Attempt(index + 1, request.max_tokens, "ok", response.finish_reason, response.usage, elapsed_ms(started))
        )
        log_attempt(request.purpose, attempts[-1])
        return CallResult(response, attempts, usage)
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
