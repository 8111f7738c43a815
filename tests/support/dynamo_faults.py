"""Inject DynamoDB failures that moto never raises by itself (throttling after boto3's retries,
a conditional check or a transaction refused at a chosen moment).

Works on the shared boto3 resource of ``lambda_agents.storage.dynamodb``: a ``before-call``
handler answers instead of moto, so the product sees exactly the ClientError DynamoDB would
send, through the same code path. Usage::

    with dynamo_fault("TransactWriteItems", "TransactionCanceledException",
                      reasons=["ConditionalCheckFailed"]) as fault:
        ...
    assert fault.fired == 1
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lambda_agents.storage.dynamodb import dynamodb_resource

THROTTLED = "ProvisionedThroughputExceededException"
CONDITION_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELLED = "TransactionCanceledException"


@dataclass
class DynamoFault:
    operation: str
    code: str
    times: int | None
    reasons: list[str] = field(default_factory=list)
    fired: int = 0
    calls: int = 0

    def __call__(self, **kwargs: Any) -> tuple[Any, dict[str, Any]] | None:
        self.calls += 1
        if self.times is not None and self.fired >= self.times:
            return None
        self.fired += 1
        body: dict[str, Any] = {
            "Error": {"Code": self.code, "Message": f"injected {self.code}"},
            "ResponseMetadata": {"HTTPStatusCode": 400, "RetryAttempts": 0},
        }
        if self.reasons:
            body["CancellationReasons"] = [{"Code": reason} for reason in self.reasons]
        return _Http(400), body


@dataclass
class _Http:
    status_code: int
    headers: dict[str, str] = field(default_factory=dict)
    text: str = ""
    content: bytes = b""


@contextlib.contextmanager
def dynamo_fault(
    operation: str,
    code: str = THROTTLED,
    *,
    times: int | None = None,
    reasons: list[str] | None = None,
    client: Any = None,
) -> Iterator[DynamoFault]:
    """Fail the next ``times`` calls of ``operation`` (every call when None) with ``code``, on the
    product's shared client or on ``client`` (e.g. a Powertools persistence layer's own)."""
    fault = DynamoFault(operation, code, times, list(reasons or []))
    events = (client or dynamodb_resource().meta.client).meta.events
    event_name = f"before-call.dynamodb.{operation}"
    events.register(event_name, fault, unique_id=f"dynamo-fault-{id(fault)}")
    try:
        yield fault
    finally:
        events.unregister(event_name, unique_id=f"dynamo-fault-{id(fault)}")
