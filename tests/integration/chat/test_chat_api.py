"""ChatFunction over API Gateway events on moto (offline model, AI_AGENT_MODE=mock): the
``{aiResponse, conversation, usage}`` answer (docs/chat-and-templates.md#one-chat-turn), what is stored and in
which order, ownership, identity, 400s that name the field, and the per-user rate limit."""

from __future__ import annotations

from typing import Any

import pytest

from .chat_api import chat, chat_tables, items, send, start_session

pytestmark = pytest.mark.integration


def test_given_a_session_when_a_message_is_sent_then_the_answer_ends_with_a_valid_fence(aws: Any) -> None:
    session_id = start_session(processType="中途採用", goal="4月1日入社")
    answer = send(session_id, "エンジニア1名の採用の段取りを作りたいです")
    assert answer.status == 200, answer.body
    ai = answer.body["aiResponse"]
    assert ai["role"] == "assistant" and ai["content"].startswith("中途採用について")
    assert ai["content"].rstrip().endswith("```") and "```json\n" in ai["content"]
    assert ai["templateDraft"] == {
        "ok": True,
        "schema": "ai_chat_process_template.v1",
        "errorClass": None,
        "errorCode": None,
        "errors": [],
        "stepCount": 5,
        "missingInformation": ["業種", "地域"],
    }
    assert (ai["fallback"], ai["errorCode"], ai["truncated"]) == (False, None, False)
    assert [(m["seq"], m["role"]) for m in answer.body["conversation"]] == [(1, "user"), (2, "assistant")]
    assert answer.body["usage"]["tokens"] > 0 and answer.body["usage"]["costUsd"] is None  # offline model: no price


def test_given_three_turns_then_messages_keep_their_order_and_each_turn_stores_an_audit_record(aws: Any) -> None:
    session_id = start_session()
    for text in ("一つ目", "二つ目", "三つ目"):
        assert send(session_id, text).status == 200
    stored = items(aws, "ChatTable", "MSG#")
    assert [(int(m["seq"]), m["role"]) for m in stored] == [
        (1, "user"),
        (2, "assistant"),
        (3, "user"),
        (4, "assistant"),
        (5, "user"),
        (6, "assistant"),
    ]
    assert [m["content"] for m in stored if m["role"] == "user"] == ["一つ目", "二つ目", "三つ目"]
    assert [int(m["replyTo"]) for m in stored if m["role"] == "assistant"] == [1, 3, 5]
    assert len(items(aws, "ChatTable", "DRAFT#")) == 3
    audits = items(aws, "ChatTable", "AUDIT#")
    assert [a["outcome"] for a in audits] == ["answer"] * 3
    assert all("content" not in a and "一つ目" not in repr(a) for a in audits)
    assert all(int(i["expiresAt"]) > 0 for i in items(aws, "ChatTable"))


def test_given_another_users_session_then_it_answers_404_and_stores_nothing(aws: Any) -> None:
    session_id = start_session(user="owner")
    answer = send(session_id, "覗き見", user="intruder")
    assert answer.status == 404 and answer.body["error"]["code"] == "SESSION_NOT_FOUND"
    assert items(aws, "ChatTable", "MSG#") == []
    assert send("0" * 32, "hi").status == 404


def test_given_no_identity_then_401_and_nothing_is_stored(aws: Any) -> None:
    session_id = start_session()
    assert chat("POST", "/ai-agent/sessions", {}, user=None).status == 401
    answer = send(session_id, "hello", user=None)
    assert answer.status == 401 and answer.body["error"]["code"] == "UNAUTHORIZED"
    assert items(aws, "ChatTable", "MSG#") == []


def test_an_identity_header_is_not_an_identity(aws: Any) -> None:
    from functions.chat import app as chat_app
    from tests.integration.chat.chat_api import api_event, context

    event = api_event("POST", "/ai-agent/sessions", {}, user=None)
    event["headers"]["X-Local-User"] = "user-1"
    assert chat_app.lambda_handler(event, context())["statusCode"] == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"message": ""}, "body.message"),
        ({"message": "   "}, "body.message"),
        ({"message": "あ" * 4001}, "body.message"),
        ({"message": 42}, "body.message"),
        ({}, "body.message"),
        ({"message": "hi", "userId": "someone"}, "body.userId"),
    ],
)
def test_given_a_bad_message_body_then_400_names_the_field(aws: Any, body: dict[str, Any], field: str) -> None:
    session_id = start_session()
    answer = chat("POST", f"/ai-agent/sessions/{session_id}/messages", body)
    assert answer.status == 400 and answer.body["error"]["code"] == "VALIDATION_ERROR"
    assert field in answer.body["error"]["message"]
    assert items(aws, "ChatTable", "MSG#") == []


def test_given_a_malformed_session_id_or_context_then_400_names_it(aws: Any) -> None:
    answer = send("bad id!", "hi")
    assert answer.status == 400 and "path.sessionId" in answer.body["error"]["message"]
    answer = chat("POST", "/ai-agent/sessions", {"context": {"goal": "x" * 201}})
    assert answer.status == 400 and "body.context.goal" in answer.body["error"]["message"]
    answer = chat("POST", "/ai-agent/sessions", raw_body="{not json")
    assert answer.status == 400


