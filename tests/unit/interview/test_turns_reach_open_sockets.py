"""Every interview turn committed reaches the applicant's open WebSocket connections as one
``done`` (its reply, as the turn's REST read answers it), from the request or the worker; a turn
the worker gives up on reaches them as the ``error`` its read answers (docs/api.md#websocket)."""

from __future__ import annotations

from lambda_agents.answered_later import TurnAccepted
from lambda_agents.interview.turn_runner import TurnResult
from lambda_agents.live import DoneFrame, ErrorFrame
from lambda_agents.llm import Deadline
from lambda_agents.llm.errors import ProviderUnavailable

from tests.support.recording_channel import RecordingChannel

from .support import PurposeScript
from .test_turns_answered_later import GREETING, REASONING, greeting_model, with_handover


def test_a_turn_answered_in_the_request_reaches_the_applicants_sockets_once_committed() -> None:
    h, _, session = with_handover(greeting_model())
    h.service.live = channel = RecordingChannel()
    result = h.service.post_message("applicant-1", session, "こんにちは", Deadline.after(26.0))
    assert isinstance(result, TurnResult)
    (frame,) = channel.of("applicant-1")
    assert isinstance(frame, DoneFrame) and frame.sessionId == session
    assert frame.model_dump()["reply"] == GREETING and frame.model_dump()["version"] == result.session.version


def test_a_turn_handed_over_pushes_its_done_from_the_worker_keyed_by_the_turn_its_202_named() -> None:
    h, queue, session = with_handover(greeting_model(), REASONING)
    h.service.live = channel = RecordingChannel()
    accepted = h.service.post_message("applicant-1", session, "こんにちは", Deadline.after(26.0))
    assert isinstance(accepted, TurnAccepted) and channel.sent == []
    turn_id = accepted.ids["turnId"]
    h.service.run_pending(queue.sent[-1], Deadline.after(290.0))
    (frame,) = channel.of("applicant-1")
    assert isinstance(frame, DoneFrame) and frame.seq == turn_id
    assert frame.model_dump()["reply"] == h.service.turn_outcome("applicant-1", session, turn_id)["reply"]


def test_a_turn_the_worker_gives_up_on_reaches_the_sockets_as_the_error_its_read_answers() -> None:
    h, queue, session = with_handover(PurposeScript(greeter=[ProviderUnavailable("500")] * 2))
    h.service.live = channel = RecordingChannel()
    accepted = h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True)
    assert isinstance(accepted, TurnAccepted)
    h.service.give_up(queue.sent[-1], ProviderUnavailable("500"))
    (frame,) = channel.of("applicant-1")
    assert isinstance(frame, ErrorFrame) and frame.error.code == "MODEL_UNAVAILABLE"
    assert (frame.sessionId, frame.seq) == (session, accepted.ids["turnId"])
