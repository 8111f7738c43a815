"""The daily budget's settings, read from the environment at cold start by every function that
spends a user's tokens (ChatFunction, ChatAnswerFunction, InterviewFunction, InterviewTurnFunction).

| variable | default | meaning |
| --- | --- | --- |
| USER_DAILY_TOKEN_BUDGET | 0 (off) | tokens a user's requests may spend in any 24 hours (the template: 500000) |
| USER_SPENDING_TABLE | (required when the budget is on) | UserSpendingTable |
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_DAILY_BUDGET = 1_000_000_000


class SpendingEnvironment(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    daily_token_budget: int = Field(default=0, alias="USER_DAILY_TOKEN_BUDGET", ge=0, le=MAX_DAILY_BUDGET)
    spending_table: str | None = Field(default=None, alias="USER_SPENDING_TABLE")

    @model_validator(mode="after")
    def _a_budget_needs_its_table(self) -> SpendingEnvironment:
        if self.daily_token_budget > 0 and not self.spending_table:
            raise ValueError("USER_DAILY_TOKEN_BUDGET is on (> 0) but USER_SPENDING_TABLE is not set")
        return self
