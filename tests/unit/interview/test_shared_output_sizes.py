"""What each agent's answers really need is learned across the interview's two functions
(docs/interview.md#turns-answered-later): the worker publishes the output sizes it saw, and a fresh
request container plans each call with them instead of its prior.

The Auditor's prior is 1,500 output tokens (750 expected); it writes about 110. At a slow pace (20
tokens/s) a request with 26 s has no room for a 750-token answer after the Reviewer's call, so a
container that has not seen the Auditor write cuts the turn and hands it over, though the worker
knows the answer is short. In-memory ports, a model scripted per purpose, and one process standing
for two containers: the container's learned budgets are cleared between the worker's turn and the
request's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lambda_agents.answered_later import TurnAccepted
from lambda_agents.interview.pending_turns import TurnMessage
from lambda_agents.interview.turn_runner import TurnResult
from lambda_agents.llm import Deadline
from lambda_agents.llm.budgets import CONTAINER_BUDGETS, LearnedBudgets
from lambda_agents.llm.shared_learning import SharedBudgets, SharedLearning, SharedPace
from lambda_agents.llm.speeds import ModelSpeeds, SpeedEstimate
from lambda_agents.llm.types import ResponseTiming

from tests.support.learning_record import MemoryLearningRecord
from tests.support.recording_queue import RecordingQueue

from .support import (
    PASS_AUDIT,
    PASS_REVIEW,
    Harness,
    PurposeScript,
    auditor,
    handed_over_by,
    harness,
    interviewing,
    reviewer,
    structured,
)

USER = "applicant-1"
# The engine's plan: a slow hour (a 750-token answer takes ~38 s); the hand-over's own estimate of a
# typical turn fits in the request, so the turn starts there.
SLOW = SpeedEstimate(first_token_s=1.0, tokens_per_s=20.0)
TYPICAL = SpeedEstimate(first_token_s=1.0, tokens_per_s=60.0)
AUDITOR_WRITES = 113


def last_answer_audited() -> PurposeScript:
    """The last field's answer: the Reviewer passes it, the Auditor passes the interview, writing ~113 tokens."""
    model = PurposeScript(
        interviewer=[reviewer(趣味="読書"), auditor()],
        reviewer=[structured(PASS_REVIEW)],
        auditor=[structured(PASS_AUDIT, completion=AUDITOR_WRITES)],
    )
    model.speed_prior = SLOW  # type: ignore[attr-defined]  # the adapter's setting, read by the engine's plan
    return model


def container(model: PurposeScript, record: MemoryLearningRecord | None) -> tuple[Harness, RecordingQueue[TurnMessage]]:
    h = harness(model)
    queue = RecordingQueue[TurnMessage]()
    handed_over_by(h, queue, TYPICAL)
    if record is not None:
        learned = SharedLearning(record, model.model_name, (SharedBudgets(CONTAINER_BUDGETS),))
        h.service.learned = learned
        assert h.service.handover is not None
        h.service.handover = replace(h.service.handover, shared=learned)
    return h, queue


def the_worker_sees_the_auditor_write(record: MemoryLearningRecord | None) -> None:
    h, queue = container(last_answer_audited(), record)
    session = interviewing(h, asked=True, done=("experience", "motivation"))
    assert isinstance(h.service.post_message(USER, session, "読書です", prefer_later=True), TurnAccepted)
    (message,) = queue.sent
    assert h.service.run_pending(message, Deadline.after(290.0)) is not None
    CONTAINER_BUDGETS.clear()  # the request's container is another one: it learned nothing of this


def test_a_fresh_request_plans_the_auditor_at_what_the_worker_saw_it_write_and_answers_in_the_request() -> None:
    record = MemoryLearningRecord()
    the_worker_sees_the_auditor_write(record)
    model = last_answer_audited()
    h, queue = container(model, record)
    session = interviewing(h, asked=True, done=("experience", "motivation"))

    result = h.service.post_message(USER, session, "読書です", Deadline.after(26.0))

    assert isinstance(result, TurnResult) and result.outcome.reply_kind == "completed"
    assert queue.sent == []
    (audit,) = model.of("auditor")
    assert audit.max_tokens < 750  # planned at the learned size (and its margin), not the prior
    model.assert_consumed()


