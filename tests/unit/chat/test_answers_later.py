"""A chat answer that does not fit in the request's time is answered later, and only then
(docs/chat-and-templates.md#answers-that-do-not-fit-in-a-request).

A real model writes 35-80 tokens/s: 1,200 tokens take ~20 s at gpt-4o's typical pace, a minute in
a slow hour, and API Gateway ends the request at 29 s. The message route answers in the request
when the whole answer fits at the model's learned pace; otherwise (or when the client prefers it)
the turn is handed to the worker and the client reads the answer at its location. Every path stores
the user's message and its answer exactly once; no turn is left waiting for an answer that will
never come. In-memory ports, a scripted model and a fake clock.
"""

from __future__ import annotations

from typing import Any

import pytest
from lambda_agents.answered_later import TurnAccepted
from lambda_agents.chat.answers import FALLBACK_CONTENT
from lambda_agents.chat.pending import MessageNotFound, PendingTurn
from lambda_agents.chat.records import MessageKind
from lambda_agents.chat.replies import ProcessMessageResult
from lambda_agents.chat.store import UserMessage
from lambda_agents.llm import ChatResponse, Deadline, Usage
from lambda_agents.llm.errors import AnswerCut, ProviderUnavailable
from lambda_agents.llm.speeds import ModelSpeeds, SpeedEstimate

from tests.support.chat_turns import ChatTurns
from tests.support.recording_queue import RecordingQueue

from ..llm.scripted_model import ScriptedModel

USER = "user-1"
MESSAGE = "エンジニア1名の中途採用の段取りを作りたいです"
ANSWER = "工程を整理しました。\n```json\n" + '{"schema": "ai_chat_process_template.v1"}' + "\n```"
TYPICAL = SpeedEstimate(first_token_s=1.0, tokens_per_s=60.0)  # 1,200 tokens: 21 s
SLOW_HOUR = SpeedEstimate(first_token_s=1.0, tokens_per_s=20.0)  # 1,200 tokens: 61 s


def reply(text: str = ANSWER) -> ChatResponse:
    return ChatResponse(text, "stop", usage=Usage(1000, 200), model="gpt-4o-2024-08-06")


AnswerQueue = RecordingQueue[PendingTurn]  # what the use case hands the answer worker


class Harness(ChatTurns):
    def __init__(self, *steps: Any, speed: SpeedEstimate = TYPICAL, queue: AnswerQueue | None = None) -> None:
        answers = queue if queue is not None else AnswerQueue()
        super().__init__(ScriptedModel(*steps, speed=speed), queue=answers, speeds=ModelSpeeds())
        self.queue = answers

    def send(  # type: ignore[override]
        self, seconds_left: float = 26.0, *, later: bool = False
    ) -> ProcessMessageResult | TurnAccepted:
        return super().send(MESSAGE, Deadline.after(seconds_left, self.clock), later=later)


def test_given_an_answer_that_fits_at_the_models_pace_then_it_is_answered_in_the_request() -> None:
    h = Harness(reply())
    result = h.send(26.0)
    assert isinstance(result, ProcessMessageResult) and not result.fallback
    assert h.queue.sent == [] and h.kinds() == [(1, "user", "message"), (2, "assistant", "answer")]


def test_given_an_answer_that_does_not_fit_then_the_turn_is_handed_over_with_no_model_call() -> None:
    h = Harness(speed=SLOW_HOUR)
    accepted = h.send(26.0)
    assert isinstance(accepted, TurnAccepted)
    assert h.model.requests == [] and h.kinds() == [(1, "user", "message")]
    assert h.queue.sent == [PendingTurn(session_id=h.session.session_id, user_id=USER, user_seq=1)]
    body = accepted.as_response()
    assert body["answerUrl"] == f"/ai-agent/sessions/{h.session.session_id}/messages/2"
    assert body["expectedSeconds"] == 61 and body["retryAfterSeconds"] == 10  # polled at least every 10 s
    assert h.store.events[-1] == "pending:1"  # the message is marked before the worker can see it


def test_given_a_client_that_prefers_to_be_answered_later_then_even_a_fast_answer_is_handed_over() -> None:
    h = Harness()
    assert isinstance(h.send(26.0, later=True), TurnAccepted)
    assert h.model.requests == [] and len(h.queue.sent) == 1


