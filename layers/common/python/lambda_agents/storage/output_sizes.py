"""DynamoDB adapter of a model's shared output needs (``llm.shared_budgets.BudgetRecord``): one item
per model in the table given (``pk`` = ``BUDGETS#<model>``, ``sk`` = ``BUDGETS``), the worker's
remembered needs per call type (``LearnedBudgets``' keys) as lists of tokens, kept a day after its
last write (``expiresAt``). The last writer wins: each write holds all its container remembers."""

from __future__ import annotations

import time
from typing import Any

from .dynamodb import from_dynamo, guarded, table

KEEP_S = 86_400


class DynamoBudgetRecord:
    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def read(self, model: str) -> dict[str, list[int]]:
        item = guarded(lambda: self._table.get_item(Key=_key(model))).get("Item")
        if item is None:
            return {}
        needs: dict[str, Any] = from_dynamo(item.get("needs") or {})
        return {str(key): [int(tokens) for tokens in values] for key, values in needs.items()}

    def write(self, model: str, needs: dict[str, list[int]]) -> None:
        item = {**_key(model), "needs": needs, "expiresAt": int(time.time()) + KEEP_S}
        guarded(lambda: self._table.put_item(Item=item))


def _key(model: str) -> dict[str, str]:
    return {"pk": f"BUDGETS#{model[:200]}", "sk": "BUDGETS"}
