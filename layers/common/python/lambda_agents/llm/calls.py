"""One logical model call with the engine's retry, budget and deadline rules, for callers that
read the answer themselves: free text (the chat's fenced answer, the judge's tags) and tool-calling
agent turns (the interview's agent loop).

The same discipline as ``generate_structured``:
- transient provider failures (429 / 5xx / timeout / connection) are retried with backoff;
- a truncated answer is retried, when the retry policy lists ``length``, with the budget its
  partial text asks for (tool-call arguments are read against their tool's parameters), and
  handed back at once when that is above the token policy's ceiling or what the deadline allows;
  without a token policy the request's ``max_tokens`` is the ceiling, so nothing is retried;
- ``content_filter`` and refusals are retried only when the retry policy lists them;
- the first attempt starts no lower than what this purpose's answers needed before
  (``budgets.LearnedBudgets``, within the token policy's ceiling);
- the openai client's own retries are off, every request's timeout is cut to the time left, no
  wait may pass the deadline, and the usage of every attempt is returned or carried by the error.
Whatever is not retried is the caller's to judge: the last answer comes back as it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..observability import elapsed_ms
from .budgets import CONTAINER_BUDGETS, LearnedBudgets, call_key
from .engine import Attempt, log_attempt
from .errors import DeadlineReached, ProviderError, ProviderFailed, RateLimited
from .policy import DEADLINE_SLACK_S, TRANSIENT_KINDS, Deadline, FixedTokenPolicy, RetryPolicy, TokenPolicy
from .truncation import plan_retry
from .types import ChatModel, ChatRequest, ChatResponse, Usage

TRANSIENT_RETRIES = RetryPolicy(max_attempts=3, retry_on=TRANSIENT_KINDS, immediate=frozenset())
COMPLETE_FINISHES = frozenset({"stop", "tool_calls"})


@dataclass(frozen=True)
class CallResult:
    response: ChatResponse
    attempts: list[Attempt]
    usage: Usage

    @property
    def retries(self) -> int:
        return len(self.attempts) - 1


def answer_kind(response: ChatResponse) -> str:
    """``ok``, or the answer-level failure a retry policy can name."""
    if response.refusal:
        return "refusal"
    if response.finish_reason in ("length", "content_filter"):
        return response.finish_reason
    return "ok"


def complete_with_retries(
    model: ChatModel,
    request: ChatRequest,
    *,
    retry_policy: RetryPolicy = TRANSIENT_RETRIES,
    token_policy: TokenPolicy | None = None,
    deadline: Deadline | None = None,
    request_timeout_s: float = 25.0,
    min_attempt_s: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    budgets: LearnedBudgets = CONTAINER_BUDGETS,
) -> CallResult:
    """Send ``request`` until the provider answers (and, per the policies, until the answer is
    not truncated / filtered / refused), or raise ``ProviderFailed`` / ``DeadlineReached``.

    ``ProviderFailed.cause.kind`` says why (``rate_limit``, ``server_error``, ``timeout``,
    ``connection``, ``rejected``, ``auth``); both errors carry every attempt and its usage.
    """
    tokens = token_policy or FixedTokenPolicy(request.max_tokens)
    key = call_key(model.model_name, request)
    floor = budgets.start(key, tokens.max_tokens(0), tokens.ceiling)
    attempts: list[Attempt] = []
    usage = Usage()
    for index in range(retry_policy.max_attempts):
        max_tokens = min(tokens.ceiling, max(tokens.max_tokens(index), floor))
        timeout = request.timeout_s or request_timeout_s
        if deadline is not None:
            remaining = deadline.remaining_s()
            if remaining < min_attempt_s:
                raise DeadlineReached(
                    f"{request.purpose}: {remaining:.1f}s left, too little for attempt {index + 1}", attempts, usage
                )
            timeout = min(timeout, max(remaining - DEADLINE_SLACK_S, remaining / 2))
        sent = replace(request, timeout_s=timeout, max_tokens=max_tokens)
        started = time.perf_counter()
        sent_at = deadline.clock() if deadline is not None else 0.0
        last_try = index == retry_policy.max_attempts - 1
        try:
            response = model.complete(sent)
        except ProviderError as error:
            attempts.append(Attempt(index + 1, max_tokens, error.kind, None, Usage(), elapsed_ms(started), str(error)))
            log_attempt(request.purpose, attempts[-1])
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
        # The attempt's pace on the deadline's clock: what the time left allows after a truncation.
        duration_s = deadline.clock() - sent_at if deadline is not None else 0.0
        usage = usage + response.usage
        kind = answer_kind(response)
        note = None
        retry = kind != "ok" and kind in retry_policy.retry_on and not last_try
        if kind == "length":
            plan = plan_retry(
                sent,
                response,
                spent=max(max_tokens, response.usage.completion_tokens),
                schema=request.output_schema,
                ceiling=tokens.ceiling,
                duration_s=duration_s,
                deadline=deadline,
            )
            note = plan.reason
            if plan.max_tokens is None:
                retry = False
            else:
                floor = plan.max_tokens
        attempts.append(
            Attempt(index + 1, max_tokens, kind, response.finish_reason, response.usage, elapsed_ms(started), note)
        )
        log_attempt(request.purpose, attempts[-1])
        if kind == "ok" and response.finish_reason in COMPLETE_FINISHES:
            budgets.record(key, response.usage.completion_tokens)
        if not retry:
            return CallResult(response, attempts, usage)
        delay = retry_policy.delay_s(kind, index + 1)
        if deadline is not None and delay + min_attempt_s > deadline.remaining_s():
            return CallResult(response, attempts, usage)  # no time for another answer: judge this one
        if delay > 0:
            sleep(delay)
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
