"""Judge input and output (docs/judge.md#the-api), validated at the edge.

Indexes: ``ruleIndex`` is 0-based in the caller's rule order; tags and the model's answers
(``step``, ``matched_index``, both 1-based) use the caller's numbering too (rule ``ruleIndex``
is number ``ruleIndex + 1``), with or without interactive-only rules
(docs/judge.md#rule-numbers-and-candidates).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictBool

from ..llm import Strategy
from ..llm.accounting import ModelAccountView

MAX_OUTPUT_CHARS = 200_000


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    condition: str = Field(min_length=1, max_length=2000)
    tag: str | None = Field(default=None, min_length=1, max_length=200)
    # Strict: the documented type is boolean, so 0 / "yes" are rejected instead of coerced.
    interactive_only: StrictBool = Field(default=False, alias="interactiveOnly")


class JudgeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    movement: str = Field(min_length=1, max_length=100, pattern=r"^[^\[\]:\s][^\[\]:]*$")
    rules: list[Rule] = Field(min_length=1, max_length=50)
    output: str = Field(max_length=MAX_OUTPUT_CHARS)
    interactive: StrictBool = False
    strategy: Strategy = Strategy.JSON_SCHEMA
    instruction_mode: Literal["structured", "tag"] = Field(default="structured", alias="instructionMode")
    phase3: StrictBool = Field(
        default=True,
        description="False: no Phase 3 call; the rule is detected from the Phase 1 output by its tag.",
    )


class Method(StrEnum):
    """What the session log records for how a rule was matched (docs/judge.md#session-log)."""

    STRUCTURED_OUTPUT = "structured_output"
    TAG_FALLBACK = "tag_fallback"
    AI_JUDGE = "ai_judge"
    AUTO_SELECT = "auto_select"


# Why a stage failed, as a fixed word: never the provider's or the model's text, which is neither
# bounded nor safe to hand back or store. The provider's kinds (``llm.errors``), the engine's,
# and the judge's own: ``no_tag`` (no tag in the answer), ``not_a_candidate`` (a number naming no
# candidate rule), ``no_answer`` (no text), ``unexpected_error`` (a bug; its stack trace is logged).
StageError = Literal[
    "rate_limit",
    "server_error",
    "timeout",
    "connection",
    "deadline",
    "provider_error",
    "rejected",
    "auth",
    "models_resting",
    "length",
    "content_filter",
    "refusal",
    "validation",
    "unexpected_finish",
    "no_tag",
    "not_a_candidate",
    "no_answer",
    "unexpected_error",
]
STAGE_ERRORS: frozenset[str] = frozenset(get_args(StageError))
# The kinds that mean the provider was unavailable (retry later), not that it answered badly; a
# key that cannot be read or is refused ("auth") is one too: the operator's to fix, then the same
# request succeeds.
OUTAGE_ERRORS: frozenset[str] = frozenset(
    {"rate_limit", "server_error", "timeout", "connection", "deadline", "provider_error", "auth", "models_resting"}
)


class StageLog(BaseModel):
    stage: str
    method: Method
    status: Literal["done", "error", "skipped"]
    duration_ms: int = Field(alias="durationMs")
    error: StageError | None = None

    model_config = ConfigDict(populate_by_name=True)


class Judgment(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    movement: str
    rule_index: int = Field(alias="ruleIndex")
    method: Method
    reason: str
    stages: list[StageLog]
    total_tokens: int = Field(alias="totalTokens")
    account: ModelAccountView | None = Field(
        default=None,
        description="every stage's calls: the model that answered last, the judge's prompt version, tokens, cost; "
        "null when code decided without a call",
    )
    # The part of total_tokens' prompt tokens the provider's cache served: for the function's
    # metrics (a cost estimate), not part of the answer.
    _cached_prompt_tokens: int = PrivateAttr(default=0)

    @property
    def cached_prompt_tokens(self) -> int:
        return self._cached_prompt_tokens

    def with_cached_prompt_tokens(self, tokens: int) -> Judgment:
        self._cached_prompt_tokens = tokens
        return self

    def as_response(self) -> dict[str, object]:
        return self.model_dump(by_alias=True, mode="json")


class JudgeAnswer(Judgment):
    """What ``POST /judge`` and a direct invocation answer: the judgment and its stored id."""

    judgment_id: str = Field(alias="judgmentId")


class StepAnswer(BaseModel):
    """judgment.json (Stage 1)."""

    step: int = Field(strict=True, description="Matched rule number (1-based)")
    reason: str = Field(description="Brief justification that names the rule by its condition, not by its number")


class EvaluationAnswer(BaseModel):
    """evaluation.json (Stage 3); matched_index is 1-based like the [JUDGE:N] tag."""

    matched_index: int = Field(strict=True)
    reason: str = Field(description="Brief justification that names the condition by its words, not by its number")
