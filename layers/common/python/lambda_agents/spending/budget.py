"""Admission and counting of a user's daily token budget (docs/cost.md#a-daily-budget-per-user).

Why this shape:
- **Admission is one conditional write** (``SpendingLedger.admit``): the request's first call is
  reserved (its prompt estimate + max_tokens) only while ``spent < budget``, so concurrent
  requests at the boundary cannot all pass a read that each made before the others wrote. At most
  one request crosses the budget, and by at most what it then spends.
- **Counting is unconditional** (``SpendingLedger.add``): once admitted, a request's later calls
  (retries, the model chain's next link, the 202 worker's) are never refused; what they spent is
  added, less the reservation, so the counter ends at what the provider billed.
- **It runs before anything is stored**: a refused message leaves no trace, like a rate-limited one.
- Budget 0 is off: no ledger call at all.

What is counted: prompt + completion tokens of every attempt of the user's own requests (the
``Usage`` the use cases already return). The nudge fan-out is the product's spending, not the
user's: it never passes here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from ..clock import utc_now
from ..errors import DomainError
from ..observability import logger, metrics
from .day import KEEP_AFTER_DAY, SpendingDay, spending_day


class SpendingLedger(Protocol):
    """Tokens spent per user per local day (``storage.spending.DynamoSpendingLedger``)."""

    def admit(self, user_id: str, day: SpendingDay, reservation: int, budget: int) -> int | None:
        """Add ``reservation`` to the day's count only if it is below ``budget`` (or absent), in one
        atomic write. None when admitted; else the count that refused it (nothing written)."""
        ...

    def add(self, user_id: str, day: str, tokens: int, expires_at: int) -> None:
        """Add ``tokens`` (negative to give a reservation back) to the count of ``day`` (ISO date), unconditionally."""
        ...


class DailyBudgetExceeded(DomainError):
    """The user's tokens of the day are spent: 429 until the user's next local midnight."""

    status = 429
    code = "DAILY_BUDGET_EXCEEDED"

    def __init__(self, spent: int, budget: int, retry_after_s: int) -> None:
        super().__init__(
            f"daily token budget reached: spent {spent} of {budget} tokens today; "
            f"it resets at your local midnight, in {retry_after_s} s",
            retry_after_s=retry_after_s,
            details={"spentTokens": spent, "budgetTokens": budget},
        )
        self.spent = spent
        self.budget = budget


@dataclass(frozen=True)
class Admission:
    """A request let in: the day it counts to and what was reserved for its first call. It travels
    with a 202 turn to its worker (``spendingDay``, ``reservedTokens``) so the worker counts to the
    same day, whatever the time when it runs. ``counted``: False when the budget is off."""

    user_id: str
    day: str  # ISO date of the user's local day
    reserved: int
    expires_at: int
    counted: bool = True

    def message_fields(self) -> dict[str, Any]:
        """What a 202 turn's queue message carries of it to its worker (``WorkerMessage``): the day,
        none when the budget did not count the request, and the reservation."""
        return {"spending_day": self.day if self.counted else None, "reserved_tokens": self.reserved}


def reservation_estimate(prompt_tokens: int, max_tokens: int) -> int:
    """What a request's first call may cost: its prompt (estimated) and the most it may write."""
    return max(0, prompt_tokens) + max(0, max_tokens)


@dataclass
class DailyBudget:
    """A user's daily budget: ``budget`` tokens per local day (0: off, ``ledger`` unused)."""

    ledger: SpendingLedger | None
    budget: int
    clock: Callable[[], datetime] = utc_now

    @property
    def on(self) -> bool:
        return self.budget > 0 and self.ledger is not None

    def admit(self, user_id: str, time_zone: str | None, reservation: int) -> Admission:
        """Let the request in, its first call reserved, or raise ``DailyBudgetExceeded``."""
        now = self.clock()
        day = spending_day(now, time_zone)
        if not self.on:
            return Admission(user_id, day.day.isoformat(), 0, day.expires_at, counted=False)
        assert self.ledger is not None
        spent = self.ledger.admit(user_id, day, reservation, self.budget)
        if spent is not None:
            # The user id only: what the user wrote never reaches a log line.
            logger.info(
                "user refused: daily token budget spent",
                extra={"user_id": user_id, "spent_tokens": spent, "budget_tokens": self.budget, "day": str(day.day)},
            )
            metrics.add_metric(name="UsersRefusedDailyBudget", unit=MetricUnit.Count, value=1)
            raise DailyBudgetExceeded(spent, self.budget, day.seconds_left(now))
        return Admission(user_id, day.day.isoformat(), reservation, day.expires_at)

    def carried(self, user_id: str, day: str | None, reserved: int) -> Admission:
        """The admission a 202 turn's worker counts to: the day and reservation its message
        carries, or (a message without them) the worker's own UTC day with nothing reserved."""
        if day is None:
            today = spending_day(self.clock(), None)
            return Admission(user_id, today.day.isoformat(), 0, today.expires_at)
        ends = datetime.combine(date.fromisoformat(day) + timedelta(days=1), time(0), tzinfo=UTC)
        # The latest zone ends its day 14 h after UTC's; the counter's own TTL was set at admission.
        expires_at = int((ends + timedelta(hours=14) + KEEP_AFTER_DAY).timestamp())
        return Admission(user_id, day, reserved, expires_at)

    def count(self, admission: Admission, spent_tokens: int) -> None:
        """Add what a run of the turn spent; its reservation stays (a run cut short for the worker, a
        worker's delivery that did not end the turn)."""
        self._add(admission, spent_tokens)

    def give_back(self, admission: Admission, spent_tokens: int = 0) -> None:
        """The turn is over: add what its last run spent, less the reservation, which goes back."""
        self._add(admission, spent_tokens - admission.reserved)

    def _add(self, admission: Admission, delta: int) -> None:
        """A failing write is logged, not raised: the answer is stored already and the user must get it."""
        if not self.on or delta == 0:
            return
        assert self.ledger is not None
        try:
            self.ledger.add(admission.user_id, admission.day, delta, admission.expires_at)
        except Exception as error:
            logger.warning(
                "daily token count not added",
                extra={"user_id": admission.user_id, "tokens": delta, "error_type": type(error).__name__},
            )
