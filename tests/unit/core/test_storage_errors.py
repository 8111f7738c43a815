from __future__ import annotations

from decimal import Decimal

import pytest
from botocore.exceptions import ClientError
from lambda_agents.storage.dynamodb import (
    ConditionFailed,
    StorageError,
    StorageThrottled,
    from_dynamo,
    guarded,
    to_dynamo,
)


def _error(code: str, reasons: list[dict[str, str]] | None = None) -> ClientError:
    response: dict[str, object] = {"Error": {"Code": code, "Message": code}}
    if reasons is not None:
        response["CancellationReasons"] = reasons
    return ClientError(response, "PutItem")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "reasons", "expected"),
    [
        ("ConditionalCheckFailedException", None, ConditionFailed),
        ("ProvisionedThroughputExceededException", None, StorageThrottled),
        ("ThrottlingException", None, StorageThrottled),
        ("TransactionCanceledException", [{"Code": "None"}, {"Code": "ConditionalCheckFailed"}], ConditionFailed),
        ("TransactionCanceledException", [{"Code": "ThrottlingError"}], StorageThrottled),
        ("TransactionCanceledException", [{"Code": "None"}, {"Code": "TransactionConflict"}], StorageThrottled),
        ("TransactionCanceledException", [{"Code": "ProvisionedThroughputExceeded"}], StorageThrottled),
        ("TransactionCanceledException", [{"Code": "ValidationError"}], StorageError),
        ("ValidationException", None, StorageError),
    ],
)
def test_client_errors_become_storage_errors_a_caller_can_act_on(
    code: str, reasons: list[dict[str, str]] | None, expected: type[StorageError]
) -> None:
    def fail() -> None:
        raise _error(code, reasons)

    with pytest.raises(StorageError) as raised:
        guarded(fail)
    assert type(raised.value) is expected


def test_numbers_round_trip_through_decimal() -> None:
    value = {"a": 1.5, "b": [2, 0.25], "c": "x"}
    stored = to_dynamo(value)
    assert stored == {"a": Decimal("1.5"), "b": [2, Decimal("0.25")], "c": "x"}
    assert from_dynamo({"n": Decimal("3"), "f": Decimal("0.5")}) == {"n": 3, "f": 0.5}


def test_a_throttled_write_is_tried_again_after_each_wait_then_gives_up_with_the_storage_error() -> None:
    from lambda_agents.storage.dynamodb import retried_when_throttled

    waits: list[float] = []
    calls: list[int] = []

    def throttled_twice() -> str:
        calls.append(1)
        if len(calls) <= 2:
            raise _error("TransactionCanceledException", [{"Code": "ThrottlingError"}])
        return "written"

    assert retried_when_throttled(throttled_twice, (0.2, 0.5), waits.append) == "written"
    assert waits == [0.2, 0.5]

    def always_throttled() -> str:
        raise _error("ProvisionedThroughputExceededException")

    with pytest.raises(StorageThrottled):
        retried_when_throttled(always_throttled, (0.1,), waits.append)

    def refused() -> str:
        raise _error("ConditionalCheckFailedException")

    waits.clear()
    with pytest.raises(ConditionFailed):
        retried_when_throttled(refused, (0.1,), waits.append)
    assert waits == []  # a refused condition is an answer, not a reason to wait
