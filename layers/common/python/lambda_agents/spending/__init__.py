"""A daily budget of model tokens per user (docs/cost.md#a-daily-budget-per-user).

``local_day`` says which day a request counts to (the user's local day); ``DailyBudget`` admits a
request before any model call and counts what it spent after; ``UserLimits`` takes a user's turn
through the rate limit and the budget, from its admission to its last count, in the request and in
the worker alike; ``SpendingLedger`` is the port the storage adapter (``storage.spending``) implements.
"""

from .budget import Admission, DailyBudget, DailyBudgetExceeded, SpendingLedger, reservation_estimate
from .day import SpendingDay, spending_day, user_time_zone
from .turns import RateLimiter, RateLimitExceeded, Spent, UserLimits

__all__ = [
    "Admission",
    "DailyBudget",
    "DailyBudgetExceeded",
    "RateLimitExceeded",
    "RateLimiter",
    "SpendingDay",
    "SpendingLedger",
    "Spent",
    "UserLimits",
    "reservation_estimate",
    "spending_day",
    "user_time_zone",
]
