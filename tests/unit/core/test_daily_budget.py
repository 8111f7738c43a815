"""The token budget's pure logic (docs/cost.md#a-daily-budget-per-user): the window of the last
24 hours (what counts, until when), what admission reserves, how admission and counting move the
count, and what a refusal says: spent, or held by turns in flight, each with a true Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.errors import DomainError
from lambda_agents.spending import DailyBudget, DailyBudgetExceeded, Held, SpendingWindow, reservation_estimate
from lambda_agents.spending.settings import SpendingEnvironment
from lambda_agents.spending.window import SLOT_S, TURN_SETTLES_WITHIN_S, WINDOW_S, counts_until, slot_of
from lambda_agents.timezones import zone
from pydantic import ValidationError

from tests.support.memory_spending import InMemorySpendingLedger

NOON_UTC = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: datetime = NOON_UTC) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def budget_of(tokens: int, ledger: InMemorySpendingLedger, clock: Clock | None = None) -> DailyBudget:
    return DailyBudget(ledger, tokens, clock=clock or Clock())


def test_a_slots_tokens_count_until_24_hours_after_the_slot_ends() -> None:
    at = NOON_UTC.timestamp() + 599
    slot = slot_of(at)
    assert slot == NOON_UTC.timestamp() and counts_until(slot) == slot + SLOT_S + WINDOW_S
    window = SpendingWindow({slot: 500})
    assert window.counted(at + WINDOW_S) == 500  # 24 hours after the tokens were admitted: still counted
    assert window.counted(counts_until(slot)) == 0


def test_the_reservation_is_the_prompt_and_the_most_the_answer_may_write() -> None:
    assert reservation_estimate(700, 1200) == 1900
    assert reservation_estimate(-5, 1200) == 1200


def test_given_room_left_then_the_first_call_is_reserved_and_counted_to_what_was_billed() -> None:
    ledger = InMemorySpendingLedger()
    budget = budget_of(6000, ledger)
    admission = budget.admit("u1", 2000)
    assert (admission.reserved, ledger.total("u1"), ledger.holding("u1")) == (2000, 2000, 2000)
    budget.give_back(admission, 850)
    assert (ledger.total("u1"), ledger.holding("u1")) == (850, 0)


def test_given_the_window_spent_then_the_refusal_says_so_and_waits_until_enough_of_it_is_24_hours_old() -> None:
    ledger, clock = InMemorySpendingLedger(), Clock()
    budget = budget_of(6000, ledger, clock)
    for _ in range(3):  # 3 x 2,500 tokens, an hour apart
        budget.give_back(budget.admit("u1", 100), 2500)
        clock.advance(3600)
    with pytest.raises(DailyBudgetExceeded) as raised:
        budget.admit("u1", 100)
    error = raised.value
    assert isinstance(error, DomainError) and (error.status, error.code) == (429, "DAILY_BUDGET_EXCEEDED")
    assert "spent 7500 of 6000 tokens in the last 24 hours" in error.message
    assert error.details == {"spentTokens": 7500, "reservedTokens": 0, "budgetTokens": 6000, "reason": "spent"}
    # The first 2,500 age out at 12:10 the next day (its slot's end + 24 h): 5,000 < 6,000 then.
    first_out = counts_until(slot_of(NOON_UTC.timestamp()))
    assert error.headers == {"Retry-After": str(int(first_out - clock.now.timestamp()))}
    assert ledger.total("u1") == 7500  # a refusal adds nothing


def test_given_the_retry_after_then_the_next_request_is_served_and_a_second_earlier_it_is_not() -> None:
    ledger, clock = InMemorySpendingLedger(), Clock()
    budget = budget_of(6000, ledger, clock)
    budget.give_back(budget.admit("u1", 100), 6500)
    clock.advance(7 * 3600)
    with pytest.raises(DailyBudgetExceeded) as raised:
        budget.admit("u1", 100)
    wait = int(raised.value.headers["Retry-After"])
    clock.advance(wait - 1)
    with pytest.raises(DailyBudgetExceeded):
        budget.admit("u1", 100)
    clock.advance(1)
    budget.admit("u1", 100)


def test_given_turns_in_flight_holding_the_window_then_the_refusal_says_so_and_waits_until_they_settle() -> None:
    ledger, clock = InMemorySpendingLedger(), Clock()
    budget = budget_of(6000, ledger, clock)
    budget.give_back(budget.admit("u1", 100), 1000)
    in_flight = [budget.admit("u1", 2000) for _ in range(3)]  # 1,000 + 6,000 held
    clock.advance(5)
    with pytest.raises(DailyBudgetExceeded) as raised:
        budget.admit("u1", 2000)
    error = raised.value
    assert "held by turns still being answered" in error.message and "spent" in error.message
    assert error.details == {
        "spentTokens": 1000,
        "reservedTokens": 6000,
        "budgetTokens": 6000,
        "reason": "turns_in_flight",
    }
    assert error.headers == {"Retry-After": str(TURN_SETTLES_WITHIN_S - 5)}  # minutes, not hours
    for admission in in_flight:
        budget.give_back(admission, 900)
    budget.admit("u1", 2000)  # settled at 3,700: let in


def test_a_reservation_past_its_turns_settling_time_counts_as_spent() -> None:
    ledger, clock = InMemorySpendingLedger(), Clock()
    budget = budget_of(6000, ledger, clock)
    budget.admit("u1", 6000)  # never settled: its worker died
    clock.advance(TURN_SETTLES_WITHIN_S)
    with pytest.raises(DailyBudgetExceeded) as raised:
        budget.admit("u1", 100)
    assert raised.value.details["reason"] == "spent"
    assert int(raised.value.headers["Retry-After"]) > 20 * 3600


def test_given_a_count_just_below_the_budget_then_one_more_request_is_let_in() -> None:
    ledger = InMemorySpendingLedger()
    budget = budget_of(6000, ledger)
    budget.give_back(budget.admit("u1", 100), 5999)
    budget.admit("u1", 2000)
    assert ledger.total("u1") == 7999


def test_given_budget_zero_then_nothing_is_counted_and_nobody_is_refused() -> None:
    ledger = InMemorySpendingLedger()
    budget = budget_of(0, ledger)
    admission = budget.admit("u1", 2000)
    budget.give_back(admission, 5000)
    assert (ledger.admissions, ledger.total("u1"), admission.message_fields()) == (0, 0, {})


def test_given_a_turn_handed_over_then_its_reservation_stays_until_the_worker_ends_it_and_goes_back_once() -> None:
    ledger = InMemorySpendingLedger()
    budget = budget_of(6000, ledger)
    admission = budget.admit("u1", 2000)
    budget.count(admission, 300)  # a cut call in the request
    assert (ledger.total("u1"), ledger.holding("u1")) == (2300, 2000)
    fields = admission.message_fields()
    worker = budget.carried("u1", fields["spending_slot"], fields["reservation_id"], fields["reserved_tokens"])
    budget.give_back(worker, 900)  # the worker's call, the reservation given back
    budget.give_back(worker, 0)  # a second delivery that finds the turn answered: nothing twice
    assert (ledger.total("u1"), ledger.holding("u1")) == (1200, 0)


def test_a_worker_message_without_a_slot_counts_to_the_workers_slot_with_nothing_to_give_back() -> None:
    ledger = InMemorySpendingLedger()
    budget = budget_of(6000, ledger)
    admission = budget.carried("u1", None, None, 0)
    budget.give_back(admission, 400)
    assert (admission.slot, admission.reserved, ledger.total("u1")) == (NOON_UTC.timestamp(), 0, 400)


def test_a_failing_count_is_logged_not_raised_the_answer_is_stored_already() -> None:
    class Down(InMemorySpendingLedger):
        def release(self, user_id: str, turn_id: str, slot: int, reserved: int, tokens: int) -> None:
            raise ConnectionError("DynamoDB unreachable")

    budget = budget_of(6000, Down())
    budget.give_back(budget.admit("u1", 100), 900)  # no exception


# -- no zone and no moment opens a fresh budget -------------------------------------------------

ZONES = [
    "UTC",
    "Pacific/Kiritimati",
    "Pacific/Pago_Pago",
    "Asia/Tokyo",
    "America/Los_Angeles",
    "Asia/Kathmandu",
    "Australia/Eucla",
    "Pacific/Chatham",
]
RESERVATION, MOST_A_CALL_SPENDS = 1500, 2500


def local_midnight_near(now: datetime, zone_name: str, minutes: int) -> datetime:
    """``minutes`` from the next local midnight of ``zone_name`` after ``now``: where a calendar day
    in that zone would have opened a fresh budget."""
    local = now.astimezone(zone(zone_name))
    midnight = datetime.combine(local.date() + timedelta(days=1), datetime.min.time(), tzinfo=zone(zone_name))
    return max(now, midnight.astimezone(UTC) + timedelta(minutes=minutes))


steps = st.lists(
    st.tuples(
        st.sampled_from(ZONES),
        st.integers(min_value=-15, max_value=15),  # minutes around that zone's midnight
        st.booleans(),  # jump to it, or send again that many seconds later
        st.sampled_from([0, 1, MOST_A_CALL_SPENDS // 2, MOST_A_CALL_SPENDS]),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_no_sequence_of_zone_midnights_and_calls_spends_more_than_the_budget_and_one_call_in_any_24_hours(
    sequence: list[tuple[str, int, bool, int]],
) -> None:
    """The budget reads no zone; a user who rewrites theirs before each call can only pick when to
    send. Calls at every zone's midnight, on either side of it, spend at most the budget and one
    call in any 24 hours; every refusal's Retry-After is true: a call then is served."""
    budget_tokens = 6000
    ledger, clock = InMemorySpendingLedger(), Clock()
    budget = budget_of(budget_tokens, ledger, clock)
    spent_at: list[tuple[float, int]] = []
    for zone_name, minutes, jump, tokens in sequence:
        if jump:
            clock.now = local_midnight_near(clock.now, zone_name, minutes)
        else:
            clock.advance(abs(minutes) + 1)
        try:
            admission = budget.admit("u1", RESERVATION)
        except DailyBudgetExceeded as refused:
            assert refused.details["reason"] == "spent"  # every turn settles before the next call
            clock.advance(int(refused.headers["Retry-After"]))
            admission = budget.admit("u1", RESERVATION)  # the Retry-After was true
        budget.give_back(admission, tokens)
        spent_at.append((clock.now.timestamp(), tokens))
    for start, _ in spent_at:
        in_24_hours = sum(tokens for at, tokens in spent_at if start <= at < start + WINDOW_S)
        assert in_24_hours <= budget_tokens + MOST_A_CALL_SPENDS


def test_a_held_reservation_of_an_aged_out_slot_is_dropped_at_the_next_admission() -> None:
    window = SpendingWindow({0: 100}, {"old": Held(100, 0, TURN_SETTLES_WITHIN_S)})
    later = window.admitted("new", Held(50, 2 * WINDOW_S, 2 * WINDOW_S + 60), 2 * WINDOW_S)
    assert (dict(later.slots), list(later.held)) == ({2 * WINDOW_S: 50}, ["new"])


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
