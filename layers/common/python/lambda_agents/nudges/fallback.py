"""The rule-based fallback (docs/nudges.md#the-rule-based-fallback).

Used when the Commander gives up. Schema-conformant for the slot count: one app nudge per slot,
``enabled=true`` (app notifications are always delivered), and 2 + 2 posts with
``enabled=false`` so the pending endpoints never hand a placeholder to the posting jobs.
"""

from __future__ import annotations

from collections.abc import Sequence

from .profile import Language
from .schema import AgentRawOutput, create_agent_output_model
from .slots import Slot

_TEXT: dict[Language, dict[str, str]] = {
    "ja": {
        "hook": "今日も前に進もう",
        "content": "小さな一歩から始めよう。",
        "tiktok_morning": "変わりたいなら今日から",
        "tiktok_evening": "自分を責めないで",
        "x_morning": "今日も一歩前へ",
        "x_evening": "深呼吸しよう",
    },
    "en": {
        "hook": "Keep moving forward",
        "content": "Start with a small step.",
        "tiktok_morning": "Change starts today",
        "tiktok_evening": "Don't blame yourself",
        "x_morning": "One step forward today",
        "x_evening": "Take a deep breath",
    },
}
_PLACEHOLDER_TAGS = (("morning", ["#mindfulness", "#growth"]), ("evening", ["#selfcare", "#mentalhealth"]))
PLACEHOLDER_REASONING = "Fallback placeholder - not for posting"


class RuleBasedFallback:
    """Builds the fallback output; validated by the same dynamic model the agent must satisfy."""

    def build(self, slot_table: Sequence[Slot], language: Language) -> AgentRawOutput:
        text = _TEXT[language]
        data = {
            "rootCauseHypothesis": "Fallback mode - LLM generation failed",
            "overallStrategy": "Using rule-based content",
            "frequencyReasoning": "Maintaining scheduled frequency",
            "appNudges": [
                {
                    "slotIndex": slot.slot_index,
                    "hook": text["hook"],
                    "content": text["content"],
                    "tone": "gentle",
                    "enabled": True,
                    "reasoning": "Rule-based fallback due to LLM failure",
                }
                for slot in slot_table
            ],
            "tiktokPosts": [
                {
                    "slot": slot,
                    "caption": text[f"tiktok_{slot}"],
                    "hashtags": tags,
                    "tone": "gentle",
                    "reasoning": PLACEHOLDER_REASONING,
                    "enabled": False,
                }
                for slot, tags in (
                    ("morning", ["#mindfulness", "#growth"]),
                    ("evening", ["#selfcare", "#mentalhealth"]),
                )
            ],
            "xPosts": [
                {"slot": slot, "text": text[f"x_{slot}"], "reasoning": PLACEHOLDER_REASONING, "enabled": False}
                for slot in ("morning", "evening")
            ],
        }
        return create_agent_output_model(len(slot_table)).model_validate(data)
