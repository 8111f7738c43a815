"""A user's turn through the per-user limits, from its admission to its last count
(docs/cost.md#a-daily-budget-per-user): what the chat and the interview do alike, written once.

- **Admission** (``UserLimits.admit``), before anything of the turn is stored or any call made:
  the per-user rate limit first, when the domain has one (the chat's sliding window of accepted
  messages), then the daily budget, which reserves the turn's first call. A refusal by either
  leaves nothing behind: the budget's refusal gives the rate limit's place back. A turn that is
  then not stored (409, 503) gives both back (``not_accepted``).
- **In the request** (``in_request``): what the turn's model calls were billed for is counted
  when it ends, answered or failed, and its reservation goes back; a turn cut short for the worker
  (``answered_later.CutShort``) keeps its reservation for the worker's calls.
- **In the worker** (``in_worker``), counted to the slot and reservation the turn's message
  carries (``carried``), never refused: the delivery that ends the turn gives the reservation
  back, and so does one that finds nothing left to run (the session deleted, the interview
  withdrawn, the turn ended by another delivery: the ledger gives a reservation back once); one
  that fails keeps it for the next delivery.
- **A turn that ends without a model call** (a hand-off the queue refused, a worker that gave up)
  gives its reservation back (``give_back``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ..answered_later import CutShort, WorkerMessage
from ..errors import DomainError
from ..llm.types import Usage
from .budget import Admission, DailyBudget, DailyBudgetExceeded

ResultT = TypeVar("ResultT")


class RateLimiter(Protocol):
    def acquire(self, user_id: str) -> float | None:
        """None when the call may go ahead (its place is taken), else the seconds until it may."""
        ...

    def release(self, user_id: str) -> None:
        """Give back the place the last ``acquire`` took: the message was not accepted."""
        ...


class RateLimitExceeded(DomainError):
    """The caller sent more messages than the window allows: 429 with the wait in Retry-After."""

    status = 429
    code = "RATE_LIMITED"

    def __init__(self, retry_after_s: float) -> None:
        # The header and the message say the same whole seconds, rounded up: neither asks too early.
        wait = max(1, math.ceil(retry_after_s))
        super().__init__(f"too many messages; retry in {wait} s", retry_after_s=wait)
        self.retry_after_s = retry_after_s


@dataclass
class Spent:
    """What a run's model calls were billed for, set by the run as soon as it knows: counted
    whatever happens next (a cut, a refused write)."""

    tokens: int = 0


@dataclass(frozen=True)
class UserLimits:
    """The limits a user's turns pass (see the module docstring): ``budget``, and ``rate_limit``
    where the domain limits how often a user may send."""

    budget: DailyBudget
    rate_limit: RateLimiter | None = None

    def admit(self, user_id: str, reservation: int) -> Admission:
        """Let the turn in (its first call reserved), or raise ``RateLimitExceeded`` /
        ``DailyBudgetExceeded`` with nothing of it counted."""
        if self.rate_limit is not None:
            wait = self.rate_limit.acquire(user_id)
            if wait is not None:
                raise RateLimitExceeded(wait)
        try:
            return self.budget.admit(user_id, reservation)
        except DailyBudgetExceeded:
            self._release(user_id)
            raise

    def not_accepted(self, admission: Admission) -> None:
        """The admitted turn was not stored (a concurrent change, storage busy): nothing of it counts."""
        self._release(admission.user_id)
        self.budget.give_back(admission)

    def in_request(self, admission: Admission, run: Callable[[Spent], ResultT]) -> ResultT:
        """``run`` in the request, what it spent counted (see the module docstring)."""
        spent = Spent()
        try:
            result = run(spent)
        except CutShort as cut:
            self.budget.count(admission, cut.spent_tokens)
            raise
        except Exception as error:
            self.budget.give_back(admission, spent.tokens or _tokens_of(error))
            raise
        self.budget.give_back(admission, spent.tokens)
        return result

    def in_worker(self, admission: Admission, run: Callable[[Spent], ResultT | None]) -> ResultT | None:
        """``run`` by the worker, what it spent counted; the turn is over when it returns, with its
        result or None (nothing to run or to write to any more), and its reservation goes back."""
        spent = Spent()
        try:
            result = run(spent)
        except Exception as error:
            self.budget.count(admission, spent.tokens or _tokens_of(error))
            raise
        self.budget.give_back(admission, spent.tokens)
        return result

    def carried(self, message: WorkerMessage) -> Admission:
        """The admission a handed-over turn's message carries: the request's slot and reservation."""
        return self.budget.carried(
            message.user_id, message.spending_slot, message.reservation_id, message.reserved_tokens
        )

    def give_back(self, admission: Admission) -> None:
        """The turn ended without a model call: its reservation goes back."""
        self.budget.give_back(admission)

    def _release(self, user_id: str) -> None:
        if self.rate_limit is not None:
            self.rate_limit.release(user_id)


def _tokens_of(error: BaseException) -> int:
    """What a failed run's calls were billed for, when its error says (the engine's errors carry it)."""
    usage = getattr(error, "usage", None)
    return usage.total_tokens if isinstance(usage, Usage) else 0
