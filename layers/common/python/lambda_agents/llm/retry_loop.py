"""The one retry loop every model call runs through: ``generate_structured`` (validated objects)
and ``complete_with_retries`` (answers the caller reads itself) are two readings of its outcome.

Per attempt, in this order (docs/engine.md is the contract):
1. **Budget**: the token policy's budget for the number of failed answers so far (a provider
   failure, a timeout above all, never raises it), never below what answers of the same type
   needed in this container (``budgets.LearnedBudgets``) or what a truncated answer showed.
2. **Plan**: what the attempt takes at the model's learned pace (``speeds``). One that cannot
   finish before the deadline is not started; when the answer's expected size still fits, its
   ``max_tokens`` is lowered to what fits instead. The plan is written into the attempt log.
3. **Call**: the request's ``pacing`` carries the deadline (``answer_by``), so an answer still
   streaming when it comes is cut and closed at once, and the size it was planned at
   (``planned_tokens``), so a caller that asks for it (``cut_when_late``) has one whose pace shows
   it cannot make the deadline cut as soon as that shows; the adapter's pacing (``pacing.Pacer``)
   bounds the first token and stalls itself. A cut answer
   teaches the model's pace like a whole one.
4. **Read**: the caller's ``judge`` accepts the answer or rejects it with a kind (``length``,
   ``validation``, ``refusal``, ...). A truncated answer's next budget comes from its partial
   text (``truncation.plan_retry``), or the loop stops when that is above the ceiling or what the
   deadline allows. A rejected answer may be fed back (the caller's ``feedback``), replacing the
   feedback before it, so the prompt never grows.
5. **Wait**: backoff or Retry-After per the retry policy, and only when the wait and the next
   attempt's plan both fit before the deadline.
Usage is summed over every attempt, failed and cut ones included, and every attempt is logged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Generic, Literal, TypeVar

from ..observability import elapsed_ms, logger
from .budgets import CONTAINER_BUDGETS, LearnedBudgets
from .errors import AnswerCut, ProviderError, RateLimited
from .policy import DEADLINE_SLACK_S, TRANSIENT_KINDS, Deadline, FixedTokenPolicy, RetryPolicy, TokenPolicy
from .speeds import CONTAINER_SPEEDS, AttemptPlan, ModelSpeeds, plan_attempt, speed_prior
from .truncation import TruncationPlan, plan_retry, with_margin
from .types import Attempt, ChatModel, ChatRequest, ChatResponse, Message, ModelCall, Usage, estimate_tokens

ValueT = TypeVar("ValueT")
COMPLETE_FINISHES = frozenset({"stop", "tool_calls"})
StopReason = Literal["not_retried", "attempts_spent", "deadline", "truncation_limit"]


class Rejected(Exception):
    """The caller's judge refused an answer. ``kind`` is what a retry policy names (``length``,
    ``validation``, ``invalid_json``, ``refusal``, ``content_filter``, ``unexpected_finish``);
    ``answer`` is the text to feed back (None: nothing worth showing the model)."""

    def __init__(self, kind: str, message: str, answer: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.answer = answer


Judge = Callable[[ChatResponse], ValueT]
Feedback = Callable[[Rejected], list[Message]]


TRANSIENT_RETRIES = RetryPolicy(max_attempts=3, retry_on=TRANSIENT_KINDS, immediate=frozenset())


@dataclass(frozen=True)
class CallOptions:
    """How one logical call is retried and budgeted (docs/engine.md#entry-points), whoever reads its
    answer: ``retry_policy`` (attempts, which failures, waits), ``token_policy`` (the first budget
    and the ceiling; None: the request's ``max_tokens``, never raised), ``expected_tokens`` (what an
    answer usually needs before the container has learned it: a budget the time left cannot hold is
    lowered to what fits rather than refused). The container's memory and clock: ``budgets`` and
    ``speeds`` (what each call needed and how fast each model writes; fresh instances isolate a
    caller) and ``sleep`` (a test's clock). ``engine.StructuredOptions`` adds how a structured
    call's request is made."""

    retry_policy: RetryPolicy = TRANSIENT_RETRIES
    token_policy: TokenPolicy | None = None
    expected_tokens: int | None = None
    sleep: Callable[[float], None] = time.sleep
    budgets: LearnedBudgets = CONTAINER_BUDGETS
    speeds: ModelSpeeds = CONTAINER_SPEEDS


@dataclass(frozen=True)
class LoopOptions:
    """A call's options and what its reader adds: the key its budgets are learned under, when it
    must be done by, and how a rejected answer is fed back."""

    call: CallOptions
    budget_key: str
    deadline: Deadline | None = None
    feedback: Feedback | None = None


@dataclass(frozen=True)
class Accepted(Generic[ValueT]):
    value: ValueT
    response: ChatResponse
    attempts: list[Attempt]
    usage: Usage


@dataclass(frozen=True)
class Stopped:
    """The loop gave up. ``failure`` is the last attempt's (None: no attempt could start);
    ``response`` the last answer when that failure was an answer; ``partial`` an answer the
    deadline cut; ``by_deadline`` whether time, not the ceiling, ended a truncation's retries."""

    reason: StopReason
    message: str
    failure: Rejected | ProviderError | None
    attempts: list[Attempt]
    usage: Usage
    response: ChatResponse | None = None
    partial: ChatResponse | None = None
    by_deadline: bool = False


@dataclass
class _State:
    purpose: str
    tokens: TokenPolicy
    floor: int
    expected: int | None
    answer_failures: int = 0
    feedback: list[Message] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def run_attempts(
    model: ChatModel,
    request: ChatRequest,
    judge: Judge[ValueT],
    options: LoopOptions,
) -> Accepted[ValueT] | Stopped:
    """Send ``request`` until ``judge`` accepts an answer, or stop (see the module docstring)."""
    call, deadline, purpose = options.call, options.deadline, request.purpose
    tokens = call.token_policy or FixedTokenPolicy(request.max_tokens)
    # An answer still arriving this close to the deadline is cut, so the loop returns before it.
    answer_by = None if deadline is None else Deadline(deadline.expires_at - DEADLINE_SLACK_S, deadline.clock)
    learned = call.budgets.need(options.budget_key)
    state = _State(
        purpose,
        tokens,
        floor=call.budgets.start(options.budget_key, tokens.max_tokens(0), tokens.ceiling),
        expected=with_margin(learned) if learned is not None else call.expected_tokens,
    )
    for index in range(call.retry_policy.max_attempts):
        plan = _plan(model, options, state)
        if plan.max_tokens is None:
            message = f"{purpose}: attempt {index + 1} not started: {plan.reason}"
            logger.info(
                "llm attempt not started", extra={"purpose": purpose, "attempt": index + 1, "plan": plan.reason}
            )
            return _stopped("deadline", message, state)
        sent = _sendable(request, state, plan, answer_by)
        attempt = _AttemptLog(state, index + 1, plan.max_tokens, plan.reason)
        sent_at = deadline.clock() if deadline is not None else 0.0
        try:
            response = model.complete(sent)
        except ProviderError as error:
            stopped = _after_failure(model, options, state, attempt, error, index)
            if stopped is not None:
                return stopped
            continue
        calls = _calls_of(model, response.earlier_calls, response)
        billed = sum((call.usage for call in calls), Usage())
        state.usage = state.usage + billed
        call.speeds.record(response.served_by or model.model_name, response.timing, response.usage.completion_tokens)
        # The attempt's pace on the deadline's clock: what the time left allows after a truncation.
        duration_s = deadline.clock() - sent_at if deadline is not None else 0.0
        try:
            value = judge(response)
        except Rejected as rejected:
            truncation = _after_truncation(
                sent, response, rejected, plan, duration_s, ceiling=tokens.ceiling, deadline=deadline
            )
            attempt.ended(rejected.kind, response.finish_reason, billed, _note(rejected, truncation), calls)
            stopped = _after_rejection(model, options, state, rejected, response, truncation, index)
            if stopped is not None:
                return stopped
            continue
        attempt.ended("ok", response.finish_reason, billed, calls=calls)
        if response.finish_reason in COMPLETE_FINISHES:
            written = (response.content or "") + "".join(call.arguments for call in response.tool_calls)
            call.budgets.record(options.budget_key, response.usage.completion_tokens or estimate_tokens(written))
        return Accepted(value, response, state.attempts, state.usage)
    raise AssertionError("unreachable: the loop returns on its last attempt")  # pragma: no cover


def _sendable(request: ChatRequest, state: _State, plan: AttemptPlan, answer_by: Deadline | None) -> ChatRequest:
    """The attempt's request: the feedback so far, the plan's budget, and what its pacing needs."""
    assert plan.max_tokens is not None
    return replace(
        request,
        messages=request.messages + state.feedback,
        max_tokens=plan.max_tokens,
        pacing=replace(
            request.pacing,
            answer_by=answer_by,
            expected_first_token_s=plan.speed.first_token_s,
            planned_s=plan.seconds,
            planned_tokens=plan.max_tokens if state.expected is None else min(plan.max_tokens, state.expected),
            planned_tokens_per_s=plan.speed.tokens_per_s,
        ),
    )


def _after_failure(
    model: ChatModel, options: LoopOptions, state: _State, attempt: _AttemptLog, error: ProviderError, index: int
) -> Stopped | None:
    """A provider failure logged and counted; the loop's end, or None after the wait for the next attempt."""
    purpose, retries = state.purpose, options.call.retry_policy
    last_try = index == retries.max_attempts - 1
    partial = error.partial
    state.usage = state.usage + error.usage
    if partial is not None:  # a cut or dropped answer still showed the model's pace
        arrived = partial.usage.completion_tokens if partial.arrived_tokens is None else partial.arrived_tokens
        options.call.speeds.record(partial.served_by or model.model_name, partial.timing, arrived)
    calls = _calls_of(model, error.earlier_calls, partial)
    attempt.ended(error.kind, None if partial is None else partial.finish_reason, error.usage, str(error), calls)
    if isinstance(error, AnswerCut):
        return _stopped("deadline", f"{purpose}: {error}", state, error, partial=partial)
    if not error.retryable or error.kind not in retries.retry_on or last_try:
        return _stopped("attempts_spent" if last_try else "not_retried", _gave_up(purpose, state, error), state, error)
    retry_after = error.retry_after_s if isinstance(error, RateLimited) else None
    stop = _wait(model, options, state, retries.delay_s(error.kind, index + 1, retry_after), index)
    return None if stop is None else _stopped("deadline", stop, state, error)


def _after_rejection(
    model: ChatModel,
    options: LoopOptions,
    state: _State,
    rejected: Rejected,
    response: ChatResponse,
    truncation: TruncationPlan | None,
    index: int,
) -> Stopped | None:
    """An answer the judge refused: the loop's end, or None once the next attempt is prepared
    (its budget after a truncation, the wait, the feedback)."""
    purpose, retries = state.purpose, options.call.retry_policy
    last_try = index == retries.max_attempts - 1
    state.answer_failures += 1
    if rejected.kind not in retries.retry_on or last_try:
        reason: StopReason = "attempts_spent" if last_try else "not_retried"
        return _stopped(
            reason, _gave_up(purpose, state, rejected, _note(rejected, truncation)), state, rejected, response
        )
    if truncation is not None:
        if truncation.max_tokens is None:
            message = f"{purpose}: stopped after {len(state.attempts)} attempt(s): {truncation.reason}"
            return _stopped("truncation_limit", message, state, rejected, response, by_deadline=truncation.by_deadline)
        state.floor = state.expected = truncation.max_tokens
    stop = _wait(model, options, state, retries.delay_s(rejected.kind, index + 1), index)
    if stop is not None:
        return _stopped("deadline", stop, state, rejected, response)
    if options.feedback is not None and rejected.answer is not None and rejected.kind != "length":
        state.feedback = options.feedback(rejected)
    return None


def _plan(model: ChatModel, options: LoopOptions, state: _State, waiting_s: float = 0.0) -> AttemptPlan:
    tokens = state.tokens
    budget = min(tokens.ceiling, max(tokens.max_tokens(state.answer_failures), state.floor))
    deadline = options.deadline
    seconds_left = None if deadline is None else deadline.remaining_s() - DEADLINE_SLACK_S - waiting_s
    return plan_attempt(
        options.call.speeds.estimate(model.model_name, speed_prior(model)),
        max_tokens=budget,
        seconds_left=seconds_left,
        expected_tokens=state.expected,
    )


def _wait(model: ChatModel, options: LoopOptions, state: _State, delay: float, index: int) -> str | None:
    """Sleep ``delay`` before the next attempt, or say why not: the wait and the next attempt's
    plan would pass the deadline."""
    if options.deadline is not None:
        plan = _plan(model, options, state, waiting_s=delay)
        if plan.max_tokens is None:
            return f"waiting {delay:.1f} s before attempt {index + 2} leaves too little time: {plan.reason}"
    if delay > 0:
        options.call.sleep(delay)
    return None


def _after_truncation(
    sent: ChatRequest,
    response: ChatResponse,
    rejected: Rejected,
    plan: AttemptPlan,
    duration_s: float,
    *,
    ceiling: int,
    deadline: Deadline | None,
) -> TruncationPlan | None:
    if rejected.kind != "length" or plan.max_tokens is None:
        return None
    return plan_retry(
        sent,
        response,
        spent=max(plan.max_tokens, response.usage.completion_tokens),
        schema=sent.hints.output_schema,
        ceiling=ceiling,
        duration_s=duration_s,
        deadline=deadline,
    )


def _note(rejected: Rejected, truncation: TruncationPlan | None) -> str:
    return str(rejected) if truncation is None else f"{rejected}: {truncation.reason}"


def _calls_of(model: ChatModel, earlier: tuple[ModelCall, ...], answer: ChatResponse | None) -> tuple[ModelCall, ...]:
    """The model calls one attempt was billed for: a chain's links that failed before, then the
    call that answered (or failed: its partial answer's usage, none when nothing arrived), each
    named as the provider named the model that answered, else as its link is named."""
    if answer is None:
        return earlier or (ModelCall(model.model_name, Usage()),)
    # The provider's name for the model when it gave one (a dated snapshot has its own price).
    return (*earlier, ModelCall(answer.model or answer.served_by or model.model_name, answer.usage))


def _gave_up(purpose: str, state: _State, failure: Exception, note: str | None = None) -> str:
    return f"{purpose}: gave up after {len(state.attempts)} attempt(s): {note or failure}"


def _stopped(
    reason: StopReason,
    message: str,
    state: _State,
    failure: Rejected | ProviderError | None = None,
    response: ChatResponse | None = None,
    *,
    partial: ChatResponse | None = None,
    by_deadline: bool = False,
) -> Stopped:
    return Stopped(reason, message, failure, state.attempts, state.usage, response, partial, by_deadline)


class _AttemptLog:
    """One attempt from its start: when it ends, its record joins the loop's attempt log and its
    log line is written (``log_attempt``), whatever ended it."""

    def __init__(self, state: _State, number: int, max_tokens: int, plan: str) -> None:
        self._purpose, self._state = state.purpose, state
        self._number, self._max_tokens, self._plan = number, max_tokens, plan
        self._started = time.perf_counter()

    def ended(
        self,
        outcome: str,
        finish_reason: str | None,
        usage: Usage,
        note: str | None = None,
        calls: tuple[ModelCall, ...] = (),
    ) -> None:
        attempt = Attempt(
            self._number,
            self._max_tokens,
            outcome,
            finish_reason,
            usage,
            elapsed_ms(self._started),
            note,
            self._plan,
            calls,
        )
        self._state.attempts.append(attempt)
        log_attempt(self._purpose, attempt)


def log_attempt(purpose: str, attempt: Attempt) -> None:
    """One INFO line per model call (no prompt or answer text)."""
    logger.info(
        "llm attempt",
        extra={
            "purpose": purpose,
            "attempt": attempt.number,
            "max_tokens": attempt.max_tokens,
            "outcome": attempt.outcome,
            "finish_reason": attempt.finish_reason,
            "total_tokens": attempt.usage.total_tokens,
            "duration_ms": attempt.duration_ms,
            "plan": attempt.plan,
        },
    )
