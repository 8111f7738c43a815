"""NudgeSchedulerFunction: hourly (EventBridge), queues every user whose cohort is due, for their
local date (one SQS message per user, sent 10 at a time; ``nudges.scheduling``). Without the
provider's limits a zone is due at its local generation hour; with them
(``OPENAI_TOKENS_PER_MINUTE`` / ``OPENAI_REQUESTS_PER_MINUTE`` and the fan-out's
``OPENAI_RATE_LIMIT_SHARE``) each cohort is started early enough for the share to make its plans
before its first slot. The event's ``time`` is validated (``nudges.schedule_event``): a malformed
one, or one past the clock, fails the run with InvalidScheduleEvent naming it, before anything is
queued.

Environment: USERS_TABLE, NUDGE_QUEUE_URL, NUDGE_GENERATION_HOUR (local hour, default 5),
NUDGE_CATCH_UP_HOURS (default 1); for planned starts SCHEDULES_TABLE (the cohorts' queued marks),
the limits above, NUDGE_MAX_SLOTS (15) and NUDGE_SCHEDULE_MAP (optional, as the generator's);
NUDGE_FANOUT_MODE (sync; with the Batch API modes zones are queued at their generation hour).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from aws_lambda_powertools.metrics import MetricUnit
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import AccountLimitSettings, ConfigError, load_settings
from lambda_agents.nudges.fanout_starts import fanout_plans_per_minute
from lambda_agents.nudges.schedule_event import scheduled_time
from lambda_agents.nudges.scheduling import NudgeScheduler, first_slot_minutes
from lambda_agents.nudges.settings import SlotTableSettings
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.nudges import DynamoCohortMarks
from lambda_agents.storage.queues import SqsNudgeJobQueue
from lambda_agents.storage.users import DynamoUserRepository
from pydantic import Field, model_validator


class SchedulerSettings(SlotTableSettings, AccountLimitSettings):
    users_table: str = Field(alias="USERS_TABLE", min_length=1)
    queue_url: str = Field(alias="NUDGE_QUEUE_URL", min_length=1)
    generation_hour: int = Field(default=5, alias="NUDGE_GENERATION_HOUR", ge=0, le=23)
    catch_up_hours: int = Field(default=1, alias="NUDGE_CATCH_UP_HOURS", ge=1, le=24)
    schedules_table: str | None = Field(default=None, alias="SCHEDULES_TABLE", min_length=1)
    fanout_mode: Literal["sync", "batch", "batch_then_sync"] = Field(default="sync", alias="NUDGE_FANOUT_MODE")

    @model_validator(mode="after")
    def _marks_where_planned(self) -> SchedulerSettings:
        if self.plans_per_minute() is not None and self.schedules_table is None:
            raise ValueError("SCHEDULES_TABLE is required with the provider's limits (the cohorts' queued marks)")
        return self

    def plans_per_minute(self) -> float | None:
        """The fan-out's plans a minute within its share of the limits; None when they are not known,
        or when batch jobs made the plans the evening before (the cohort is then queued at its
        generation hour, after its jobs' answers were collected, for the leftovers only)."""
        if self.fanout_mode != "sync":
            return None
        return fanout_plans_per_minute(
            self.requests_per_minute, self.tokens_per_minute, share=self.rate_limit_share, max_slots=self.max_slots
        )


def bootstrap(*, settings: SchedulerSettings | None = None) -> NudgeScheduler:
    """The function's composition root (``lambda_agents.composition``): its one use case."""
    try:
        settings = settings or load_settings(SchedulerSettings)
    except (ConfigError, ValueError) as error:
        raise ConfigError(f"NudgeSchedulerFunction settings: {error}") from None
    plans_per_minute = settings.plans_per_minute()
    return NudgeScheduler(
        users=DynamoUserRepository(settings.users_table),
        queue=SqsNudgeJobQueue(settings.queue_url),
        marks=DynamoCohortMarks(settings.schedules_table) if settings.schedules_table else None,
        generation_hour=settings.generation_hour,
        catch_up_hours=settings.catch_up_hours,
        plans_per_minute=plans_per_minute,
        first_slot_minutes=first_slot_minutes(settings.effective_map()),
    )


dependencies = CompositionRoot(bootstrap)


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    scheduler = dependencies()
    now = scheduled_time(event, datetime.now(UTC))  # a late or retried run queues the same dates
    run = scheduler.run(now)
    metrics.add_metric(name="NudgeUsersQueued", unit=MetricUnit.Count, value=run.queued)
    metrics.add_metric(name="NudgeCohortsNotFitting", unit=MetricUnit.Count, value=len(run.not_fitting))
    for demand, start in run.not_fitting:
        logger.warning(
            "a cohort cannot be served before its first slot within the fan-out's share of the rate limit",
            extra={
                "timezone": demand.zone,
                "local_date": demand.local_date,
                "users": demand.users,
                "started": start.start.isoformat(),
                "expected_done": start.expected_done.isoformat(),
                "first_slot": demand.deadline.isoformat(),
            },
        )
    cohorts = [
        {"timezone": cohort.zone, "localDate": cohort.local_date, "leadHours": cohort.lead_hours}
        for cohort in run.cohorts
    ]
    logger.info("nudge jobs queued", extra={"queued": run.queued, "cohorts": cohorts, "at": now.isoformat()})
    return {"queued": run.queued, "dueTimezones": len(run.cohorts), "cohorts": cohorts, "at": now.isoformat()}
