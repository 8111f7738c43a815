"""One limit's bucket for ``RateBudget`` (llm/rate_budget.py explains the pacing): the line of
reservations, its refill, and how it follows what the account's headers show."""

from __future__ import annotations

import math

__all__ = ["MINUTE_S", "RateBucket"]

# The limits' window. Tests that run the provider's clock faster (the fake server's time_scale)
# shorten it the same way; a learned limit's window comes from its reset header instead.
MINUTE_S = 60.0


class RateBucket:
    """A bucket kept as two running totals: ``taken`` (every reservation's cost, in order) and
    ``paid`` (what the refill and the account have made available). Its level is paid - taken; a
    reservation's place is ``taken`` just after it, and its turn comes when ``paid`` reaches it. A
    reservation cancelled while it waits leaves a *hole* in the line: the turns after it come its
    cost earlier, those before it do not move, and once ``paid`` reaches it the hole is passed.

    ``pace`` (1 to ``max_pace``, the function's whole share over this container's split) scales the
    refill and the part of the account's room the bucket takes; a configured limit follows the
    account up only as far as ``_ceiling``: ``paid`` had the bucket refilled at the function's
    whole share and followed no header."""

    def __init__(self, per_minute: float, minute_s: float) -> None:
        self.capacity = per_minute
        self.per_s = per_minute / minute_s
        self.open = 0.0  # reserved, not yet seen counted in a header (waiting, or sent and not answered)
        self.waiting = 0.0  # reserved, its turn not yet come
        self.taken = 0.0
        self.paid = per_minute if per_minute != math.inf else 0.0
        self.learned = False
        self.pace = 1.0
        self.max_pace = 1.0
        self._ceiling = self.paid
        self._holes: list[tuple[float, float]] = []  # (place, cost) of cancelled reservations still ahead

    def _end(self) -> float:
        """Where the line ends: everything taken, less the holes still ahead."""
        self._pass_holes()
        return self.taken - sum(cost for _, cost in self._holes)

    def _pass_holes(self) -> None:
        while self._holes and self.paid >= self._holes[0][0] - self._holes[0][1]:
            cost = self._holes.pop(0)[1]
            self.paid += cost
            self._ceiling += cost

    def _room(self) -> float:
        """The most the level may hold, and the part of the account's room it takes: the capacity,
        a learned limit's at its pace (a configured one's pace is only its refill)."""
        return self.capacity * (self.pace if self.learned else 1.0)

    def per_minute(self) -> float:
        """The limit as a per-minute rate (a learned one's window may be another)."""
        return self.rate_s() * MINUTE_S if self.learned else self.capacity * self.pace

    def rate_s(self) -> float:
        """The refill per second now."""
        return self.per_s * self.pace

    def speed_up(self) -> None:
        """One more container's split (the account took a request and showed room, or said nothing)."""
        self.pace = min(self.max_pace, self.pace + 1.0)

    def slow_down(self) -> None:
        """Half the pace again (a 429), never below the split."""
        self.pace = max(1.0, self.pace / 2.0)

    def refill(self, elapsed_s: float) -> None:
        if self.capacity != math.inf:
            full = self._end() + self._room()
            self.paid = max(min(self.paid, full), min(full, self.paid + elapsed_s * self.rate_s()))
            ceiling = self._ceiling + elapsed_s * self.per_s * self.max_pace
            self._ceiling = min(self._end() + self.capacity * self.max_pace, ceiling)

    def take(self, amount: float) -> tuple[float, float]:
        """Take ``amount`` (into debt if need be): its place, and the seconds until the refill has paid it."""
        if self.capacity == math.inf:
            return 0.0, 0.0
        self.taken += amount
        return self.taken, self.wait_for(self.taken)

    def wait_for(self, place: float) -> float:
        if self.capacity == math.inf:
            return 0.0
        self._pass_holes()
        ahead = place - sum(cost for hole, cost in self._holes if hole < place) - self.paid
        return max(0.0, ahead / self.rate_s())

    def put(self, amount: float) -> None:
        if self.capacity != math.inf:
            self.paid = min(self._end() + self._room(), self.paid + amount)
            self._ceiling = min(self._end() + self.capacity * self.max_pace, self._ceiling + amount)

    def give_back(self, place: float, amount: float, sent: bool) -> None:
        """The reservation at ``place`` is not sent, or was refused: its turn had come (its cost
        back to the level), or it leaves the line (a hole)."""
        if self.capacity == math.inf:
            return
        if sent or self.wait_for(place) <= 0:
            self.put(amount)
        else:
            self._holes.append((place, amount))
            self._holes.sort()

    def follow(self, free: float) -> None:
        """The account shows ``free`` (0-1) of its limit left: this container's part of it is that
        share of its room, less what it has reserved that the account's figure does not count yet
        (``open``); a configured limit's level rises to it only as far as its ceiling."""
        if self.capacity == math.inf:
            return
        target = self._end() + free * self._room() - max(0.0, self.open)
        self.paid = target if self.learned else min(target, self._ceiling)

    def recount(self, amount: float) -> None:
        """``amount`` was subtracted twice (counted by the account and still open): a learned level gets it back."""
        if self.learned:
            self.put(amount)

    def learn(self, capacity: float, window_s: float | None) -> None:
        """A limit the account's headers tell: ``capacity`` a window (a minute unless the header's
        reset says otherwise)."""
        if self.capacity == math.inf:
            self.taken = self.paid = self._ceiling = 0.0
            self._holes.clear()
        self.learned = True
        window = window_s or (self.capacity / self.per_s if self.capacity not in (0.0, math.inf) else MINUTE_S)
        self.capacity = capacity
        self.per_s = capacity / window

    def empty_for(self, seconds: float, then: float) -> None:
        """Nothing leaves for ``seconds``; then ``then`` (at most the room) for the first in line."""
        if self.capacity != math.inf:
            ready = self._end() - self.waiting + min(then, self._room())
            self.paid = min(self.paid, ready - seconds * self.rate_s())
            self._ceiling = min(self._ceiling, self.paid)
