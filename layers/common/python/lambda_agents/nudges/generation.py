"""One user's nudges for one local date (docs/nudges.md#scheduled-generation): the per-user
service the SQS generator runs for each queued user.

Steps: read the profile; skip users without nudges, unknown users or users without slots;
refuse a local date that is not near the user's today (``LocalDateOutOfRange``: a stale
redelivery or a producer's bug would pay a model call for a day that is over); read the recent
days (which also tells whether today's schedule already exists, in the same Query: then no LLM
call is made); build the slot table (the system's, never the agent's); run
the Commander (or its fallback); store the schedule and its posts in one conditional write.
A concurrent run that lost the race reports ``already_generated`` and stores nothing.
A run whose time ran out (the engine would not start, or cut, an attempt that could not finish
before the deadline) or that the provider's rate limit stopped is *deferred* rather than given
the rule-based fallback, when the caller allows it (``may_defer``: a redelivery will come):
nothing is stored and ``GenerationDeferred`` says when to try again. The caller does not allow it
on the message's last delivery, so a user always gets their nudges. The write
is also conditioned on the user's profile (present, not being deleted): a run still under way
when its user deletes their nudge data stores nothing (``skipped_profile_deleted``), so a
deletion is never undone by a generation that read the profile before it.
Ports (repositories, model, clock) are passed in, so the unit tests need no patching.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..clock import utc_now
from ..llm import ChatModel, ChatRequest, ChatResponse, Deadline
from ..llm.prices import Billing, cost_usd
from ..llm.retry_loop import Rejected
from ..llm.types import ServiceTier
from .commander import CommanderResult, Grounding, commander_answer, commander_request, run_commander
from .fallback import RuleBasedFallback
from .local_dates import LOCAL_DATE_DAYS_AFTER, LOCAL_DATE_DAYS_BEFORE
from .profile import UserProfile
from .records import ProfileGone, ScheduleRecord
from .slots import Slot, SlotSettings, build_slot_table

RECENT_DAYS = 3
RECENT_ITEMS_PER_DAY = 20
# Why a run may come back later instead of falling back: the time ran out, the provider's limit, or
# every model of the chain is resting after repeated failures (its Retry-After: the breaker's cool-down).
DEFERRABLE_REASONS = frozenset({"deadline", "rate_limit", "models_resting"})
DEFERRAL_BASE_S = 15.0
MAX_DEFERRAL_S = 900.0
NO_BATCH_ANSWER = "no_batch_answer"  # the fallback's reason when the Batch API-only fan-out had no answer


class GenerationDeferred(Exception):
    """Nothing was stored for the user: try again in ``retry_in_s`` (a redelivery)."""

    def __init__(self, user_id: str, reason: str, retry_in_s: float) -> None:
        super().__init__(f"user {user_id}: {reason}; deferred {retry_in_s:.0f} s")
        self.reason = reason
        self.retry_in_s = retry_in_s


def deferral_s(reason: str, retry_after_s: float | None, delivery: int) -> float:
    """How long a deferred run waits: the provider's Retry-After (a little more, so that a
    batch's deferred users do not all come back in the same second), else a backoff that grows
    with the deliveries so far."""
    if retry_after_s is not None and retry_after_s > 0:
        return min(MAX_DEFERRAL_S, retry_after_s * 1.1 + 1.0)
    return min(MAX_DEFERRAL_S, DEFERRAL_BASE_S * 2.0 ** max(0, delivery - 1))


class GenerationJob(BaseModel):
    """One SQS message body: which user, for which local date."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    userId: str = Field(min_length=1, max_length=128)  # noqa: N815 - the message's wire name
    localDate: str  # noqa: N815

    @field_validator("localDate")
    @classmethod
    def _date(cls, value: str) -> str:
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            raise ValueError(f"localDate must be YYYY-MM-DD, got {value!r}") from None


class LocalDateOutOfRange(ValueError):
    """The job's localDate is too far from the user's today to be generated."""


def check_local_date(local_date: str, profile: UserProfile, now: datetime) -> None:
    """``local_date`` within LOCAL_DATE_DAYS_BEFORE / _AFTER of the user's today, in their zone."""
    today = now.astimezone(profile.zone()).date()
    earliest, latest = today - timedelta(days=LOCAL_DATE_DAYS_BEFORE), today + timedelta(days=LOCAL_DATE_DAYS_AFTER)
    if not earliest <= date.fromisoformat(local_date) <= latest:
        raise LocalDateOutOfRange(
            f"localDate {local_date} is outside {earliest.isoformat()}..{latest.isoformat()}, around the "
            f"user's today ({today.isoformat()} in {profile.timezone}); nothing was generated"
        )


class UserRepository(Protocol):
    def get(self, user_id: str) -> UserProfile | None: ...


