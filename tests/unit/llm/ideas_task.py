"""The task most engine tests give the model: three ideas, as one JSON object. Small enough to
read in a failure, strict enough (exactly three) that a wrong answer fails validation."""

from __future__ import annotations

from pydantic import BaseModel, Field

MESSAGES = [{"role": "user", "content": "Give me three ideas"}]
GOOD = {"ideas": ["a", "b", "c"]}


class Ideas(BaseModel):
    ideas: list[str] = Field(min_length=3, max_length=3)
