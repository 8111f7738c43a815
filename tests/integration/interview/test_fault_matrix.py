"""The interview's fault matrix: every fault class of the fake server, DynamoDB throttling and a refused
transaction, a Lambda deadline close at hand. Each cell asserts the answer (a clear error or a
graceful reply) and that what is stored is complete: a turn is written whole or not at all, and
the session's version moves only when a turn was stored."""

from __future__ import annotations

from typing import Any

import pytest
from lambda_agents.interview.agents.loop import AGENT_MAX_TOKENS, AGENT_TOKEN_CEILING
from lambda_agents.storage.run_steps import DynamoRunStepRecorder

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply, Slow
from devtools.fake_openai.interview_replies import GREETING, asked, settings_and_plan, tool
from tests.support.dynamo_faults import THROTTLED, TRANSACTION_CANCELLED, dynamo_fault

from .conftest import (
    assert_nothing_written,
    create,
    get_interview,
    interview_app,
    no_waits,
    post_message,
    use_fake_openai,
)

pytestmark = pytest.mark.integration

ASK, CHECK = asked(GREETING)  # the greeting, and the QuickCheck every greeting passes first


@pytest.fixture
def session(aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> str:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    return str(create().body["sessionId"])


def messages(session_id: str) -> list[str]:
    return [message["content"] for message in get_interview(session_id).body["messages"]]


def test_429_with_retry_after_then_an_answer_waits_as_told_and_the_turn_is_stored(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    waits = no_waits()
    fake_openai.enqueue(Fault(status=429, retry_after=3), ASK, CHECK)
    answer = post_message(session, "こんにちは")
    assert (answer.status, answer.body["reply"]) == (200, GREETING)
    assert waits == [3.0]
    assert messages(session) == ["こんにちは", GREETING]


def test_429_until_the_retries_are_spent_is_a_503_with_the_providers_retry_after_and_nothing_written(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    no_waits()
    fake_openai.enqueue(*[Fault(status=429, retry_after=7)] * 3)
    answer = post_message(session, "こんにちは")
    assert (answer.status, answer.body["error"]["code"], answer.headers["Retry-After"]) == (
        503,
        "MODEL_UNAVAILABLE",
        "7",
    )
    assert_nothing_written(aws, session)


def test_a_500_is_retried_and_three_are_a_503_with_nothing_written(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    no_waits()
    fake_openai.enqueue(Fault(status=500), ASK, CHECK)
    assert post_message(session, "こんにちは").status == 200
    fake_openai.enqueue(*[Fault(status=500)] * 3)
    answer = post_message(session, "もしもし")
    assert (answer.status, answer.body["error"]["code"]) == (503, "MODEL_UNAVAILABLE")
    assert_nothing_written(aws, session, version=2)  # the consent and the first turn


def test_a_provider_that_times_out_every_attempt_is_a_503_with_nothing_written(
    session: str, fake_openai: FakeOpenAIServer, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS", "0.2")  # read when the ports are built
    no_waits()
    fake_openai.enqueue(*[Slow(0.4, ASK)] * 3)
    answer = post_message(session, "こんにちは")
    assert (answer.status, answer.body["error"]["code"]) == (503, "MODEL_UNAVAILABLE")
    assert "timeout" in answer.body["error"]["message"]
    assert_nothing_written(aws, session)


@pytest.mark.parametrize(
    "declined",
    [Reply(refusal="I can't help with that."), Reply(content="", finish_reason="content_filter")],
    ids=["refusal", "content_filter"],
)
def test_a_refusal_or_a_content_filter_stop_is_a_graceful_reply_stored_with_the_turn(
    session: str, fake_openai: FakeOpenAIServer, aws: Any, declined: Reply
) -> None:
    fake_openai.enqueue(declined)
    answer = post_message(session, "こんにちは")
    assert (answer.status, answer.body["replyKind"], answer.body["awaitingUserResponse"]) == (200, "declined", True)
    assert messages(session) == ["こんにちは", answer.body["reply"]]
    assert answer.body["reply"].startswith("申し訳ありません")


def test_a_truncated_agent_answer_is_asked_again_once_with_a_larger_budget_and_the_same_prompt(
    session: str, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(Reply(content="こんにちは！ご応募", finish_reason="length"), ASK, CHECK)
    answer = post_message(session, "こんにちは")
    assert answer.body["reply"] == GREETING
    first, retry = fake_openai.requests[:2]
    assert first["messages"] == retry["messages"]
    assert (first["max_completion_tokens"], retry["max_completion_tokens"]) == (AGENT_MAX_TOKENS, AGENT_TOKEN_CEILING)


def test_an_agent_answer_truncated_at_the_ceiling_ends_the_turn_gracefully_after_two_calls(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    fake_openai.enqueue(*(Reply(content="こんにちは！ご応募", finish_reason="length") for _ in range(2)))
    answer = post_message(session, "こんにちは")
    assert (answer.status, answer.body["replyKind"]) == (200, "retry")
    assert len(fake_openai.requests) == 2


def test_a_sub_agent_truncated_twice_is_an_error_result_the_interviewer_recovers_from(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    question = "これまでのご経験を教えてください。"
    plan = [
        {"field_id": "experience", "label": "", "intent": "", "required": True},
        {"field_id": "motivation", "label": "", "intent": "", "required": True},
    ]
    fake_openai.enqueue(
        *settings_and_plan(plan, country="JP"),
        tool("ask", message=question),
        Reply(content='{"passed": tr', finish_reason="length"),
        Reply(content='{"passed": true, "viol', finish_reason="length"),
        *asked(question),
    )
    answer = post_message(session, "日本語で。日本に住んでいます。")
    assert (answer.status, answer.body["reply"]) == (200, question)
    # No complete value to estimate from: the ceiling once (600 -> 1200), then a stop, not a third call.
    assert [request.get("max_completion_tokens") for request in fake_openai.requests[5:7]] == [600, 1200]
    steps = DynamoRunStepRecorder("InterviewsTable").for_session(session)
    first_check = next(step for step in steps if step["toolName"] == "ask")
    assert first_check["output"]["status"] == "error" and "(length)" in first_check["output"]["result"]["message"]


def test_a_request_the_provider_rejects_is_a_502_with_nothing_written(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    fake_openai.enqueue(Fault(status=400, message="Invalid schema for function 'subtask'"))
    answer = post_message(session, "こんにちは")
    assert (answer.status, answer.body["error"]["code"]) == (502, "MODEL_ERROR")
    assert_nothing_written(aws, session)


def test_dynamodb_throttling_the_turns_write_is_a_503_the_turn_is_not_half_written_and_the_run_steps_stay(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    fake_openai.enqueue(ASK, CHECK)
    with dynamo_fault("TransactWriteItems", THROTTLED) as fault:
        answer = post_message(session, "こんにちは", key="k-1")
    assert fault.fired == 1
    assert (answer.status, answer.body["error"]["code"]) == (503, "STORAGE_BUSY")
    assert int(answer.headers["Retry-After"]) >= 1
    assert_nothing_written(aws, session)
    steps = DynamoRunStepRecorder("InterviewsTable").for_session(session)
    assert [(step["toolName"], step["status"]) for step in steps] == [("ask", "finished")]  # what ran is on record

    fake_openai.enqueue(ASK, CHECK)
    retried = post_message(session, "こんにちは", key="k-1")  # the failure was not cached: it runs again
    assert retried.status == 200 and messages(session) == ["こんにちは", GREETING]


def test_a_refused_transaction_is_a_409_and_nothing_of_the_turn_is_written(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    fake_openai.enqueue(ASK, CHECK)
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=["ConditionalCheckFailed", "None"]):
        answer = post_message(session, "こんにちは")
    assert (answer.status, answer.body["error"]["code"]) == (409, "VERSION_CONFLICT")
    assert_nothing_written(aws, session)


def test_a_run_step_that_cannot_be_recorded_stops_the_turn_before_the_tool_runs(
    session: str, fake_openai: FakeOpenAIServer, aws: Any
) -> None:
    fake_openai.enqueue(ASK)
    with dynamo_fault("PutItem", THROTTLED, times=1):
        answer = post_message(session, "こんにちは")
    assert (answer.status, answer.body["error"]["code"]) == (503, "STORAGE_BUSY")
    assert DynamoRunStepRecorder("InterviewsTable").for_session(session) == []
    assert_nothing_written(aws, session)


def test_a_throttled_read_of_the_interview_is_a_503(session: str, aws: Any) -> None:
    with dynamo_fault("Query", THROTTLED):
        answer = get_interview(session)
    assert (answer.status, answer.body["error"]["code"]) == (503, "STORAGE_BUSY")


def test_a_lambda_deadline_close_at_hand_is_a_503_before_any_model_call_with_nothing_written(
    session: str, fake_openai: FakeOpenAIServer, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_TOKENS_PER_SECOND", "60")  # a real model's pace: an agent call takes seconds
    interview_app.dependencies.reset()
    answer = post_message(session, "こんにちは", timeout_s=4)  # 4 s left, 3 s kept to store: 1 s is too little
    assert (answer.status, answer.body["error"]["code"]) == (503, "MODEL_UNAVAILABLE")
    assert int(answer.headers["Retry-After"]) >= 1
    assert fake_openai.requests == []
    assert_nothing_written(aws, session)
