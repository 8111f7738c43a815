"""The user's token budget on a chat turn (docs/cost.md#a-daily-budget-per-user): admitted
before anything is stored or called, refused with nothing stored, every attempt counted, and a turn
handed to the worker finished and counted to the slot of its request. In-memory ports."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from lambda_agents.answered_later import TurnAccepted
from lambda_agents.chat.pending import PendingTurn
from lambda_agents.chat.replies import ProcessMessageResult
from lambda_agents.llm import ChatResponse, Deadline, Usage
from lambda_agents.llm.errors import AnswerCut, ProviderTimeout, ProviderUnavailable
from lambda_agents.llm.speeds import ModelSpeeds, SpeedEstimate
from lambda_agents.spending import DailyBudget, DailyBudgetExceeded

from tests.support.chat_turns import ChatTurns
from tests.support.logs import captured_logs
from tests.support.memory_spending import InMemorySpendingLedger
from tests.support.recording_queue import RecordingQueue

from ..llm.scripted_model import ScriptedModel

USER = "user-1"
MESSAGE = "段取りを作りたい"
NOON_UTC = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
TYPICAL = SpeedEstimate(first_token_s=1.0, tokens_per_s=60.0)


def reply(prompt: int = 600, completion: int = 200) -> ChatResponse:
    return ChatResponse("工程を整理しました。", "stop", usage=Usage(prompt, completion), model="gpt-4o-2024-08-06")


class Harness(ChatTurns):
    def __init__(self, *steps: Any, budget: int = 6000, spent: int | None = None) -> None:
        self.now = NOON_UTC
        self.ledger = InMemorySpendingLedger()
        self.queue = RecordingQueue[PendingTurn]()
        self.daily = DailyBudget(self.ledger, budget, clock=lambda: self.now)
        if spent:
            self.daily.give_back(self.daily.admit(USER, 0), spent)  # spent an hour ago
        super().__init__(
            ScriptedModel(*steps, speed=TYPICAL), queue=self.queue, budget=self.daily, speeds=ModelSpeeds()
        )

    def send(self, *, later: bool = False) -> ProcessMessageResult | TurnAccepted:  # type: ignore[override]
        return super().send(MESSAGE, Deadline.after(26.0, self.clock), later=later)

    @property
    def spent(self) -> int:
        return self.ledger.total(USER)


def test_given_room_left_then_the_turn_is_answered_and_the_day_counts_exactly_what_was_billed() -> None:
    h = Harness(reply(600, 200))
    assert isinstance(h.send(), ProcessMessageResult)
    assert (h.spent, h.ledger.holding(USER)) == (800, 0)


def test_given_the_day_spent_then_the_message_is_refused_before_any_store_or_call_and_its_place_given_back() -> None:
    h = Harness(reply(), spent=6000)
    with captured_logs() as logs, pytest.raises(DailyBudgetExceeded) as raised:
        h.send()
    (line,) = [json.loads(text) for text in logs.getvalue().splitlines() if "user refused" in text]
    assert (line["user_id"], line["spent_tokens"], line["budget_tokens"]) == (USER, 6000, 6000)
    assert MESSAGE not in logs.getvalue()  # the user id only, never what the user wrote
    assert raised.value.code == "DAILY_BUDGET_EXCEEDED" and "spent 6000 of 6000" in raised.value.message
    assert raised.value.headers == {"Retry-After": str(86_400 + 600)}  # when that slot is 24 hours old
    assert h.stored == [] and h.model.requests == [] and h.spent == 6000
    assert h.limiter.taken[USER] == 0  # a refused message does not count against the rate limit


def test_given_a_stalled_attempt_then_a_retry_then_both_attempts_are_counted() -> None:
    stalled = ChatResponse("途中まで", "cut", usage=Usage(600, 500, estimated=True))  # billed for what it wrote
    h = Harness(ProviderTimeout("stalled", stalled), reply(600, 200))
    h.send()
    assert h.spent == 1100 + 800


def test_given_the_provider_failing_on_both_attempts_then_the_fallback_costs_only_what_was_billed() -> None:
    h = Harness(ProviderUnavailable("500"), ProviderUnavailable("503"))
    result = h.send()
    assert isinstance(result, ProcessMessageResult) and result.fallback
    assert (h.spent, h.ledger.holding(USER)) == (0, 0)  # the reservation given back: nothing was billed


def test_given_turns_of_800_tokens_then_the_day_stops_at_most_one_call_past_the_budget() -> None:
    h = Harness(*[reply(600, 200) for _ in range(10)])
    answered = 0
    with pytest.raises(DailyBudgetExceeded):
        for _ in range(10):
            h.send()
            answered += 1
    assert answered == 8 and h.spent == 6400 and len(h.model.requests) == 8


def test_given_a_handed_over_turn_then_the_worker_finishes_it_after_the_budget_is_spent_counted_to_its_slot() -> None:
    h = Harness(reply(600, 200), budget=6000, spent=5000)
    accepted = h.send(later=True)
    assert isinstance(accepted, TurnAccepted)
    (turn,) = h.queue.sent
    assert turn.spending_slot == NOON_UTC.timestamp() and turn.reserved_tokens == h.spent - 5000
    h.ledger.add(USER, int(NOON_UTC.timestamp()), 2000)  # the budget is spent meanwhile (another request)
    h.now = datetime(2026, 11, 27, 16, 0, tzinfo=UTC)  # and hours have passed when the worker runs
    result = h.worker.run_pending(turn, Deadline.after(170.0, h.clock))
    assert result is not None and not result.fallback  # finished, not refused
    assert (h.spent, h.ledger.holding(USER)) == (5000 + 2000 + 800, 0)  # the reservation given back


def test_given_a_request_cut_short_then_what_the_cut_call_was_billed_counts_and_the_reservation_waits() -> None:
    partial = ChatResponse("工程を", "cut", usage=Usage(600, 100, estimated=True))
    h = Harness(AnswerCut("cut", partial), reply(600, 200))
    assert isinstance(h.send(), TurnAccepted)
    (turn,) = h.queue.sent
    assert h.spent == turn.reserved_tokens + 700
    h.worker.run_pending(turn, Deadline.after(170.0, h.clock))
    assert h.spent == 700 + 800


def test_given_a_redelivered_turn_then_the_reservation_is_given_back_once() -> None:
    h = Harness(reply(600, 200))
    h.send(later=True)
    (turn,) = h.queue.sent
    h.worker.run_pending(turn, Deadline.after(170.0, h.clock))
    assert h.worker.run_pending(turn, Deadline.after(170.0, h.clock)) is None  # answered already
    assert h.spent == 800


def test_given_the_worker_giving_up_then_the_reservation_is_given_back() -> None:
    h = Harness()
    h.send(later=True)
    (turn,) = h.queue.sent
    assert h.worker.give_up(turn, RuntimeError("down")) is not None
    assert (h.spent, h.ledger.holding(USER)) == (0, 0)


def test_given_a_queue_that_refuses_the_turn_then_the_reservation_is_given_back() -> None:
    h = Harness()
    h.queue.broken = True
    result = h.send(later=True)
    assert isinstance(result, ProcessMessageResult) and result.fallback
    assert (h.spent, h.ledger.holding(USER)) == (0, 0)


def test_given_the_session_deleted_while_its_turn_waits_then_the_worker_gives_the_reservation_back() -> None:
    h = Harness()  # no model step: the worker must not call the model
    h.send(later=True)
    (turn,) = h.queue.sent
    assert h.ledger.holding(USER) > 0
    session_id = h.session.session_id
    h.store.mark_deleting(session_id, USER, "t")  # the user deletes the session (sessions.delete)
    h.store.delete_contents(h.store.session_contents(session_id))
    h.store.delete_session_record(session_id)
    assert h.worker.run_pending(turn, Deadline.after(170.0, h.clock)) is None
    assert (h.spent, h.ledger.holding(USER), h.model.requests) == (0, 0, [])


def test_given_a_request_cut_short_then_the_stored_answers_usage_includes_what_the_request_spent() -> None:
    partial = ChatResponse("工程を", "cut", usage=Usage(600, 100, estimated=True))
    h = Harness(AnswerCut("cut", partial), reply(600, 200))
    accepted = h.send()
    assert isinstance(accepted, TurnAccepted)
    (turn,) = h.queue.sent
    result = h.worker.run_pending(turn, Deadline.after(170.0, h.clock))
    assert result is not None
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (1200, 300)
    read = h.use_case.read_answer(USER, h.session.session_id, turn.user_seq + 1)
    assert isinstance(read, ProcessMessageResult)
    assert read.as_response()["usage"]["tokens"] == 1500 == h.spent  # what the budget counted, too
    assert read.account is not None and read.account.attempts == 2


def test_given_the_session_deleted_before_the_worker_gives_its_turn_up_then_the_reservation_is_given_back() -> None:
    h = Harness()
    h.send(later=True)
    (turn,) = h.queue.sent
    session_id = h.session.session_id
    h.store.mark_deleting(session_id, USER, "t")  # deleted after the last delivery failed
    h.store.delete_contents(h.store.session_contents(session_id))
    h.store.delete_session_record(session_id)
    assert h.worker.give_up(turn, RuntimeError("down")) is None
    assert (h.spent, h.ledger.holding(USER)) == (0, 0)
