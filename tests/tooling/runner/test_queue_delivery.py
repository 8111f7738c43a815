"""Queues: batches of BatchSize, partial batch failures, the DLQ after maxReceiveCount, schedules."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.runner import LocalRunner
from devtools.runner_event_sources import DeliveryReport
from devtools.runner_template import TemplateError

pytestmark = pytest.mark.integration


def _bodies(runner: LocalRunner, queue_id: str) -> list[str]:
    sqs = runner.sqs
    url = runner.queue_urls[queue_id]
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0).get("Messages", [])
    return sorted(message["Body"] for message in received)


def _send_and_deliver(
    runner: LocalRunner, queue_id: str, *bodies: str, redeliver_failures: bool = True
) -> DeliveryReport:
    """``bodies`` sent to ``queue_id`` in order, then the queue delivered to its consumer."""
    for body in bodies:
        runner.send_message(queue_id, body)
    return runner.deliver(queue_id, redeliver_failures=redeliver_failures)


def _delivered(calls: list[tuple[str, Any]]) -> list[str]:
    """Every body the consumer was handed, in the order of its batches."""
    return [body for kind, batch in calls if kind == "batch" for body, _ in batch]


def test_given_seven_messages_when_delivered_then_the_consumer_gets_batches_of_its_batch_size(
    runner: LocalRunner, calls: list[tuple[str, Any]]
) -> None:
    report = _send_and_deliver(runner, "WorkQueue", *(f"ok-{n}" for n in range(7)))

    assert [len(batch) for kind, batch in calls if kind == "batch"] == [3, 3, 1]
    assert (report.batches, report.deliveries, report.succeeded) == (3, 7, 7)
    assert _bodies(runner, "WorkQueue") == []


def test_given_a_partial_batch_failure_then_only_the_reported_messages_are_retried(
    runner: LocalRunner, calls: list[tuple[str, Any]]
) -> None:
    _send_and_deliver(runner, "WorkQueue", "ok-1", "fail-1", "ok-2")

    delivered = _delivered(calls)
    assert sorted(delivered) == ["fail-1", "fail-1", "ok-1", "ok-2"]  # maxReceiveCount 2: two tries
    assert [body for body in delivered if body.startswith("ok")] == ["ok-1", "ok-2"]


def test_given_a_message_failing_every_time_then_it_ends_in_the_dlq_after_max_receive_count(
    runner: LocalRunner, calls: list[tuple[str, Any]]
) -> None:
    report = _send_and_deliver(runner, "WorkQueue", "fail-always", "ok")

    batches = [batch for kind, batch in calls if kind == "batch"]
    receive_counts = [count for batch in batches for body, count in batch if body == "fail-always"]
    assert receive_counts == ["1", "2"]
    assert report.moved_to_dead_letter_queue == 1
    assert report.failed_deliveries == 2
    assert _bodies(runner, "WorkQueue") == []
    assert _bodies(runner, "WorkDeadLetterQueue") == ["fail-always"]


def test_given_a_handler_error_and_no_redrive_then_the_whole_batch_stays_in_the_queue(
    runner: LocalRunner, calls: list[tuple[str, Any]]
) -> None:
    report = _send_and_deliver(runner, "PlainQueue", "a", "b")

    assert [kind for kind, _ in calls] == ["broken"]  # one batch of both, no retry loop
    assert (report.failed_deliveries, report.left_in_queue, report.moved_to_dead_letter_queue) == (2, 2, 0)
    assert _bodies(runner, "PlainQueue") == ["a", "b"]


def test_sqs_records_carry_the_local_queue_arn_and_message_attributes(
    runner: LocalRunner, calls: list[tuple[str, Any]]
) -> None:
    attributes = {"kind": {"DataType": "String", "StringValue": "daily"}}
    runner.send_message("WorkQueue", "ok", attributes)
    events: list[Any] = []
    original = runner.invoke

    def spy(logical_id: str, event: Any, env_overrides: Any = None) -> Any:
        events.append(event)
        return original(logical_id, event, env_overrides)

    runner.invoke = spy  # type: ignore[method-assign]
    runner.deliver("WorkQueue")

    record = events[0]["Records"][0]
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"] == "arn:aws:sqs:us-east-1:123456789012:WorkQueue"
    assert record["messageAttributes"]["kind"]["stringValue"] == "daily"
    assert record["messageAttributes"]["kind"]["dataType"] == "String"


def test_delivering_a_queue_nobody_consumes_is_a_clear_error(runner: LocalRunner) -> None:
    with pytest.raises(TemplateError, match="no function consumes queue 'WorkDeadLetterQueue'"):
        runner.deliver("WorkDeadLetterQueue")


def test_firing_a_schedule_sends_the_eventbridge_scheduled_event(
    runner: LocalRunner, calls: list[tuple[str, Any]]
) -> None:
    result = runner.fire_schedule("ScheduledFunction")

    assert result == {"detailType": "Scheduled Event", "function": "ScheduledFunction"}
    event = calls[0][1]
    assert event["source"] == "aws.events"
    assert event["resources"] == ["arn:aws:events:us-east-1:123456789012:rule/ScheduledFunction-Hourly"]


def test_firing_a_function_without_schedule_is_a_clear_error(runner: LocalRunner) -> None:
    with pytest.raises(TemplateError, match="EchoFunction has no Schedule event"):
        runner.fire_schedule("EchoFunction")


def test_a_scheduled_producer_and_a_queue_consumer_reach_the_local_queue_and_table_through_their_env(
    runner: LocalRunner,
) -> None:
    assert runner.fire_schedule("ProducerFunction") == {"queued": 4}

    report = runner.deliver("StoreQueue")

    items = runner.aws.client("dynamodb").scan(TableName="ItemsTable")["Items"]
    assert sorted(item["id"]["S"] for item in items) == ["item-0", "item-1", "item-2", "item-3"]
    assert (report.batches, report.succeeded) == (1, 4)


def test_given_failures_left_to_wait_then_a_failed_message_waits_out_its_visibility_as_in_sqs(
    runner: LocalRunner, calls: list[tuple[str, Any]]
) -> None:
    """As Lambda's poller (and `make serve`): a failed message is not received again at once, so a
    record a function deferred (its visibility set for a backoff) is not retried before its time."""
    report = _send_and_deliver(runner, "WorkQueue", "fail-1", "ok", redeliver_failures=False)

    assert sorted(_delivered(calls)) == ["fail-1", "ok"]  # each once: no second round in this delivery
    assert (report.failed_deliveries, report.left_in_queue, report.moved_to_dead_letter_queue) == (1, 1, 0)
    assert _bodies(runner, "WorkQueue") == []  # invisible: it waits...
    attributes = runner.sqs.get_queue_attributes(
        QueueUrl=runner.queue_urls["WorkQueue"], AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "1"  # ...and is not lost
    assert runner.deliver("WorkQueue", redeliver_failures=False).deliveries == 0
