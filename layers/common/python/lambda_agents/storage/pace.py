"""DynamoDB adapter of a model's shared pace (``llm.shared_pace.PaceRecord``): one item per model
in the chat's table (``pk`` = ``PACE#<model>``, ``sk`` = ``PACE``), the worker's readings as a list
of [epoch seconds, kind, value], kept a day after its last write (``expiresAt``). The last writer
wins: each write holds all its container remembers, and a reading is only ever learned once."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from ..llm.speeds import PaceReading
from .dynamodb import from_dynamo, guarded, table

KEEP_S = 86_400


class DynamoPaceRecord:
    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def read(self, model: str) -> list[PaceReading]:
        item = guarded(lambda: self._table.get_item(Key=_key(model))).get("Item")
        if item is None:
            return []
        return [(float(at), str(kind), float(value)) for at, kind, value in from_dynamo(item.get("readings") or [])]

    def write(self, model: str, readings: list[PaceReading]) -> None:
        stored: list[Any] = [[Decimal(str(at)), kind, Decimal(str(round(value, 6)))] for at, kind, value in readings]
        guarded(
            lambda: self._table.put_item(
                Item={**_key(model), "readings": stored, "expiresAt": int(time.time()) + KEEP_S}
            )
        )


def _key(model: str) -> dict[str, str]:
    return {"pk": f"PACE#{model[:200]}", "sk": "PACE"}
