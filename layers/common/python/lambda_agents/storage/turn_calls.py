"""DynamoDB adapter of a handed-over turn's paid calls (``interview.paid_calls.TurnCallRecords``):
one item per turn in the interview's partition (``pk=SESSION#<id>``, ``sk=CALLS#<turnId>``), so a
withdrawal deletes it with everything else of the session, kept ``KEEP_S`` (``expiresAt``: a worker
runs the turn within minutes, or gives it up).

Written once, on ``attribute_not_exists``: a turn's record is never replaced, and it names the turn's
id and the session version the turn starts from, which the worker checks against the mark it runs,
so an old turn's record is never used for another turn. An item that would pass DynamoDB's limit
is refused before it is sent (the worker then makes the calls again).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..interview.paid_calls import PaidCall, PaidTurnCalls
from .dynamodb import from_dynamo, guarded, table
from .interviews import checked, session_pk

CALLS_PREFIX = "CALLS#"
KEEP_S = 86_400


class DynamoTurnCallRecords:
    def __init__(self, table_name: str, clock: Callable[[], float] = time.time) -> None:
        self._table = table(table_name)
        self._clock = clock

    def write(self, record: PaidTurnCalls) -> None:
        item = checked(
            {
                **_key(record.session_id, record.turn_id),
                "type": "turnCalls",
                "turnId": record.turn_id,
                "sessionVersion": record.session_version,
                "calls": [call.as_dict() for call in record.calls],
                "expiresAt": int(self._clock()) + KEEP_S,
            }
        )
        guarded(lambda: self._table.put_item(Item=item, ConditionExpression="attribute_not_exists(pk)"))

    def read(self, session_id: str, turn_id: str) -> PaidTurnCalls | None:
        key = _key(session_id, turn_id)
        item = guarded(lambda: self._table.get_item(Key=key, ConsistentRead=True)).get("Item")
        if item is None:
            return None
        data: dict[str, Any] = from_dynamo(item)
        calls = tuple(PaidCall.from_dict(call) for call in data.get("calls") or [])
        return PaidTurnCalls(session_id, str(data["turnId"]), int(data["sessionVersion"]), calls)


def _key(session_id: str, turn_id: str) -> dict[str, str]:
    return {"pk": session_pk(session_id), "sk": CALLS_PREFIX + turn_id}
