"""DynamoDB adapter of what a worker shares of a model (``llm.shared_learning.LearningRecord``): one
item per model in the table given (``pk`` = ``LEARNED#<model>``, ``sk`` = ``LEARNED``), one attribute
per part (``pace``: readings as [epoch seconds, kind, value]; ``needs``: tokens per call type), kept
a day after its last write (``expiresAt``). The last writer wins part by part: each write sets the
parts its container learned and leaves the others as another container wrote them. Read with one
GetItem, written with one UpdateItem.

The items of the one-record-per-part layout before it (``PACE#<model>``, ``BUDGETS#<model>``) are
not read: they expire with their ``expiresAt``, and a deploy loses one refresh's worth of sharing."""

from __future__ import annotations

import time
from typing import Any

from .dynamodb import from_dynamo, guarded, table, to_dynamo

KEEP_S = 86_400
_NOT_PARTS = ("pk", "sk", "expiresAt")


class DynamoLearningRecord:
    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def read(self, model: str) -> dict[str, Any]:
        item = guarded(lambda: self._table.get_item(Key=_key(model))).get("Item") or {}
        return {name: from_dynamo(value) for name, value in item.items() if name not in _NOT_PARTS}

    def write(self, model: str, parts: dict[str, Any]) -> None:
        values = {**to_dynamo(parts), "expiresAt": int(time.time()) + KEEP_S}
        names = {f"#a{index}": name for index, name in enumerate(values)}
        guarded(
            lambda: self._table.update_item(
                Key=_key(model),
                UpdateExpression="SET " + ", ".join(f"{alias} = :v{alias[2:]}" for alias in names),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={f":v{index}": value for index, value in enumerate(values.values())},
            )
        )


def _key(model: str) -> dict[str, str]:
    return {"pk": f"LEARNED#{model[:200]}", "sk": "LEARNED"}
