"""Reviewer, QuickCheck and Auditor: sub-sessions with their output schemas
(docs/interview.md#sub-sessions).

Each runs as its own model call that starts from the handoff summary (``handoff.py``) and answers
with its schema through the structured-output engine (docs/engine.md#structured-output: the
verdict is the answer itself, not a tool call; by default the provider's json_schema response
format; a provider that rejects it falls through to the forced-tool strategy, then to the schema in
the prompt). The
engine retries invalid answers with the error fed back; the checks below the schema are code's:
a verdict that contradicts itself (passed with violations listed, passed with missing facts, an
audit passed with an error-severity violation) is invalid and retried, never silently read one
way or the other.

Optional properties are nullable in the wire schema (docs/engine.md#ai-input-schemas);
``tool_transforms`` turns them into the stored types (null -> '' or []).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from ...llm import (
    ChatModel,
    Deadline,
    GrowingTokenPolicy,
    RetryPolicy,
    Strategy,
    StructuredOptions,
    StructuredResult,
    generate_structured,
)
from ...llm.errors import ProviderFailed
from ...llm.types import Message
from ...observability import logger
from ..rules.compliance import PROHIBITED_TOPICS, TONE_RULES, bullet_list
from ..rules.models import MAX_FEEDBACK_CHARS, MAX_REQUIRED_FACTS, MAX_SUMMARY_CHARS, MAX_VIOLATIONS

Short = Annotated[str, StringConstraints(max_length=500)]


class _Output(BaseModel):
    model_config = ConfigDict(extra="forbid")


class QuickCheckViolation(_Output):
    type: Literal["prohibited_topic", "duplicate_question", "tone_violation", "no_intent_binding"]
    message: Short


class QuickCheckResult(_Output):
    """QuickCheckResultSchema."""

    passed: bool
    violations: list[QuickCheckViolation] | None = Field(default=None, max_length=MAX_VIOLATIONS)

    @model_validator(mode="after")
    def _consistent(self) -> QuickCheckResult:
        if self.passed and self.violations:
            raise ValueError("passed must be false when violations are listed")
        if not self.passed and not self.violations:
            raise ValueError("list at least one violation when passed is false")
        return self


class ReviewResult(_Output):
    """ReviewResultSchema."""

    passed: bool
    feedback: Annotated[str, StringConstraints(max_length=MAX_FEEDBACK_CHARS)] | None = None
    missing_facts: list[Short] | None = Field(default=None, max_length=MAX_REQUIRED_FACTS)

    @model_validator(mode="after")
    def _consistent(self) -> ReviewResult:
        if self.passed and self.missing_facts:
            raise ValueError("passed must be false when missing_facts are listed")
        if not self.passed and not self.missing_facts and not (self.feedback or "").strip():
            raise ValueError("when passed is false, give feedback or missing_facts")
        return self


class AuditViolationOutput(_Output):
    type: Annotated[str, StringConstraints(max_length=100)]
    message: Short
    severity: Literal["error", "warning"]


class AuditResult(_Output):
    """AuditResultSchema."""

    passed: bool
    violations: list[AuditViolationOutput] | None = Field(default=None, max_length=MAX_VIOLATIONS)
    summary: Annotated[str, StringConstraints(min_length=1, max_length=MAX_SUMMARY_CHARS)]

    @model_validator(mode="after")
    def _consistent(self) -> AuditResult:
        if self.passed and any(violation.severity == "error" for violation in self.violations or []):
            raise ValueError("passed must be false when a violation has severity error")
        return self


QUICK_CHECK_PROMPT = f"""You are QuickCheck, a light compliance check run before an interviewer sends a question
to a job applicant.
Check the question against the handoff summary:
- no_intent_binding: the question must serve the current field's intent (field_id / intent), or before
  the interview the greeting step's
