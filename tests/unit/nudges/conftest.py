"""A scripted model and its answers for the nudge unit tests (no network, no AWS); the in-memory
storage ports are ``tests.support.nudge_fakes``, held to the adapters' contract."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from lambda_agents.llm import ChatRequest, ChatResponse, Usage
from lambda_agents.llm.errors import ProviderError


def valid_answer(slot_indexes: list[int], *, enabled: bool = True, language: str = "en") -> str:
    hook = "今夜はスマホを置こう" if language == "ja" else "Put the phone down"
    return json.dumps(
        {
            "rootCauseHypothesis": "h",
            "overallStrategy": "s",
            "frequencyReasoning": "f",
            "appNudges": [
                {"slotIndex": i, "hook": hook, "content": "c", "tone": "gentle", "enabled": enabled, "reasoning": "r"}
                for i in slot_indexes
            ],
            "tiktokPosts": [
                {
                    "slot": s,
                    "caption": f"cap {s}",
                    "hashtags": ["#a"],
                    "tone": "gentle",
                    "reasoning": "r",
                    "enabled": True,
                }
                for s in ("morning", "evening")
            ],
            "xPosts": [
                {"slot": s, "text": f"x {s}", "reasoning": "r", "enabled": True} for s in ("morning", "evening")
            ],
        },
        ensure_ascii=False,
    )


class ScriptedModel:
    """Answers from a script; an unexpected call or a step left over fails the test."""

    def __init__(self, *steps: ChatResponse | ProviderError) -> None:
        self.steps = list(steps)
        self.requests: list[ChatRequest] = []

    @property
    def model_name(self) -> str:
        return "scripted"

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if not self.steps:
            raise AssertionError("the model was called more often than scripted")
        step = self.steps.pop(0)
        if isinstance(step, ProviderError):
            raise step
        return step


def reply(content: str | None = None, finish_reason: str = "stop", refusal: str | None = None) -> ChatResponse:
    return ChatResponse(content, finish_reason, refusal=refusal, usage=Usage(100, 50), model="scripted")


@pytest.fixture
def no_sleep() -> Iterator[list[float]]:
    waits: list[float] = []
    yield waits
