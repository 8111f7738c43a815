"""Spec: the local DynamoDB (the embedded moto server) rolls a cancelled transaction back item by
item: what the transaction wrote before its failing condition is undone, an item it replaced
comes back as it was, and nothing else in the table is touched, without copying the table for
every transaction (``devtools.local_aws.rollback_by_item``)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table

from devtools.local_aws import LocalAws, ensure_tables

pytestmark = pytest.mark.integration

TABLE = "SchedulesTable"


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    with LocalAws({"AWS_DEFAULT_REGION": "us-east-1"}, force_embedded=True) as aws:
        client = aws.client("dynamodb")
        ensure_tables(client)
        yield client
        aws.reset()


def key(pk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": "SCHEDULE#2026-11-26"}}


def item(pk: str, version: str) -> dict[str, Any]:
    return key(pk) | {"version": {"S": version}}


def get(dynamodb: Any, pk: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = dynamodb.get_item(TableName=TABLE, Key=key(pk), ConsistentRead=True).get("Item")
    return found


def test_a_cancelled_transaction_undoes_what_it_wrote_and_leaves_the_rest(dynamodb: Any) -> None:
    dynamodb.put_item(TableName=TABLE, Item=item("replaced", "old"))
    dynamodb.put_item(TableName=TABLE, Item=item("updated", "old"))
    dynamodb.put_item(TableName=TABLE, Item=item("bystander", "old"))

    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": item("new", "new")}},
                {"Put": {"TableName": TABLE, "Item": item("replaced", "new")}},
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": key("updated"),
                        "UpdateExpression": "SET version = :v",
                        "ExpressionAttributeValues": {":v": {"S": "new"}},
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": TABLE,
                        "Key": key("missing"),
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )

    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert get(dynamodb, "new") is None
    assert get(dynamodb, "replaced") == item("replaced", "old")
    assert get(dynamodb, "updated") == item("updated", "old")
    assert get(dynamodb, "bystander") == item("bystander", "old")
    assert dynamodb.scan(TableName=TABLE, Select="COUNT")["Count"] == 3


def test_a_transaction_that_succeeds_stores_every_item(dynamodb: Any) -> None:
    dynamodb.put_item(TableName=TABLE, Item=item("replaced", "old"))

    dynamodb.transact_write_items(
        TransactItems=[
            {
                "Put": {
                    "TableName": TABLE,
                    "Item": item("new", "new"),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {"Put": {"TableName": TABLE, "Item": item("replaced", "new")}},
        ]
    )

    assert get(dynamodb, "new") == item("new", "new")
    assert get(dynamodb, "replaced") == item("replaced", "new")


def test_the_rollback_does_not_copy_the_table(dynamodb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's own rollback deep-copies every table the transaction names; with a table of
    thousands of schedules that was the local fan-out's whole cost. Here its copy is the table."""
    copies: list[bool] = []
    deepcopy = copy.deepcopy

    def watching(value: Any, memo: Any = None) -> Any:
        copied = deepcopy(value, memo)
        if isinstance(value, Table):
            copies.append(copied is value)
        return copied

    monkeypatch.setattr(copy, "deepcopy", watching)
    dynamodb.transact_write_items(TransactItems=[{"Put": {"TableName": TABLE, "Item": item("one", "new")}}])

    assert getattr(DynamoDBBackend.transact_write_items, "rolls_back_by_item", False)
    assert get(dynamodb, "one") == item("one", "new")
    assert copies == [True]  # moto asked for its copy once and got the table itself
