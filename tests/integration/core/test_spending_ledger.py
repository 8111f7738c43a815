"""The budget's ledger on moto (UserSpendingTable built from template.yaml), and the in-memory one
the unit tests use held to the same contract (``tests.support.memory_spending``): admission holds
the reservation only while the window's count is below the budget, a refusal writes nothing,
counting adds unconditionally, a reservation goes back once, and the item expires after its window.
Concurrent admissions at the boundary: at most one crosses."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from lambda_agents.spending import Held, Refusal
from lambda_agents.spending.window import SLOT_S, TURN_SETTLES_WITHIN_S, WINDOW_S, slot_of
from lambda_agents.storage.dynamodb import StorageError
from lambda_agents.storage.spending import DynamoSpendingLedger

from tests.support.memory_spending import InMemorySpendingLedger
from tests.support.serial_moto import serialise_moto_calls

pytestmark = pytest.mark.integration
TABLES = ["UserSpendingTable"]

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC).timestamp()
SLOT = slot_of(NOW)
BUDGET = 6000

Ledger = InMemorySpendingLedger | DynamoSpendingLedger


@pytest.fixture(params=["memory", "dynamodb"])
def ledger(request: pytest.FixtureRequest) -> Ledger:
    if request.param == "memory":
        return InMemorySpendingLedger()
    request.getfixturevalue("aws")
    return DynamoSpendingLedger("UserSpendingTable")


def held(tokens: int, at: float = NOW) -> Held:
    return Held(tokens, slot_of(at), int(at) + TURN_SETTLES_WITHIN_S)


def refusal(ledger: Ledger, at: float = NOW, user: str = "u1") -> Refusal | None:
    """u1's window read through the port itself: under a budget of 1 any count refuses and says what it holds."""
    return ledger.admit(user, "probe", held(0, at), 1, at)


def test_a_first_request_is_admitted_and_its_reservation_held(ledger: Ledger) -> None:
    assert ledger.admit("u1", "t1", held(1900), BUDGET, NOW) is None
    assert refusal(ledger) == Refusal(0, 1900, 1, TURN_SETTLES_WITHIN_S)


def test_a_request_below_the_budget_is_admitted_even_if_its_reservation_crosses_it(ledger: Ledger) -> None:
    ledger.admit("u1", "t0", held(0), BUDGET, NOW)
    ledger.add("u1", SLOT, 5999)
    assert ledger.admit("u1", "t1", held(1900), BUDGET, NOW) is None
    found = refusal(ledger)
    assert found is not None and (found.spent, found.reserved) == (5999, 1900)


def test_a_request_at_the_budget_is_refused_and_nothing_is_written(ledger: Ledger) -> None:
    ledger.admit("u1", "t0", held(0), BUDGET, NOW)
    ledger.add("u1", SLOT, 6000)
    found = ledger.admit("u1", "t1", held(1900), BUDGET, NOW)
    assert found is not None and (found.spent, found.reserved, found.by_turns_in_flight) == (6000, 0, False)
    assert found.retry_after_s == SLOT + SLOT_S + WINDOW_S - NOW
    assert refusal(ledger) == Refusal(6000, 0, 1, found.retry_after_s)


def test_a_reservation_goes_back_once_and_what_was_spent_counts_each_time(ledger: Ledger) -> None:
    ledger.admit("u1", "t1", held(2000), BUDGET, NOW)
    ledger.release("u1", "t1", SLOT, 2000, 700)
    ledger.release("u1", "t1", SLOT, 2000, 50)  # a second delivery of the same turn
    assert refusal(ledger) == Refusal(750, 0, 1, SLOT + SLOT_S + WINDOW_S - int(NOW))


def test_a_count_for_a_user_with_no_ledger_item_yet_is_kept(ledger: Ledger) -> None:
    """A worker's turn the budget did not admit (sent while it was off) counts to the worker's own
    slot: the user may have no item yet, and DynamoDB refuses a map entry under a map that is absent."""
    ledger.add("u1", SLOT, 700)
    ledger.release("u1", "never-held", SLOT, 0, 50)
    assert refusal(ledger) == Refusal(750, 0, 1, SLOT + SLOT_S + WINDOW_S - int(NOW))


def test_users_are_counted_apart_and_a_slot_older_than_24_hours_no_longer_counts(ledger: Ledger) -> None:
    ledger.admit("u1", "t0", held(6000), BUDGET, NOW)
    assert ledger.admit("u2", "t1", held(100), BUDGET, NOW) is None
    assert ledger.admit("u1", "t2", held(100), BUDGET, NOW + 3600) is not None
    assert ledger.admit("u1", "t3", held(100), BUDGET, SLOT + SLOT_S + WINDOW_S) is None


def test_the_item_is_one_per_user_and_expires_after_its_newest_slot_counts_no_more(aws: Any) -> None:
    DynamoSpendingLedger("UserSpendingTable").admit("u1", "t1", held(1900), BUDGET, NOW)
    (item,) = aws.scan(TableName="UserSpendingTable")["Items"]
    assert (item["userId"]["S"], item["day"]["S"]) == ("u1", "window")
    assert item["slots"]["M"] == {str(SLOT): {"N": "1900"}}
    assert int(item["expiresAt"]["N"]) == SLOT + SLOT_S + WINDOW_S + 3600


def test_a_storage_failure_is_raised_not_taken_for_a_refusal(aws: Any) -> None:
    with pytest.raises(StorageError):
        DynamoSpendingLedger("NoSuchTable").admit("u1", "t1", held(1900), BUDGET, NOW)


@pytest.mark.parametrize("room", [1, 1000, 5999])
def test_concurrent_admissions_at_the_boundary_let_at_most_one_request_cross(
    aws: Any, monkeypatch: pytest.MonkeyPatch, room: int
) -> None:
    """8 requests at once when ``room`` tokens are left under the budget: one admission is enough to
    take the count to or past the budget (each reserves 6,000), so exactly one is admitted. DynamoDB
    applies an item's writes one at a time; moto does too once its calls are serialised."""
    serialise_moto_calls(monkeypatch)
    ledger = DynamoSpendingLedger("UserSpendingTable")
    ledger.admit("u1", "t0", held(0), BUDGET, NOW)
    ledger.add("u1", SLOT, BUDGET - room)
    start = threading.Barrier(8)
    outcomes: list[Refusal | None] = []
    lock = threading.Lock()

    def request(number: int) -> None:
        start.wait()
        outcome = ledger.admit("u1", f"c{number}", held(6000), BUDGET, NOW)
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=request, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    refused = [outcome for outcome in outcomes if outcome is not None]
    assert len(outcomes) == 8 and len(refused) == 7
    assert all((r.spent, r.reserved, r.by_turns_in_flight) == (BUDGET - room, 6000, True) for r in refused)