@pytest.mark.parametrize("raw", ['[{"message": "hi"}]', "[null, null]", "[]"])
def test_given_an_array_body_then_400_even_when_its_first_element_would_validate(aws: Any, raw: str) -> None:
    session_id = start_session()
    for path in ("/ai-agent/sessions", f"/ai-agent/sessions/{session_id}/messages"):
        answer = chat("POST", path, raw_body=raw)
        assert answer.status == 400 and "body" in answer.body["error"]["message"]
    assert items(aws, "ChatTable", "MSG#") == []


def test_given_a_lone_surrogate_in_the_message_then_400_not_a_failed_write(aws: Any) -> None:
    session_id = start_session()
    answer = chat("POST", f"/ai-agent/sessions/{session_id}/messages", raw_body='{"message": "\\ud800"}')
    assert answer.status == 400 and "body.message" in answer.body["error"]["message"]


def test_given_the_per_user_limit_is_reached_then_429_with_retry_after_and_nothing_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with chat_tables(monkeypatch) as client:
        monkeypatch.setenv("CHAT_RATE_LIMIT_PER_WINDOW", "2")
        monkeypatch.setenv("CHAT_RATE_LIMIT_WINDOW_SECONDS", "3600")
        session_id = start_session()
        assert [send(session_id, f"m{i}").status for i in range(2)] == [200, 200]
        limited = send(session_id, "three")
        assert limited.status == 429 and limited.body["error"]["code"] == "RATE_LIMITED"
        assert 1 <= int(limited.headers["Retry-After"]) <= 3600
        assert len(items(client, "ChatTable", "MSG#")) == 4
        other = start_session(user="user-2")
        assert send(other, "別のユーザー", user="user-2").status == 200  # the limit is per user


def test_given_a_salt_then_audit_records_carry_the_exchange_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    with chat_tables(monkeypatch) as client:
        monkeypatch.setenv("AI_AUDIT_SALT", "local-salt")
        session_id = start_session()
        send(session_id, "ハッシュの確認")
        (audit,) = items(client, "ChatTable", "AUDIT#")
        assert len(audit["exchangeHash"]) == 64 and audit["hashAlgorithm"] == "sha256"


def test_a_session_can_start_without_a_body_or_context(aws: Any) -> None:
    answer = chat("POST", "/ai-agent/sessions")
    assert answer.status == 201 and set(answer.body["context"].values()) == {None}
    assert send(answer.body["sessionId"], "何から始めればいいですか").body["aiResponse"]["templateDraft"]["ok"]


def test_a_session_keeps_its_context(aws: Any) -> None:
    answer = chat("POST", "/ai-agent/sessions", {"context": {"industry": "製造業", "processType": "年次監査"}})
    assert answer.status == 201
    assert answer.body["context"]["industry"] == "製造業" and answer.body["context"]["region"] is None
    reply = send(answer.body["sessionId"], "お願いします")
    assert "資料の収集" in reply.body["aiResponse"]["content"]


def test_given_an_idempotency_key_when_the_message_is_retried_then_the_first_answer_returns_without_a_new_turn(
    aws: Any,
) -> None:
    session_id = start_session()
    key = {"Idempotency-Key": "client-retry-1"}
    first = send(session_id, "採用の段取りを作りたい", headers=key)
    again = send(session_id, "採用の段取りを作りたい", headers=key)
    assert first.status == again.status == 200
    assert again.body == first.body
    assert len(items(aws, "ChatTable", "MSG#")) == 2  # one user message and one answer, not two pairs


def test_given_an_idempotency_key_reused_with_another_message_then_409_and_nothing_is_stored(aws: Any) -> None:
    session_id = start_session()
    assert send(session_id, "一つ目", headers={"Idempotency-Key": "k-1"}).status == 200
    reused = send(session_id, "別の質問", headers={"Idempotency-Key": "k-1"})
    assert reused.status == 409 and reused.body["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert len(items(aws, "ChatTable", "MSG#")) == 2


def test_given_a_failed_request_with_a_key_then_the_key_is_released_for_the_retry(aws: Any) -> None:
    from tests.support.dynamo_faults import TRANSACTION_CANCELLED, dynamo_fault

    session_id = start_session()
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=["ThrottlingError"]):
        busy = send(session_id, "まだない", headers={"Idempotency-Key": "k-2"})
    assert busy.status == 503 and items(aws, "ChatTable", "MSG#") == []
    assert send(session_id, "まだない", headers={"Idempotency-Key": "k-2"}).status == 200
    assert len(items(aws, "ChatTable", "MSG#")) == 2


def test_given_a_malformed_idempotency_key_then_400_names_the_header(aws: Any) -> None:
    session_id = start_session()
    answer = send(session_id, "こんにちは", headers={"Idempotency-Key": "has space"})
    assert answer.status == 400 and "idempotency-key" in answer.body["error"]["message"].lower()
