"""What each purpose's answers really need, shared between the function that answers in the
request and its worker (docs/interview.md#turns-answered-later), the way ``shared_pace`` shares the
model's pace.

Why: a call's first budget and its plan start from what answers of its type needed in this
container (``budgets.LearnedBudgets``), else from the caller's prior: the Auditor's 1,500 output
tokens, though its verdict and summary are far shorter. The interview's request and its worker are
different functions. A request container that has not seen the Auditor write plans its call at the
prior; when that does not fit in the request's time left, the turn is cut and handed over, though
the worker, which makes most of those calls, already knows the answer is short. The worker
publishes its needs after each turn (``publish``); the request merges the newest beside its own
before it decides to hand a turn over (``refresh``, at most every ``REFRESH_S``). Either side
failing to reach the record only loses the sharing: logged, never raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..observability import logger
from .budgets import LearnedBudgets
from .shared_pace import REFRESH_S, SharedPace


class BudgetRecord(Protocol):
    """Where a model's needs are kept (``storage.output_sizes.DynamoBudgetRecord``)."""

    def read(self, model: str) -> dict[str, list[int]]: ...

    def write(self, model: str, needs: dict[str, list[int]]) -> None: ...


@dataclass
class SharedBudgets:
    """``model``'s needs in ``budgets`` (its keys start with ``<model>|``) shared through ``record``."""

    record: BudgetRecord
    budgets: LearnedBudgets
    model: str
    clock: Callable[[], float] = time.monotonic
    refresh_s: float = REFRESH_S
    _refreshed_at: float | None = field(default=None, init=False)

    def publish(self) -> None:
        """The worker's: what its answers of each purpose needed, for the request to plan with."""
        needs = self.budgets.needs(f"{self.model}|")
        if not needs:
            return
        try:
            self.record.write(self.model, needs)
        except Exception as error:
            logger.warning("learned budgets not shared", extra={"error_type": type(error).__name__})

    def refresh(self) -> None:
        """The request's: learn the worker's newest needs (at most every ``refresh_s``)."""
        now = self.clock()
        if self._refreshed_at is not None and now - self._refreshed_at < self.refresh_s:
            return
        self._refreshed_at = now
        try:
            needs = self.record.read(self.model)
        except Exception as error:
            logger.warning("learned budgets not read", extra={"error_type": type(error).__name__})
            return
        self.budgets.merge(needs)


@dataclass(frozen=True)
class SharedLearning:
    """What a request learns of its worker, and the worker shares: the model's pace, and what its
    answers of each purpose need."""

    pace: SharedPace | None = None
    budgets: SharedBudgets | None = None

    def publish(self) -> None:
        for part in (self.pace, self.budgets):
            if part is not None:
                part.publish()

    def refresh(self) -> None:
        for part in (self.pace, self.budgets):
            if part is not None:
                part.refresh()
