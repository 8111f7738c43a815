"""A turn handed to the worker after its request completed some model calls: the worker takes those
answers from the request's record instead of paying for them again (docs/interview.md#turns-answered-later).

The request's Greeter calls ``ask`` (a whole answer, paid for); its QuickCheck comes too late for the
request's deadline, so the turn is handed over. The worker runs the turn from its start: the same
Greeter request is answered from the record, only the QuickCheck goes to the model. The turn's
``usageTotal`` and the applicant's day hold each call once, as the provider billed it. In-memory
ports and a model scripted per purpose (an unscripted call fails the test).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from lambda_agents.answered_later import TurnAccepted
from lambda_agents.interview.paid_calls import PaidTurnCalls, request_digest
from lambda_agents.interview.pending_turns import TurnMessage
from lambda_agents.llm import ChatRequest, Deadline, DeadlineReached, Usage
from lambda_agents.llm.speeds import SpeedEstimate
from lambda_agents.spending import DailyBudget, UserLimits

from tests.support.logs import captured_logs
from tests.support.memory_spending import InMemorySpendingLedger
from tests.support.recording_queue import RecordingQueue

from .support import JOB, PASS_CHECK, Harness, PurposeScript, ask, handed_over_by, harness, structured

USER = "applicant-1"
GREETING = "こんにちは！ご応募ありがとうございます。使用言語とお住まいの国を教えてください。"
TYPICAL = SpeedEstimate(first_token_s=1.0, tokens_per_s=60.0)
NOON_UTC = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


class InMemoryCallRecords:
    """``TurnCallRecords`` in memory, with the DynamoDB adapter's rule: a turn's record is written once."""

    def __init__(self, *, broken: bool = False) -> None:
        self.records: dict[tuple[str, str], PaidTurnCalls] = {}
        self.broken = broken

    def write(self, record: PaidTurnCalls) -> None:
        if self.broken:
            raise RuntimeError("storage down")
        key = (record.session_id, record.turn_id)
        if key in self.records:
            raise RuntimeError("a turn's record is written once")
        self.records[key] = record

    def read(self, session_id: str, turn_id: str) -> PaidTurnCalls | None:
        if self.broken:
            raise RuntimeError("storage down")
        return self.records.get((session_id, turn_id))


def cut_after_the_greeters_call(
    records: InMemoryCallRecords,
) -> tuple[Harness, PurposeScript, TurnMessage, InMemorySpendingLedger]:
    """The request pays for the Greeter's ``ask``; its QuickCheck is cut by the deadline: handed over."""
    model = PurposeScript(greeter=[ask(GREETING)], quick_check=[structured(PASS_CHECK)])
    in_the_request = [True]

    def late(request: ChatRequest) -> None:
        if request.purpose == "interview.quick_check" and in_the_request:
            in_the_request.pop()
            raise DeadlineReached("the request's time ran out", [], Usage())

    model.hook = late
    h = harness(model)
    ledger = InMemorySpendingLedger()
    h.service.limits = UserLimits(DailyBudget(ledger, 60_000, clock=lambda: NOON_UTC))
    h.service.paid_calls = records
    queue = RecordingQueue[TurnMessage]()
    handed_over_by(h, queue, TYPICAL)
    session = h.service.create(USER, JOB).session_id
    assert isinstance(h.service.post_message(USER, session, "こんにちは", Deadline.after(26.0)), TurnAccepted)
    (message,) = queue.sent
    return h, model, message, ledger


def test_the_worker_makes_only_the_calls_its_request_did_not_complete_and_counts_each_once() -> None:
    records = InMemoryCallRecords()
    h, model, message, ledger = cut_after_the_greeters_call(records)
    assert [r.purpose for r in model.requests] == ["interview.greeter", "interview.quick_check"]  # the last one cut
    (record,) = records.records.values()
    assert [(c.purpose, c.response.usage.total_tokens) for c in record.calls] == [("interview.greeter", 120)]

    with captured_logs() as logs:
        result = h.service.run_pending(message, Deadline.after(290.0))

    assert result is not None and result.outcome.reply == GREETING
    worker = [r.purpose for r in model.requests[2:]]
    assert worker == ["interview.quick_check"]  # the Greeter's answer taken from the record
    model.assert_consumed()
    assert "model call taken from the request that paid for it" in logs.getvalue()
    # The Greeter's one iteration was answered from the record: no model call of the worker's.
    assert (result.outcome.iterations, result.outcome.model_calls) == (1, 0)
    # Each call once, as the provider billed it: the Greeter's in the request's share, the QuickCheck in the worker's.
    assert result.outcome.usage.total_tokens == 95
    assert result.session.usage_total["totalTokens"] == 120 + 95
    assert ledger.total(USER) == 120 + 95


