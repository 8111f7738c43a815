"""Spec (docs/nudges.md#the-fan-out-at-the-providers-rate-limit): a cohort queued at once is drained
within 1.25x of what the account's limit allows, whether the limit was configured or learned, and
whether the provider states it on every answer (as OpenAI does) or only with its 429s; the
containers still holding users take the room of those that are done.

Forty users in four containers of ten (the event source's batches), each container with its own
``RateBudget`` (the template's share 0.8 split between five containers), against one account of 20
requests a minute: the fake provider's own buckets (``devtools.fake_openai``), so the account counts,
refuses and writes its headers exactly as the fake server does. Everything runs on one hand-moved
clock: a request leaves when its container's budget gives it its turn; a streamed answer's headers
come back 0.3 s later and go to the budget, a 429 is given back, held for its retry-after and asked
again after it (as ``llm.pacing`` and the engine's retry do). The bound: the account's 20 at once,
then one every 3 s, so the 40th leaves at 60 s, plus one answer's time."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import pytest
from lambda_agents.llm.rate_budget import RateBudget, Reservation

from devtools.fake_openai.script import Buckets, RateLimit

ACCOUNT = RateLimit(requests_per_minute=20, tokens_per_minute=2_000_000)
CONTAINERS, USERS_EACH = 4, 10
PLAN_COST = 5_560  # a plan's prompt and max_tokens, as the account counts it on arrival
HEADERS_BACK_S = 0.3
ANSWER_S = 10.7  # 3,000 tokens at 300 tokens/s after its first token
COLD_STARTS_S = 1.0  # the containers' first batches start this far apart
BOUND_S = (CONTAINERS * USERS_EACH - ACCOUNT.requests_per_minute) * 60 / ACCOUNT.requests_per_minute + ANSWER_S
MAX_EVENTS = 20_000

Headers = Literal["every answer", "only 429s"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class User:
    container: int
    asks_at: float  # when it (again) asks its container for a turn
    turn: Reservation | None = None
    attempts: int = 0
    sent_at: float | None = None


@dataclass
class Fanout:
    headers: Headers
    configured: bool
    clock: Clock = field(default_factory=Clock)
    refused: int = 0
    news: list[tuple[float, User, dict[str, str], float | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.account = Buckets(ACCOUNT, 1.0, self.clock)
        limit = ACCOUNT.requests_per_minute if self.configured else 0
        self.budgets = [
            RateBudget.for_account(limit, 0, share=0.8, containers=5, clock=self.clock) for _ in range(CONTAINERS)
        ]
        self.users = [User(n, n * COLD_STARTS_S) for n in range(CONTAINERS) for _ in range(USERS_EACH)]

    def drain_s(self) -> float:
        """From the first request to the last answer."""
        for _ in range(MAX_EVENTS):
            self._hear_back()
            self._send_whose_turn_came()
            waiting = [user for user in self.users if user.sent_at is None]
            if not waiting:
                return max(user.sent_at or 0.0 for user in self.users) + ANSWER_S
            self.clock.now = min([when for when, *_ in self.news] + [self._next_look(user) for user in waiting])
        raise AssertionError(f"not drained after {MAX_EVENTS} events")

    def _next_look(self, user: User) -> float:
        if user.asks_at > self.clock.now or user.turn is None:
            return user.asks_at
        wait = self.budgets[user.container].wait_for_turn(user.turn, 0.0)
        return self.clock.now + max(wait or 0.0, 0.01)

    def _send_whose_turn_came(self) -> None:
        for user in self.users:
            if user.sent_at is not None or user.asks_at > self.clock.now:
                continue
            budget = self.budgets[user.container]
            user.turn = user.turn or budget.reserve(PLAN_COST)
            if budget.wait_for_turn(user.turn, 0.0) is not None:
                continue
            decision = self.account.take(PLAN_COST)
            headers = {name.removeprefix("x-ratelimit-"): value for name, value in decision.headers.items()}
            if decision.refused is not None:
                self.refused += 1
                user.asks_at = math.inf  # until its 429 is back
                self.news.append((self.clock.now + HEADERS_BACK_S, user, headers, max(1, math.ceil(decision.wait_s))))
            else:
                user.sent_at = self.clock.now
                stated = headers if self.headers == "every answer" else {}
                self.news.append((self.clock.now + HEADERS_BACK_S, user, stated, None))

    def _hear_back(self) -> None:
        due = [news for news in self.news if news[0] <= self.clock.now]
        self.news = [news for news in self.news if news[0] > self.clock.now]
        for _, user, headers, retry_after in sorted(due, key=lambda news: news[0]):
            budget = self.budgets[user.container]
            if retry_after is None:
                budget.resync(headers, user.turn)
                continue
            assert user.turn is not None
            user.turn.cancel()
            budget.resync(headers)
            budget.hold(retry_after)
            user.turn, user.attempts = None, user.attempts + 1
            user.asks_at = self.clock.now + max(retry_after, 2.0 ** (user.attempts - 1))


@pytest.mark.parametrize(
    ("headers", "configured"),
    [("every answer", False), ("only 429s", False), ("every answer", True)],
)
def test_a_cohort_drains_within_a_quarter_more_than_the_accounts_limit_allows(
    headers: Headers, configured: bool
) -> None:
    fanout = Fanout(headers, configured)

    drain_s = fanout.drain_s()

    assert drain_s <= 1.25 * BOUND_S, f"{drain_s:.1f} s against a bound of {BOUND_S:.1f} s"
    # Refused: only what cold containers sent before anything was known (the account's 20 taken).
    assert fanout.refused <= (0 if configured else CONTAINERS * USERS_EACH - ACCOUNT.requests_per_minute)
