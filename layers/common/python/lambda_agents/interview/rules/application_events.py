"""Events a hiring team subscribes to instead of polling: an application completed, failed its
audit, or was withdrawn (EventBridge, source ``lambda-agents.interview``).

Delivery is a transactional outbox, at least once:

1. the turn that finishes an interview writes the event into the outbox in the SAME transaction
   as its state (a withdrawal writes it with the mark that starts the deletion): an event exists
   exactly when the change it announces was stored, and a turn that is refused (409) or fails
   announces nothing;
2. after the commit the function publishes it (PutEvents) and deletes it from the outbox;
3. whatever was not published (EventBridge unavailable, the invocation ended in between) stays
   in the outbox, and the scheduled relay publishes it later; the relay only takes events older
   than the longest invocation, so it never races step 2.

Nothing is lost silently: an event that could not be published stays stored, is logged and
counted until it is. A duplicate is possible only when PutEvents succeeded and the outbox delete
then failed; it carries the same ``detail.eventId``, which subscribers use to deduplicate
(EventBridge itself delivers to targets at least once). Events carry ids and the status only,
never the applicant's answers: the team reads those through the employer API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from ..interview_log import InterviewLog

SOURCE = "lambda-agents.interview"
EventStatus = Literal["completed", "audit_failed", "withdrawn"]
DETAIL_TYPES: dict[str, str] = {
    "completed": "Application Completed",
    "audit_failed": "Application Audit Failed",
    "withdrawn": "Application Withdrawn",
}


@dataclass(frozen=True)
class ApplicationEvent:
    application_id: str
    job_id: str
    job_version: int
    status: EventStatus
    session_version: int  # the session's version that carries the change: completions after a correction differ
    occurred_at: str

    @property
    def event_id(self) -> str:
        return f"{self.application_id}:{self.session_version}:{self.status}"

    @property
    def detail_type(self) -> str:
        return DETAIL_TYPES[self.status]

    def detail(self) -> dict[str, Any]:
        return {
            "eventId": self.event_id,
            "applicationId": self.application_id,
            "jobId": self.job_id,
            "jobVersion": self.job_version,
            "status": self.status,
            "occurredAt": self.occurred_at,
        }


class PublishFailed(Exception):
    """The event bus could not be reached or refused the request as a whole."""


class EventPublisher(Protocol):
    def publish(self, events: Sequence[ApplicationEvent]) -> list[str]:
        """Publish; return the ids of the events the bus accepted, or raise ``PublishFailed``."""
        ...


class ApplicationOutbox(Protocol):
    def pending(self, written_before: datetime, limit: int) -> list[ApplicationEvent]: ...

    def delivered(self, events: Sequence[ApplicationEvent]) -> None: ...


@dataclass(frozen=True)
class RelayReport:
    pending: int
    delivered: int


@dataclass
class ApplicationEventDelivery:
    publisher: EventPublisher
    outbox: ApplicationOutbox
    log: InterviewLog

    def deliver(self, events: Sequence[ApplicationEvent]) -> int:
        """Publish events that were just committed; never raises: what fails stays in the outbox."""
        if not events:
            return 0
        try:
            accepted = set(self.publisher.publish(events))
        except PublishFailed as error:
            self.log.warn(
                "application events deferred to the relay",
                events=[event.event_id for event in events],
                error=str(error)[:200],
            )
            return 0
        published = [event for event in events if event.event_id in accepted]
        refused = [event.event_id for event in events if event.event_id not in accepted]
        if refused:
            self.log.warn("application events refused by the bus; the relay retries them", events=refused)
        try:
            self.outbox.delivered(published)
        except Exception as error:
            self.log.warn(
                "published events stay in the outbox: the relay will publish them again (same eventId)",
                events=[event.event_id for event in published],
                error=type(error).__name__,
            )
        else:
            for event in published:
                self.log.info("application event published", eventId=event.event_id, detailType=event.detail_type)
        return len(published)

    def relay(self, written_before: datetime, limit: int = 100) -> RelayReport:
        """Publish what the functions could not; raises ``PublishFailed`` so the scheduled run fails
        visibly (its error metric) while the events stay stored."""
        events = self.outbox.pending(written_before, limit)
        if not events:
            return RelayReport(0, 0)
        accepted = set(self.publisher.publish(events))
        published = [event for event in events if event.event_id in accepted]
        self.outbox.delivered(published)
        for event in published:
            self.log.info("application event relayed", eventId=event.event_id, detailType=event.detail_type)
        if len(published) < len(events):
            self.log.error(
                "application events still undelivered",
                events=[event.event_id for event in events if event.event_id not in accepted],
            )
        return RelayReport(len(events), len(published))
