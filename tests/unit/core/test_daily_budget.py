"""The daily token budget's pure logic (docs/cost.md#a-daily-budget-per-user): which local day a
request counts to, when the day ends (Retry-After), what admission reserves, and how admission and
counting move the day's count."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from lambda_agents.errors import DomainError
from lambda_agents.spending import DailyBudget, DailyBudgetExceeded, reservation_estimate, spending_day
from lambda_agents.spending.settings import SpendingEnvironment
from pydantic import ValidationError

from tests.support.memory_spending import InMemorySpendingLedger

NOON_UTC = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def test_given_a_tokyo_user_at_noon_utc_then_the_day_is_tokyos_and_it_ends_at_tokyo_midnight() -> None:
    day = spending_day(NOON_UTC, "Asia/Tokyo")  # 21:00 in Tokyo
    assert (day.day, day.time_zone) == (date(2026, 11, 27), "Asia/Tokyo")
    assert day.ends_at == datetime(2026, 11, 27, 15, 0, tzinfo=UTC)
    assert day.seconds_left(NOON_UTC) == 3 * 3600


def test_given_a_los_angeles_user_then_the_day_is_still_the_previous_local_one_early_in_utc() -> None:
    early = datetime(2026, 11, 27, 3, 30, tzinfo=UTC)  # 19:30 on the 26th in Los Angeles (PST)
    day = spending_day(early, "America/Los_Angeles")
    assert day.day == date(2026, 11, 26)
    assert day.ends_at == datetime(2026, 11, 27, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize("claim", [None, "", "Mars/Olympus", "posix/Asia/Tokyo", "localtime", "America"])
def test_given_no_or_an_unknown_zone_then_the_day_is_utcs(claim: str | None) -> None:
    day = spending_day(NOON_UTC, claim)
    assert (day.time_zone, day.ends_at) == ("UTC", datetime(2026, 11, 28, 0, 0, tzinfo=UTC))
    assert day.seconds_left(NOON_UTC) == 12 * 3600


def test_given_a_day_that_springs_forward_then_it_ends_23_hours_after_it_began() -> None:
    # Europe/Berlin moves to summer time on 2026-03-29: that local day has 23 hours.
    morning = datetime(2026, 3, 28, 23, 30, tzinfo=UTC)  # 00:30 on the 29th in Berlin (CET)
    day = spending_day(morning, "Europe/Berlin")
    assert day.day == date(2026, 3, 29)
    assert day.ends_at == datetime(2026, 3, 29, 22, 0, tzinfo=UTC)  # midnight CEST


def test_the_retry_after_is_never_zero_and_the_counter_outlives_its_day() -> None:
    day = spending_day(NOON_UTC, None)
    assert day.seconds_left(day.ends_at) == 1
    assert day.expires_at - int(day.ends_at.timestamp()) == 2 * 86_400


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        spending_day(datetime(2026, 11, 27, 12, 0), None)


def test_the_reservation_is_the_prompt_and_the_most_the_answer_may_write() -> None:
    assert reservation_estimate(700, 1200) == 1900
    assert reservation_estimate(-5, 1200) == 1200


def budget_of(tokens: int, ledger: InMemorySpendingLedger, now: datetime = NOON_UTC) -> DailyBudget:
    return DailyBudget(ledger, tokens, clock=lambda: now)


def test_given_room_left_then_the_first_call_is_reserved_and_counted_to_what_was_billed() -> None:
    ledger = InMemorySpendingLedger()
    budget = budget_of(6000, ledger)
    admission = budget.admit("u1", "Asia/Tokyo", 2000)
    assert (admission.day, admission.reserved, ledger.spent) == ("2026-11-27", 2000, {("u1", "2026-11-27"): 2000})
    budget.give_back(admission, 850)
    assert ledger.spent == {("u1", "2026-11-27"): 850}


def test_given_the_day_spent_then_the_request_is_refused_with_what_was_spent_and_the_wait_to_midnight() -> None:
    ledger = InMemorySpendingLedger(spent={("u1", "2026-11-27"): 6400})
    with pytest.raises(DailyBudgetExceeded) as raised:
        budget_of(6000, ledger).admit("u1", "Asia/Tokyo", 2000)
    error = raised.value
    assert isinstance(error, DomainError) and (error.status, error.code) == (429, "DAILY_BUDGET_EXCEEDED")
    assert "spent 6400 of 6000 tokens today" in error.message
    assert error.headers == {"Retry-After": str(3 * 3600)}
    assert ledger.spent == {("u1", "2026-11-27"): 6400}  # a refusal adds nothing


def test_given_a_count_just_below_the_budget_then_one_more_request_is_let_in() -> None:
    ledger = InMemorySpendingLedger(spent={("u1", "2026-11-27"): 5999})
    budget_of(6000, ledger).admit("u1", None, 2000)
    assert ledger.spent[("u1", "2026-11-27")] == 7999


def test_given_the_next_local_day_then_the_user_is_let_in_again() -> None:
    ledger = InMemorySpendingLedger(spent={("u1", "2026-11-27"): 9000})
    after_midnight_in_tokyo = datetime(2026, 11, 27, 15, 0, 1, tzinfo=UTC)
    admission = budget_of(6000, ledger, after_midnight_in_tokyo).admit("u1", "Asia/Tokyo", 100)
    assert admission.day == "2026-11-28"


def test_given_budget_zero_then_nothing_is_counted_and_nobody_is_refused() -> None:
    ledger = InMemorySpendingLedger(spent={("u1", "2026-11-27"): 10**9})
    budget = budget_of(0, ledger)
    admission = budget.admit("u1", None, 2000)
    budget.give_back(admission, 5000)
    assert ledger.admissions == 0 and ledger.spent == {("u1", "2026-11-27"): 10**9}


def test_given_a_turn_handed_over_then_its_reservation_stays_until_the_worker_ends_it() -> None:
    ledger = InMemorySpendingLedger()
    budget = budget_of(6000, ledger)
    admission = budget.admit("u1", None, 2000)
    budget.count(admission, 300)  # a cut call in the request
    worker = budget.carried("u1", admission.day, admission.reserved)
    budget.give_back(worker, 900)  # the worker's call, the reservation given back
    assert ledger.spent == {("u1", "2026-11-27"): 1200}


def test_a_worker_message_without_a_day_counts_to_the_workers_utc_day() -> None:
    admission = budget_of(6000, InMemorySpendingLedger()).carried("u1", None, 0)
    assert (admission.day, admission.reserved) == ("2026-11-27", 0)


def test_a_failing_count_is_logged_not_raised_the_answer_is_stored_already() -> None:
    class Down(InMemorySpendingLedger):
        def add(self, user_id: str, day: str, tokens: int, expires_at: int) -> None:
            raise ConnectionError("DynamoDB unreachable")

    budget = budget_of(6000, Down())
    budget.give_back(budget.admit("u1", None, 100), 900)  # no exception


@pytest.mark.parametrize(
    ("environment", "problem"),
    [
        ({"USER_DAILY_TOKEN_BUDGET": "-1"}, "greater than or equal to 0"),
        ({"USER_DAILY_TOKEN_BUDGET": "lots"}, "valid integer"),
        ({"USER_DAILY_TOKEN_BUDGET": "6000"}, "USER_SPENDING_TABLE"),
    ],
)
def test_the_settings_refuse_a_budget_that_cannot_work(environment: dict[str, str], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        SpendingEnvironment.model_validate(environment)


def test_the_settings_default_to_off() -> None:
    env = SpendingEnvironment.model_validate({})
    assert (env.daily_token_budget, env.spending_table) == (0, None)
