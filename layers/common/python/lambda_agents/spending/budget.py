"""Admission and counting of a user's token budget over the last 24 hours
(docs/cost.md#a-daily-budget-per-user; the window's rules: ``window``).

Why this shape:
- **Admission is one conditional write** (``SpendingLedger.admit``): the turn's first call is
  reserved (its prompt estimate + max_tokens) only while the window's count is below the budget,
  written only if the ledger item is unchanged since it was read, so concurrent requests at the
  boundary cannot all pass a read that each made before the others wrote. At most one turn
  crosses the budget, and by at most what it then spends.
- **Counting is unconditional** (``SpendingLedger.add``): once admitted, a turn's later calls
  (retries, the model chain's next link, the 202 worker's) are never refused; what they spent is
  added to the slot of its admission, so the window ends at what the provider billed.
- **A reservation goes back once** (``SpendingLedger.release``): only while the turn still holds
  it, so a second delivery of the same turn, or a give-back after the worker's, returns nothing twice.
- **It runs before anything is stored**: a refused message leaves no trace, like a rate-limited one.
- **No zone decides it**: the window is the last 24 hours wherever the user says they are.
- Budget 0 is off: no ledger call at all.

What is counted: prompt + completion tokens of every attempt of the user's own requests (the
``Usage`` the use cases already return). The nudge fan-out is the product's spending, not the
user's: it never passes here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from ..clock import utc_now
from ..errors import DomainError
from ..observability import logger, metrics
from .window import TURN_SETTLES_WITHIN_S, Held, Refusal, slot_of


class SpendingLedger(Protocol):
    """A user's tokens of the last 24 hours (``storage.spending.DynamoSpendingLedger``)."""

    def admit(self, user_id: str, turn_id: str, held: Held, budget: int, now_s: float) -> Refusal | None:
        """Hold ``held`` for the turn ``turn_id`` only if the window's count at ``now_s`` is below
        ``budget`` (``SpendingWindow.refusal``), in one write conditional on what was read. None
        when admitted; else the refusal (nothing written)."""
        ...

    def add(self, user_id: str, slot: int, tokens: int) -> None:
        """Add ``tokens`` to the count of ``slot``, unconditionally."""
        ...

    def release(self, user_id: str, turn_id: str, slot: int, reserved: int, tokens: int) -> None:
        """The turn is over: add ``tokens`` to ``slot``, and give its reservation back while the
        turn still holds it (once; a turn that holds nothing any more adds ``tokens`` only)."""
        ...


class DailyBudgetExceeded(DomainError):
    """The user's tokens of the last 24 hours are at the budget: 429 until enough of them age out,
    or until the turns in flight that hold the rest settle."""

    status = 429
    code = "DAILY_BUDGET_EXCEEDED"

    def __init__(self, refusal: Refusal) -> None:
        wait = refusal.retry_after_s
        if refusal.by_turns_in_flight:
            message = (
                f"daily token budget held by turns still being answered: {refusal.spent} of "
                f"{refusal.budget} tokens spent in the last 24 hours and {refusal.reserved} reserved "
                f"by turns in flight; retry in {wait} s, when they have settled"
            )
        else:
            message = (
                f"daily token budget reached: spent {refusal.spent} of {refusal.budget} tokens in the "
                f"last 24 hours; retry in {wait} s, when enough of them are older than 24 hours"
            )
        super().__init__(
            message,
            retry_after_s=wait,
            details={
                "spentTokens": refusal.spent,
                "reservedTokens": refusal.reserved,
                "budgetTokens": refusal.budget,
                "reason": "turns_in_flight" if refusal.by_turns_in_flight else "spent",
            },
        )
        self.refusal = refusal


