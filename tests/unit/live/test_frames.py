"""The frames the WebSocket API sends (docs/api.md#websocket): their JSON, and a ``done`` that never
passes API Gateway's 128 KB message limit."""

from __future__ import annotations

import json

import pytest
from lambda_agents.live import MAX_MESSAGE_BYTES, AcceptedFrame, DeltaFrame, done_frame, encoded, error_frame
from pydantic import ValidationError


def test_a_frame_is_its_json_with_its_type_and_its_characters_as_they_are() -> None:
    frame = DeltaFrame(sessionId="s1", seq=2, offset=0, text="工程を")
    assert json.loads(encoded(frame)) == {"type": "delta", "sessionId": "s1", "seq": 2, "offset": 0, "text": "工程を"}
    assert "工程を".encode() in encoded(frame)


def test_an_accepted_frame_names_the_message_it_answers_and_where_its_answer_is() -> None:
    frame = AcceptedFrame(clientMessageId="m-1", sessionId="s1", to="interview", seq="1700000000000-abcd0123")
    assert json.loads(encoded(frame))["seq"] == "1700000000000-abcd0123"
    with pytest.raises(ValidationError):
        AcceptedFrame(clientMessageId="m-1", sessionId="s1", to="judge", seq=1)  # type: ignore[arg-type]


def test_done_carries_the_rest_answer_without_the_sessions_history() -> None:
    answer = {"aiResponse": {"content": "答え", "fallback": False}, "conversation": [{}], "usage": {"tokens": 9}}
    body = json.loads(encoded(done_frame("s1", 2, answer)))
    assert body == {
        "type": "done",
        "sessionId": "s1",
        "seq": 2,
        "truncatedText": False,
        "aiResponse": {"content": "答え", "fallback": False},
        "usage": {"tokens": 9},
    }


def test_a_done_past_128_kb_carries_its_longest_text_cut_to_fit_and_says_so() -> None:
    content = "長" * 60_000  # 180,000 bytes of UTF-8
    answer = {"aiResponse": {"content": content, "templateDraft": {"ok": True}}, "usage": {"tokens": 1}}
    data = encoded(done_frame("s1", 2, answer))
    body = json.loads(data)
    assert len(data) <= MAX_MESSAGE_BYTES and body["truncatedText"] is True
    assert content.startswith(body["aiResponse"]["content"]) and len(body["aiResponse"]["content"]) > 40_000
    assert body["aiResponse"]["templateDraft"] == {"ok": True} and body["usage"] == {"tokens": 1}


def test_a_done_whose_text_escapes_past_the_limit_still_fits() -> None:
    answer = {"reply": '"' * 200_000}  # each quote is two characters of JSON
    data = encoded(done_frame("s1", "t", answer))
    assert len(data) <= MAX_MESSAGE_BYTES and json.loads(data)["truncatedText"] is True


def test_an_error_frame_has_the_apis_error_shape() -> None:
    frame = error_frame("SESSION_NOT_FOUND", "no session", session_id="s1", client_message_id="m-1")
    assert json.loads(encoded(frame)) == {
        "type": "error",
        "sessionId": "s1",
        "clientMessageId": "m-1",
        "error": {"code": "SESSION_NOT_FOUND", "message": "no session"},
    }