class ScheduleRepository(Protocol):
    def recent(self, user_id: str, local_date: str, days: int) -> list[dict[str, Any]]: ...

    def create(self, record: ScheduleRecord) -> bool:
        """Store the schedule and its posts; False when it exists, ProfileGone when its user has gone."""
        ...


@dataclass(frozen=True)
class GenerationOutcome:
    """What happened for one user; the handler sums these into the run's metrics."""

    user_id: str
    local_date: str
    # generated | already_generated | skipped_unknown_user | skipped_disabled | skipped_no_slots
    # | skipped_profile_deleted (the model ran, the write was refused: the user deleted their data meanwhile)
    # | answer_unusable (a batch job's answer broke a rule: ``fallback_reason`` names it; nothing stored)
    status: str
    slot_count: int = 0
    nudges_enabled: int = 0
    fallback_used: bool = False
    fallback_reason: str | None = None
    attempts: int = 0
    finish_reasons: tuple[str, ...] = ()
    total_tokens: int = 0
    cached_tokens: int = 0  # the part of the prompt tokens served from the provider's cache
    billing: Billing = "standard"  # flex and batch answers are billed at half the list price
    cost_usd: float | None = 0.0  # what they cost at that price (llm.accounting); None: the model has no price

    def as_dict(self) -> dict[str, Any]:
        return {
            "userId": self.user_id,
            "localDate": self.local_date,
            "status": self.status,
            "slotCount": self.slot_count,
            "nudgesEnabled": self.nudges_enabled,
            "fallbackUsed": self.fallback_used,
            "fallbackReason": self.fallback_reason,
            "attempts": self.attempts,
            "finishReasons": list(self.finish_reasons),
            "totalTokens": self.total_tokens,
            "cachedTokens": self.cached_tokens,
            "billing": self.billing,
            "costUsd": self.cost_usd,
        }


@dataclass(frozen=True)
class _Prepared:
    """What a user's day is made from: read once, then given to the model or a batch job."""

    profile: UserProfile
    local_date: str
    table: list[Slot]
    grounding: Grounding


