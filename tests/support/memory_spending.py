"""The SpendingLedger port in memory: the same rules as ``storage.spending.DynamoSpendingLedger``
(``spending.window`` decides admission; ``add`` never refuses; ``release`` gives a reservation
back once), held to it by tests/integration/core/test_spending_ledger.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from lambda_agents.spending import Held, Refusal, SpendingWindow


@dataclass
class InMemorySpendingLedger:
    windows: dict[str, SpendingWindow] = field(default_factory=dict)
    admissions: int = 0

    def admit(self, user_id: str, turn_id: str, held: Held, budget: int, now_s: float) -> Refusal | None:
        self.admissions += 1
        window = self.windows.get(user_id, SpendingWindow())
        refusal = window.refusal(now_s, budget)
        if refusal is None:
            self.windows[user_id] = window.admitted(turn_id, held, now_s)
        return refusal

    def add(self, user_id: str, slot: int, tokens: int) -> None:
        window = self.windows.get(user_id, SpendingWindow())
        slots = dict(window.slots)
        slots[slot] = slots.get(slot, 0) + tokens
        self.windows[user_id] = SpendingWindow(slots, window.held)

    def release(self, user_id: str, turn_id: str, slot: int, reserved: int, tokens: int) -> None:
        window = self.windows.get(user_id, SpendingWindow())
        if turn_id in window.held:
            held = {turn: h for turn, h in window.held.items() if turn != turn_id}
            self.windows[user_id] = SpendingWindow(window.slots, held)
            tokens -= reserved
        self.add(user_id, slot, tokens)

    def total(self, user_id: str) -> int:
        """Every token the user's slots hold, aged out or not."""
        return sum(self.windows.get(user_id, SpendingWindow()).slots.values())

    def holding(self, user_id: str) -> int:
        """What the user's turns in flight hold."""
        return sum(h.tokens for h in self.windows.get(user_id, SpendingWindow()).held.values())
