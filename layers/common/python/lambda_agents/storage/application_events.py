"""EventBridge adapter for application events (``interview/application_events.py``).

PutEvents takes at most 10 entries a call; an entry the bus refuses comes back with an error
code and is simply not in the accepted list (it stays in the outbox). boto3 honours
``AWS_ENDPOINT_URL_EVENTBRIDGE``, so the same code publishes to EventBridge, to moto in tests and
to the local runner's embedded server.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ..interview.rules.application_events import SOURCE, ApplicationEvent, PublishFailed

MAX_ENTRIES_PER_CALL = 10


@lru_cache(maxsize=1)
def events_client() -> Any:
    return boto3.client("events", config=Config(retries={"mode": "standard", "max_attempts": 3}))


class EventBridgePublisher:
    def __init__(self, bus_name: str) -> None:
        self._bus_name = bus_name

    def publish(self, events: Sequence[ApplicationEvent]) -> list[str]:
        accepted: list[str] = []
        for start in range(0, len(events), MAX_ENTRIES_PER_CALL):
            chunk = events[start : start + MAX_ENTRIES_PER_CALL]
            entries = [
                {
                    "Source": SOURCE,
                    "DetailType": event.detail_type,
                    "Detail": json.dumps(event.detail(), ensure_ascii=False),
                    "EventBusName": self._bus_name,
                }
                for event in chunk
            ]
            try:
                answer = events_client().put_events(Entries=entries)
            except (ClientError, BotoCoreError) as error:
                if accepted:
                    return accepted  # what was accepted is reported; the rest stays in the outbox
                raise PublishFailed(f"{type(error).__name__}: {error}") from error
            results = answer.get("Entries", [])
            accepted += [event.event_id for event, result in zip(chunk, results, strict=False) if result.get("EventId")]
        return accepted
