"""Every chat answer stored for a user reaches that user's open WebSocket connections as one
``done``, whichever function wrote it (the request, the worker) and whatever it is (the model's,
the fallback answer), carrying what its REST read answers, without the session's history
(docs/api.md#websocket). In-memory ports and a recording channel."""

from __future__ import annotations

from lambda_agents.answered_later import TurnAccepted
from lambda_agents.chat.answers import FALLBACK_CONTENT
from lambda_agents.chat.replies import ProcessMessageResult
from lambda_agents.live import DoneFrame
from lambda_agents.llm import Deadline

from tests.support.recording_channel import RecordingChannel

from .test_answers_later import SLOW_HOUR, USER, AnswerQueue, Harness, reply


def listened(h: Harness) -> RecordingChannel:
    h.use_case.answering.live = channel = RecordingChannel()  # the request's and the worker's answering
    return channel


def the_done(channel: RecordingChannel, h: Harness) -> DoneFrame:
    (frame,) = channel.of(USER)
    assert isinstance(frame, DoneFrame) and channel.of("someone-else") == []
    read = h.use_case.read_answer(USER, h.session.session_id, int(frame.seq))
    assert isinstance(read, ProcessMessageResult)
    rest = read.as_response()
    pushed = frame.model_dump()
    assert pushed["aiResponse"] == rest["aiResponse"] and "conversation" not in pushed  # what GET answers
    return frame


def test_an_answer_made_in_the_request_reaches_the_users_sockets_once_stored() -> None:
    h = Harness(reply())
    channel = listened(h)
    result = h.send(26.0)
    assert isinstance(result, ProcessMessageResult)
    frame = the_done(channel, h)
    assert (frame.sessionId, frame.seq) == (h.session.session_id, result.assistant.seq)


def test_a_turn_handed_over_pushes_nothing_from_the_request_and_its_done_from_the_worker() -> None:
    h = Harness(reply())
    channel = listened(h)
    assert isinstance(h.send(26.0, later=True), TurnAccepted) and channel.sent == []
    h.worker.run_pending(h.queue.sent[-1], Deadline.after(170.0, h.clock))
    assert the_done(channel, h).model_dump()["aiResponse"]["fallback"] is False


def test_a_fallback_answer_comes_as_done_with_its_flag_never_as_words() -> None:
    h = Harness(speed=SLOW_HOUR, queue=AnswerQueue(broken=True))
    channel = listened(h)
    h.send(26.0)
    pushed = the_done(channel, h).model_dump()["aiResponse"]
    assert pushed["fallback"] is True and pushed["content"] == FALLBACK_CONTENT


def test_the_workers_last_delivery_fallback_reaches_the_sockets_too() -> None:
    h = Harness()
    channel = listened(h)
    h.send(26.0, later=True)
    h.worker.give_up(h.queue.sent[-1], RuntimeError("a bug in the worker"))
    assert the_done(channel, h).model_dump()["aiResponse"]["fallback"] is True
