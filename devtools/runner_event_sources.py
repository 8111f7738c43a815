"""The runner's stand-ins for Lambda event sources: SQS polling and EventBridge schedules
(docs/local.md#the-local-runner-no-docker).

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .runner_lambda import InvocationError
from .runner_template import LOCAL_ACCOUNT_ID, QueueSpec, QueueSubscription, ScheduleSpec

SQS_RECEIVE_LIMIT = 10
Invoke = Callable[[str, Any], Any]


@dataclass
class DeliveryReport:
    queue_id: str
    function_id: str
    batches: int = 0
    deliveries: int = 0  # a retried message counts once per delivery
    succeeded: int = 0
    failed_deliveries: int = 0
    left_in_queue: int = 0
    moved_to_dead_letter_queue: int = 0

    def summary(self) -> str:
        return (
            f"{self.queue_id} -> {self.function_id}: {self.batches} batches, {self.deliveries} deliveries, "
            f"{self.succeeded} succeeded, {self.failed_deliveries} failed deliveries, "
            f"{self.left_in_queue} left in queue, {self.moved_to_dead_letter_queue} moved to the DLQ"
        )


def queue_arn(queue: QueueSpec, region: str) -> str:
    return f"arn:aws:sqs:{region}:{LOCAL_ACCOUNT_ID}:{queue.name}"


def _lambda_message_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    converted = {}
    for name, value in attributes.items():
        binary = value.get("BinaryValue")
        converted[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode() if isinstance(binary, bytes) else binary,
            "stringListValues": value.get("StringListValues", []),
            "binaryListValues": value.get("BinaryListValues", []),
            "dataType": value.get("DataType"),
        }
    return converted


def sqs_event(messages: Sequence[dict[str, Any]], queue: QueueSpec, region: str) -> dict[str, Any]:
    """The event Lambda's SQS poller sends for a batch of received messages."""
    arn = queue_arn(queue, region)
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": dict(message.get("Attributes", {})),
                "messageAttributes": _lambda_message_attributes(message.get("MessageAttributes", {})),
                "md5OfBody": message.get("MD5OfBody"),
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
                "awsRegion": region,
            }
            for message in messages
        ]
    }


def failed_message_ids(result: Any, message_ids: Sequence[str], subscription: QueueSubscription) -> set[str]:
    """Which messages of a batch failed, given the handler's result (Lambda's partial-batch rules)."""
    if not subscription.report_batch_item_failures or result is None:
        return set()
    if not isinstance(result, dict):
        return set(message_ids)
    failures = result.get("batchItemFailures")
    if not failures:
        return set()
    if not isinstance(failures, list):
        return set(message_ids)
    failed = set()
    for item in failures:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not isinstance(identifier, str) or identifier not in message_ids:
            return set(message_ids)
        failed.add(identifier)
    return failed


def _approximate_count(sqs: Any, url: str, attribute: str = "ApproximateNumberOfMessages") -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[attribute])
    return int(attributes["Attributes"].get(attribute, 0))


def _receive_batch(sqs: Any, url: str, batch_size: int) -> list[dict[str, Any]]:
    batch: list[dict[str, Any]] = []
    while len(batch) < batch_size:
        received = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=min(SQS_RECEIVE_LIMIT, batch_size - len(batch)),
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        if not received:
            break
        batch.extend(received)
    return batch


def _chunks(items: Sequence[dict[str, Any]]) -> list[Sequence[dict[str, Any]]]:
    return [items[start : start + SQS_RECEIVE_LIMIT] for start in range(0, len(items), SQS_RECEIVE_LIMIT)]


def deliver(
    sqs: Any,
    queue: QueueSpec,
    urls: dict[str, str],
    subscription: QueueSubscription,
    invoke: Invoke,
    region: str,
    on_error: Callable[[InvocationError], None] | None = None,
    *,
    redeliver_failures: bool = True,
) -> DeliveryReport:
    """Drain ``queue`` into its consumer until it is empty or only failures are left.

    ``redeliver_failures`` makes a failed message visible again at once and delivers it again in
    this call, up to the queue's redrive (a test or ``make invoke`` sees its whole life in one call).
    Without it a failed message waits as in SQS: until the visibility timeout the function gave it
    (a generator's deferral), or else the queue's, before a later delivery receives it."""
    url = urls[queue.logical_id]
    dlq_url = urls.get(queue.dead_letter_queue_id or "")
    dlq_before = _approximate_count(sqs, dlq_url) if dlq_url else 0
    report = DeliveryReport(queue.logical_id, subscription.function_id)
    while True:
        failed_this_round: list[dict[str, Any]] = []
        while batch := _receive_batch(sqs, url, subscription.batch_size):
            report.batches += 1
            report.deliveries += len(batch)
            ids = [message["MessageId"] for message in batch]
            try:
                result = invoke(subscription.function_id, sqs_event(batch, queue, region))
                failed = failed_message_ids(result, ids, subscription)
            except InvocationError as exc:
                if on_error is not None:
                    on_error(exc)
                failed = set(ids)
            done = [message for message in batch if message["MessageId"] not in failed]
            for chunk in _chunks(done):
                sqs.delete_message_batch(
                    QueueUrl=url,
                    Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(chunk)],
                )
            report.succeeded += len(done)
            report.failed_deliveries += len(batch) - len(done)
            failed_this_round.extend(message for message in batch if message["MessageId"] in failed)
        if not failed_this_round:
            break
        if not redeliver_failures:
            report.left_in_queue = len(failed_this_round)
            break
        for chunk in _chunks(failed_this_round):
            sqs.change_message_visibility_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                    for n, m in enumerate(chunk)
                ],
            )
        if queue.max_receive_count is None:
            report.left_in_queue = len(failed_this_round)
            break
    if dlq_url:
        report.moved_to_dead_letter_queue = _approximate_count(sqs, dlq_url) - dlq_before
    return report


def scheduled_event(schedule: ScheduleSpec, region: str, now: datetime | None = None) -> Any:
    """The EventBridge event a Schedule rule sends (or the rule's constant Input, when set)."""
    if schedule.input is not None:
        return schedule.input
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": LOCAL_ACCOUNT_ID,
        "time": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{LOCAL_ACCOUNT_ID}:rule/{schedule.function_id}-{schedule.event_name}"],
        "detail": {},
    }
