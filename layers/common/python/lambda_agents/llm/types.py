"""Provider-neutral request and response types: the port between the engine and a model.

Only ``openai_model`` turns these into openai SDK calls, so everything else (domains, tests,
the offline model) stays free of the SDK and of its ~1 s import.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]


@dataclass(frozen=True)
class Usage:
    """Tokens reported by the provider (or estimated by the offline model).

    ``reasoning_tokens`` is the part of ``completion_tokens`` a reasoning model spent before its
    visible answer: the truncation estimate counts it as spent again, not as answer text."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "totalTokens": self.total_tokens,
        }


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion call.

    ``output_schema`` (the full pydantic schema, with offline hints) and ``language`` are never
    sent to a provider: they let the offline model write valid, meaningful content.
    """

    messages: list[Message]
    max_tokens: int
    temperature: float | None = None
    response_format: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: dict[str, Any] | str | None = None
    # False: at most one tool call per answer (an agent loop that validates each call in turn).
    parallel_tool_calls: bool | None = None
    timeout_s: float | None = None
    purpose: str = "generic"
    output_schema: dict[str, Any] | None = None
    language: str | None = None


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatResponse:
    content: str | None
    finish_reason: str
    refusal: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""


class ChatModel(Protocol):
    """Anything that answers a ChatRequest: the openai client, the offline model, a test script."""

    @property
    def model_name(self) -> str: ...

    def complete(self, request: ChatRequest) -> ChatResponse: ...


def estimate_tokens(text: str) -> int:
    """ceil(utf-8 bytes / 4): the estimate spec 001 C uses for history budgets."""
    return math.ceil(len(text.encode("utf-8")) / 4)
