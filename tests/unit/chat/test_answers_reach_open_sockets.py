"""Every chat answer stored for a user reaches that user's open WebSocket connections, whichever
function wrote it (the request, the worker) (docs/api.md#websocket): the model's prose as it is
written, never the JSON fence as it is written, then the rest of the stored text, so the deltas
applied by offset equal the stored content exactly, then one ``done`` carrying what its REST read
answers, without the session's history. A fallback answer comes as ``done`` only, never as words.
In-memory ports, a scripted model that streams pieces, and a recording channel."""

from __future__ import annotations

import itertools
import json

from lambda_agents.answered_later import TurnAccepted
from lambda_agents.chat.answers import FALLBACK_CONTENT
from lambda_agents.chat.replies import ProcessMessageResult
from lambda_agents.live import DeltaFrame, DoneFrame, Frame
from lambda_agents.llm import ChatResponse, Deadline, Usage
from lambda_agents.llm.errors import AnswerCut, ProviderUnavailable

from tests.support.recording_channel import RecordingChannel

from ..llm.scripted_model import Streamed
from .answers import payload
from .test_answers_later import SLOW_HOUR, USER, AnswerQueue, Harness, reply

DRAFT = json.dumps(payload(), ensure_ascii=False)
PIECES = ("工程を", "整理し", "ました。\n", "``", "`json\n", DRAFT[:20], DRAFT[20:], "\n```")


def listened(h: Harness) -> RecordingChannel:
    answering = h.use_case.answering  # the request's and the worker's answering
    answering.live = channel = RecordingChannel()
    ticks = itertools.count(0.0, 1.0)
    answering.live_clock = lambda: next(ticks)  # a second between pieces: every piece is its own delta
    return channel


def joined(frames: list[Frame]) -> str:
    """The words as a client has them: each delta applied at its offset."""
    text = ""
    for frame in frames:
        if isinstance(frame, DeltaFrame):
            text = text[: frame.offset] + frame.text
    return text


def the_done(channel: RecordingChannel, h: Harness) -> DoneFrame:
    *_, frame = channel.of(USER)
    assert isinstance(frame, DoneFrame) and channel.of("someone-else") == []
    assert [f for f in channel.of(USER) if isinstance(f, DoneFrame)] == [frame]
    read = h.use_case.read_answer(USER, h.session.session_id, int(frame.seq))
    assert isinstance(read, ProcessMessageResult)
    rest = read.as_response()
    pushed = frame.model_dump()
    assert pushed["aiResponse"] == rest["aiResponse"] and "conversation" not in pushed  # what GET answers
    return frame


def deltas(channel: RecordingChannel) -> list[tuple[int, str]]:
    return [(frame.offset, frame.text) for frame in channel.of(USER) if isinstance(frame, DeltaFrame)]


def test_an_answers_prose_streams_as_written_and_the_joined_words_equal_the_stored_text() -> None:
    h = Harness(Streamed(PIECES, reply("".join(PIECES))))
    channel = listened(h)
    result = h.send(26.0)
    assert isinstance(result, ProcessMessageResult)
    frame = the_done(channel, h)
    assert (frame.sessionId, frame.seq) == (h.session.session_id, result.assistant.seq)
    *written, (offset, rest) = deltas(channel)
    assert written == [(0, "工程を"), (3, "整理し"), (6, "ました。")]  # the fence held while written
    assert offset == len("工程を整理しました。") and rest.startswith("\n\n```json\n{")  # the canonical fence
    assert joined(channel.of(USER)) == result.assistant.content == frame.model_dump()["aiResponse"]["content"]


def test_a_model_that_does_not_stream_still_ends_with_words_equal_to_the_stored_text() -> None:
    h = Harness(reply())
    channel = listened(h)
    result = h.send(26.0)
    assert isinstance(result, ProcessMessageResult)
    the_done(channel, h)
    assert joined(channel.of(USER)) == result.assistant.content


