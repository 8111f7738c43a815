"""The hourly scheduler's event (an EventBridge ``Scheduled Event``), validated before use.

Only ``time`` matters: the scheduler queues the local dates due at that moment, so a late or
retried delivery queues the same dates as the first. An event without ``time`` (a manual
invocation) means now. A ``time`` that is not an ISO 8601 instant with a zone, or that lies past
the clock (beyond a little skew) or before the service could have run, is refused with an error
naming it: the year 9999 once overflowed the local-time arithmetic and crashed the run.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError

from ..validation_errors import describe_errors

MAX_CLOCK_SKEW = timedelta(hours=1)
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)


class InvalidScheduleEvent(ValueError):
    """The event cannot say which local dates are due; the message names the field."""


class ScheduleEvent(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    time: AwareDatetime | None = None


def scheduled_time(event: Any, now: datetime) -> datetime:
    """The UTC instant the schedule fired, or ``now`` when the event has none."""
    if not isinstance(event, dict):
        raise InvalidScheduleEvent(f"the schedule event must be a JSON object, got {type(event).__name__}")
    try:
        parsed = ScheduleEvent.model_validate(event)
    except ValidationError as error:
        raise InvalidScheduleEvent(f"invalid schedule event: {', '.join(describe_errors(error))}") from None
    if parsed.time is None:
        return now
    try:
        moment = parsed.time.astimezone(UTC)
    except OverflowError:
        shown = str(event.get("time"))[:40]
        raise InvalidScheduleEvent(f"invalid schedule event: time {shown!r} is out of range") from None
    if moment > now + MAX_CLOCK_SKEW or moment < EARLIEST:
        raise InvalidScheduleEvent(
            f"invalid schedule event: time {moment.isoformat()} is not between {EARLIEST.date().isoformat()} "
            f"and {MAX_CLOCK_SKEW} past the clock ({now.isoformat(timespec='seconds')})"
        )
    return moment
