"""The Commander's output schema (docs/nudges.md#the-output-schema), stand-alone (pydantic only), for the
peer benchmark.

How it works, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SLOT_COUNT = 15
Tone = Literal["strict", "gentle", "empathetic", "analytical", "playful"]
PostSlot = Literal["morning", "evening"]
_TONES = ("strict", "gentle", "empathetic", "analytical", "playful")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AppNudge(_Strict):
    slotIndex: int = Field(ge=0)  # noqa: N815 - the wire names
    hook: str
    content: str
    tone: Tone
    enabled: bool
    reasoning: str


class TiktokPost(_Strict):
    slot: PostSlot
    caption: str = Field(max_length=2200)
    hashtags: list[str] = Field(max_length=5)
    tone: str
    reasoning: str
    enabled: bool


class XPost(_Strict):
    slot: PostSlot
    text: str = Field(max_length=280)
    reasoning: str
    enabled: bool


class CommanderOutput(_Strict):
    """The Commander's output schema for 15 slots."""

    rootCauseHypothesis: str  # noqa: N815
    overallStrategy: str  # noqa: N815
    frequencyReasoning: str  # noqa: N815
    appNudges: list[AppNudge] = Field(min_length=SLOT_COUNT, max_length=SLOT_COUNT)  # noqa: N815
    tiktokPosts: list[TiktokPost] = Field(min_length=2, max_length=2)  # noqa: N815
    xPosts: list[XPost] = Field(min_length=2, max_length=2)  # noqa: N815


def valid_answer(user_number: int, slot_count: int = SLOT_COUNT) -> dict[str, Any]:
    """A schema-valid answer for one user (text varies with the user so answers differ)."""
    return {
        "rootCauseHypothesis": f"User {user_number} loses the evening to the phone and sleeps late.",
        "overallStrategy": "One small, concrete action per slot; firmer near bedtime.",
        "frequencyReasoning": "Every slot of the table, because the habit slips all day.",
        "appNudges": [
            {
                "slotIndex": index,
                "hook": f"Slot {index}: one small step",
                "content": f"Put the phone in another room for ten minutes (slot {index}).",
                "tone": _TONES[(index + user_number) % len(_TONES)],
                "enabled": True,
                "reasoning": "This hour is when the habit usually slips.",
            }
            for index in range(slot_count)
        ],
        "tiktokPosts": [
            {
                "slot": slot,
                "caption": f"Five minutes that change your {slot}",
                "hashtags": ["#habits", "#mindfulness"],
                "tone": "gentle",
                "reasoning": "Supports the daily routine.",
                "enabled": True,
            }
            for slot in ("morning", "evening")
        ],
        "xPosts": [
            {"slot": slot, "text": f"One step forward this {slot}.", "reasoning": "A short call.", "enabled": True}
            for slot in ("morning", "evening")
        ],
    }


def served_by_model(output: Any, slot_count: int = SLOT_COUNT) -> bool:
    """True when ``output`` is the output schema with exactly ``slot_count`` app nudges."""
    if not isinstance(output, dict):
        return False
    try:
        parsed = CommanderOutput.model_validate(output)
    except ValueError:
        return False
    return len(parsed.appNudges) == slot_count


def nudge_count(output: Any) -> int:
    """App nudges a user would receive from ``output`` (a wrong-length success leaves some missing)."""
    if not isinstance(output, dict) or not isinstance(output.get("appNudges"), list):
        return 0
    return len(output["appNudges"])