@dataclass(frozen=True)
class Admission:
    """A turn let in: the slot it counts to, its id in the ledger and what was reserved for its
    first call. It travels with a 202 turn to its worker (``spendingSlot``, ``reservationId``,
    ``reservedTokens``) so the worker counts to the same slot and gives the same reservation back.
    ``counted``: False when the budget is off."""

    user_id: str
    slot: int
    turn_id: str
    reserved: int
    counted: bool = True

    def message_fields(self) -> dict[str, Any]:
        """What a 202 turn's queue message carries of it to its worker (``WorkerMessage``): none
        when the budget did not count the request."""
        if not self.counted:
            return {}
        return {"spending_slot": self.slot, "reservation_id": self.turn_id, "reserved_tokens": self.reserved}


def reservation_estimate(prompt_tokens: int, max_tokens: int) -> int:
    """What a request's first call may cost: its prompt (estimated) and the most it may write."""
    return max(0, prompt_tokens) + max(0, max_tokens)


@dataclass
class DailyBudget:
    """A user's budget: ``budget`` tokens in any 24 hours (0: off, ``ledger`` unused)."""

    ledger: SpendingLedger | None
    budget: int
    clock: Callable[[], datetime] = utc_now
    new_id: Callable[[], str] = lambda: uuid.uuid4().hex

    @property
    def on(self) -> bool:
        return self.budget > 0 and self.ledger is not None

    def admit(self, user_id: str, reservation: int) -> Admission:
        """Let the turn in, its first call reserved, or raise ``DailyBudgetExceeded``."""
        now_s = self.clock().timestamp()
        slot = slot_of(now_s)
        if not self.on:
            return Admission(user_id, slot, "", 0, counted=False)
        assert self.ledger is not None
        turn_id = self.new_id()
        held = Held(reservation, slot, int(now_s) + TURN_SETTLES_WITHIN_S)
        refusal = self.ledger.admit(user_id, turn_id, held, self.budget, now_s)
        if refusal is not None:
            # The user id only: what the user wrote never reaches a log line.
            logger.info(
                "user refused: daily token budget spent",
                extra={
                    "user_id": user_id,
                    "spent_tokens": refusal.spent,
                    "reserved_tokens": refusal.reserved,
                    "budget_tokens": self.budget,
                    "retry_after_s": refusal.retry_after_s,
                },
            )
            metrics.add_metric(name="UsersRefusedDailyBudget", unit=MetricUnit.Count, value=1)
            raise DailyBudgetExceeded(refusal)
        return Admission(user_id, slot, turn_id, reservation)

    def carried(self, user_id: str, slot: int | None, turn_id: str | None, reserved: int) -> Admission:
        """The admission a 202 turn's worker counts to: the slot and reservation its message
        carries, or (a message without them) the worker's own slot with nothing reserved."""
        if slot is None or not turn_id:
            return Admission(user_id, slot_of(self.clock().timestamp()), "", 0)
        return Admission(user_id, slot, turn_id, reserved)

    def count(self, admission: Admission, spent_tokens: int) -> None:
        """Add what a run of the turn spent; its reservation stays (a run cut short for the worker, a
        worker's delivery that did not end the turn)."""
        if spent_tokens != 0:
            self._write(
                admission, spent_tokens, lambda ledger: ledger.add(admission.user_id, admission.slot, spent_tokens)
            )

    def give_back(self, admission: Admission, spent_tokens: int = 0) -> None:
        """The turn is over: add what its last run spent, and its reservation goes back (once)."""
        if not admission.turn_id:
            self.count(admission, spent_tokens)
            return
        self._write(
            admission,
            spent_tokens - admission.reserved,
            lambda ledger: ledger.release(
                admission.user_id, admission.turn_id, admission.slot, admission.reserved, spent_tokens
            ),
        )

    def _write(self, admission: Admission, delta: int, write: Callable[[SpendingLedger], None]) -> None:
        """A failing write is logged, not raised: the answer is stored already and the user must get it."""
        if not self.on or not admission.counted:
            return
        assert self.ledger is not None
        try:
            write(self.ledger)
        except Exception as error:
            logger.warning(
                "daily token count not added",
                extra={"user_id": admission.user_id, "tokens": delta, "error_type": type(error).__name__},
            )
