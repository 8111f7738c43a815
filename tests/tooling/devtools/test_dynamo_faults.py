"""The fault injector itself: it raises the storage error DynamoDB would, then lets calls through."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from lambda_agents.storage.dynamodb import (
    ConditionFailed,
    StorageThrottled,
    dynamodb_resource,
    guarded,
    table,
)
from moto import mock_aws

from tests.support.dynamo_faults import TRANSACTION_CANCELLED, dynamo_fault


@pytest.fixture
def items() -> Iterator[object]:
    with mock_aws():
        dynamodb_resource.cache_clear()
        boto3.client("dynamodb", region_name="us-east-1").create_table(
            TableName="T",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield table("T")
        dynamodb_resource.cache_clear()


def test_given_one_throttle_then_the_first_put_is_throttled_and_the_second_lands(items: object) -> None:
    with dynamo_fault("PutItem", times=1) as fault:
        with pytest.raises(StorageThrottled):
            guarded(lambda: items.put_item(Item={"pk": "a"}))  # type: ignore[attr-defined]
        guarded(lambda: items.put_item(Item={"pk": "a"}))  # type: ignore[attr-defined]
    assert fault.fired == 1
    assert fault.calls == 2
    assert "Item" in items.get_item(Key={"pk": "a"})  # type: ignore[attr-defined]


def test_given_a_cancelled_transaction_with_a_failed_condition_then_condition_failed_is_raised(
    items: object,
) -> None:
    client = dynamodb_resource().meta.client
    with (
        dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=["ConditionalCheckFailed"]),
        pytest.raises(ConditionFailed),
    ):
        guarded(
            lambda: client.transact_write_items(TransactItems=[{"Put": {"TableName": "T", "Item": {"pk": {"S": "b"}}}}])
        )
    assert "Item" not in items.get_item(Key={"pk": "b"})  # type: ignore[attr-defined]
