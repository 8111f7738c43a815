"""DynamoDB adapter of the daily token budget (``spending.SpendingLedger``; docs/cost.md#a-daily-budget-per-user).

UserSpendingTable: one item per user per local day (``userId``, ``day`` = ISO date), holding
``spent`` (tokens, reservations of requests in flight included) and ``expiresAt`` (TTL, two days
after the day ends). A table of its own rather than the chat's or the interview's: both domains
count to the same item, and neither function should be granted the other's data for it.

- ``admit`` is ONE conditional UpdateItem: ``ADD spent :reservation`` only if the item is absent
  or ``spent < :budget``. DynamoDB applies an item's writes one at a time, so of concurrent
  requests at the boundary only those that find the count below the budget add to it; there is no
  read before the write to race with. A refusal returns the count that refused it
  (``ReturnValuesOnConditionCheckFailure``), without a second read.
- ``add`` is an unconditional ``ADD``: what an admitted request spent beyond (or below) its
  reservation, never refused.
"""

from __future__ import annotations

from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from ..spending.day import SpendingDay
from .dynamodb import guarded, retried_when_throttled, table

_ADMIT = "ADD spent :reservation SET expiresAt = if_not_exists(expiresAt, :expires)"
_ROOM_LEFT = "attribute_not_exists(spent) OR spent < :budget"
_ADD = "ADD spent :tokens SET expiresAt = if_not_exists(expiresAt, :expires)"


class DynamoSpendingLedger:
    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def admit(self, user_id: str, day: SpendingDay, reservation: int, budget: int) -> int | None:
        """None when the reservation was added; else the day's count, which is at or past ``budget``."""
        try:
            guarded(
                lambda: self._table.update_item(
                    Key=_key(user_id, day.day.isoformat()),
                    UpdateExpression=_ADMIT,
                    ConditionExpression=_ROOM_LEFT,
                    ExpressionAttributeValues={
                        ":reservation": reservation,
                        ":budget": budget,
                        ":expires": day.expires_at,
                    },
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            )
        except Exception as error:
            refused = _refused_count(error)
            if refused is None:
                raise
            return refused
        return None

    def add(self, user_id: str, day: str, tokens: int, expires_at: int) -> None:
        retried_when_throttled(
            lambda: self._table.update_item(
                Key=_key(user_id, day),
                UpdateExpression=_ADD,
                ExpressionAttributeValues={":tokens": tokens, ":expires": expires_at},
            )
        )


def _key(user_id: str, day: str) -> dict[str, str]:
    return {"userId": user_id, "day": day}


def _refused_count(error: Exception) -> int | None:
    """The count a failed condition found, or None when ``error`` is not a failed condition."""
    cause = error.__cause__
    if not isinstance(cause, ClientError):
        return None
    if cause.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
        return None
    item: dict[str, Any] = cause.response.get("Item") or {}
    raw = item.get("spent")
    if isinstance(raw, dict):  # the low-level shape ({"N": "123"}): errors are not deserialised
        raw = TypeDeserializer().deserialize(raw)
    return int(raw) if raw is not None else 0
