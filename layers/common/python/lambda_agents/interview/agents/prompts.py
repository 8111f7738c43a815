"""Pieces every agent's system prompt shares. Prompts are rebuilt from the state on every model
call, so what the model reads about the interview is always the state as it is now (sections derive
from state: docs/interview.md#the-agent-loop). A JSON state block is included for the model, and
lets the offline policy (``offline.py``) play the agents from the same prompt."""

from __future__ import annotations

import json
import re
from typing import Any

STATE_BLOCK = re.compile(r"<interview_state>\n(.*?)\n</interview_state>", re.DOTALL)


def state_block(data: dict[str, Any]) -> str:
    return "<interview_state>\n" + json.dumps(data, ensure_ascii=False) + "\n</interview_state>"


def read_state_block(prompt: str) -> dict[str, Any]:
    """The JSON state block of a system prompt; {} when there is none."""
    match = STATE_BLOCK.search(prompt)
    if match is None:
        return {}
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def language_rule(language: str | None) -> str:
    if language:
        return f"Write every message to the applicant in this language: {language}."
    return "Write to the applicant in the language of their latest message."
