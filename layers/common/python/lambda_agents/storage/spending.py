"""DynamoDB adapter of the user's token budget (``spending.SpendingLedger``;
docs/cost.md#a-daily-budget-per-user). The rules are ``spending.window``'s; this module stores them.

UserSpendingTable: one item per user (``userId``, ``day`` = "window", the table's sort key kept from
its calendar-day counters), holding ``slots`` (tokens per 10-minute slot, epoch seconds as keys),
``held`` (the reservations of turns in flight, by turn id), ``version`` and ``expiresAt`` (TTL).

- ``admit`` reads the item (strongly consistent), lets ``SpendingWindow.refusal`` decide, and
  writes the admitted window back only if ``version`` is still what it read. Of concurrent
  requests at the boundary only one write per version succeeds; the others read again and decide
  on what it wrote. No read can be passed by a write it did not see.
- ``add`` and ``release`` change one slot in place (``SET slots.#slot = slots.#slot + :tokens``)
  and move ``version`` on, so an admission that read before them decides again. A count for a
  user without an item (a handed-over turn the budget did not admit) creates it. ``release``
  removes the turn's reservation only while the turn holds it (a condition), so it is given back
  once whoever asks.
"""

from __future__ import annotations

from typing import Any

from ..spending.window import Held, Refusal, SpendingWindow
from .dynamodb import ConditionFailed, StorageError, from_dynamo, guarded, retried_when_throttled, table

WINDOW_KEY = "window"
# Concurrent admissions of one user: each conflict means another turn of the user was written, so a
# few rounds settle any number a client can send at once; past them the request is refused as busy.
ADMIT_ROUNDS = 8

_ADD = "SET slots.#slot = if_not_exists(slots.#slot, :zero) + :tokens, version = if_not_exists(version, :zero) + :one"
_RELEASE = _ADD + " REMOVE held.#turn"


class SpendingContention(StorageError):
    """The user's ledger item changed under every admission round: the request may be sent again."""


class DynamoSpendingLedger:
    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def admit(self, user_id: str, turn_id: str, held: Held, budget: int, now_s: float) -> Refusal | None:
        for _ in range(ADMIT_ROUNDS):
            item = guarded(lambda: self._table.get_item(Key=_key(user_id), ConsistentRead=True)).get("Item")
            window = _window(item)
            refusal = window.refusal(now_s, budget)
            if refusal is not None:
                return refusal
            try:
                self._write(user_id, window.admitted(turn_id, held, now_s), item)
            except ConditionFailed:
                continue  # another write came between the read and this one: decide again
            return None
        raise SpendingContention(f"the spending ledger changed under {ADMIT_ROUNDS} admissions in a row")

    def add(self, user_id: str, slot: int, tokens: int) -> None:
        try:
            self._add(user_id, slot, tokens)
        except ConditionFailed:
            # No item yet (a handed-over turn the budget did not admit): DynamoDB refuses an entry
            # under an absent map, so the item is created holding the count, unless another write
            # created it meanwhile (then the count is added to that one).
            try:
                self._write(user_id, SpendingWindow({slot: tokens}), None)
            except ConditionFailed:
                self._add(user_id, slot, tokens)

    def _add(self, user_id: str, slot: int, tokens: int) -> None:
        retried_when_throttled(
            lambda: self._table.update_item(
                Key=_key(user_id),
                UpdateExpression=_ADD,
                ConditionExpression="attribute_exists(slots)",
                ExpressionAttributeNames={"#slot": str(slot)},
                ExpressionAttributeValues={":tokens": tokens, ":zero": 0, ":one": 1},
            )
        )

    def release(self, user_id: str, turn_id: str, slot: int, reserved: int, tokens: int) -> None:
        try:
            retried_when_throttled(
                lambda: self._table.update_item(
                    Key=_key(user_id),
                    UpdateExpression=_RELEASE,
                    ConditionExpression="attribute_exists(held.#turn)",
                    ExpressionAttributeNames={"#slot": str(slot), "#turn": turn_id},
                    ExpressionAttributeValues={":tokens": tokens - reserved, ":zero": 0, ":one": 1},
                )
            )
        except ConditionFailed:
            if tokens != 0:  # given back already: what this run spent still counts
                self.add(user_id, slot, tokens)

    def _write(self, user_id: str, window: SpendingWindow, read: dict[str, Any] | None) -> None:
        version = int(read["version"]) if read is not None and "version" in read else None
        condition = "attribute_not_exists(version)" if version is None else "version = :read"
        values: dict[str, Any] = {
            ":slots": {str(slot): tokens for slot, tokens in window.slots.items()},
            ":held": {
                turn: {"tokens": h.tokens, "slot": h.slot, "settlesBy": h.settles_by} for turn, h in window.held.items()
            },
            ":next": (version or 0) + 1,
            ":expires": window.expires_at(),
        }
        if version is not None:
            values[":read"] = version
        guarded(
            lambda: self._table.update_item(
                Key=_key(user_id),
                UpdateExpression="SET slots = :slots, held = :held, version = :next, expiresAt = :expires",
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            )
        )


def _key(user_id: str) -> dict[str, str]:
    return {"userId": user_id, "day": WINDOW_KEY}


def _window(item: dict[str, Any] | None) -> SpendingWindow:
    """The window an item holds (an absent item: an empty window)."""
    if item is None:
        return SpendingWindow()
    data = from_dynamo(item)
    slots = {int(slot): int(tokens) for slot, tokens in (data.get("slots") or {}).items()}
    held = {
        turn: Held(int(h["tokens"]), int(h["slot"]), int(h["settlesBy"]))
        for turn, h in (data.get("held") or {}).items()
    }
    return SpendingWindow(slots, held)