def test_given_an_answer_slower_than_planned_then_the_cut_one_is_not_stored_and_the_worker_answers() -> None:
    partial = ChatResponse("工程を整理し", "cut", usage=Usage(900, 300, estimated=True))
    h = Harness(AnswerCut("cut", partial))
    assert isinstance(h.send(26.0), TurnAccepted)
    assert h.kinds() == [(1, "user", "message")] and len(h.queue.sent) == 1


def test_given_a_queue_that_refuses_the_turn_then_fallback_d_is_stored_and_answered_at_once() -> None:
    h = Harness(speed=SLOW_HOUR, queue=AnswerQueue(broken=True))
    result = h.send(26.0)
    assert isinstance(result, ProcessMessageResult) and result.fallback
    assert result.assistant.content == FALLBACK_CONTENT
    assert h.kinds() == [(1, "user", "message"), (2, "assistant", "fallback")]


def test_given_a_provider_failure_in_the_request_then_it_is_fallback_d_as_before_not_a_hand_over() -> None:
    h = Harness(ProviderUnavailable("500"), ProviderUnavailable("503"))
    result = h.send(60.0)
    assert isinstance(result, ProcessMessageResult) and result.fallback and h.queue.sent == []


# -- the worker -----------------------------------------------------------------------------------


def handed_over(h: Harness) -> PendingTurn:
    assert isinstance(h.send(26.0, later=True), TurnAccepted)
    return h.queue.sent[-1]


def test_the_worker_answers_a_pending_turn_from_the_history_before_it_and_stores_it_once() -> None:
    h = Harness(reply())
    turn = handed_over(h)
    result = h.worker.run_pending(turn, Deadline.after(170.0, h.clock))
    assert result is not None and not result.fallback and result.assistant.seq == 2
    assert h.model.requests[0].messages[-1] == {"role": "user", "content": MESSAGE}
    assert h.worker.run_pending(turn, Deadline.after(170.0, h.clock)) is None  # redelivered: no second answer
    assert h.kinds() == [(1, "user", "message"), (2, "assistant", "answer")] and len(h.model.requests) == 1


def test_the_worker_stores_an_answer_its_own_deadline_cuts_as_a_truncated_answer() -> None:
    partial = ChatResponse("工程を整理しました。求人票の作成から", "cut", usage=Usage(900, 3000, estimated=True))
    h = Harness(AnswerCut("cut", partial))
    result = h.worker.run_pending(handed_over(h), Deadline.after(170.0, h.clock))
    assert result is not None and result.truncated and not result.fallback
    assert result.assistant.kind is MessageKind.ANSWER and "```" not in result.assistant.content


def test_an_answer_in_the_request_is_cut_when_its_pace_shows_it_late_and_the_workers_runs_to_its_deadline() -> None:
    """The request hands a late answer to the worker, so it is cut as soon as its pace shows it late; the
    worker keeps whatever arrives (nothing better can come), so its answer runs until its deadline cuts it."""
    h = Harness(reply(), reply())
    h.send(26.0)
    h.worker.run_pending(handed_over(h), Deadline.after(170.0, h.clock))
    in_the_request, in_the_worker = h.model.requests
    assert in_the_request.pacing.cut_when_late and in_the_request.pacing.planned_tokens == 1200
    assert not in_the_worker.pacing.cut_when_late


def test_the_worker_stores_fallback_d_when_the_provider_keeps_failing() -> None:
    h = Harness(ProviderUnavailable("500"), ProviderUnavailable("500"))
    result = h.worker.run_pending(handed_over(h), Deadline.after(170.0, h.clock))
    assert result is not None and result.fallback and h.kinds()[-1] == (2, "assistant", "fallback")


def test_a_turn_of_a_session_deleted_meanwhile_is_not_answered() -> None:
    h = Harness()
    turn = handed_over(h)
    del h.store.sessions[h.session.session_id]
    assert h.worker.run_pending(turn, Deadline.after(170.0, h.clock)) is None and h.model.requests == []


