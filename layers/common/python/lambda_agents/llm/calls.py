"""One logical model call with the engine's retry, budget and deadline rules, for callers that
read the answer themselves: free text (the chat's fenced answer, the judge's tags) and tool-calling
agent turns (the interview's agent loop).

It runs on the engine's own loop (``retry_loop.run_attempts``), so the rules are the same:
- transient provider failures (429 / 5xx / timeout / connection) are retried with backoff;
- a truncated answer is retried, when the retry policy lists ``length``, with the budget its
  partial text asks for (tool-call arguments are read against their tool's parameters), and
  handed back at once when that is above the token policy's ceiling or what the deadline allows;
  without a token policy the request's ``max_tokens`` is the ceiling, so nothing is retried;
- ``content_filter`` and refusals are retried only when the retry policy lists them;
- the first attempt starts no lower than what this purpose's answers needed before
  (``budgets.LearnedBudgets``, within the token policy's ceiling);
- no attempt starts that cannot finish before the deadline at the model's pace, an answer the
  deadline cuts is closed (``DeadlineReached.partial`` holds it), no wait may pass the deadline,
  and the usage of every attempt is returned or carried by the error.
Whatever is not retried is the caller's to judge: the last answer comes back as it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .budgets import CONTAINER_BUDGETS, LearnedBudgets, call_key
from .errors import DeadlineReached, ProviderError, ProviderFailed
from .policy import TRANSIENT_KINDS, Deadline, FixedTokenPolicy, RetryPolicy, TokenPolicy
from .retry_loop import Accepted, LoopOptions, Rejected, run_attempts
from .speeds import CONTAINER_SPEEDS, ModelSpeeds
from .types import Attempt, ChatModel, ChatRequest, ChatResponse, Usage

TRANSIENT_RETRIES = RetryPolicy(max_attempts=3, retry_on=TRANSIENT_KINDS, immediate=frozenset())


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


def _judge(response: ChatResponse) -> ChatResponse:
    kind = answer_kind(response)
    if kind != "ok":
        raise Rejected(kind, f"answer ended with {kind}", response.content)
    return response


def complete_with_retries(
    model: ChatModel,
    request: ChatRequest,
    *,
    retry_policy: RetryPolicy = TRANSIENT_RETRIES,
    token_policy: TokenPolicy | None = None,
    deadline: Deadline | None = None,
    sleep: Callable[[float], None] = time.sleep,
    budgets: LearnedBudgets = CONTAINER_BUDGETS,
    speeds: ModelSpeeds = CONTAINER_SPEEDS,
    expected_tokens: int | None = None,
) -> CallResult:
    """Send ``request`` until the provider answers (and, per the policies, until the answer is
    not truncated / filtered / refused), or raise ``ProviderFailed`` / ``DeadlineReached``.

    ``ProviderFailed.cause.kind`` says why (``rate_limit``, ``server_error``, ``timeout``,
    ``connection``, ``rejected``, ``auth``); both errors carry every attempt and its usage.
    ``expected_tokens``: what an answer usually needs, so that a budget the time left cannot hold
    is lowered to what fits rather than refused, until the container has learned the real need.
    """
    options = LoopOptions(
        retry_policy=retry_policy,
        token_policy=token_policy or FixedTokenPolicy(request.max_tokens),
        budget_key=call_key(model.model_name, request),
        budgets=budgets,
        speeds=speeds,
        deadline=deadline,
        sleep=sleep,
        expected_tokens=expected_tokens,
    )
    outcome = run_attempts(model, request, _judge, options)
    if isinstance(outcome, Accepted):
        return CallResult(outcome.value, outcome.attempts, outcome.usage)
    if outcome.response is not None:
        # The last answer was not retried (policy, ceiling, attempts or time): the caller judges it.
        return CallResult(outcome.response, outcome.attempts, outcome.usage)
    failure = outcome.failure
    if outcome.reason == "deadline" or failure is None:
        cause = failure if isinstance(failure, ProviderError) else None
        reached = DeadlineReached(outcome.message, outcome.attempts, outcome.usage, outcome.partial)
        reached.retry_after_s = cause.retry_after_s if isinstance(cause, ProviderError) else None
        raise reached from cause
    if isinstance(failure, ProviderError):
        failed = ProviderFailed(outcome.message, outcome.attempts, outcome.usage, failure)
        failed.retry_after_s = failure.retry_after_s if isinstance(failure, ProviderError) else None
        raise failed from failure
    raise AssertionError(f"unexpected stop without an answer: {outcome.reason}")  # pragma: no cover
