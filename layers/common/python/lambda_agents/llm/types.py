"""Provider-neutral request and response types: the port between the engine and a model.

A request says what the caller wants in the engine's own words, as pydantic-ai's models take one:
the messages, the settings (``max_tokens``, ``temperature``) and the request parameters
(``RequestParameters``: the function tools the model may call, ``ToolDefinition``, which of them
it must call and, for native structured output, the JSON schema the answer must follow,
``JsonOutput``). Only ``openai_model`` turns these into OpenAI's ``response_format`` / ``tools`` /
``tool_choice`` dicts, so domains, tests and the offline model stay free of the SDK and of its
~1 s import, and a second provider needs a second adapter, not changes in every caller. What the
provider never sees is grouped apart: ``AnswerHints`` for reading the answer, ``Pacing`` for
timing it, ``AnswerListener`` for hearing it as it is written.

``Attempt`` (one model call as the attempt log records it) lives here too, beside ``Usage``:
errors, the retry loop and the callers all need it, and none of them may import another for it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..observability import logger

if TYPE_CHECKING:
    from .policy import Deadline

Message = dict[str, Any]
# The forced tool the TOOL strategy answers through (docs/engine.md#structured-output).
TOOL_NAME = "StructuredOutput"


@dataclass(frozen=True)
class Usage:
    """Tokens reported by the provider (or estimated by the offline model).

    ``reasoning_tokens`` is the part of ``completion_tokens`` a reasoning model spent before its
    visible answer: the truncation estimate counts it as spent again, not as answer text.
    ``estimated``: the provider reported nothing (an answer cut before its usage chunk), so the
    figures are counted from what was received, as the provider would bill it.
    ``cached_prompt_tokens`` is the part of ``prompt_tokens`` the provider served from its prompt
    cache, billed at a lower price (the dashboard's cost estimate counts them apart)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False
    cached_prompt_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.estimated or other.estimated,
            self.cached_prompt_tokens + other.cached_prompt_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "totalTokens": self.total_tokens,
        }


@dataclass(frozen=True)
class ModelCall:
    """One call to one model as the provider bills it: which model (a chain's link) and its usage.
    One attempt is one call, or several when a chain's links failed before one answered: each is
    billed at its own model's price (``accounting``)."""

    model: str
    usage: Usage


