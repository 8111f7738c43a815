"""ApplicationEventsRelayFunction: every 5 minutes (EventBridge schedule), publishes the
application events the interview functions stored but could not publish (the outbox of
``interview/application_events.py``), then deletes them from the outbox.

It takes only events written more than OUTBOX_GRACE_SECONDS ago (120, twice the interview
function's timeout), so it never publishes an event the function that wrote it is still
publishing. When the bus refuses, the run fails (its Errors metric) and the events stay stored
for the next run; ``ApplicationEventsPending`` counts what each run found.

Environment: INTERVIEWS_TABLE, APPLICATION_EVENT_BUS, OUTBOX_GRACE_SECONDS (120).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import load_settings
from lambda_agents.interview.interview_log import PowertoolsInterviewLog
from lambda_agents.interview.rules.application_events import ApplicationEventDelivery
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.application_events import EventBridgePublisher
from lambda_agents.storage.application_outbox import DynamoApplicationOutbox
from pydantic import BaseModel, ConfigDict, Field


class RelaySettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    interviews_table: str = Field(alias="INTERVIEWS_TABLE", min_length=1)
    event_bus: str = Field(default="default", alias="APPLICATION_EVENT_BUS", min_length=1, max_length=1600)
    grace_seconds: int = Field(default=120, alias="OUTBOX_GRACE_SECONDS", ge=0, le=86_400)


@dataclass(frozen=True)
class Dependencies:
    settings: RelaySettings
    delivery: ApplicationEventDelivery


def bootstrap(
    *, settings: RelaySettings | None = None, delivery: ApplicationEventDelivery | None = None
) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``)."""
    settings = settings or load_settings(RelaySettings)
    delivery = delivery or ApplicationEventDelivery(
        EventBridgePublisher(settings.event_bus),
        DynamoApplicationOutbox(settings.interviews_table),
        PowertoolsInterviewLog(),
    )
    return Dependencies(settings, delivery)


dependencies = CompositionRoot(bootstrap)


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    settings, delivery = dependencies().settings, dependencies().delivery
    written_before = datetime.now(UTC) - timedelta(seconds=settings.grace_seconds)
    report = delivery.relay(written_before)
    metrics.add_metric(name="ApplicationEventsPending", unit=MetricUnit.Count, value=report.pending)
    metrics.add_metric(name="ApplicationEventsRelayed", unit=MetricUnit.Count, value=report.delivered)
    logger.info("application events relayed", extra={"pending": report.pending, "delivered": report.delivered})
    return {"pending": report.pending, "delivered": report.delivered}
