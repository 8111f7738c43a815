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

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypedDict, Unpack

from .budgets import LearnedBudgets, call_key
from .errors import DeadlineReached, ProviderError, ProviderFailed
from .policy import Deadline, RetryPolicy, TokenPolicy
from .retry_loop import Accepted, CallOptions, LoopOptions, Rejected, run_attempts
from .speeds import ModelSpeeds
from .types import Attempt, ChatModel, ChatRequest, ChatResponse, Usage

TEXT_CALL = CallOptions()


class OptionChanges(TypedDict, total=False):
    """``CallOptions``' fields, any of them changed for one call."""

    retry_policy: RetryPolicy
    token_policy: TokenPolicy | None
    expected_tokens: int | None
    sleep: Callable[[float], None]
    budgets: LearnedBudgets
    speeds: ModelSpeeds


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
    options: CallOptions = TEXT_CALL,
    *,
    deadline: Deadline | None = None,
    **changes: Unpack[OptionChanges],
) -> CallResult:
    """Send ``request`` until the provider answers (and, per the policies, until the answer is
    not truncated / filtered / refused), or raise ``ProviderFailed`` / ``DeadlineReached``.

    ``ProviderFailed.cause.kind`` says why (``rate_limit``, ``server_error``, ``timeout``,
    ``connection``, ``rejected``, ``auth``); both errors carry every attempt and its usage.
    ``options`` says how the call is retried and budgeted (``CallOptions``: by default transient
    failures retried, the request's ``max_tokens`` kept); ``changes``, any of its fields for this call.
    """
    call = replace(options, **changes) if changes else options
    outcome = run_attempts(model, request, _judge, LoopOptions(call, call_key(model.model_name, request), deadline))
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
