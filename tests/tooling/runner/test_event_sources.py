"""Lambda's partial-batch rules, the SQS record shape and the scheduled event."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from devtools.runner_event_sources import failed_message_ids, scheduled_event, sqs_event
from devtools.runner_template import QueueSpec, QueueSubscription, ScheduleSpec

IDS = ["m1", "m2", "m3"]
REPORTING = QueueSubscription("Q", "F", "E", batch_size=3, report_batch_item_failures=True)
NOT_REPORTING = QueueSubscription("Q", "F", "E", batch_size=3, report_batch_item_failures=False)


@pytest.mark.parametrize(
    ("result", "failed"),
    [
        ({"batchItemFailures": [{"itemIdentifier": "m2"}]}, {"m2"}),
        ({"batchItemFailures": []}, set()),  # empty list: full success
        ({"batchItemFailures": None}, set()),
        ({}, set()),
        (None, set()),
        ({"batchItemFailures": [{"itemIdentifier": "other"}]}, set(IDS)),  # unknown id: the whole batch
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, set(IDS)),
        ({"batchItemFailures": [{"id": "m1"}]}, set(IDS)),  # bad key name
        ("not an object", set(IDS)),
    ],
)
def test_partial_batch_responses_follow_lambdas_rules(result: object, failed: set[str]) -> None:
    assert failed_message_ids(result, IDS, REPORTING) == failed


def test_without_report_batch_item_failures_the_result_is_ignored() -> None:
    assert failed_message_ids({"batchItemFailures": [{"itemIdentifier": "m1"}]}, IDS, NOT_REPORTING) == set()


def test_an_sqs_record_has_the_fields_lambda_sends() -> None:
    message = {
        "MessageId": "m1",
        "ReceiptHandle": "rh",
        "Body": "{}",
        "MD5OfBody": "md5",
        "Attributes": {"ApproximateReceiveCount": "2"},
        "MessageAttributes": {"kind": {"DataType": "Binary", "BinaryValue": b"\x01"}},
    }
    (record,) = sqs_event([message], QueueSpec("WorkQueue", "WorkQueue"), "eu-west-1")["Records"]

    assert record["eventSourceARN"] == "arn:aws:sqs:eu-west-1:123456789012:WorkQueue"
    assert record["attributes"]["ApproximateReceiveCount"] == "2"
    assert record["messageAttributes"]["kind"]["binaryValue"] == "AQ=="
    assert (record["messageId"], record["receiptHandle"], record["body"]) == ("m1", "rh", "{}")


def test_a_scheduled_event_looks_like_eventbridges() -> None:
    event = scheduled_event(
        ScheduleSpec("F", "Hourly", "rate(1 hour)"), "us-east-1", datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    )

    assert event["detail-type"] == "Scheduled Event"
    assert event["time"] == "2026-01-02T03:04:00Z"
    assert event["resources"] == ["arn:aws:events:us-east-1:123456789012:rule/F-Hourly"]
    assert event["detail"] == {}


def test_a_schedule_with_constant_input_sends_that_input() -> None:
    assert scheduled_event(ScheduleSpec("F", "E", "rate(1 hour)", input={"a": 1}), "us-east-1") == {"a": 1}
