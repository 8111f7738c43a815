"""An in-memory ChatModel driven by a script: an unexpected call or a step left over fails the test."""

from __future__ import annotations

import json
from typing import Any

from lambda_agents.llm import ChatRequest, ChatResponse, ToolCall, Usage
from lambda_agents.llm.errors import ProviderError


class ScriptedModel:
    def __init__(self, *steps: ChatResponse | ProviderError) -> None:
        self.steps = list(steps)
        self.requests: list[ChatRequest] = []

    @property
    def model_name(self) -> str:
        return "scripted"

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if not self.steps:
            raise AssertionError(f"unexpected call #{len(self.requests)}: the script is empty")
        step = self.steps.pop(0)
        if isinstance(step, ProviderError):
            raise step
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
