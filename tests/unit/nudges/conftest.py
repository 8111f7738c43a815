"""The answers a scripted model gives in the nudge unit tests (no network, no AWS): the model is
``tests.unit.llm.scripted_model.ScriptedModel``, the one the engine's own tests use; the in-memory
storage ports are ``tests.support.nudge_fakes``, held to the adapters' contract."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime

import pytest
from lambda_agents.llm import ChatResponse, Usage
from lambda_agents.nudges.generation import LocalDateOutOfRange, check_local_date
from lambda_agents.nudges.profile import UserProfile


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


def reply(content: str | None = None, finish_reason: str = "stop", refusal: str | None = None) -> ChatResponse:
    return ChatResponse(content, finish_reason, refusal=refusal, usage=Usage(100, 50), model="scripted")


@pytest.fixture
def no_sleep() -> Iterator[list[float]]:
    waits: list[float] = []
    yield waits


def generator_takes(local_date: date, zone: str, now: datetime) -> bool:
    """Whether the generator takes ``local_date`` for a user living in ``zone`` at ``now``; the
    other answer is its typed refusal, ``LocalDateOutOfRange``."""
    profile = UserProfile.model_validate({"userId": "u1", "problems": ["anxiety"], "timezone": zone})
    try:
        check_local_date(local_date.isoformat(), profile, now)
    except LocalDateOutOfRange:
        return False
    return True
