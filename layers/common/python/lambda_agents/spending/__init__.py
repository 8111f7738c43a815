"""A budget of model tokens per user over any 24 hours (docs/cost.md#a-daily-budget-per-user).

``window`` holds the rules of the 24-hour window (what counts, when a turn is refused, until
when); ``DailyBudget`` admits a request before any model call and counts what it spent after;
``UserLimits`` takes a user's turn through the rate limit and the budget, from its admission to its
last count, in the request and in the worker alike; ``SpendingLedger`` is the port the storage
adapter (``storage.spending``) implements.
"""

from .budget import Admission, DailyBudget, DailyBudgetExceeded, SpendingLedger, reservation_estimate
from .turns import RateLimiter, RateLimitExceeded, Spent, UserLimits
from .window import Held, Refusal, SpendingWindow

__all__ = [
    "Admission",
    "DailyBudget",
    "DailyBudgetExceeded",
    "Held",
    "RateLimitExceeded",
    "RateLimiter",
    "Refusal",
    "SpendingLedger",
    "SpendingWindow",
    "Spent",
    "UserLimits",
    "reservation_estimate",
]