@dataclass(frozen=True)
class ToolDefinition:
    """A function the model may call: its name, what it is for, and its arguments' JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool = True


@dataclass(frozen=True)
class JsonOutput:
    """The answer is one JSON value of ``schema`` (the provider's native structured output)."""

    name: str
    schema: dict[str, Any]
    strict: bool = True


# "auto": the model decides; "required": some tool; "none": no tool; any other value names the
# one tool the model must call.
ToolChoice = Literal["auto", "required", "none"] | str
# The provider's processing tier: "default" (the account's standard), or "flex" (OpenAI: Batch API
# prices on a synchronous call, slower, and a 429 when its capacity is short; docs/nudges.md#flex-processing).
ServiceTier = Literal["default", "flex"]


@dataclass(frozen=True)
class RequestParameters:
    """What the model may answer with, in the engine's words (pydantic-ai's
    ``ModelRequestParameters``): one JSON value of a schema (``json_output``, the provider's native
    structured output), calls to ``tools``, ``tool_choice`` (which of them it must call) and
    ``parallel_tool_calls`` (False: at most one call per answer, for an agent loop that validates
    each call in turn; None: the provider's default) and ``service_tier`` (the processing tier the
    call asks for; None: the account's default, nothing sent). Only ``openai_model.openai_arguments`` turns
    them into OpenAI's ``response_format`` / ``tools`` / ``tool_choice``, and a model chain's link
    rewrites them for a model that takes the schema another way (``model_chain.for_output``)."""

    json_output: JsonOutput | None = None
    tools: tuple[ToolDefinition, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    service_tier: ServiceTier | None = None


@dataclass(frozen=True)
class AnswerHints:
    """What the engine knows of the answer that is never sent to a provider: ``output_schema``
    (the full pydantic schema, with its offline hints) and the answer's ``language``. They let the
    offline model write valid, meaningful content, and the truncation estimate read a partial
    answer against its schema."""

    output_schema: dict[str, Any] | None = None
    language: str | None = None


@dataclass(frozen=True)
class Pacing:
    """How one attempt is paced: set by the retry loop for each attempt, except ``cut_when_late``,
    which is the caller's. A model adapter hands it to its pacing (``pacing.Pacer``); no other part
    of a request is about time.

    ``answer_by`` is the retry loop's deadline for this attempt: a streamed answer still arriving
    then is cut and closed (the provider stops generating and billing). ``expected_first_token_s``
    is the pace the attempt was planned with (learned, or the function's setting): a model that
    thinks long is waited for longer; ``planned_s`` how long the whole answer was planned to take,
    so a wait for the rate limit that would not leave it that time is not taken, and a started
    answer's pause is waited out while ``answer_by`` still leaves that time for another attempt (a
    worker with minutes rides out what a request with seconds cuts at the stall limit);
    ``planned_tokens`` the size it was planned at, ``planned_tokens_per_s`` the pace.
    ``cut_when_late``: a caller with a better place for an answer that will not be done in time
    (the chat route hands it to its worker) has a streamed answer checked against its plan as it
    arrives (``speeds.PaceForecast``) and cut as soon as its pace, or a first token that has not
    come, shows it cannot be done by ``answer_by``. Others let it run to the deadline: a forecast
    can be wrong, and for them a cut answer that would have finished is lost work."""

    answer_by: Deadline | None = None
    expected_first_token_s: float | None = None
    planned_s: float | None = None
    planned_tokens: int | None = None
    planned_tokens_per_s: float | None = None
    cut_when_late: bool = False


class AnswerListener(Protocol):
    """Hears an answer as the model writes it, to show its words before the answer is whole
    (docs/api.md#websocket). A model adapter calls it from the thread that reads the stream:

    - ``attempt_started()`` before each call to the model: what an earlier attempt (a retry, a
      chain's next link) wrote is void, the new words start again at the answer's beginning;
    - ``text(piece)`` for each piece of the answer's text, in order, as it arrives;
    - ``tool_arguments(index, name, piece)`` for each piece of a tool call's JSON arguments:
      ``index`` the call's position in the answer, ``name`` the tool's (known from the first piece).

    A model that does not stream (``OPENAI_STREAM=false``, the offline model) calls it once with
    the whole text or arguments: never invented pacing. What is heard is not the answer: the
    answer is what ``complete`` returns, read and validated by the caller. A listener must be quick
    (it runs between two chunks); one that raises is logged and not called again for the request
    (``HeardAnswer``), and the answer goes on."""

    def attempt_started(self) -> None: ...

    def text(self, piece: str) -> None: ...

    def tool_arguments(self, index: int, name: str, piece: str) -> None: ...


class HeardAnswer:
    """A request's ``AnswerListener`` as a model adapter calls it: a failure in the listener is
    logged once and the listener dropped for the rest of the request (every attempt of it), so
    it can never slow or break the stream. ``ChatRequest`` wraps its listener in one."""

    def __init__(self, listener: AnswerListener) -> None:
        self._listener: AnswerListener | None = listener

    def attempt_started(self) -> None:
        self._call("attempt_started")

    def text(self, piece: str) -> None:
        if piece:
            self._call("text", piece)

    def tool_arguments(self, index: int, name: str, piece: str) -> None:
        if piece:
            self._call("tool_arguments", index, name, piece)

    def whole(self, response: ChatResponse) -> None:
        """A model that does not stream: the whole answer, heard at once."""
        self.text(response.content or "")
        for index, call in enumerate(response.tool_calls):
            self.tool_arguments(index, call.name, call.arguments)

    def _call(self, method: str, *args: Any) -> None:
        listener = self._listener
        if listener is None:
            return
        try:
            getattr(listener, method)(*args)
        except Exception:
            self._listener = None
            logger.exception("answer listener failed: dropped for this request")


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion call, as pydantic-ai's models take one: the messages, the sampling
    settings (``max_tokens``, ``temperature``), what the model may answer with (``parameters``),
    and four things the provider never sees: ``purpose`` (the call's name in logs, spans, learned
    budgets and the offline model's responders), ``hints`` for reading the answer, ``pacing``
    for timing it, and ``listener`` for hearing it as it is written (``AnswerListener``; kept as
    one ``HeardAnswer`` through every copy the retry loop makes of the request)."""

    messages: list[Message]
    max_tokens: int
    temperature: float | None = None
    parameters: RequestParameters = RequestParameters()
    purpose: str = "generic"
    hints: AnswerHints = AnswerHints()
    pacing: Pacing = Pacing()
    listener: AnswerListener | None = None

    def __post_init__(self) -> None:
        if self.listener is not None and not isinstance(self.listener, HeardAnswer):
            object.__setattr__(self, "listener", HeardAnswer(self.listener))

    def heard(self) -> HeardAnswer | None:
        """The listener as an adapter calls it (None: nobody listens)."""
        return self.listener if isinstance(self.listener, HeardAnswer) else None

    def tool(self, name: str) -> ToolDefinition | None:
        return next((tool for tool in self.parameters.tools if tool.name == name), None)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ResponseTiming:
    """How the answer arrived: seconds from sending to the first token, and to the last one.
    ``streamed`` is False when only the whole answer's time is known (no first token seen)."""

    first_token_s: float
    total_s: float
    streamed: bool = True

    @property
    def generation_s(self) -> float:
        return max(0.0, self.total_s - self.first_token_s)


@dataclass(frozen=True)
class ChatResponse:
    content: str | None
    finish_reason: str
    refusal: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    timing: ResponseTiming | None = None
    # The adapter that answered (a chain's link): whose pace the answer teaches.
    served_by: str = ""
    # The calls of the same attempt to a chain's links that failed before this one answered:
    # billed (a cut stream's tokens above all), though not part of this answer's ``usage``.
    earlier_calls: tuple[ModelCall, ...] = ()
    # The tier the provider says it processed the call in (its ``service_tier``; None: it did not
    # say): what the answer is billed at, whatever was asked for.
    service_tier: str | None = None
    # The completion tokens that arrived, when fewer than ``usage`` bills (a stream ended early,
    # billed on the safe side): what the model's pace is learned from.
    arrived_tokens: int | None = None


class ChatModel(Protocol):
    """Anything that answers a ChatRequest: the openai client, the offline model, a test script."""

    @property
    def model_name(self) -> str: ...

    def complete(self, request: ChatRequest) -> ChatResponse: ...


@dataclass(frozen=True)
class Attempt:
    """One model call as the attempt log keeps it. ``plan`` says what the call was planned to
    take (tokens, the model's pace, the time left), so a log reader sees why it was started,
    lowered or not made at all. ``calls``: the model calls the attempt was billed for (one, or
    one per chain link it went through), each with its model, for the cost at each model's price;
    ``usage`` is their sum."""

    number: int
    max_tokens: int
    outcome: str
    finish_reason: str | None
    usage: Usage
    duration_ms: int
    error: str | None = None
    plan: str | None = None
    calls: tuple[ModelCall, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["usage"] = self.usage.as_dict()
        del data["calls"]
        if self.calls:
            data["model"] = self.calls[-1].model
        if data["plan"] is None:
            del data["plan"]
        return data


def assistant_tool_message(content: str | None, calls: tuple[ToolCall, ...]) -> Message:
    """The assistant's turn that called ``calls``, as the next request's history carries it."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in calls
        ],
    }


def tool_result_message(call_id: str, content: str) -> Message:
    """What a tool call returned, as the next request's history carries it."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def estimate_tokens(text: str) -> int:
    """ceil(utf-8 bytes / 4): the estimate the chat's history budget uses (docs/chat-and-templates.md)."""
    return tokens_in_bytes(len(text.encode("utf-8")))


def tokens_in_bytes(size: int) -> int:
    """``estimate_tokens`` of a text of ``size`` UTF-8 bytes (for text counted as it streams)."""
    return math.ceil(size / 4)