class NudgeGenerationService:
    """``model`` None: the fan-out makes plans only through batch jobs (``plan_batches``); a user
    the job did not serve gets the rule-based fallback (reason ``no_batch_answer``).
    ``service_tier`` is the tier the synchronous calls ask for (NUDGE_SERVICE_TIER): ``flex`` is
    billed at Batch prices, and its 429 when the provider is short of flex capacity defers the user
    like a rate limit (docs/nudges.md#flex-processing)."""

    def __init__(
        self,
        users: UserRepository,
        schedules: ScheduleRepository,
        model: ChatModel | None,
        *,
        slots: SlotSettings | None = None,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], None] = time.sleep,
        service_tier: ServiceTier | None = None,
    ) -> None:
        self._service_tier = service_tier
        self._users = users
        self._schedules = schedules
        self._model = model
        self._slots = slots or SlotSettings()
        self._clock = clock
        self._sleep = sleep

    def generate(
        self, job: GenerationJob, deadline: Deadline | None = None, *, may_defer: bool = False, delivery: int = 1
    ) -> GenerationOutcome:
        """The user's day from the model (or the rule-based fallback), stored. With no model (the
        Batch API-only fan-out), a user whose batch answer did not come gets the fallback."""
        prepared = self._prepare(job)
        if isinstance(prepared, GenerationOutcome):
            return prepared
        if self._model is None:
            output = RuleBasedFallback().build(prepared.grounding.slot_table, prepared.grounding.language)
            result = CommanderResult(output, True, NO_BATCH_ANSWER)
        else:
            result = run_commander(
                self._model, prepared.grounding, deadline=deadline, sleep=self._sleep, service_tier=self._service_tier
            )
        if may_defer and result.fallback_used and result.fallback_reason in DEFERRABLE_REASONS:
            reason = str(result.fallback_reason)
            raise GenerationDeferred(job.userId, reason, deferral_s(reason, result.retry_after_s, delivery))
        return self._store(prepared, result)

    def batch_request(self, job: GenerationJob) -> ChatRequest | GenerationOutcome:
        """The Commander's request for the user's day, for a batch job; or why none is needed
        (the same skips as ``generate``: unknown, disabled, already generated, no slots)."""
        prepared = self._prepare(job)
        return prepared if isinstance(prepared, GenerationOutcome) else commander_request(prepared.grounding)

    def store_batch_answer(self, job: GenerationJob, response: ChatResponse) -> GenerationOutcome:
        """A batch job's answer for the user's day, read and stored as ``generate`` stores the
        model's (the same validation, slot table and one conditional write); ``answer_unusable``
        when the answer breaks a rule (truncated, refused, invalid, or a slot table that changed
        since the request was made), so the synchronous path makes the day instead."""
        prepared = self._prepare(job)
        if isinstance(prepared, GenerationOutcome):
            return prepared
        try:
            result = commander_answer(prepared.grounding, response)
        except Rejected as rejected:
            return GenerationOutcome(
                job.userId,
                job.localDate,
                "answer_unusable",
                slot_count=len(prepared.table),
                fallback_reason=rejected.kind,
                finish_reasons=(response.finish_reason,),
                total_tokens=response.usage.total_tokens,
                cached_tokens=response.usage.cached_prompt_tokens,
                billing="batch",
                cost_usd=cost_usd(response.model, response.usage, "batch"),
            )
        return self._store(prepared, result)

    def _prepare(self, job: GenerationJob) -> _Prepared | GenerationOutcome:
        user_id, local_date = job.userId, job.localDate
        profile = self._users.get(user_id)
        if profile is None:
            return GenerationOutcome(user_id, local_date, "skipped_unknown_user")
        if not profile.nudges_enabled:
            return GenerationOutcome(user_id, local_date, "skipped_disabled")
        check_local_date(local_date, profile, self._clock())
        recent = self._schedules.recent(user_id, local_date, RECENT_DAYS)
        if any(item.get("localDate") == local_date for item in recent):
            return GenerationOutcome(user_id, local_date, "already_generated")
        table = build_slot_table(
            profile.problems,
            self._slots.schedule_map,
            min_spacing_minutes=self._slots.min_spacing_minutes,
            max_slots=self._slots.max_slots,
        )
        if not table:
            return GenerationOutcome(user_id, local_date, "skipped_no_slots")
        grounding = Grounding(
            user_id=user_id,
            problems=profile.problems,
            language=profile.preferred_language,
            app_version=profile.app_version,
            local_date=local_date,
            timezone=profile.timezone,
            slot_table=tuple(table),
            recent_days=tuple(summarise_day(item) for item in recent),
        )
        return _Prepared(profile, local_date, table, grounding)

    def _store(self, prepared: _Prepared, result: CommanderResult) -> GenerationOutcome:
        profile, local_date, table = prepared.profile, prepared.local_date, prepared.table
        record = self._record(profile, local_date, table, result)
        try:
            status = "generated" if self._schedules.create(record) else "already_generated"
        except ProfileGone:
            status = "skipped_profile_deleted"
        created = status == "generated"
        return GenerationOutcome(
            profile.user_id,
            local_date,
            status,
            slot_count=len(table),
            nudges_enabled=sum(1 for nudge in result.output.app_nudges if nudge.enabled) if created else 0,
            fallback_used=result.fallback_used,
            fallback_reason=result.fallback_reason,
            attempts=len(result.attempts),
            finish_reasons=tuple(a.finish_reason or a.outcome for a in result.attempts),
            total_tokens=result.usage.total_tokens,
            cached_tokens=result.usage.cached_prompt_tokens,
            billing=result.billing,
            cost_usd=None if result.account is None else result.account.cost_usd,
        )

    def _record(
        self, profile: UserProfile, local_date: str, table: list[Slot], result: CommanderResult
    ) -> ScheduleRecord:
        return ScheduleRecord(
            user_id=profile.user_id,
            local_date=local_date,
            timezone=profile.timezone,
            language=profile.preferred_language,
            app_version=profile.app_version,
            slot_table=[slot.as_dict() for slot in table],
            agent_raw_output=result.output.model_dump(by_alias=True, mode="json"),
            fallback_used=result.fallback_used,
            fallback_reason=result.fallback_reason,
            attempts=[attempt.as_dict() for attempt in result.attempts],
            usage=result.usage.as_dict(),
            model=result.model,
            created_at=self._clock().isoformat(),
            account=None if result.account is None else result.account.as_dict(),
        )


def summarise_day(item: dict[str, Any]) -> dict[str, Any]:
    """A past schedule reduced to what helps the agent vary its content (no reasoning text).

    Total over whatever is stored (legacy rows included): a malformed past day loses its hooks,
    never today's nudges.
    """
    output = _mapping(item.get("agentRawOutput"))

    def texts(key: str, field_name: str, only_enabled: bool = False) -> list[Any]:
        entries = output.get(key)
        found = []
        for raw in entries if isinstance(entries, list) else []:
            entry = _mapping(raw)
            if (not only_enabled or entry.get("enabled")) and isinstance(entry.get(field_name), str):
                found.append(entry[field_name])
        return found[:RECENT_ITEMS_PER_DAY]

    return {
        "localDate": item.get("localDate"),
        "fallbackUsed": bool(item.get("fallbackUsed")),
        "hooks": texts("appNudges", "hook", only_enabled=True),
        "tiktokCaptions": texts("tiktokPosts", "caption"),
        "xTexts": texts("xPosts", "text"),
    }


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
