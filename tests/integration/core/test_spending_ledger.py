"""The daily budget's ledger on moto (UserSpendingTable built from template.yaml), and the
in-memory one the unit tests use held to the same contract (``tests.support.memory_spending``):
admission adds the reservation only while the day's count is below the budget, a refusal returns
the count without writing, counting adds unconditionally, and the counter expires after its day.
Concurrent admissions at the boundary: at most one crosses."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from lambda_agents.spending import spending_day
from lambda_agents.storage.dynamodb import StorageError, dynamodb_resource
from lambda_agents.storage.spending import DynamoSpendingLedger

from tests.support.memory_spending import InMemorySpendingLedger
from tests.support.moto_tables import tables_on_moto
from tests.support.serial_moto import serialise_moto_calls

pytestmark = pytest.mark.integration

DAY = spending_day(datetime(2026, 11, 27, 12, 0, tzinfo=UTC), "Asia/Tokyo")
BUDGET = 6000

Ledger = InMemorySpendingLedger | DynamoSpendingLedger


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with tables_on_moto(
        monkeypatch, ["UserSpendingTable"], environment={}, cleared=(), reset_ports=dynamodb_resource.cache_clear
    ) as client:
        yield client


@pytest.fixture(params=["memory", "dynamodb"])
def ledger(request: pytest.FixtureRequest) -> Ledger:
    if request.param == "memory":
        return InMemorySpendingLedger()
    request.getfixturevalue("aws")
    return DynamoSpendingLedger("UserSpendingTable")


def spent(ledger: Ledger) -> int | None:
    """u1's count on DAY, read through the port itself: under a budget of 0 an existing counter
    refuses the admission and answers its count (both ledgers, so the contract reads alike)."""
    return ledger.admit("u1", DAY, 0, 0)


def test_a_first_request_of_the_day_is_admitted_and_its_reservation_counted(ledger: Ledger) -> None:
    assert ledger.admit("u1", DAY, 1900, BUDGET) is None
    assert spent(ledger) == 1900


def test_a_request_below_the_budget_is_admitted_even_if_its_reservation_crosses_it(ledger: Ledger) -> None:
    ledger.add("u1", "2026-11-27", 5999, DAY.expires_at)
    assert ledger.admit("u1", DAY, 1900, BUDGET) is None
    assert spent(ledger) == 7899


def test_a_request_at_the_budget_is_refused_with_the_count_and_nothing_is_written(ledger: Ledger) -> None:
    ledger.add("u1", "2026-11-27", 6000, DAY.expires_at)
    assert ledger.admit("u1", DAY, 1900, BUDGET) == 6000
    assert spent(ledger) == 6000


def test_counting_adds_and_gives_back_unconditionally_even_past_the_budget(ledger: Ledger) -> None:
    ledger.add("u1", "2026-11-27", 9000, DAY.expires_at)
    ledger.add("u1", "2026-11-27", -1100, DAY.expires_at)
    assert spent(ledger) == 7900


def test_users_and_days_are_counted_apart(ledger: Ledger) -> None:
    ledger.add("u1", "2026-11-27", 6000, DAY.expires_at)
    assert ledger.admit("u2", DAY, 100, BUDGET) is None
    assert (
        ledger.admit("u1", spending_day(datetime(2026, 11, 27, 15, 1, tzinfo=UTC), "Asia/Tokyo"), 100, BUDGET) is None
    )


def test_the_counter_expires_two_days_after_its_day(aws: Any) -> None:
    DynamoSpendingLedger("UserSpendingTable").admit("u1", DAY, 1900, BUDGET)
    (item,) = aws.scan(TableName="UserSpendingTable")["Items"]
    assert (item["userId"]["S"], item["day"]["S"], item["spent"]["N"]) == ("u1", "2026-11-27", "1900")
    assert int(item["expiresAt"]["N"]) == DAY.expires_at == int(DAY.ends_at.timestamp()) + 2 * 86_400


def test_a_storage_failure_is_raised_not_taken_for_a_refusal(aws: Any) -> None:
    with pytest.raises(StorageError):
        DynamoSpendingLedger("NoSuchTable").admit("u1", DAY, 1900, BUDGET)


@pytest.mark.parametrize("room", [1, 1000, 5999])
def test_concurrent_admissions_at_the_boundary_let_at_most_one_request_cross(
    aws: Any, monkeypatch: pytest.MonkeyPatch, room: int
) -> None:
    """8 requests at once when ``room`` tokens are left under the budget: one admission is enough to
    take the count to or past the budget (each reserves 6,000), so exactly one is admitted. DynamoDB
    applies an item's writes one at a time; moto does too once its calls are serialised."""
    serialise_moto_calls(monkeypatch)
    ledger = DynamoSpendingLedger("UserSpendingTable")
    ledger.add("u1", "2026-11-27", BUDGET - room, DAY.expires_at)
    start = threading.Barrier(8)
    outcomes: list[int | None] = []
    lock = threading.Lock()

    def request() -> None:
        start.wait()
        outcome = ledger.admit("u1", DAY, 6000, BUDGET)
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=request) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    admitted = [outcome for outcome in outcomes if outcome is None]
    assert len(outcomes) == 8 and len(admitted) == 1
    assert all(outcome == BUDGET - room + 6000 for outcome in outcomes if outcome is not None)
    assert spent(ledger) == BUDGET - room + 6000
