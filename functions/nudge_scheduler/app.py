"""NudgeSchedulerFunction: hourly (EventBridge), queues every user whose local generation hour
has come, for their local date (one SQS message per user, sent 10 at a time). The event's
``time`` is validated (``nudges.schedule_event``): a malformed one, or one past the clock, fails
the run with InvalidScheduleEvent naming it, before anything is queued.

Environment: USERS_TABLE, NUDGE_QUEUE_URL, NUDGE_GENERATION_HOUR (local hour, default 5),
NUDGE_CATCH_UP_HOURS (default 1).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from lambda_agents.config import load_settings
from lambda_agents.nudges.due import due_zones
from lambda_agents.nudges.schedule_event import scheduled_time
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.nudges import SqsNudgeJobQueue
from lambda_agents.storage.users import DynamoUserRepository
from pydantic import BaseModel, ConfigDict, Field


class SchedulerSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    users_table: str = Field(alias="USERS_TABLE", min_length=1)
    queue_url: str = Field(alias="NUDGE_QUEUE_URL", min_length=1)
    generation_hour: int = Field(default=5, alias="NUDGE_GENERATION_HOUR", ge=0, le=23)
    catch_up_hours: int = Field(default=1, alias="NUDGE_CATCH_UP_HOURS", ge=1, le=24)


@cache
def _ports() -> tuple[SchedulerSettings, DynamoUserRepository, SqsNudgeJobQueue]:
    settings = load_settings(SchedulerSettings)
    return settings, DynamoUserRepository(settings.users_table), SqsNudgeJobQueue(settings.queue_url)


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    settings, users, queue = _ports()
    now = scheduled_time(event, datetime.now(UTC))  # a late or retried run queues the same dates
    zones = list(due_zones(now, settings.generation_hour, settings.catch_up_hours))
    queued = 0
    for zone in zones:
        for page in users.pages_in_timezone(zone.timezone):
            jobs = [{"userId": str(item["userId"]), "localDate": zone.local_date} for item in page]
            queued += queue.send(jobs)
    metrics.add_metric(name="NudgeUsersQueued", unit=MetricUnit.Count, value=queued)
    logger.info("nudge jobs queued", extra={"queued": queued, "due_timezones": len(zones), "at": now.isoformat()})
    return {"queued": queued, "dueTimezones": len(zones), "at": now.isoformat()}
