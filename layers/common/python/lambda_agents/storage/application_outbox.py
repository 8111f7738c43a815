"""DynamoDB adapter for the outbox of application events (InterviewsTable).

An outbox item ``pk=APPLICATION_EVENTS, sk=<sessionId>#<version:06d>#<status>`` is written in
the transaction of the change it announces (``storage/interviews.py``) and deleted once
published (``interview/application_events.py``). One partition, written once per finished
interview.

Apart from the interview adapter so the relay, which reads and deletes only these items, does
not load the interview domain's models at cold start.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from boto3.dynamodb.conditions import Attr, Key

from ..interview.rules.application_events import ApplicationEvent
from .dynamodb import from_dynamo, guarded, table

OUTBOX_PK = "APPLICATION_EVENTS"
MAX_OUTBOX_PAGES = 50  # a bound on one relay run's reads, as on every other query of the table


def outbox_sk(event: ApplicationEvent) -> str:
    return f"{event.application_id}#{event.session_version:06d}#{event.status}"


def outbox_item(event: ApplicationEvent, written_at: float) -> dict[str, Any]:
    return {
        "pk": OUTBOX_PK,
        "sk": outbox_sk(event),
        "type": "application_event",
        "applicationId": event.application_id,
        "jobId": event.job_id,
        "jobVersion": event.job_version,
        "status": event.status,
        "sessionVersion": event.session_version,
        "occurredAt": event.occurred_at,
        "writtenAt": int(written_at),
    }


def event_of(item: dict[str, Any]) -> ApplicationEvent:
    return ApplicationEvent(
        application_id=item["applicationId"],
        job_id=item["jobId"],
        job_version=item["jobVersion"],
        status=item["status"],
        session_version=item["sessionVersion"],
        occurred_at=item["occurredAt"],
    )


class DynamoApplicationOutbox:
    """Application events not yet published (written by the turns' transactions)."""

    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def pending(self, written_before: datetime, limit: int) -> list[ApplicationEvent]:
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(OUTBOX_PK),
            "FilterExpression": Attr("writtenAt").lte(int(written_before.timestamp())),
            "ConsistentRead": True,
        }
        events: list[ApplicationEvent] = []
        for _ in range(MAX_OUTBOX_PAGES):
            page = guarded(lambda: self._table.query(**kwargs))
            events += [event_of(from_dynamo(item)) for item in page.get("Items", [])]
            if len(events) >= limit or not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return events[:limit]

    def delivered(self, events: Sequence[ApplicationEvent]) -> None:
        for event in events:
            key = {"pk": OUTBOX_PK, "sk": outbox_sk(event)}
            guarded(lambda key=key: self._table.delete_item(Key=key))  # type: ignore[misc]
