"""A daily budget of model tokens per user (docs/cost.md#a-daily-budget-per-user).

``local_day`` says which day a request counts to (the user's local day); ``DailyBudget`` admits a
request before any model call and settles what it spent after; ``SpendingLedger`` is the port the
storage adapter (``storage.spending``) implements.
"""

from .budget import Admission, DailyBudget, DailyBudgetExceeded, SpendingLedger, reservation_estimate
from .day import SpendingDay, spending_day, user_time_zone

__all__ = [
    "Admission",
    "DailyBudget",
    "DailyBudgetExceeded",
    "SpendingDay",
    "SpendingLedger",
    "reservation_estimate",
    "spending_day",
    "user_time_zone",
]
