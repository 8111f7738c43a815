"""The Commander agent call (docs/nudges.md#the-commander-agent, docs/nudges.md#retries-and-failures
and docs/nudges.md#the-rule-based-fallback).

One structured call on the engine with the dynamic schema (appNudges exactly slotCount long),
max_tokens from ``estimate_max_tokens(slot_count, attempt)`` (raised by the engine after a
truncation or by what the slot count needed before), at most 3 attempts (maxRetries=2) with a
1 s / 2 s backoff, then the rule-based fallback. Retried: length (with the max_tokens the
partial answer asks for, or not at all when that is above the ceiling), content_filter (retried, then
the fallback), invalid or wrong-length answers, slotIndex values that are not the
table's, transient provider errors. Not retried: a refusal (it goes to the fallback
at once: asking again does not change a safety decision) and a rejected request.
Any other exception (a bug in an adapter or a validator) falls back too, logged with its stack
trace, reason ``unexpected_error``. Either way the result is never empty: a user with slots always
gets one enabled nudge per slot.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..llm import (
    Attempt,
    ChatModel,
    ChatRequest,
    ChatResponse,
    Deadline,
    RetryPolicy,
    Strategy,
    StructuredOptions,
    StructuredOutputError,
    TokenPolicy,
    Usage,
    generate_structured,
)
from ..llm.accounting import ModelAccount, accounted, nothing_spent, prompt_version
from ..llm.engine import first_structured_request, read_structured_answer
from ..llm.policy import DEFAULT_RETRY_ON
from ..llm.prices import Billing, billing_of
from ..llm.types import ServiceTier
from ..observability import logger
from .fallback import RuleBasedFallback
from .profile import Language
from .schema import AgentRawOutput, create_agent_output_model, output_validator
from .slots import Slot
from .tokens import CommanderTokenPolicy

PURPOSE = "nudge_commander"
UNEXPECTED_ERROR = "unexpected_error"  # the fallback reason when the failure is not one the engine names
MAX_RETRIES = 2
COMMANDER_RETRY_POLICY = RetryPolicy(
    max_attempts=MAX_RETRIES + 1,
    backoff_base_s=1.0,
    backoff_factor=2.0,
    retry_on=DEFAULT_RETRY_ON | {"content_filter", "unexpected_finish"},
    # The Commander waits 1 s then 2 s before every retry, whatever failed (docs/nudges.md#retries-and-failures).
    immediate=frozenset(),
)


@dataclass(frozen=True)
class Grounding:
    """What the agent is told about the user (docs/nudges.md#the-commander-agent)."""

    user_id: str
    problems: tuple[str, ...]
    language: Language
    app_version: str
    local_date: str
    timezone: str
    slot_table: tuple[Slot, ...]
    recent_days: tuple[dict[str, Any], ...] = ()

    def as_prompt(self) -> dict[str, Any]:
        return {
            "localDate": self.local_date,
            "timezone": self.timezone,
            "preferredLanguage": self.language,
            "appVersion": self.app_version,
            "problems": list(self.problems),
            "slotTable": [slot.as_dict() for slot in self.slot_table],
            "recentDays": list(self.recent_days),
        }


@dataclass(frozen=True)
class CommanderResult:
    output: AgentRawOutput
    fallback_used: bool
    fallback_reason: str | None
    attempts: list[Attempt] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    raw: str | None = None
    retry_after_s: float | None = None  # a 429's Retry-After, when the provider's limit ended the run
    # What the plan's model calls were billed (llm.accounting), fallbacks' included; stored with the plan.
    account: ModelAccount | None = None
    billing: Billing = "standard"  # the price the answer was billed at (a flex or a batch answer: half)


@cache
def commander_prompt_version() -> str:
    """The Commander's prompt version (``llm.accounting.prompt_version``): its instructions as
    ``build_messages`` writes them (the code, never a user's grounding) and its answer's schema
    (for one slot: the slot count sizes the arrays, not what is asked)."""
    return prompt_version(inspect.getsource(build_messages), create_agent_output_model(1).model_json_schema())


def build_messages(grounding: Grounding) -> list[dict[str, Any]]:
    language_name = "Japanese" if grounding.language == "ja" else "English"
    system = (
        "You are the Commander agent of a behaviour-change app. Write one push notification for "
        f"every slot of the slot table (exactly {len(grounding.slot_table)}, one per slotIndex, "
        "using the table's slotIndex values), plus one morning and one evening TikTok post and X post. "
        "You decide content, tone and whether each item is enabled; you never change the slots. "
        f"Write all user-facing text in {language_name}. Do not repeat recent days' hooks or posts."
    )
    user = json.dumps(grounding.as_prompt(), ensure_ascii=False)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def run_commander(
    model: ChatModel,
    grounding: Grounding,
    *,
    deadline: Deadline | None = None,
    retry_policy: RetryPolicy = COMMANDER_RETRY_POLICY,
    token_policy: TokenPolicy | None = None,
    fallback: RuleBasedFallback | None = None,
    sleep: Callable[[float], None] = time.sleep,
    service_tier: ServiceTier | None = None,
) -> CommanderResult:
    """The agent's output, or the rule-based fallback with the reason it was used.

    ``service_tier`` ``"flex"`` asks the provider for its flex tier (docs/nudges.md#flex-processing):
    half the price, slower, and a 429 when its capacity is short, which ends the run like the
    provider's rate limit (the generator defers the user).

    ``token_policy`` replaces the ``estimate_max_tokens`` ramp (docs/nudges.md#the-token-budget-ramp; a
    benchmark starting every side at the same budget); the engine's truncation rules apply either way."""
    slots: Sequence[Slot] = grounding.slot_table
    if not slots:
        raise ValueError("run_commander needs at least one slot")
    output_model = create_agent_output_model(len(slots))
    try:
        result = generate_structured(
            model,
            output_model,
            build_messages(grounding),
            StructuredOptions(
                strategy=Strategy.JSON_SCHEMA,
                token_policy=token_policy or CommanderTokenPolicy(len(slots)),
                retry_policy=retry_policy,
                purpose=PURPOSE,
                service_tier=service_tier,
                language=grounding.language,
                sleep=sleep,
            ),
            deadline=deadline,
            validator=output_validator([slot.slot_index for slot in slots]),
        )
    except StructuredOutputError as error:
        output = (fallback or RuleBasedFallback()).build(slots, grounding.language)
        billing = billing_of(service_tier)  # the attempts that ran were processed at the tier asked for
        account = _accounted(error.attempts, model.model_name, grounding.user_id, error.kind, billing)
        return CommanderResult(
            output,
            True,
            error.kind,
            list(error.attempts),
            error.usage,
            model.model_name,
            None,
            error.retry_after_s,
            account,
            billing,
        )
    except Exception as error:
        # Everything around the agent is caught (docs/nudges.md#exactly-n-nudges): a bug in an adapter or a
        # validator must cost the user the model's content, never the day's nudges. The stack trace is logged;
        # the reason is counted like any other fallback cause (NudgeFallbacksByCause).
        logger.exception(
            "commander failed unexpectedly; rule-based fallback",
            extra={"user_id": grounding.user_id, "error_type": type(error).__name__},
        )
        output = (fallback or RuleBasedFallback()).build(slots, grounding.language)
        account = nothing_spent(model.model_name, commander_prompt_version())
        return CommanderResult(output, True, UNEXPECTED_ERROR, [], Usage(), model.model_name, account=account)
    billing = billing_of(result.service_tier)
    account = _accounted(result.attempts, model.model_name, grounding.user_id, "answered", billing)
    return CommanderResult(
        result.value,
        False,
        None,
        result.attempts,
        result.usage,
        result.model,
        result.raw,
        account=account,
        billing=billing,
    )


def _accounted(
    attempts: list[Attempt], model: str, user_id: str, outcome: str, billing: Billing = "standard"
) -> ModelAccount:
    return accounted(
        attempts,
        model=model,
        prompt_version=commander_prompt_version(),
        purpose=PURPOSE,
        user_id=user_id,
        outcome=outcome,
        billing=billing,
    )


def commander_request(grounding: Grounding) -> ChatRequest:
    """The Commander's first request for ``grounding``: what a batch job sends for the user (the
    same strict schema, messages and ``estimate_max_tokens`` budget as the synchronous call)."""
    slot_count = len(grounding.slot_table)
    if not slot_count:
        raise ValueError("commander_request needs at least one slot")
    return first_structured_request(
        create_agent_output_model(slot_count),
        build_messages(grounding),
        StructuredOptions(
            strategy=Strategy.JSON_SCHEMA,
            token_policy=CommanderTokenPolicy(slot_count),
            purpose=PURPOSE,
            language=grounding.language,
        ),
    )


def commander_answer(grounding: Grounding, response: ChatResponse) -> CommanderResult:
    """A batch job's answer read by the synchronous call's rules (schema, slot count, the table's
    slotIndex values, finish_reason, refusal); the engine's ``Rejected`` when it is not usable, so the
    user is left to the synchronous path instead of being given it."""
    slots = grounding.slot_table
    output = read_structured_answer(
        response,
        create_agent_output_model(len(slots)),
        strategy=Strategy.JSON_SCHEMA,
        validator=output_validator([slot.slot_index for slot in slots]),
    )
    max_tokens = CommanderTokenPolicy(len(slots)).max_tokens(0)
    attempt = Attempt(1, max_tokens, "ok", response.finish_reason, response.usage, 0, plan="batch job")
    model = response.model or ""
    account = _accounted([attempt], model, grounding.user_id, "answered", billing="batch")
    return CommanderResult(
        output, False, None, [attempt], response.usage, model, response.content, account=account, billing="batch"
    )
