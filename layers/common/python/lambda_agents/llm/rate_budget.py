"""A container's share of the provider's rate limit, spent before a request is sent.

OpenAI counts a request against two limits when it arrives: one request (RPM) and its prompt
tokens plus its ``max_tokens`` (TPM), from buckets that refill continuously. A fan-out that only
reacts to 429s sends every request, is refused, waits, and sends again: the refused requests
still take their Lambda time, a batch's users retry in lock-step, and a deep queue keeps the
account at its limit with a share of every minute wasted on refusals.

``RateBudget`` keeps the same two buckets for this container's share of the account's limits
and hands out *reservations*: a request takes its cost now and learns how long it must wait
for it (zero when the buckets hold enough), so the container's requests leave in order at the
pace the share allows and a user whose turn comes too late for the invocation is deferred at
once instead of being refused by the provider. A 429 that arrives anyway (another function, a
share set too high) holds the whole container back for its ``retry-after``, not only the call
that received it.

Why each container takes a share and no shared limiter (a token bucket in DynamoDB): the fan-out
runs at most ``NudgeGeneratorConcurrency`` containers, and Lambda scales an SQS event source to
its maximum while the queue is deep, which is exactly when the limit binds; so a share of
limit / containers is used in full when it matters. A shared bucket would cost a conditional
write per request on one hot item (500 plans a minute is ~8 writes/s, well within one item's
1,000 WCU/s, but every refused reservation polls it again) and a network round trip before
each call, to gain only the capacity of containers that are idle because the queue is short.
The provider's 429 stays the backstop for what the shares do not see (interactive routes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# The limits' window. Tests that run the provider's clock faster (the fake server's time_scale)
# shorten it the same way.
MINUTE_S = 60.0


@dataclass(frozen=True)
class RateShare:
    """Per-minute limits this container may spend: the account's limits x ``share`` / ``containers``."""

    requests_per_minute: float
    tokens_per_minute: float

    @classmethod
    def of_account(
        cls, requests_per_minute: int, tokens_per_minute: int, *, share: float = 1.0, containers: int = 1
    ) -> RateShare | None:
        """The share, or None when neither limit is known (0): nothing is paced."""
        if requests_per_minute <= 0 and tokens_per_minute <= 0:
            return None
        part = share / max(1, containers)
        return cls(
            requests_per_minute * part if requests_per_minute > 0 else float("inf"),
            tokens_per_minute * part if tokens_per_minute > 0 else float("inf"),
        )

    def requests_a_minute(self, cost_tokens: int) -> float:
        """How many requests of ``cost_tokens`` (prompt + max_tokens) a minute the share allows."""
        return min(self.requests_per_minute, self.tokens_per_minute / max(1, cost_tokens))


@dataclass(frozen=True)
class Reservation:
    """A request's place: send it after ``wait_s``; ``cancel`` gives its cost back (not sent)."""

    tokens: int
    wait_s: float
    budget: RateBudget

    def cancel(self) -> None:
        self.budget.give_back(self.tokens)


class RateBudget:
    """Two continuously refilled buckets (requests, tokens), each holding at most one minute of
    its share, that may go into debt: a reservation made while they are short takes its cost all
    the same and waits until the refill has paid it, so reservations are served in order."""

    def __init__(self, share: RateShare, clock: Callable[[], float] = time.monotonic) -> None:
        self.share = share
        self._clock = clock
        self._lock = threading.Lock()
        self._requests = _Bucket(share.requests_per_minute, MINUTE_S)
        self._tokens = _Bucket(share.tokens_per_minute, MINUTE_S)
        self._at = clock()

    @classmethod
    def for_account(
        cls, requests_per_minute: int, tokens_per_minute: int, *, share: float = 1.0, containers: int = 1
    ) -> RateBudget | None:
        """This container's budget (``RateShare.of_account``), or None when no limit is known."""
        split = RateShare.of_account(requests_per_minute, tokens_per_minute, share=share, containers=containers)
        return None if split is None else cls(split)

    def reserve(self, tokens: int) -> Reservation:
        """Take one request and ``tokens`` (capped at a minute's share: the provider refuses a
        request above its whole limit whatever the wait) and say how long to wait for them."""
        with self._lock:
            self._refill()
            cost = min(float(tokens), self._tokens.capacity)
            wait = max(self._requests.take(1.0), self._tokens.take(cost))
            return Reservation(int(cost), wait, self)

    def give_back(self, tokens: int) -> None:
        with self._lock:
            self._refill()
            self._requests.put(1.0)
            self._tokens.put(float(tokens))

    def hold(self, seconds: float) -> None:
        """Nothing more leaves for ``seconds`` (a 429's retry-after): both buckets are emptied to
        what refills by then, so every request of the container waits, not only the refused one."""
        with self._lock:
            self._refill()
            self._requests.empty_for(seconds)
            self._tokens.empty_for(seconds)

    def resync(self, headers: Mapping[str, str]) -> None:
        """Lower the buckets to the account's remaining share after an answer's ``x-ratelimit-*``
        headers (names without the prefix): when other callers of the account (other functions,
        other stacks on the same key) spend it too, this container slows down before the provider
        refuses it, instead of learning it from 429s. Never raised: this container's own
        reservations are already in its buckets."""
        fractions = {}
        for kind in ("requests", "tokens"):
            try:
                limit = float(headers[f"limit-{kind}"])
                remaining = float(headers[f"remaining-{kind}"])
            except (KeyError, ValueError):
                continue
            if limit > 0:
                fractions[kind] = max(0.0, min(1.0, remaining / limit))
        if not fractions:
            return
        with self._lock:
            self._refill()
            if "requests" in fractions:
                self._requests.lower_to(fractions["requests"])
            if "tokens" in fractions:
                self._tokens.lower_to(fractions["tokens"])

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._at)
        self._at = now
        self._requests.refill(elapsed)
        self._tokens.refill(elapsed)


class _Bucket:
    def __init__(self, per_minute: float, minute_s: float) -> None:
        self.capacity = per_minute
        self.per_s = per_minute / minute_s
        self.level = per_minute

    def refill(self, elapsed_s: float) -> None:
        if self.capacity != float("inf"):
            self.level = min(self.capacity, self.level + elapsed_s * self.per_s)

    def take(self, amount: float) -> float:
        """Take ``amount`` (into debt if need be); the seconds until the refill has paid it."""
        if self.capacity == float("inf"):
            return 0.0
        self.level -= amount
        return 0.0 if self.level >= 0 else -self.level / self.per_s

    def put(self, amount: float) -> None:
        if self.capacity != float("inf"):
            self.level = min(self.capacity, self.level + amount)

    def lower_to(self, fraction: float) -> None:
        if self.capacity != float("inf"):
            self.level = min(self.level, fraction * self.capacity)

    def empty_for(self, seconds: float) -> None:
        if self.capacity != float("inf"):
            self.level = min(self.level, -seconds * self.per_s)
