"""Fault cells for ChatFunction: every fault class of the fake server, DynamoDB throttling
and refused conditions at each write, and a Lambda deadline close at hand. Each cell asserts the
answer the client gets and that what is stored is complete: the user's message, and the answer or
its fallback, or nothing at all; never half a turn written by one transaction."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from lambda_agents.chat import offline
from lambda_agents.chat.conversation import PURPOSE
from lambda_agents.llm.offline_model import OfflineModel
from lambda_agents.llm.types import ChatRequest

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply, Slow
from tests.support.dynamo_faults import CONDITION_FAILED, THROTTLED, TRANSACTION_CANCELLED, dynamo_fault

from .chat_api import chat_app, items, send, start_session, use_fake_openai

pytestmark = pytest.mark.integration

DRAFT = {
    "schema": "ai_chat_process_template.v1",
    "answer": "案です。",
    "missing_information": None,
    "process_template_draft": {
        "name": "案",
        "stepTemplates": [
            {"seq": 1, "name": "開始", "basis": "goal", "offsetDays": -3, "requiredArtifacts": None, "dependsOn": []}
        ],
    },
}
GOOD = "工程案です。\n```json\n" + json.dumps(DRAFT, ensure_ascii=False) + "\n```"


def stored_kinds(aws: Any) -> list[tuple[str, str]]:
    return [(m["role"], m["kind"]) for m in items(aws, "ChatTable", "MSG#")]


@pytest.fixture(autouse=True)
def no_write_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lambda_agents.storage.chat.ANSWER_WRITE_BACKOFF_S", (0.0, 0.0))


# -- the model's faults, through the real openai client -------------------------------------------

MODEL_CELLS: list[tuple[str, list[Any], dict[str, Any]]] = [
    (
        "429 with Retry-After, twice",
        [Fault(429, retry_after=0.05)] * 2,
        {"kind": "fallback", "errorCode": "RateLimited"},
    ),
    ("500, twice", [Fault(500)] * 2, {"kind": "fallback", "errorCode": "OpenAIUnavailable"}),
    ("500 then an answer", [Fault(500), Reply(content=GOOD)], {"kind": "answer", "draft": True}),
    ("timeout, twice", [Slow(3.0, Reply(content=GOOD))] * 2, {"kind": "fallback", "errorCode": "Timeout"}),
    ("refusal", [Reply(content=None, refusal="I can't help with that.")], {"kind": "refusal"}),
    ("content_filter", [Reply(content="途中", finish_reason="content_filter")], {"kind": "content_filter"}),
    ("length", [Reply(content=GOOD[:60], finish_reason="length")], {"kind": "answer", "draft": False, "cut": True}),
    ("invalid fence", [Reply(content="案です。\n```json\n{'schema': 1}\n```")], {"kind": "answer", "draft": False}),
    (
        "400 from the provider",
        [Fault(400, message="bad request")],
        {"kind": "fallback", "errorCode": "OpenAIUnavailable"},
    ),
]


@pytest.mark.parametrize(("cell", "steps", "expected"), MODEL_CELLS, ids=[c[0] for c in MODEL_CELLS])
def test_model_fault_cell(
    cell: str,
    steps: list[Any],
    expected: dict[str, Any],
    aws: Any,
    fake_openai: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 1 s: a timeout cell's 3 s stall passes it; a loaded machine's slow answer of another cell does not
    use_fake_openai(monkeypatch, fake_openai.base_url, timeout_s=1.0)
    fake_openai.enqueue(*steps)
    answer = send(start_session(), "お願いします")
    assert answer.status == 200, answer.body
    ai = answer.body["aiResponse"]
    assert ai["kind"] == expected["kind"]
    assert ai["errorCode"] == expected.get("errorCode")
    assert ai["truncated"] is expected.get("cut", False)
    if "draft" in expected:
        assert ai["templateDraft"]["ok"] is expected["draft"]
    if not expected.get("draft"):
        assert "```json" not in ai["content"]
    assert stored_kinds(aws) == [("user", "message"), ("assistant", expected["kind"])]
    assert len(items(aws, "ChatTable", "AUDIT#")) == 1
    assert len(items(aws, "ChatTable", "DRAFT#")) == int(bool(expected.get("draft")))


def test_a_deadline_close_at_hand_stores_the_fallback_without_calling_the_model(
    aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("OPENAI_TOKENS_PER_SECOND", "60")  # a real model's pace: 1,200 tokens take 20 s
    answer = send(start_session(), "急ぎです", lambda_timeout_s=4)  # 4 s - 3 s margin < one attempt
    assert answer.status == 200 and answer.body["aiResponse"]["errorCode"] == "Timeout"
    assert fake_openai.requests == []
    assert stored_kinds(aws) == [("user", "message"), ("assistant", "fallback")]
    (audit,) = items(aws, "ChatTable", "AUDIT#")
    assert audit["errorType"] == "deadline"


# -- DynamoDB faults (offline model) --------------------------------------------------------------


def test_throttled_session_read_answers_503_and_stores_nothing(aws: Any) -> None:
    session_id = start_session()
    with dynamo_fault("GetItem", THROTTLED):
        answer = send(session_id, "hi")
    assert answer.status == 503 and answer.headers["Retry-After"] == "1"
    assert stored_kinds(aws) == []


def test_throttled_rate_limit_counter_answers_503_and_stores_nothing(aws: Any) -> None:
    session_id = start_session()
    with dynamo_fault("PutItem", THROTTLED):
        assert send(session_id, "hi").status == 503
    assert stored_kinds(aws) == []


def test_throttled_user_message_write_answers_503_without_a_model_call(aws: Any) -> None:
    session_id = start_session()
    calls: list[ChatRequest] = []
    chat_app.dependencies.rebuild(model=OfflineModel({PURPOSE: lambda r: calls.append(r) or "x"}))
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=["ThrottlingError"]):
        assert send(session_id, "hi").status == 503
    assert stored_kinds(aws) == [] and calls == []


def test_a_refused_condition_on_the_user_message_is_retried_on_the_new_count(aws: Any) -> None:
    session_id = start_session()
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, times=1, reasons=["ConditionalCheckFailed"]) as f:
        answer = send(session_id, "hi")
    assert answer.status == 200 and f.fired == 1
    assert stored_kinds(aws) == [("user", "message"), ("assistant", "answer")]


def test_a_session_that_keeps_changing_answers_409_and_stores_nothing(aws: Any) -> None:
    session_id = start_session()
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=["ConditionalCheckFailed"]):
        answer = send(session_id, "hi")
    assert answer.status == 409 and answer.body["error"]["code"] == "CONCURRENT_UPDATE"
    assert stored_kinds(aws) == []


@contextlib.contextmanager
def armed_during_the_model_call(monkeypatch: pytest.MonkeyPatch, **fault: Any) -> Iterator[list[Any]]:
    """Arm a TransactWriteItems fault while the model answers: it hits the answer's write only."""
    armed: list[Any] = []
    stack = contextlib.ExitStack()

    def responder(request: ChatRequest) -> str:
        armed.append(stack.enter_context(dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, **fault)))
        return offline.chat_answer(request)

    chat_app.dependencies.rebuild(model=OfflineModel({PURPOSE: responder}))
    with stack:
        yield armed
    chat_app.dependencies.reset()