def test_without_a_record_the_worker_pays_for_the_requests_calls_again() -> None:
    """What the record saves: the same turn, the record lost, makes the Greeter's call twice."""
    records = InMemoryCallRecords()
    h, model, message, _ = cut_after_the_greeters_call(records)
    records.records.clear()
    model.add(greeter=[ask(GREETING)])

    result = h.service.run_pending(message, Deadline.after(290.0))

    assert result is not None
    assert [r.purpose for r in model.requests[2:]] == ["interview.greeter", "interview.quick_check"]
    assert result.session.usage_total["totalTokens"] == 120 * 2 + 95  # the provider billed both Greeter calls
    assert (result.outcome.iterations, result.outcome.model_calls) == (1, 1)


def test_a_changed_request_is_sent_to_the_model_again() -> None:
    """The same agent sending another request (another digest) is the model's to answer."""
    records = InMemoryCallRecords()
    h, model, message, _ = cut_after_the_greeters_call(records)
    key, record = next(iter(records.records.items()))
    records.records[key] = replace(record, calls=tuple(replace(c, digest="0" * 64) for c in record.calls))
    model.add(greeter=[ask(GREETING)])

    result = h.service.run_pending(message, Deadline.after(290.0))

    assert result is not None
    assert [r.purpose for r in model.requests[2:]] == ["interview.greeter", "interview.quick_check"]
    model.assert_consumed()


@pytest.mark.parametrize("other", ["another turn id", "another session version"])
def test_a_record_of_another_turn_is_ignored(other: str) -> None:
    """A record is used only for the turn it names, from the session version that turn starts from."""
    records = InMemoryCallRecords()
    h, model, message, _ = cut_after_the_greeters_call(records)
    key, record = next(iter(records.records.items()))
    if other == "another turn id":
        records.records[key] = replace(record, turn_id="1795555555555-0123abcd")
    else:
        records.records[key] = replace(record, session_version=record.session_version - 1)
    model.add(greeter=[ask(GREETING)])

    result = h.service.run_pending(message, Deadline.after(290.0))

    assert result is not None
    assert [r.purpose for r in model.requests[2:]] == ["interview.greeter", "interview.quick_check"]
    model.assert_consumed()


def test_a_record_that_cannot_be_stored_loses_only_the_saving() -> None:
    """Storage failing while the request hands over: logged, the turn still handed over, and the
    worker makes the calls again."""
    records = InMemoryCallRecords(broken=True)
    with captured_logs() as logs:
        h, model, message, _ = cut_after_the_greeters_call(records)
    assert "the turn's paid calls not recorded" in logs.getvalue()
    model.add(greeter=[ask(GREETING)])

    result = h.service.run_pending(message, Deadline.after(290.0))

    assert result is not None and result.outcome.reply == GREETING
    assert [r.purpose for r in model.requests[2:]] == ["interview.greeter", "interview.quick_check"]


def test_the_digest_ignores_the_budget_each_container_plans_but_not_what_decides_the_answer() -> None:
    hello = [{"role": "user", "content": "こんにちは"}]
    request = ChatRequest(messages=hello, max_tokens=1024, purpose="interview.greeter")
    assert request_digest(replace(request, max_tokens=300)) == request_digest(request)
    assert request_digest(replace(request, purpose="interview.interviewer")) != request_digest(request)
    other = [{"role": "user", "content": "もしもし"}]
    assert request_digest(replace(request, messages=other)) != request_digest(request)
    assert request_digest(replace(request, temperature=0.3)) != request_digest(request)
