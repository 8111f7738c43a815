"""One boto3 DynamoDB resource per process, and the storage errors domains act on.

boto3 honours AWS_ENDPOINT_URL_DYNAMODB by itself, so the same code talks to DynamoDB in AWS,
to moto in tests, and to the local runner's embedded server.

Threads (the generator serves a batch's users at once) share the resource: the adapters use only
its tables' request actions and its client, which hold no state between calls and go through the
thread-safe botocore client; what boto3 warns about sharing is a resource's loaded attributes,
which nothing here reads. Creating it is not thread-safe (boto3's default session), so it is made
under a lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from functools import lru_cache
from typing import Any, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

T = TypeVar("T")
_THROTTLING = {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
# A cancelled transaction names its reasons per item without the "Exception" suffix; a conflict
# with another transaction on the same item is as transient as throttling.
_TRANSIENT_CANCELLATIONS = {
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "TransactionConflict",
    "RequestLimitExceeded",
}


class StorageError(RuntimeError):
    """DynamoDB failed in a way the caller cannot fix by changing its input."""


class ConditionFailed(StorageError):
    """A conditional write or transaction was refused: the item changed or already exists.

    ``failed_items``: for a transaction, the positions of the items whose condition failed (the
    caller tells which of its conditions refused the write); empty for a single write.
    """

    def __init__(self, message: str, failed_items: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.failed_items = failed_items


class StorageThrottled(StorageError):
    """DynamoDB throttled the request after boto3's own retries; retry later."""


_CREATION = threading.Lock()


@lru_cache(maxsize=1)
def dynamodb_resource() -> Any:
    with _CREATION:
        return boto3.resource("dynamodb", config=Config(retries={"mode": "standard", "max_attempts": 3}))


def table(name: str) -> Any:
    return dynamodb_resource().Table(name)


def translate_client_error(error: ClientError) -> StorageError:
    code = error.response.get("Error", {}).get("Code", "")
    if code == "ConditionalCheckFailedException":
        return ConditionFailed(str(error))
    if code == "TransactionCanceledException":
        reasons = [r.get("Code") for r in error.response.get("CancellationReasons", [])]
        if "ConditionalCheckFailed" in reasons:
            failed = tuple(index for index, reason in enumerate(reasons) if reason == "ConditionalCheckFailed")
            return ConditionFailed(f"transaction cancelled: {reasons}", failed)
        if any(reason in _THROTTLING or reason in _TRANSIENT_CANCELLATIONS for reason in reasons):
            return StorageThrottled(f"transaction cancelled: {reasons}")
        return StorageError(f"transaction cancelled: {reasons}")
    if code in _THROTTLING:
        return StorageThrottled(str(error))
    return StorageError(str(error))


TRANSIENT_WRITE_WAITS_S = (0.2, 0.5)


