"""The user's daily token budget on DynamoDB, for every function that spends a user's tokens."""

from __future__ import annotations

from ..config import load_settings
from ..spending import DailyBudget
from ..spending.settings import SpendingEnvironment
from ..storage.spending import DynamoSpendingLedger


def daily_budget(env: SpendingEnvironment | None = None) -> DailyBudget:
    """The budget the environment sets (USER_DAILY_TOKEN_BUDGET; 0: off, no table touched)."""
    env = env or load_settings(SpendingEnvironment)
    if env.daily_token_budget == 0 or env.spending_table is None:
        return DailyBudget(None, 0)
    return DailyBudget(DynamoSpendingLedger(env.spending_table), env.daily_token_budget)
