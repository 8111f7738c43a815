"""The window a user's tokens count in: the last 24 hours, in 10-minute slots
(docs/cost.md#a-daily-budget-per-user). Pure rules, applied alike by the DynamoDB ledger and the
in-memory one the tests use.

Why a rolling window and not a calendar day: a calendar day in any zone lets a user spend the
budget at 23:59 and again at 00:01, and a zone read from the user's token (the OIDC ``zoneinfo``
claim, which Cognito lets each user rewrite) lets them pick a zone whose day has just begun. The
window belongs to no zone: tokens admitted at any moment count until 24 hours after the end of
their slot, so every 24 hours that can be drawn see all the tokens admitted in them.

- **Admission**: a turn is let in while the window's count (spending and the reservations of turns
  in flight alike) is below the budget. Its reservation goes to the slot of now, and is kept in
  flight under the turn's id until the turn settles (``held``).
- **Refusal**: what the window holds, split into what was spent and what turns still in flight
  hold; the Retry-After is when enough of the window ages out for the count to fall below the
  budget, or, when only the in-flight reservations keep it there, when those turns settle at the
  latest (whichever is sooner).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

SLOT_S = 600  # a slot's length: the window's grain, and the most it may exceed 24 hours by
WINDOW_S = 86_400
# A turn settles within this of its admission: 29 s in its request (API Gateway's limit), or,
# handed over, its worker's first delivery (InterviewTurnFunction's 300 s timeout, the longest of
# the workers) after the queue's few seconds. A reservation held longer counts as spent: its turn
# is being delivered again, or died without giving it back.
TURN_SETTLES_WITHIN_S = 360
# The ledger item outlives the last slot it counts by this much (its TTL).
KEEP_AFTER_WINDOW_S = 3600


def slot_of(now_s: float) -> int:
    """The start (epoch seconds) of the 10-minute slot ``now_s`` falls in."""
    return int(now_s // SLOT_S) * SLOT_S


def counts_until(slot: int) -> int:
    """When the tokens of ``slot`` leave the window: 24 hours after the slot ends."""
    return slot + SLOT_S + WINDOW_S


@dataclass(frozen=True)
class Held:
    """A turn's reservation while the turn is in flight: its tokens, its slot, when it settles at the latest."""

    tokens: int
    slot: int
    settles_by: int


@dataclass(frozen=True)
class Refusal:
    """Why a turn was not let in: ``spent`` and ``reserved`` (by turns in flight) of ``budget``,
    and the whole seconds until a turn may be let in again."""

    spent: int
    reserved: int
    budget: int
    retry_after_s: int

    @property
    def by_turns_in_flight(self) -> bool:
        """Whether the turns in flight keep the count at the budget, not what was spent."""
        return self.spent < self.budget


@dataclass(frozen=True)
class SpendingWindow:
    """What a user's ledger item holds: tokens per slot (spent and held alike) and the reservations
    of the turns in flight, by turn id."""

    slots: Mapping[int, int] = field(default_factory=dict)
    held: Mapping[str, Held] = field(default_factory=dict)

    def counted(self, now_s: float) -> int:
        """The tokens the window holds at ``now_s``: every slot that has not aged out."""
        return sum(tokens for slot, tokens in self.slots.items() if counts_until(slot) > now_s)

    def in_flight(self, now_s: float) -> int:
        """What the turns still in flight hold (a reservation past its ``settles_by`` counts as spent)."""
        return sum(h.tokens for h in self.held.values() if h.settles_by > now_s and counts_until(h.slot) > now_s)

    def refusal(self, now_s: float, budget: int) -> Refusal | None:
        """None when a turn may be let in at ``now_s``; else why not, and until when."""
        counted = self.counted(now_s)
        if counted < budget:
            return None
        reserved = min(counted, self.in_flight(now_s))
        wait = self._until_below(now_s, budget) - now_s
        if counted - reserved < budget:
            settle = max(h.settles_by for h in self.held.values() if h.settles_by > now_s)
            wait = min(wait, settle - now_s)
        return Refusal(counted - reserved, reserved, budget, max(1, math.ceil(wait)))

    def _until_below(self, now_s: float, budget: int) -> float:
        """When the count falls below ``budget`` as its oldest slots age out (nothing else changing)."""
        left = self.counted(now_s)
        for slot in sorted(s for s in self.slots if counts_until(s) > now_s):
            left -= self.slots[slot]
            if left < budget:
                return counts_until(slot)
        return now_s  # not reached: a window at the budget has a slot that brings it below

    def admitted(self, turn_id: str, held: Held, now_s: float) -> SpendingWindow:
        """The window once the turn ``turn_id`` is let in: its reservation added to its slot and
        held under its id; slots that no longer count, and reservations in them, dropped."""
        slots = {slot: tokens for slot, tokens in self.slots.items() if counts_until(slot) > now_s}
        slots[held.slot] = slots.get(held.slot, 0) + held.tokens
        kept = {turn: h for turn, h in self.held.items() if counts_until(h.slot) > now_s}
        return SpendingWindow(slots, {**kept, turn_id: held})

    def expires_at(self) -> int:
        """When the ledger item may go (its TTL): a while after its newest slot stops counting."""
        return max((counts_until(slot) for slot in self.slots), default=0) + KEEP_AFTER_WINDOW_S
