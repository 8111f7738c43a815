"""The structured-output engine: one call from an output model to a validated object.

What it guarantees, attempt after attempt (spec 000 §2):
- finish_reason ``stop`` -> parse and validate; ``length`` -> the partial answer is read against
  the schema and the next attempt asks for what it still needs plus a margin
  (``truncation.plan_retry``), or the engine stops at once when that is above the ceiling or
  what the deadline allows (no call that must truncate again); ``content_filter`` -> retried by
  default; a refusal -> a typed error (``RetryPolicy.retry_on`` decides both); anything else ->
  typed error.
- The first attempt starts no lower than what answers of the same type needed before in this
  container (``budgets.LearnedBudgets``), so a type's need is paid for once, not on every call.
- A validation failure is retried with the error fed back; only the latest failed answer is
  kept in the prompt, so the prompt never grows attempt after attempt.
- Usage is summed over every attempt, failed ones included, and every attempt is logged.
- No wait (backoff or Retry-After) and no request may run past the deadline: the engine raises
  ``DeadlineReached`` while the caller still has time to store a fallback.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from ..observability import elapsed_ms, logger
from ..validation_errors import summarise_errors
from .budgets import CONTAINER_BUDGETS, LearnedBudgets, structured_key
from .errors import (
    ContentFiltered,
    DeadlineReached,
    ModelRefused,
    OutputInvalid,
    OutputTruncated,
    ProviderError,
    ProviderFailed,
    RateLimited,
    StructuredOutputError,
    UnexpectedFinish,
)
from .json_extraction import extract_json
from .policy import DEADLINE_SLACK_S, Deadline, GrowingTokenPolicy, RetryPolicy, TokenPolicy
from .schema import model_schema, strict_schema
from .truncation import TruncationPlan, plan_retry
from .types import ChatModel, ChatRequest, ChatResponse, Message, Usage, estimate_tokens

OutputT = TypeVar("OutputT", bound=BaseModel)
TOOL_NAME = "StructuredOutput"
FEEDBACK_EXCERPT_CHARS = 4000


class Strategy(StrEnum):
    """How the schema reaches the model (spec 004's three provider strategies)."""

    JSON_SCHEMA = "json_schema"  # API-level response_format (OpenAI structured outputs)
    TOOL = "tool"  # a forced tool call named StructuredOutput (Claude-style)
    PROMPTED = "prompted"  # schema in the prompt, JSON extracted from text (OpenCode-style)


@dataclass(frozen=True)
class Attempt:
    number: int
    max_tokens: int
    outcome: str
    finish_reason: str | None
    usage: Usage
    duration_ms: int
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["usage"] = self.usage.as_dict()
        return data


@dataclass(frozen=True)
class StructuredResult(Generic[OutputT]):
    value: OutputT
    attempts: list[Attempt]
    usage: Usage
    raw: str
    model: str


class _AttemptFailed(Exception):
    def __init__(self, kind: str, message: str, answer: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.answer = answer


_TERMINAL: dict[str, type[StructuredOutputError]] = {
    "length": OutputTruncated,
    "content_filter": ContentFiltered,
    "refusal": ModelRefused,
    "validation": OutputInvalid,
    "invalid_json": OutputInvalid,
    "unexpected_finish": UnexpectedFinish,
}


def default_schema_instruction(schema: dict[str, Any]) -> str:
    return (
        "Respond with a single JSON object that conforms to this JSON Schema. "
        "Output the JSON only, without explanation.\n```json\n" + json.dumps(schema, ensure_ascii=False) + "\n```"
    )


def generate_structured(
    model: ChatModel,
    output_type: type[OutputT],
    messages: list[Message],
    *,
    strategy: Strategy = Strategy.JSON_SCHEMA,
    token_policy: TokenPolicy | None = None,
    retry_policy: RetryPolicy | None = None,
    deadline: Deadline | None = None,
    validator: Callable[[OutputT], None] | None = None,
    purpose: str = "structured",
    temperature: float | None = None,
    language: str | None = None,
    request_timeout_s: float = 25.0,
    min_attempt_s: float = 2.0,
    schema_instruction: Callable[[dict[str, Any]], str] = default_schema_instruction,
    sleep: Callable[[float], None] = time.sleep,
    budgets: LearnedBudgets = CONTAINER_BUDGETS,
) -> StructuredResult[OutputT]:
    """Call ``model`` until it returns an ``output_type`` that validates, or raise a typed error.

    ``validator`` adds checks the schema cannot express (e.g. "slotIndex values are exactly the
    slot table's"); it raises ValueError, which is fed back and retried like a schema error.
    ``budgets`` is the container's memory of what each output type needed (a fresh
    ``LearnedBudgets()`` isolates a caller from it).
    """
    tokens = token_policy or GrowingTokenPolicy()
    retries = retry_policy or RetryPolicy()
    wire_schema = strict_schema(output_type)
    base_request = _base_request(
        output_type, wire_schema, strategy, messages, schema_instruction, purpose, temperature, language
    )
    budget_key = structured_key(model.model_name, strategy.value, wire_schema)
    # The budget never falls below what this type needed before, or what a truncation proved.
    floor = budgets.start(budget_key, tokens.max_tokens(0), tokens.ceiling)
    attempts: list[Attempt] = []
    usage = Usage()
    feedback: list[Message] = []

    for index in range(retries.max_attempts):
        max_tokens = min(tokens.ceiling, max(tokens.max_tokens(index), floor))
        timeout = request_timeout_s
        if deadline is not None:
            remaining = deadline.remaining_s()
            if remaining < min_attempt_s:
                raise DeadlineReached(
                    f"{purpose}: {remaining:.1f}s left, too little for attempt {index + 1}", attempts, usage
                )
            timeout = min(timeout, max(remaining - DEADLINE_SLACK_S, remaining / 2))
        request = ChatRequest(
            messages=base_request.messages + feedback,
            max_tokens=max_tokens,
            temperature=base_request.temperature,
            response_format=base_request.response_format,
            tools=base_request.tools,
            tool_choice=base_request.tool_choice,
            timeout_s=timeout,
            purpose=purpose,
            output_schema=base_request.output_schema,
            language=language,
        )
        started = time.perf_counter()
        sent_at = deadline.clock() if deadline is not None else 0.0
        failure: _AttemptFailed | ProviderError
        plan: TruncationPlan | None = None
        try:
            response = model.complete(request)
        except ProviderError as error:
            failure = error
            attempt = Attempt(index + 1, max_tokens, error.kind, None, Usage(), elapsed_ms(started), str(error))
        else:
            usage = usage + response.usage
            # The attempt's pace on the deadline's clock: what the time left allows after a truncation.
            duration_s = deadline.clock() - sent_at if deadline is not None else 0.0
            try:
                value, raw = _accept(response, output_type, strategy, validator)
            except _AttemptFailed as failed:
                failure = failed
                message = str(failed)
                if failed.kind == "length":
                    plan = plan_retry(
                        request,
                        response,
                        spent=max(max_tokens, response.usage.completion_tokens),
                        schema=base_request.output_schema,
                        ceiling=tokens.ceiling,
                        duration_s=duration_s,
                        deadline=deadline,
                    )
                    message = f"{failed}: {plan.reason}"
                    failure = _AttemptFailed("length", message, failed.answer)
                attempt = Attempt(
                    index + 1,
                    max_tokens,
                    failed.kind,
                    response.finish_reason,
                    response.usage,
                    elapsed_ms(started),
                    message,
                )
            else:
                attempts.append(
                    Attempt(index + 1, max_tokens, "ok", response.finish_reason, response.usage, elapsed_ms(started))
                )
                log_attempt(purpose, attempts[-1])
                budgets.record(budget_key, response.usage.completion_tokens or estimate_tokens(raw))
                return StructuredResult(value, attempts, usage, raw, response.model or model.model_name)
        attempts.append(attempt)
        log_attempt(purpose, attempt)
        kind = failure.kind
        retryable = kind in retries.retry_on and (not isinstance(failure, ProviderError) or failure.retryable)
        if not retryable or index == retries.max_attempts - 1:
            raise _terminal(purpose, failure, attempts, usage)
        if plan is not None:
            if plan.max_tokens is None:
                stop = DeadlineReached if plan.by_deadline else OutputTruncated
                raise stop(f"{purpose}: stopped after {len(attempts)} attempt(s): {plan.reason}", attempts, usage)
            floor = plan.max_tokens
        retry_after = failure.retry_after_s if isinstance(failure, RateLimited) else None
        delay = retries.delay_s(kind, index + 1, retry_after)
        if deadline is not None and delay + min_attempt_s > deadline.remaining_s():
            raise DeadlineReached(
                f"{purpose}: waiting {delay:.1f}s before attempt {index + 2} would pass the deadline",
                attempts,
                usage,
            )
        if isinstance(failure, _AttemptFailed) and failure.answer is not None and kind != "length":
            feedback = _feedback(failure)
        if delay > 0:
            sleep(delay)
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


def _base_request(
    output_type: type[BaseModel],
    wire_schema: dict[str, Any],
    strategy: Strategy,
    messages: list[Message],
    schema_instruction: Callable[[dict[str, Any]], str],
    purpose: str,
    temperature: float | None,
    language: str | None,
) -> ChatRequest:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", output_type.__name__)[:64] or "output"
    rich_schema = model_schema(output_type)
    if strategy is Strategy.JSON_SCHEMA:
        return ChatRequest(
            messages=list(messages),
            max_tokens=0,
            temperature=temperature,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": wire_schema},
            },
            purpose=purpose,
            output_schema=rich_schema,
            language=language,
        )
    if strategy is Strategy.TOOL:
        tool = {
            "type": "function",
            "function": {
                "name": TOOL_NAME,
                "description": "Return the final answer as the tool's arguments.",
                "parameters": wire_schema,
                "strict": True,
            },
        }
        return ChatRequest(
            messages=list(messages),
            max_tokens=0,
            temperature=temperature,
            tools=[tool],
            tool_choice={"type": "function", "function": {"name": TOOL_NAME}},
            purpose=purpose,
            output_schema=rich_schema,
            language=language,
        )
    instruction: Message = {"role": "system", "content": schema_instruction(wire_schema)}
    return ChatRequest(
        messages=[*messages, instruction],
        max_tokens=0,
        temperature=temperature,
        purpose=purpose,
        output_schema=rich_schema,
        language=language,
    )


def _accept(
    response: ChatResponse,
    output_type: type[OutputT],
    strategy: Strategy,
    validator: Callable[[OutputT], None] | None,
) -> tuple[OutputT, str]:
    if response.refusal:
        raise _AttemptFailed("refusal", f"model refused: {response.refusal[:200]}")
    finish = response.finish_reason
    if finish == "length":
        raise _AttemptFailed("length", "answer truncated (finish_reason=length)", response.content)
    if finish == "content_filter":
        raise _AttemptFailed("content_filter", "answer stopped by the content filter")
    accepted = {"stop", "tool_calls"} if strategy is Strategy.TOOL else {"stop"}
    if finish not in accepted:
        raise _AttemptFailed("unexpected_finish", f"unexpected finish_reason {finish!r}")
    if strategy is Strategy.TOOL:
        call = next((c for c in response.tool_calls if c.name == TOOL_NAME), None)
        if call is None:
            raise _AttemptFailed("validation", f"no {TOOL_NAME} tool call in the answer", response.content or "")
        raw = call.arguments
        data = _json_or_fail(raw)
    elif strategy is Strategy.PROMPTED:
        raw = response.content or ""
        data = extract_json(raw)
        if data is None:
            raise _AttemptFailed("invalid_json", "no JSON object found in the answer", raw)
    else:
        raw = response.content or ""
        data = _json_or_fail(raw)
    try:
        value = output_type.model_validate(data)
    except ValidationError as error:
        raise _AttemptFailed("validation", summarise_errors(error, root="<root>"), raw) from None
    if validator is not None:
        try:
            validator(value)
        except ValueError as error:
            raise _AttemptFailed("validation", str(error), raw) from None
    return value, raw


def _json_or_fail(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as error:
        raise _AttemptFailed("invalid_json", f"answer is not valid JSON: {error}", raw) from None


def _feedback(failure: _AttemptFailed) -> list[Message]:
    answer = (failure.answer or "")[:FEEDBACK_EXCERPT_CHARS]
    return [
        {"role": "assistant", "content": answer},
        {
            "role": "user",
            "content": f"That answer was rejected: {failure}. Reply again with the complete corrected JSON.",
        },
    ]


def _terminal(
    purpose: str, failure: _AttemptFailed | ProviderError, attempts: list[Attempt], usage: Usage
) -> StructuredOutputError:
    message = f"{purpose}: gave up after {len(attempts)} attempt(s): {failure}"
    if isinstance(failure, ProviderError):
        return ProviderFailed(message, attempts, usage, failure)
    return _TERMINAL[failure.kind](message, attempts, usage)


def log_attempt(purpose: str, attempt: Attempt) -> None:
    """One INFO line per model call, for the engine and ``llm.calls`` alike (no prompt or answer text)."""
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
        },
    )
