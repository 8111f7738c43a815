"""An interview turn answers within API Gateway's 29 s, counted from when API Gateway received the
request, not from the Lambda's longer timeout: a request with no time left for a model call is a
503 with nothing written (the client may send it again), never a turn stored after a 504."""

from __future__ import annotations

import time
from typing import Any

import pytest

from devtools.fake_openai import FakeOpenAIServer

from .conftest import api_event as interview_event
from .conftest import assert_nothing_written, create, invoke, use_fake_openai


@pytest.fixture
def session(aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> str:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    return str(create().body["sessionId"])


def message_received(session_id: str, seconds_ago: float) -> dict[str, Any]:
    event = interview_event(
        "POST",
        f"/interviews/{session_id}/messages",
        {"text": "こんにちは"},
        path_parameters={"sessionId": session_id},
        resource="/interviews/{sessionId}/messages",
    )
    event["requestContext"]["requestTimeEpoch"] = int((time.time() - seconds_ago) * 1000)
    return event


def test_given_a_request_received_27_s_ago_then_it_is_a_503_before_any_model_call_even_with_lambda_time_left(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    answer = invoke(message_received(session, seconds_ago=27), timeout_s=60)
    # The answer every function gives a model that cannot answer in time: retry after the header.
    assert (answer.status, answer.body["error"]["code"]) == (503, "MODEL_UNAVAILABLE")
    assert int(answer.headers["Retry-After"]) >= 1
    assert fake_openai.requests == []
    assert_nothing_written(aws, session)


def test_given_a_fresh_request_then_the_turn_runs_and_is_stored(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    answer = invoke(message_received(session, seconds_ago=0.2), timeout_s=29)
    assert answer.status == 200, answer.body
    assert fake_openai.requests  # the Greeter was asked