def test_prose_the_stored_text_rewrites_gets_one_delta_from_the_first_character_that_differs() -> None:
    pieces = ("工程を整理  ", "\n\n\n", "しました。")  # the stored prose drops the spaces and a blank line
    h = Harness(Streamed(pieces, reply("".join(pieces))))
    channel = listened(h)
    result = h.send(26.0)
    assert isinstance(result, ProcessMessageResult) and result.assistant.content == "工程を整理\n\nしました。"
    assert deltas(channel)[-1] == (5, "\n\nしました。")
    assert joined(channel.of(USER)) == result.assistant.content


def test_a_retry_starts_its_words_again_at_offset_0_and_they_end_equal_to_the_stored_text() -> None:
    failed = Streamed(("途中で",), ProviderUnavailable("503"))
    h = Harness(failed, Streamed(PIECES, reply()))
    channel = listened(h)
    result = h.send(60.0)
    assert isinstance(result, ProcessMessageResult) and not result.fallback
    assert deltas(channel)[:2] == [(0, "途中で"), (0, "工程を")]
    assert joined(channel.of(USER)) == result.assistant.content


def test_a_turn_handed_over_after_its_first_words_is_written_again_by_the_worker_from_offset_0() -> None:
    cut = AnswerCut("cut", ChatResponse("工程を", "cut", usage=Usage(900, 3, estimated=True)))
    h = Harness(Streamed(("工程を",), cut), Streamed(PIECES, reply()))
    channel = listened(h)
    assert isinstance(h.send(26.0), TurnAccepted)
    assert channel.of(USER) == [DeltaFrame(sessionId=h.session.session_id, seq=2, offset=0, text="工程を")]
    result = h.worker.run_pending(h.queue.sent[-1], Deadline.after(170.0, h.clock))
    assert result is not None and the_done(channel, h).model_dump()["aiResponse"]["fallback"] is False
    assert deltas(channel)[1] == (0, "工程を") and joined(channel.of(USER)) == result.assistant.content


def test_a_turn_handed_over_pushes_nothing_from_the_request_and_its_answer_from_the_worker() -> None:
    h = Harness(reply())
    channel = listened(h)
    assert isinstance(h.send(26.0, later=True), TurnAccepted) and channel.sent == []
    h.worker.run_pending(h.queue.sent[-1], Deadline.after(170.0, h.clock))
    assert the_done(channel, h).model_dump()["aiResponse"]["fallback"] is False
    assert joined(channel.of(USER)) == "工程を整理しました。"  # its JSON was not a valid draft: not stored


def test_a_fallback_answer_comes_as_done_with_its_flag_never_as_words() -> None:
    h = Harness(speed=SLOW_HOUR, queue=AnswerQueue(broken=True))
    channel = listened(h)
    h.send(26.0)
    pushed = the_done(channel, h).model_dump()["aiResponse"]
    assert pushed["fallback"] is True and pushed["content"] == FALLBACK_CONTENT
    assert deltas(channel) == []


def test_a_fallback_after_words_were_written_adds_no_words_its_done_replaces_them() -> None:
    failing = Streamed(("途中で",), ProviderUnavailable("503"))
    h = Harness(failing, Streamed(("また途中で",), ProviderUnavailable("503")))
    channel = listened(h)
    result = h.send(60.0)
    assert isinstance(result, ProcessMessageResult) and result.fallback
    assert deltas(channel) == [(0, "途中で"), (0, "また途中で")]  # the model's words only
    assert the_done(channel, h).model_dump()["aiResponse"]["content"] == FALLBACK_CONTENT


def test_the_workers_last_delivery_fallback_reaches_the_sockets_too() -> None:
    h = Harness()
    channel = listened(h)
    h.send(26.0, later=True)
    h.worker.give_up(h.queue.sent[-1], RuntimeError("a bug in the worker"))
    assert the_done(channel, h).model_dump()["aiResponse"]["fallback"] is True
