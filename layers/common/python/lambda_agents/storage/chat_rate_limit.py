"""DynamoDB adapter for the chat's per-user rate limit (ChatTable; docs/chat-and-templates.md#storage):
the log ``pk=RATE#<userId>, sk=LOG`` holds the times of the user's accepted messages in the last
window (a sliding-window log, ``chat.rate_limit``) and a version for conditional writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..chat.rate_limit import decide, without
from .dynamodb import ConditionFailed, from_dynamo, guarded, table


class DynamoRateLimiter:
    """The per-user limit as a sliding-window log (``chat.rate_limit``): one item per user
    (``pk=RATE#<userId>, sk=LOG``) holding the accepted messages' times and a version.

    Atomic without a lock: the log is read (strongly consistent), decided on, and written back
    under ``version = <the version read>``; a concurrent writer makes the condition fail and the
    decision is made again on the fresh log, so two requests can never both take the last place.
    The item expires (TTL) one window after its newest message.
    """

    ATTEMPTS = 5

    def __init__(self, table_name: str, limit: int, window_s: int, clock: Callable[[], float] = time.time) -> None:
        self._table = table(table_name)
        self._limit = limit
        self._window_s = window_s
        self._clock = clock
        self._taken: dict[str, int] = {}  # the place this container took last, per user, for release

    def acquire(self, user_id: str) -> float | None:
        """None when the message may go ahead (its place is taken), else the seconds to wait."""
        for _ in range(self.ATTEMPTS):
            now_ms = int(self._clock() * 1000)
            times, version = self._read(user_id)
            decision = decide(times, now_ms, self._limit, self._window_s)
            if not decision.accepted:
                return decision.wait_s
            if self._write(user_id, decision.times, version, now_ms):
                self._taken[user_id] = now_ms
                return None
        return 1.0  # the log kept changing under us: this user is sending in parallel; retry shortly

    def release(self, user_id: str) -> None:
        """Give back the place ``acquire`` took: the message was not accepted after all."""
        stamp = self._taken.pop(user_id, None)
        if stamp is None:
            return
        for _ in range(self.ATTEMPTS):
            times, version = self._read(user_id)
            if stamp not in times or self._write(user_id, without(times, stamp), version, max(times)):
                return

    def _read(self, user_id: str) -> tuple[tuple[int, ...], int | None]:
        item = guarded(lambda: self._table.get_item(Key=_rate_key(user_id), ConsistentRead=True)).get("Item")
        if item is None:
            return (), None
        value = from_dynamo(item)
        return tuple(int(t) for t in value.get("times") or ()), int(value.get("version", 0))

    def _write(self, user_id: str, times: tuple[int, ...], version: int | None, newest_ms: int) -> bool:
        condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(pk)"}
        if version is not None:
            condition = {"ConditionExpression": "version = :read", "ExpressionAttributeValues": {":read": version}}
        item = {
            **_rate_key(user_id),
            "type": "rate",
            "times": list(times),
            "version": (version or 0) + 1,
            "expiresAt": newest_ms // 1000 + self._window_s + 1,
        }
        try:
            guarded(lambda: self._table.put_item(Item=item, **condition))
        except ConditionFailed:
            return False
        return True


def _rate_key(user_id: str) -> dict[str, str]:
    return {"pk": f"RATE#{user_id}", "sk": "LOG"}