- prohibited_topic: it must not touch any of these topics:
{bullet_list(PROHIBITED_TOPICS)}
- duplicate_question: it must not ask again for a fact the applicant already gave
- tone_violation: the tone must be {"; ".join(TONE_RULES)}
Answer passed=true with violations=null when the question is fine; otherwise passed=false and list each violation."""

REVIEWER_PROMPT = """You are the Reviewer of a job application interview.
Compare what the applicant said for the current field with the field's definition:
1. Is every required fact answered (by the applicant's own words in the conversation or the facts collected)?
2. Are the done criteria met?
Answer passed=true (feedback and missing_facts null) when both hold. Otherwise passed=false with missing_facts
(the required facts still missing) and short feedback for the interviewer on what to follow up.
A field that is not required is also done when the applicant clearly declined to answer it."""

AUDITOR_PROMPT = f"""You are the Auditor: the final audit of a job application interview, after every field is done.
Read the whole conversation and check:
- excessive information gathering (anything asked beyond what the fields need)
- rude or disrespectful expressions
- consistency of the conversation as a whole
- any question touching these prohibited topics:
{bullet_list(PROHIBITED_TOPICS)}
Report each problem as a violation (severity error for a compliance breach, warning for a minor issue).
passed is false when any violation has severity error. Write a short summary of the application for the
hiring team, in the applicant's language, from the facts collected."""


STRATEGY_ORDER = (Strategy.JSON_SCHEMA, Strategy.TOOL, Strategy.PROMPTED)
SUBAGENT_RETRIES = RetryPolicy(max_attempts=2, backoff_base_s=0.5, max_backoff_s=4.0)


@dataclass(frozen=True)
class SubAgentSettings:
    strategy: Strategy = Strategy.JSON_SCHEMA
    retry_policy: RetryPolicy = SUBAGENT_RETRIES


@dataclass
class SubAgents:
    """Runs the three sub-sessions; StructuredOutputError (with the usage of every attempt) on failure."""

    model: ChatModel
    settings: SubAgentSettings = SubAgentSettings()
    sleep: Callable[[float], None] = time.sleep

    def quick_check(self, handoff: str, question: str, deadline: Deadline | None) -> StructuredResult[QuickCheckResult]:
        messages: list[Message] = [
            {"role": "system", "content": QUICK_CHECK_PROMPT},
            {"role": "user", "content": f"{handoff}\n\n## Question to check\n{question}"},
        ]
        return self._run(QuickCheckResult, messages, "interview.quick_check", 600, deadline)

    def review(self, handoff: str, deadline: Deadline | None) -> StructuredResult[ReviewResult]:
        messages: list[Message] = [
            {"role": "system", "content": REVIEWER_PROMPT},
            {"role": "user", "content": handoff},
        ]
        return self._run(ReviewResult, messages, "interview.reviewer", 800, deadline)

    def audit(self, handoff: str, deadline: Deadline | None) -> StructuredResult[AuditResult]:
        messages: list[Message] = [
            {"role": "system", "content": AUDITOR_PROMPT},
            {"role": "user", "content": handoff},
        ]
        return self._run(AuditResult, messages, "interview.auditor", 1500, deadline)

    def _run(
        self,
        output: type[QuickCheckResult] | type[ReviewResult] | type[AuditResult],
        messages: list[Message],
        purpose: str,
        max_tokens: int,
        deadline: Deadline | None,
    ) -> StructuredResult[Any]:
        """The configured strategy first; a provider that rejects the request (HTTP 400: e.g. no
        json_schema support) falls through to the next strategy instead of failing the turn."""
        strategies = [self.settings.strategy, *(s for s in STRATEGY_ORDER if s is not self.settings.strategy)]
        for index, strategy in enumerate(strategies):
            try:
                options = StructuredOptions(
                    strategy=strategy,
                    purpose=purpose,
                    temperature=0.0,
                    token_policy=GrowingTokenPolicy(initial=max_tokens, ceiling=max_tokens * 2),
                    retry_policy=self.settings.retry_policy,
                    # Their answers are a verdict and a few short fields: half the budget, until learned.
                    expected_tokens=max_tokens // 2,
                    sleep=self.sleep,
                )
                return generate_structured(self.model, output, messages, options, deadline=deadline)
            except ProviderFailed as error:
                if error.kind != "rejected" or index == len(strategies) - 1:
                    raise
                logger.warning(
                    "sub-agent request rejected; next strategy",
                    extra={"purpose": purpose, "strategy": strategy.value, "next": strategies[index + 1].value},
                )
        raise AssertionError("unreachable: the last strategy returns or raises")  # pragma: no cover
