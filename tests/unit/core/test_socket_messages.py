"""What the WebSocket API's sendMessage takes and answers (docs/api.md#websocket): the REST bodies'
fields and limits, the caller from the authorizer only, and the REST routes' error codes as frames."""

from __future__ import annotations

import json
from typing import Any

import pytest
from lambda_agents.api.errors import Unauthorized
from lambda_agents.api.identity import SocketCaller, socket_caller
from lambda_agents.api.socket_messages import (
    MessageRefused,
    accepted_frame,
    read_message,
    refusal_frame,
    route_answer,
)
from lambda_agents.chat.records import SessionNotFound
from lambda_agents.storage.dynamodb import StorageThrottled

CHAT = "a" * 32


def event(body: Any, route: str = "sendMessage", **authorizer: str) -> dict[str, Any]:
    text = body if isinstance(body, str) else json.dumps(body)
    return {"requestContext": {"routeKey": route, "authorizer": authorizer}, "body": text}


def message(**fields: Any) -> dict[str, Any]:
    return {
        "action": "sendMessage",
        "to": "chat",
        "sessionId": CHAT,
        "message": "こんにちは",
        "clientMessageId": "m-1",
        **fields,
    }


def refused(body: Any, route: str = "sendMessage") -> dict[str, Any]:
    with pytest.raises(MessageRefused) as refusal:
        read_message(event(body, route))
    return refusal.value.frame.model_dump(exclude_none=True)


def test_a_chat_message_and_an_interview_answer_are_read_by_their_to() -> None:
    chat = read_message(event(message()))
    answer = {key: value for key, value in message(to="interview", text="はい").items() if key != "message"}
    interview = read_message(event(answer))
    assert chat.to == "chat" and chat.message == "こんにちは"
    assert interview.to == "interview" and interview.text == "はい"


def test_a_message_takes_the_rest_bodys_limits_and_names_the_field() -> None:
    too_long = refused(message(message="x" * 4001))
    assert too_long["error"]["code"] == "VALIDATION_ERROR" and too_long["clientMessageId"] == "m-1"
    assert "message" in too_long["error"]["message"]
    assert refused(message(clientMessageId="has space"))["error"]["code"] == "VALIDATION_ERROR"
    assert refused(message(unknown=1))["error"]["code"] == "VALIDATION_ERROR"


def test_another_action_or_a_message_that_is_not_json_is_answered_with_the_one_action() -> None:
    assert refused("not json", "$default")["error"]["code"] == "UNKNOWN_ACTION"
    assert refused({"action": "subscribe"}, "$default")["error"]["code"] == "UNKNOWN_ACTION"


def test_the_caller_is_the_authorizers_principal_never_a_field_of_the_message() -> None:
    caller = socket_caller(event(message(userId="mallory"), principalId="alice", zoneinfo="Asia/Tokyo"))
    assert caller == SocketCaller("alice")  # a claim the user may rewrite (zoneinfo) is not read
    with pytest.raises(Unauthorized):
        socket_caller(event(message()))


def test_refusals_carry_the_rest_routes_codes() -> None:
    chat = read_message(event(message()))
    not_found = refusal_frame(SessionNotFound(CHAT), chat).model_dump()
    busy = refusal_frame(StorageThrottled("throttled"), chat).model_dump()
    unexpected = refusal_frame(RuntimeError("secret detail"), chat).model_dump()
    assert not_found["error"]["code"] == "SESSION_NOT_FOUND" and not_found["sessionId"] == CHAT
    assert busy["error"]["code"] == "STORAGE_BUSY"
    assert unexpected["error"] == {"code": "INTERNAL_ERROR", "message": "internal error", "details": None}


def test_an_accepted_turn_answers_accepted_with_the_seq_its_rest_read_takes() -> None:
    chat = read_message(event(message()))
    frame = accepted_frame(chat, {"status": "pending", "sessionId": CHAT, "answerSeq": 4})
    assert json.loads(route_answer(frame)["body"]) == {
        "type": "accepted",
        "clientMessageId": "m-1",
        "sessionId": CHAT,
        "to": "chat",
        "seq": 4,
    }


def test_a_message_answered_at_once_with_the_fallback_answers_accepted_its_done_only_pushed() -> None:
    """The queue refused the turn: the fallback answer was stored and its ``done`` pushed to every
    connection of the user, the sender's included; the route's answer is not a second ``done``."""
    chat = read_message(event(message()))
    fallback = {"aiResponse": {"seq": 6, "content": "しばらくしてから", "fallback": True}, "usage": {"tokens": 0}}
    frame = json.loads(route_answer(accepted_frame(chat, fallback))["body"])
    assert frame == {"type": "accepted", "clientMessageId": "m-1", "sessionId": CHAT, "to": "chat", "seq": 6}