def test_a_throttled_answer_write_is_retried_and_the_turn_is_complete(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = start_session()
    with armed_during_the_model_call(monkeypatch, times=2, reasons=["ThrottlingError"]) as armed:
        answer = send(session_id, "hi")
    assert answer.status == 200 and armed[0].fired == 2
    assert stored_kinds(aws) == [("user", "message"), ("assistant", "answer")]
    assert len(items(aws, "ChatTable", "AUDIT#")) == 1 and len(items(aws, "ChatTable", "DRAFT#")) == 1


def test_an_answer_write_throttled_throughout_answers_503_with_the_user_message_kept_and_no_half_turn(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = start_session()
    with armed_during_the_model_call(monkeypatch, reasons=["ThrottlingError"]):
        answer = send(session_id, "hi")
    assert answer.status == 503
    assert stored_kinds(aws) == [("user", "message")]
    assert items(aws, "ChatTable", "AUDIT#") == [] and items(aws, "ChatTable", "DRAFT#") == []
    again = send(session_id, "もう一度")  # the session goes on after the outage
    assert again.status == 200 and [m["seq"] for m in again.body["conversation"]] == [1, 3, 4]


def test_a_refused_condition_on_the_answer_write_answers_409(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    session_id = start_session()
    with armed_during_the_model_call(monkeypatch, reasons=["ConditionalCheckFailed"]):
        assert send(session_id, "hi").status == 409
    assert stored_kinds(aws) == [("user", "message")] and items(aws, "ChatTable", "AUDIT#") == []


def test_a_throttled_plain_put_of_a_new_session_answers_503(aws: Any) -> None:
    from .chat_api import chat

    with dynamo_fault("PutItem", THROTTLED):
        assert chat("POST", "/ai-agent/sessions", {}).status == 503
    with dynamo_fault("PutItem", CONDITION_FAILED, times=1):
        assert chat("POST", "/ai-agent/sessions", {}).status == 409
    assert items(aws, "ChatTable") == []


@pytest.mark.parametrize(
    "outage",
    [[Fault(500)] * 2, [Fault(429, retry_after=0.05)] * 2, [Slow(3.0, Reply(content=GOOD))] * 2],
    ids=["500", "429", "timeout"],
)
def test_given_a_fallback_under_an_idempotency_key_when_the_provider_recovers_then_the_retry_gets_a_real_answer(
    outage: list[Any], aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1 s: a timeout cell's 3 s stall passes it; a loaded machine's slow answer of another cell does not
    use_fake_openai(monkeypatch, fake_openai.base_url, timeout_s=1.0)
    session_id = start_session()
    key = {"Idempotency-Key": "retry-after-outage"}
    fake_openai.enqueue(*outage)
    first = send(session_id, "採用の段取りを作りたい", headers=key)
    assert first.status == 200 and first.body["aiResponse"]["fallback"] is True
    assert stored_kinds(aws) == [("user", "message"), ("assistant", "fallback")]  # the turn as answered

    fake_openai.enqueue(Reply(content=GOOD))
    again = send(session_id, "採用の段取りを作りたい", headers=key)
    assert again.status == 200 and again.body["aiResponse"]["fallback"] is False
    assert again.body["aiResponse"]["templateDraft"]["ok"] is True
    # Every stored message is a whole pair: the fallback turn as it was answered, then the new turn.
    assert stored_kinds(aws) == [
        ("user", "message"),
        ("assistant", "fallback"),
        ("user", "message"),
        ("assistant", "answer"),
    ]
    replayed = send(session_id, "採用の段取りを作りたい", headers=key)  # a real answer is kept
    assert replayed.body == again.body and len(stored_kinds(aws)) == 4
