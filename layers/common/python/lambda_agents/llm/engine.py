"""The structured-output engine: one call from an output model to a validated object.

What it guarantees, attempt after attempt (docs/engine.md):
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
- No attempt starts that cannot finish before the deadline at the model's learned pace, and an
  answer the deadline cuts is closed at once (``retry_loop``).
- Usage is summed over every attempt, failed ones included, and every attempt is logged.

The attempts themselves run in ``retry_loop.run_attempts``, the loop ``complete_with_retries``
shares; this module only says how the schema reaches the model and how an answer is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from ..validation_errors import summarise_errors
from .budgets import structured_key
from .errors import (
    ContentFiltered,
    DeadlineReached,
    ModelRefused,
    OutputInvalid,
    OutputTruncated,
    ProviderError,
    ProviderFailed,
    StructuredOutputError,
    UnexpectedFinish,
)
from .json_extraction import extract_json
from .policy import Deadline, GrowingTokenPolicy, RetryPolicy, TokenPolicy
from .retry_loop import Accepted, CallOptions, LoopOptions, Rejected, Stopped, run_attempts
from .schema import model_schema, strict_schema
from .types import (
    TOOL_NAME,
    AnswerHints,
    Attempt,
    ChatModel,
    ChatRequest,
    ChatResponse,
    JsonOutput,
    Message,
    RequestParameters,
    ServiceTier,
    ToolDefinition,
    Usage,
)

OutputT = TypeVar("OutputT", bound=BaseModel)
FEEDBACK_EXCERPT_CHARS = 4000


class Strategy(StrEnum):
    """How the schema reaches the model (the three strategies of docs/engine.md#structured-output)."""

    JSON_SCHEMA = "json_schema"  # API-level structured output (OpenAI response_format)
    TOOL = "tool"  # a forced tool call named StructuredOutput (Claude-style)
    PROMPTED = "prompted"  # schema in the prompt, JSON extracted from text (OpenCode-style)


@dataclass(frozen=True)
class StructuredResult(Generic[OutputT]):
    value: OutputT
    attempts: list[Attempt]
    usage: Usage
    raw: str
    model: str
    service_tier: str | None = None  # the tier the provider says it processed the answer in


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


@dataclass(frozen=True)
class StructuredOptions(CallOptions):
    """How a structured call is made, beyond what it asks for (docs/engine.md#entry-points): the
    policies, the container's memory and clock of every call (``CallOptions``; here a growing token
    policy and every failure kind retried by default), and how the request is made: ``strategy``
    (how the schema reaches the model), ``purpose`` (the call's name in logs, spans and the
    offline model), ``service_tier`` (the provider's processing tier; None: the account's default),
    ``temperature``, the answer's ``language`` (for the offline model), ``schema_instruction``
    (the prompted strategy's wording)."""

    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    token_policy: TokenPolicy = field(default_factory=GrowingTokenPolicy)
    strategy: Strategy = Strategy.JSON_SCHEMA
    purpose: str = "structured"
    service_tier: ServiceTier | None = None
    temperature: float | None = None
    language: str | None = None
    schema_instruction: Callable[[dict[str, Any]], str] = default_schema_instruction


DEFAULT_OPTIONS = StructuredOptions()


def generate_structured(
    model: ChatModel,
    output_type: type[OutputT],
    messages: list[Message],
    options: StructuredOptions = DEFAULT_OPTIONS,
    *,
    deadline: Deadline | None = None,
    validator: Callable[[OutputT], None] | None = None,
) -> StructuredResult[OutputT]:
    """Call ``model`` until it returns an ``output_type`` that validates, or raise a typed error.

    ``options`` says how (``StructuredOptions``); ``deadline`` is when the caller needs the answer
    by; ``validator`` adds checks the schema cannot express (e.g. "slotIndex values are exactly the
    slot table's"): it raises ValueError, which is fed back and retried like a schema error.
    """
    wire_schema = strict_schema(output_type)
    request = structured_request(output_type, wire_schema, messages, options)
    loop = LoopOptions(
        options, structured_key(model.model_name, options.strategy.value, wire_schema), deadline, _feedback
    )

    def judge(response: ChatResponse) -> tuple[OutputT, str]:
        return _accept(response, output_type, options.strategy, validator)

    outcome = run_attempts(model, request, judge, loop)
    if isinstance(outcome, Accepted):
        value, raw = outcome.value
        return StructuredResult(
            value,
            outcome.attempts,
            outcome.usage,
            raw,
            outcome.response.model or model.model_name,
            outcome.response.service_tier,
        )
    raise structured_error(outcome)


def first_structured_request(
    output_type: type[BaseModel], messages: list[Message], options: StructuredOptions = DEFAULT_OPTIONS
) -> ChatRequest:
    """The request ``generate_structured``'s first attempt sends, with the token policy's first
    budget: what a batch job sends for the same call (nothing has been learned for it yet)."""
    tokens = options.token_policy
    request = structured_request(output_type, strict_schema(output_type), messages, options)
    return replace(request, max_tokens=min(tokens.ceiling, tokens.max_tokens(0)))


def read_structured_answer(
    response: ChatResponse,
    output_type: type[OutputT],
    *,
    strategy: Strategy = Strategy.JSON_SCHEMA,
    validator: Callable[[OutputT], None] | None = None,
) -> OutputT:
    """One answer read by ``generate_structured``'s rules, without a retry (a batch job's answer):
    the loop's own ``Rejected`` says why it is not usable (``kind``: length, refusal, validation, ...)."""
    value, _ = _accept(response, output_type, strategy, validator)
    return value


def structured_error(stopped: Stopped) -> StructuredOutputError:
    """The typed error a caller of ``generate_structured`` acts on, for each way the loop stops."""
    error = _structured_error(stopped)
    if isinstance(stopped.failure, ProviderError):
        error.retry_after_s = stopped.failure.retry_after_s
    return error


def _structured_error(stopped: Stopped) -> StructuredOutputError:
    failure = stopped.failure
    if stopped.reason == "deadline" or (stopped.reason == "truncation_limit" and stopped.by_deadline):
        return DeadlineReached(stopped.message, stopped.attempts, stopped.usage, stopped.partial)
    if stopped.reason == "truncation_limit":
        return OutputTruncated(stopped.message, stopped.attempts, stopped.usage)
    if isinstance(failure, ProviderError):
        return ProviderFailed(stopped.message, stopped.attempts, stopped.usage, failure)
    kind = failure.kind if isinstance(failure, Rejected) else "unexpected_finish"
    return _TERMINAL.get(kind, UnexpectedFinish)(stopped.message, stopped.attempts, stopped.usage)


def structured_request(
    output_type: type[BaseModel],
    wire_schema: dict[str, Any],
    messages: list[Message],
    options: StructuredOptions = DEFAULT_OPTIONS,
) -> ChatRequest:
    """The provider-neutral request of one structured call: the schema as native structured
    output, as the forced ``StructuredOutput`` tool, or in the prompt."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", output_type.__name__)[:64] or "output"
    strategy = options.strategy
    messages = list(messages)
    if strategy is Strategy.JSON_SCHEMA:
        parameters = RequestParameters(json_output=JsonOutput(name, wire_schema))
    elif strategy is Strategy.TOOL:
        parameters = RequestParameters(tools=(structured_tool(wire_schema),), tool_choice=TOOL_NAME)
    else:
        parameters = RequestParameters()
        messages.append({"role": "system", "content": options.schema_instruction(wire_schema)})
    return ChatRequest(
        messages=messages,
        max_tokens=0,
        temperature=options.temperature,
        parameters=replace(parameters, service_tier=options.service_tier),
        purpose=options.purpose,
        hints=AnswerHints(model_schema(output_type), options.language),
    )


def structured_tool(schema: dict[str, Any], strict: bool = True) -> ToolDefinition:
    """The forced ``StructuredOutput`` tool whose arguments are the answer (the TOOL strategy)."""
    return ToolDefinition(TOOL_NAME, "Return the final answer as the tool's arguments.", schema, strict)


def _accept(
    response: ChatResponse,
    output_type: type[OutputT],
    strategy: Strategy,
    validator: Callable[[OutputT], None] | None,
) -> tuple[OutputT, str]:
    if response.refusal:
        raise Rejected("refusal", f"model refused: {response.refusal[:200]}")
    finish = response.finish_reason
    if finish == "length":
        raise Rejected("length", "answer truncated (finish_reason=length)", response.content)
    if finish == "content_filter":
        raise Rejected("content_filter", "answer stopped by the content filter")
    accepted = {"stop", "tool_calls"} if strategy is Strategy.TOOL else {"stop"}
    if finish not in accepted:
        raise Rejected("unexpected_finish", f"unexpected finish_reason {finish!r}")
    if strategy is Strategy.TOOL:
        call = next((c for c in response.tool_calls if c.name == TOOL_NAME), None)
        if call is None:
            raise Rejected("validation", f"no {TOOL_NAME} tool call in the answer", response.content or "")
        raw = call.arguments
        data = _json_or_fail(raw)
    elif strategy is Strategy.PROMPTED:
        raw = response.content or ""
        data = extract_json(raw)
        if data is None:
            raise Rejected("invalid_json", "no JSON object found in the answer", raw)
    else:
        raw = response.content or ""
        data = _json_or_fail(raw)
    try:
        value = output_type.model_validate(data)
    except ValidationError as error:
        raise Rejected("validation", summarise_errors(error, root="<root>"), raw) from None
    if validator is not None:
        try:
            validator(value)
        except ValueError as error:
            raise Rejected("validation", str(error), raw) from None
    return value, raw


def _json_or_fail(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as error:
        raise Rejected("invalid_json", f"answer is not valid JSON: {error}", raw) from None


def _feedback(failure: Rejected) -> list[Message]:
    answer = (failure.answer or "")[:FEEDBACK_EXCERPT_CHARS]
    return [
        {"role": "assistant", "content": answer},
        {
            "role": "user",
            "content": f"That answer was rejected: {failure}. Reply again with the complete corrected JSON.",
        },
    ]