def test_without_the_workers_sizes_the_same_request_cuts_the_turn_at_the_auditor_and_hands_it_over() -> None:
    """What sharing changes: the request alone plans the Auditor at its prior, which does not fit."""
    the_worker_sees_the_auditor_write(None)
    model = last_answer_audited()
    h, queue = container(model, None)
    session = interviewing(h, asked=True, done=("experience", "motivation"))

    result = h.service.post_message(USER, session, "読書です", Deadline.after(26.0))

    assert isinstance(result, TurnAccepted) and len(queue.sent) == 1
    assert model.of("auditor") == []


def test_the_shared_sizes_stand_beside_the_containers_own_and_are_replaced_not_added_up() -> None:
    budgets = LearnedBudgets()
    budgets.record("m|call|interview.greeter", 40)
    budgets.record("other|call|interview.greeter", 900)
    assert budgets.needs("m|") == {"m|call|interview.greeter": [40]}  # one model's, its own only
    budgets.merge({"m|call|interview.greeter": [300], "m|call|interview.auditor": [113, 120]})
    assert budgets.need("m|call|interview.greeter") == 300 and budgets.need("m|call|interview.auditor") == 120
    assert budgets.needs("m|") == {"m|call|interview.greeter": [40]}  # never published again as its own
    budgets.merge({"m|call|interview.greeter": [20]})  # the worker's newest: what it shared before is gone
    assert budgets.need("m|call|interview.greeter") == 40


def test_a_record_out_of_reach_loses_only_the_sharing() -> None:
    class Down:
        def read(self, model: str) -> dict[str, Any]:
            raise RuntimeError("storage down")

        def write(self, model: str, parts: dict[str, Any]) -> None:
            raise RuntimeError("storage down")

    budgets = LearnedBudgets()
    budgets.record("m|call|interview.auditor", 113)
    shared = SharedLearning(Down(), "m", (SharedBudgets(budgets),))
    shared.publish()
    shared.refresh()  # neither raises
    assert budgets.need("m|call|interview.auditor") == 113


def test_the_request_reads_the_record_at_most_every_refresh_period() -> None:
    record, now = MemoryLearningRecord(), [100.0]
    budgets = LearnedBudgets()
    shared = SharedLearning(record, "m", (SharedBudgets(budgets),), clock=lambda: now[0], refresh_s=10.0)
    shared.refresh()
    record.write("m", {"needs": {"m|call|interview.auditor": [113]}})
    shared.refresh()
    assert budgets.need("m|call|interview.auditor") is None
    now[0] += 10.0
    shared.refresh()
    assert budgets.need("m|call|interview.auditor") == 113


def learned_in(speeds: ModelSpeeds, budgets: LearnedBudgets, record: MemoryLearningRecord) -> SharedLearning:
    """The interview's: the model's pace and what its purposes' answers need, in one record."""
    return SharedLearning(record, "m", (SharedPace(speeds), SharedBudgets(budgets)))


def test_the_pace_and_the_sizes_are_read_in_one_read_and_written_in_one_write_only_when_changed() -> None:
    record = MemoryLearningRecord()
    speeds, budgets = ModelSpeeds(), LearnedBudgets()
    worker = learned_in(speeds, budgets, record)
    speeds.record("m", ResponseTiming(first_token_s=0.8, total_s=2.8), 120)
    budgets.record("m|call|interview.auditor", 113)
    worker.publish()
    assert record.writes == 1 and set(record.items["m"]) == {"pace", "needs"}
    worker.publish()  # a turn that taught it nothing new
    assert record.writes == 1
    budgets.record("m|call|interview.auditor", 98)
    worker.publish()
    assert record.writes == 2

    request_speeds, request_budgets = ModelSpeeds(), LearnedBudgets()
    learned_in(request_speeds, request_budgets, record).refresh()
    assert record.reads == 1
    assert request_speeds.estimate("m").learned and request_budgets.need("m|call|interview.auditor") == 113
