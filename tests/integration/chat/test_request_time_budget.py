"""A chat message answers within API Gateway's 29 s, counted from when API Gateway received the
request: time already spent (a cold start, a queue) is taken from the model's budget, and a request
with no time left for the model is answered with the fallback answer at once, stored whole
(docs/chat-and-templates.md#the-fallback-answer)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from devtools.fake_openai import FakeOpenAIServer, Reply

from .chat_api import api_event, chat_app, context, items, start_session, use_fake_openai


def send_received(session_id: str, seconds_ago: float) -> dict[str, Any]:
    event = api_event("POST", f"/ai-agent/sessions/{session_id}/messages", {"message": "面接の流れを作りたいです"})
    event["requestContext"]["requestTimeEpoch"] = int((time.time() - seconds_ago) * 1000)
    result = chat_app.lambda_handler(event, context(timeout_s=29))
    assert result["statusCode"] == 200, result["body"]
    return dict(json.loads(result["body"]))


def test_given_a_request_received_27_s_ago_then_fallback_d_is_stored_without_a_model_call(
    aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    answer = send_received(start_session(), seconds_ago=27)  # the Lambda itself still has 29 s
    assert (answer["aiResponse"]["fallback"], answer["aiResponse"]["errorCode"]) == (True, "Timeout")
    assert fake_openai.requests == []
    (audit,) = items(aws, "ChatTable", "AUDIT#")
    assert audit["errorType"] == "deadline"


def test_given_a_fresh_request_then_the_model_answers(
    aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    fake_openai.enqueue(Reply(content="承知しました。面接の流れを一緒に考えましょう。"))
    answer = send_received(start_session(), seconds_ago=0.2)
    assert answer["aiResponse"].get("fallback") is not True
    assert len(fake_openai.requests) == 1