def test_a_turn_whose_session_is_deleted_while_the_model_answers_ends_with_nothing_stored() -> None:
    """Deleting a chat is the user's right at any moment: the worker's turn ends (None: settled, not
    delivered again), and the answer does not outlive the deletion."""
    h = Harness(reply(), reply())
    turns = [handed_over(h), handed_over(h)]
    answer = h.model.complete

    def deleted_meanwhile(request: Any) -> ChatResponse:
        h.store.mark_deleting(h.session.session_id, USER, "2026-11-26T00:00:00.000+00:00")
        return answer(request)

    h.model.complete = deleted_meanwhile  # type: ignore[method-assign]
    assert h.worker.run_pending(turns[0], Deadline.after(170.0, h.clock)) is None
    assert h.worker.give_up(turns[1], RuntimeError("down")) is None
    assert h.kinds() == [(1, "user", "message"), (3, "user", "message")] and h.store.audits == []


@pytest.mark.parametrize(
    ("user_seq", "unanswered"),
    [(2, False), (3, True), (9, False)],
    ids=["the answer of the last turn", "a user's message never handed over", "no message at all"],
)
def test_a_worker_message_naming_no_message_that_waits_for_the_worker_is_dropped_unanswered(
    user_seq: int, unanswered: bool
) -> None:
    """A queue message is input like any other: the worker answers only a user's message handed to
    it, and never writes past the session's count (every later message would then be refused)."""
    h = Harness(reply())
    assert isinstance(h.send(26.0), ProcessMessageResult)  # messages 1 and 2, answered in the request
    if unanswered:
        h.store.append_user_message(h.session, UserMessage("リクエストが答えるメッセージ", "t", 0))  # message 3
    before = h.kinds()
    turn = PendingTurn(session_id=h.session.session_id, user_id=USER, user_seq=user_seq)

    assert h.worker.run_pending(turn, Deadline.after(170.0, h.clock)) is None
    assert h.worker.give_up(turn, RuntimeError("down")) is None
    assert len(h.model.requests) == 1 and h.kinds() == before and len(h.store.audits) == 1


def test_an_answered_turn_waits_no_more() -> None:
    h = Harness(reply())
    turn = handed_over(h)
    assert h.store.turn(h.session.session_id, 1).pending
    h.worker.run_pending(turn, Deadline.after(170.0, h.clock))
    assert not h.store.turn(h.session.session_id, 1).pending


def test_the_last_delivery_stores_fallback_d_so_no_turn_waits_for_ever() -> None:
    h = Harness()
    turn = handed_over(h)
    result = h.worker.give_up(turn, RuntimeError("down"))
    assert result is not None and result.fallback
    assert h.worker.give_up(turn, RuntimeError("down")) is None  # answered already: nothing more


# -- reading the answer ----------------------------------------------------------------------------


def test_reading_a_pending_answer_says_pending_then_gives_the_answer_the_message_route_would() -> None:
    h = Harness(reply())
    turn = handed_over(h)
    pending = h.use_case.read_answer(USER, h.session.session_id, 2)
    assert isinstance(pending, TurnAccepted) and pending.ids["answerSeq"] == 2
    h.worker.run_pending(turn, Deadline.after(170.0, h.clock))
    answered = h.use_case.read_answer(USER, h.session.session_id, 2)
    assert isinstance(answered, ProcessMessageResult)
    body = answered.as_response()
    assert body["aiResponse"]["seq"] == 2 and body["aiResponse"]["fallback"] is False
    assert body["usage"]["promptTokens"] == 1000 and body["usage"]["completionTokens"] == 200
    assert [m["seq"] for m in body["conversation"]] == [1, 2]


@pytest.mark.parametrize("seq", [2, 3, 99])
def test_reading_an_answer_that_neither_exists_nor_is_pending_is_not_found(seq: int) -> None:
    h = Harness()
    if seq == 3:
        handed_over(h)  # seq 2 is pending; 3 would answer a message that does not exist
    with pytest.raises(MessageNotFound):
        h.use_case.read_answer(USER, h.session.session_id, seq)


def test_another_users_session_is_not_found_on_reading() -> None:
    from lambda_agents.chat.records import SessionNotFound

    h = Harness()
    handed_over(h)
    with pytest.raises(SessionNotFound):
        h.use_case.read_answer("someone-else", h.session.session_id, 2)
