"""The applicant's token budget on an interview turn (docs/cost.md#a-daily-budget-per-user):
admitted before any model call or write, refused with nothing committed, every call of the turn
counted, and a turn handed to the worker finished and counted to the slot of its request; a turn
that ends without a model call gives its reservation back. In-memory ports and a model scripted per
purpose."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from lambda_agents.answered_later import TurnAccepted
from lambda_agents.api.errors import ServiceUnavailable
from lambda_agents.interview.errors import VersionConflict
from lambda_agents.interview.pending_turns import TurnMessage
from lambda_agents.interview.turn_runner import TurnResult
from lambda_agents.llm import Deadline
from lambda_agents.llm.errors import ProviderUnavailable
from lambda_agents.llm.speeds import SpeedEstimate
from lambda_agents.spending import DailyBudget, DailyBudgetExceeded, UserLimits

from tests.support.memory_spending import InMemorySpendingLedger
from tests.support.recording_queue import RecordingQueue

from .support import JOB, PASS_CHECK, Harness, PurposeScript, ask, handed_over_by, harness, structured

USER = "applicant-1"
NOON_UTC = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
GREETING = "こんにちは！ご応募ありがとうございます。使用言語とお住まいの国を教えてください。"


def budgeted(spent: int | None = None) -> tuple[Harness, InMemorySpendingLedger, RecordingQueue[TurnMessage], str]:
    h = harness(PurposeScript(greeter=[ask(GREETING)], quick_check=[structured(PASS_CHECK)]))
    ledger = InMemorySpendingLedger()
    budget = DailyBudget(ledger, 6000, clock=lambda: NOON_UTC)
    if spent:
        budget.give_back(budget.admit(USER, 0), spent)
    h.service.limits = UserLimits(budget)
    queue = RecordingQueue[TurnMessage]()
    handed_over_by(h, queue, SpeedEstimate(first_token_s=1.0, tokens_per_s=60.0))
    return h, ledger, queue, h.service.create(USER, JOB).session_id


def test_given_room_left_then_the_turn_runs_and_every_call_of_it_is_counted() -> None:
    h, ledger, _, session = budgeted()
    result = h.service.post_message(USER, session, "こんにちは", Deadline.after(26.0))
    assert isinstance(result, TurnResult)
    assert result.outcome.usage.total_tokens > 0 and ledger.total(USER) == result.outcome.usage.total_tokens


def test_given_the_day_spent_then_the_turn_is_refused_before_any_call_and_nothing_is_committed() -> None:
    h, ledger, queue, session = budgeted(spent=6000)
    with pytest.raises(DailyBudgetExceeded) as raised:
        h.service.post_message(USER, session, "こんにちは", Deadline.after(26.0))
    assert raised.value.headers == {"Retry-After": str(86_400 + 600)}
    stored = h.repository.load(session)
    assert stored is not None and stored.messages == [] and stored.session.version == 0 and stored.pending is None
    assert h.model.requests == [] and queue.sent == [] and ledger.total(USER) == 6000


def test_given_a_handed_over_turn_then_the_worker_runs_it_after_the_budget_is_spent_and_counts_it_to_its_slot() -> None:
    h, ledger, queue, session = budgeted(spent=1000)
    accepted = h.service.post_message(USER, session, "こんにちは", prefer_later=True)
    assert isinstance(accepted, TurnAccepted)
    (message,) = queue.sent
    assert message.spending_slot == NOON_UTC.timestamp() and message.reserved_tokens == ledger.total(USER) - 1000
    ledger.add(USER, int(NOON_UTC.timestamp()), 9000)  # the budget is spent meanwhile
    h.service.limits.budget.clock = lambda: datetime(2026, 11, 28, 1, 0, tzinfo=UTC)  # and hours have passed
    result = h.service.run_pending(message, Deadline.after(290.0))
    assert result is not None  # finished, not refused
    assert ledger.total(USER) == 1000 + 9000 + result.outcome.usage.total_tokens and ledger.holding(USER) == 0


def test_given_the_worker_giving_up_then_the_reservation_is_given_back() -> None:
    h, ledger, queue, session = budgeted()
    accepted = h.service.post_message(USER, session, "こんにちは", prefer_later=True)
    assert isinstance(accepted, TurnAccepted)
    (message,) = queue.sent
    h.service.give_up(message, ProviderUnavailable("down"))
    assert (ledger.total(USER), ledger.holding(USER)) == (0, 0)


def test_given_the_interview_withdrawn_while_its_turn_waits_then_the_worker_gives_the_reservation_back() -> None:
    h, ledger, queue, session = budgeted()
    h.service.post_message(USER, session, "こんにちは", prefer_later=True)
    (message,) = queue.sent
    assert ledger.holding(USER) > 0
    h.service.withdraw(USER, session)
    calls = len(h.model.requests)
    assert h.service.run_pending(message, Deadline.after(290.0)) is None
    assert (ledger.total(USER), ledger.holding(USER), len(h.model.requests)) == (0, 0, calls)


def test_given_the_session_changed_before_its_turn_is_handed_over_then_the_reservation_is_given_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The mark refused (another action of the applicant's came first): nobody will run the turn."""
    h, ledger, queue, session = budgeted()

    def changed_meanwhile(*_: object) -> None:
        raise VersionConflict("changed, withdrawn, or another turn is pending")

    monkeypatch.setattr(h.repository, "mark_pending", changed_meanwhile)
    with pytest.raises(VersionConflict):
        h.service.post_message(USER, session, "こんにちは", prefer_later=True)
    assert (ledger.total(USER), ledger.holding(USER), queue.sent) == (0, 0, [])


def test_given_the_worker_giving_up_while_storage_fails_then_the_reservation_is_given_back_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The failed turn's record cannot be written (the message goes to the dead-letter queue): the
    reservation is given back all the same, not held and then counted as spent for 24 hours."""
    h, ledger, queue, session = budgeted()
    assert isinstance(h.service.post_message(USER, session, "こんにちは", prefer_later=True), TurnAccepted)
    (message,) = queue.sent

    def storage_down(*_: object) -> None:
        raise ServiceUnavailable("throttled")

    monkeypatch.setattr(h.repository, "release_pending", storage_down)
    with pytest.raises(ServiceUnavailable):
        h.service.give_up(message, ProviderUnavailable("down"))
    assert (ledger.total(USER), ledger.holding(USER)) == (0, 0)
