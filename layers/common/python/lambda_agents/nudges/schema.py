"""The Commander agent's output model (docs/nudges.md#the-output-schema, docs/nudges.md#exactly-n-nudges).

``create_agent_output_model(slot_count)`` builds the dynamic model whose ``appNudges`` has
exactly ``slot_count`` items (minItems = maxItems on the wire), ``tiktokPosts`` and ``xPosts``
exactly two each. Every field is required, ``enabled`` included (OpenAI strict mode). String
fields carry ``x-examples`` (ja / en) and ``slotIndex`` carries ``x-index`` so the offline
model writes meaningful, valid answers; the engine strips those hints from the wire schema.

What the schema cannot say (slotIndex values equal to the slot table's, one morning and one
evening post per platform) is checked by ``output_validator``; the engine feeds a violation
back and retries it like a wrong length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

from .records import POST_SLOTS, PostSlot
from .x_text import x_text_problem

Tone = Literal["strict", "gentle", "empathetic", "analytical", "playful"]
CAPTION_MAX_CHARS = 2200
MAX_HASHTAGS = 5
X_TEXT_MAX_CHARS = 280
POSTS_PER_PLATFORM = 2


def _examples(ja: list[str], en: list[str]) -> JsonDict:
    examples: JsonDict = {"ja": list(ja), "en": list(en)}
    return {"x-examples": examples}


class _Camel(BaseModel):
    """Python names in snake_case, camelCase on the wire and in storage."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class AppNudge(_Camel):
    slot_index: int = Field(
        ge=0, description="The slot's slotIndex from the slot table", json_schema_extra={"x-index": True}
    )
    hook: str = Field(
        description="Notification title",
        json_schema_extra=_examples(
            ["今夜はスマホを置いてみよう", "深呼吸を3回", "小さな一歩で十分", "今の気持ちに名前をつけよう"],
            ["Put the phone down tonight", "Three slow breaths", "One small step is enough", "Name what you feel"],
        ),
    )
    content: str = Field(
        description="Notification body",
        json_schema_extra=_examples(
            ["5分だけ画面から離れてみましょう。体が楽になります。", "できたことを一つ思い出してみて。"],
            ["Step away from the screen for five minutes.", "Recall one thing you did well today."],
        ),
    )
    tone: Tone
    enabled: bool
    reasoning: str = Field(
        json_schema_extra=_examples(["この時間帯は行動が崩れやすいため"], ["This hour is when the habit usually slips"])
    )


Hashtag = Annotated[
    str, Field(json_schema_extra=_examples(["#習慣化", "#マインドフルネス"], ["#habits", "#mindfulness"]))
]


class TiktokPost(_Camel):
    slot: PostSlot
    caption: str = Field(
        max_length=CAPTION_MAX_CHARS,
        json_schema_extra=_examples(
            ["朝の5分で一日が変わる", "夜の自分を責めないで"],
            ["Five minutes that change your morning", "Go easy on yourself tonight"],
        ),
    )
    hashtags: list[Hashtag] = Field(max_length=MAX_HASHTAGS)
    tone: str = Field(json_schema_extra=_examples(["gentle"], ["gentle"]))
    reasoning: str = Field(json_schema_extra=_examples(["朝と夜の習慣を支える投稿"], ["Supports the daily routine"]))
    enabled: bool


def _fits_x(text: str) -> str:
    problem = x_text_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return text


class XPost(_Camel):
    slot: PostSlot
    # X counts by weight, not by character (``x_text``): 140 Japanese characters fill a post.
    text: Annotated[str, AfterValidator(_fits_x)] = Field(
        max_length=X_TEXT_MAX_CHARS,
        description="At most 280 by X's count: Japanese, Chinese, Korean characters and emoji count 2, a URL 23",
        json_schema_extra=_examples(
            ["今日も一歩前へ", "深呼吸しよう"], ["One step forward today", "Take a deep breath"]
        ),
    )
    reasoning: str = Field(json_schema_extra=_examples(["短く行動を促す"], ["A short call to action"]))
    enabled: bool


class AgentRawOutput(_Camel):
    """The static shape (``appNudges`` of any length); use ``create_agent_output_model`` to call the agent."""

    root_cause_hypothesis: str = Field(
        json_schema_extra=_examples(["夜のスマホ利用が睡眠を削っている"], ["Late-night phone use is eating into sleep"])
    )
    overall_strategy: str = Field(
        json_schema_extra=_examples(["小さな行動を時間帯ごとに促す"], ["Prompt one small action per time slot"])
    )
    frequency_reasoning: str = Field(
        json_schema_extra=_examples(["崩れやすい時間帯に合わせた"], ["Matches the hours where the habit slips"])
    )
    app_nudges: list[AppNudge]
    tiktok_posts: list[TiktokPost] = Field(min_length=POSTS_PER_PLATFORM, max_length=POSTS_PER_PLATFORM)
    x_posts: list[XPost] = Field(min_length=POSTS_PER_PLATFORM, max_length=POSTS_PER_PLATFORM)


@lru_cache(maxsize=64)
def create_agent_output_model(slot_count: int) -> type[AgentRawOutput]:
    """The output model for ``slot_count`` slots; cached so the engine's schema cache hits."""
    if slot_count < 1:
        raise ValueError(f"slot_count must be at least 1, got {slot_count}")
    nudges = Annotated[list[AppNudge], Field(min_length=slot_count, max_length=slot_count)]
    return create_model(  # type: ignore[call-overload,no-any-return]
        f"CommanderOutput{slot_count}Slots",
        __base__=AgentRawOutput,
        app_nudges=(nudges, ...),
    )


def output_validator(slot_indexes: Sequence[int]) -> Callable[[AgentRawOutput], None]:
    """Checks the schema cannot express; raises ValueError (the engine retries with it as feedback)."""
    expected = list(slot_indexes)

    def validate(output: AgentRawOutput) -> None:
        problems = output_problems(output, expected)
        if problems:
            raise ValueError("; ".join(problems))

    return validate


def output_problems(output: AgentRawOutput, slot_indexes: Sequence[int]) -> list[str]:
    problems = []
    got = [nudge.slot_index for nudge in output.app_nudges]
    if sorted(got) != sorted(slot_indexes):
        problems.append(f"appNudges slotIndex values must be exactly {list(slot_indexes)} (one each), got {got}")
    if slot_indexes and not any(nudge.enabled for nudge in output.app_nudges):
        # The failure to prevent is "0 nudges" (docs/nudges.md#exactly-n-nudges): a day with slots must deliver one.
        problems.append("at least one appNudge must be enabled")
    for field, posts in (("tiktokPosts", output.tiktok_posts), ("xPosts", output.x_posts)):
        slots = sorted(post.slot for post in posts)
        if slots != sorted(POST_SLOTS):
            problems.append(f"{field} must hold one 'morning' and one 'evening' post, got {slots}")
    return problems