def retried_when_throttled(
    operation: Callable[[], T],
    waits_s: tuple[float, ...] = TRANSIENT_WRITE_WAITS_S,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``guarded(operation)``, tried again after each wait while DynamoDB throttles it.

    For a write whose content cost a model call: a cancelled-for-throttling transaction is not
    retried by boto3, and failing the request would pay for the model again on the client's retry.
    """
    for wait in waits_s:
        try:
            return guarded(operation)
        except StorageThrottled:
            sleep(wait)
    return guarded(operation)


def guarded(operation: Callable[[], T]) -> T:
    """Run one DynamoDB call and turn ClientError into a StorageError subclass."""
    try:
        return operation()
    except ClientError as error:
        raise translate_client_error(error) from error


def query_pages(dynamo_table: Any, query: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every page of a Query in turn, following LastEvaluatedKey to the last one; a caller that has
    what it needs stops iterating, and no further page is read."""
    request = dict(query)
    while True:
        page: dict[str, Any] = guarded(lambda: dynamo_table.query(**request))
        yield page
        last = page.get("LastEvaluatedKey")
        if not last:
            return
        request["ExclusiveStartKey"] = last


def query_newest_first(
    dynamo_table: Any, query: dict[str, Any], limit: int, max_pages: int
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Up to ``limit + 1`` items of a newest-first Query (one more than a page tells that another
    follows), reading on while a filter leaves the page short, at most ``max_pages`` requests.
    Returns the items (plain Python values) and the last request's LastEvaluatedKey."""
    request = {**query, "ScanIndexForward": False, "Limit": limit + 1}
    items: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    for _ in range(max_pages):
        page = guarded(lambda: dynamo_table.query(**request))
        items += [from_dynamo(item) for item in page.get("Items", [])]
        last = page.get("LastEvaluatedKey")
        if len(items) > limit or last is None:
            break
        request["ExclusiveStartKey"] = last
    return items, last


def transact_write(items: list[dict[str, Any]]) -> None:
    """One TransactWriteItems on the shared client: a refused condition is ConditionFailed, a
    throttled or conflicting transaction StorageThrottled, anything else StorageError."""
    client = dynamodb_resource().meta.client
    guarded(lambda: client.transact_write_items(TransactItems=items))


BATCH_WRITE_MAX = 25  # DeleteRequests per BatchWriteItem (the service's limit)
BATCH_GET_MAX = 100  # keys per BatchGetItem
UNPROCESSED_WAITS_S = (0.05, 0.2, 0.5, 1.0)


def batch_delete(
    table_name: str,
    keys: list[dict[str, Any]],
    waits_s: tuple[float, ...] = UNPROCESSED_WAITS_S,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Delete ``keys`` from ``table_name`` (BatchWriteItem, 25 at a time); returns how many.

    Deleting a key that does not exist is not an error, so a retried deletion is harmless.
    Unprocessed keys (throttling) are sent again after each wait; keys still left after the
    last wait raise StorageThrottled, and the caller retries the whole deletion.
    """
    resource = dynamodb_resource()
    for start in range(0, len(keys), BATCH_WRITE_MAX):
        chunk = keys[start : start + BATCH_WRITE_MAX]
        request: dict[str, Any] = {table_name: [{"DeleteRequest": {"Key": key}} for key in chunk]}
        for wait in (*waits_s, None):
            response = guarded(lambda: resource.batch_write_item(RequestItems=request))  # noqa: B023
            request = response.get("UnprocessedItems") or {}
            if not request:
                break
            if wait is None:
                left = len(request.get(table_name, []))
                raise StorageThrottled(f"{table_name}: {left} deletions left unprocessed; retry")
            sleep(wait)
    return len(keys)


def delete_if_unchanged(table_name: str, key: dict[str, Any], attribute: str, value: Any) -> bool:
    """Delete the item at ``key`` only while its ``attribute`` still holds ``value`` (another writer's
    newer content is not removed); False when it changed or is gone."""
    try:
        guarded(
            lambda: table(table_name).delete_item(
                Key=key,
                ConditionExpression="#attribute = :value",
                ExpressionAttributeNames={"#attribute": attribute},
                ExpressionAttributeValues={":value": value},
            )
        )
    except ConditionFailed:
        return False
    return True


def batch_get(
    table_name: str,
    keys: list[dict[str, Any]],
    *,
    consistent: bool = True,
    waits_s: tuple[float, ...] = UNPROCESSED_WAITS_S,
    sleep: Callable[[float], None] = time.sleep,
) -> list[dict[str, Any]]:
    """The items of ``keys`` that exist (BatchGetItem, 100 at a time), in no particular order."""
    resource = dynamodb_resource()
    found: list[dict[str, Any]] = []
    for start in range(0, len(keys), BATCH_GET_MAX):
        request: dict[str, Any] = {
            table_name: {"Keys": keys[start : start + BATCH_GET_MAX], "ConsistentRead": consistent}
        }
        for wait in (*waits_s, None):
            response = guarded(lambda: resource.batch_get_item(RequestItems=request))  # noqa: B023
            found += response.get("Responses", {}).get(table_name, [])
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
            if wait is None:
                raise StorageThrottled(f"{table_name}: keys left unprocessed; retry")
            sleep(wait)
    return found


def to_dynamo(value: Any) -> Any:
    """Floats -> Decimal (DynamoDB rejects float), recursively."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {key: to_dynamo(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_dynamo(item) for item in value]
    return value


def from_dynamo(value: Any) -> Any:
    """Decimal -> int or float, recursively, so items serialise to JSON."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: from_dynamo(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_dynamo(item) for item in value]
    return value
