"""The SpendingLedger port in memory: the same rule as ``storage.spending.DynamoSpendingLedger``
(a reservation is added only while the day's count is below the budget; ``add`` never refuses),
held to it by tests/integration/core/test_spending_ledger.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from lambda_agents.spending import SpendingDay


@dataclass
class InMemorySpendingLedger:
    spent: dict[tuple[str, str], int] = field(default_factory=dict)
    expires: dict[tuple[str, str], int] = field(default_factory=dict)
    admissions: int = 0

    def admit(self, user_id: str, day: SpendingDay, reservation: int, budget: int) -> int | None:
        self.admissions += 1
        key = (user_id, day.day.isoformat())
        count = self.spent.get(key)
        if count is not None and count >= budget:
            return count
        self.spent[key] = (count or 0) + reservation
        self.expires.setdefault(key, day.expires_at)
        return None

    def add(self, user_id: str, day: str, tokens: int, expires_at: int) -> None:
        key = (user_id, day)
        self.spent[key] = self.spent.get(key, 0) + tokens
        self.expires.setdefault(key, expires_at)
