"""An in-memory ChatModel driven by a script: an unexpected call or a step left over fails the test."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lambda_agents.llm import ChatRequest, ChatResponse, ToolCall, Usage
from lambda_agents.llm.errors import ProviderError
from lambda_agents.llm.speeds import INSTANT, SpeedEstimate


class FakeClock:
    """A monotonic clock that only moves when the engine sleeps (or a test advances it)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@dataclass(frozen=True)
class Needing:
    """An answer that needs ``tokens`` completion tokens: the model writes it as a provider would
    under the request's max_tokens (cut at max_tokens/tokens of its text, billed max_tokens)."""

    text: str
    tokens: int
    tool: bool = False
    seconds: float = 0.0  # how long the call takes on ``clock`` (a FakeClock), if any
    clock: FakeClock | None = None

    def answer(self, request: ChatRequest) -> ChatResponse:
        if self.clock is not None:
            self.clock.now += self.seconds
        limit = request.max_tokens
        cut = self.text if self.tokens <= limit else self.text[: len(self.text) * limit // self.tokens]
        finish = "length" if self.tokens > limit else ("tool_calls" if self.tool else "stop")
        usage = Usage(10, min(limit, self.tokens))
        if self.tool:
            return ChatResponse(None, finish, tool_calls=(ToolCall("c1", "StructuredOutput", cut),), usage=usage)
        return ChatResponse(cut, finish, usage=usage, model="scripted")


@dataclass(frozen=True)
class Streamed:
    """An answer the request's listener hears in ``pieces`` (a new attempt, then each piece) before
    ``then`` is returned, or raised: a stream that failed after those pieces."""

    pieces: tuple[str, ...]
    then: ChatResponse | ProviderError

    def answer(self, request: ChatRequest) -> ChatResponse:
        listener = request.heard()
        if listener is not None:
            listener.attempt_started()
            for piece in self.pieces:
                listener.text(piece)
        if isinstance(self.then, ProviderError):
            raise self.then
        return self.then


def needing(payload: Any, tokens: int, **kwargs: Any) -> Needing:
    return Needing(payload if isinstance(payload, str) else json.dumps(payload), tokens, **kwargs)


class ScriptedModel:
    """Answers at once unless a step says how long it takes; ``speed`` is the pace the engine
    plans with (its ``speed_prior``), instant by default so that only tests about planning plan."""

    def __init__(
        self,
        *steps: ChatResponse | ProviderError | Needing | Streamed,
        speed: SpeedEstimate = INSTANT,
        name: str = "scripted",
    ) -> None:
        self.steps = list(steps)
        self.requests: list[ChatRequest] = []
        self.speed_prior = speed
        self.name = name

    @property
    def model_name(self) -> str:
        return self.name

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if not self.steps:
            raise AssertionError(f"unexpected call #{len(self.requests)}: the script is empty")
        step = self.steps.pop(0)
        if isinstance(step, ProviderError):
            raise step
        if isinstance(step, Needing | Streamed):
            return step.answer(request)
        return step

    def assert_consumed(self) -> None:
        assert not self.steps, f"{len(self.steps)} scripted step(s) were never requested"


def answer(payload: Any, *, finish: str = "stop", prompt: int = 10, completion: int = 5) -> ChatResponse:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return ChatResponse(text, finish, usage=Usage(prompt, completion), model="scripted")


def tool_answer(payload: Any, *, name: str = "StructuredOutput") -> ChatResponse:
    call = ToolCall("call_1", name, json.dumps(payload))
    return ChatResponse(None, "tool_calls", tool_calls=(call,), usage=Usage(10, 5), model="scripted")


def refusal(text: str = "I can't help with that.") -> ChatResponse:
    return ChatResponse(None, "stop", refusal=text, usage=Usage(10, 3), model="scripted")


def named(name: str, *steps: ChatResponse | ProviderError | Needing) -> ScriptedModel:
    """A scripted model that calls itself ``name`` (a model chain's link, a priced model)."""
    return ScriptedModel(*steps, name=name)
