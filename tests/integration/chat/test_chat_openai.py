"""ChatFunction end to end through the real openai client against the fake OpenAI server on
127.0.0.1: success, a parse failure, 429 then fallback, a timeout, and what is sent
(docs/chat-and-templates.md#the-model-call-policy)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply, Slow

from .chat_api import items, send, start_session, use_fake_openai

pytestmark = pytest.mark.integration

SCHEMA = "ai_chat_process_template.v1"
DRAFT = {
    "schema": SCHEMA,
    "answer": "月次決算の工程案です。",
    "missing_information": None,
    "process_template_draft": {
        "name": "月次決算",
        "stepTemplates": [
            {
                "seq": 1,
                "name": "仕訳の締め",
                "basis": "goal",
                "offsetDays": -5,
                "requiredArtifacts": None,
                "dependsOn": [],
            },
            {
                "seq": 2,
                "name": "試算表の作成",
                "basis": "prev",
                "offsetDays": 2,
                "requiredArtifacts": None,
                "dependsOn": [1],
            },
        ],
    },
}
GOOD = f"月次決算の段取りをまとめました。\n\n```json\n{json.dumps(DRAFT, ensure_ascii=False)}\n```"


@pytest.fixture
def openai_chat(aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    return fake_openai


def test_given_a_fenced_answer_then_it_is_returned_with_the_apis_usage_and_a_price(
    openai_chat: FakeOpenAIServer,
) -> None:
    openai_chat.enqueue(Reply(content=GOOD, prompt_tokens=812, completion_tokens=230))
    session_id = start_session(processType="月次決算")
    answer = send(session_id, "月次決算を5営業日で締めたい")
    assert answer.status == 200, answer.body
    assert answer.body["aiResponse"]["templateDraft"]["ok"] is True
    usage = answer.body["usage"]
    assert {key: usage[key] for key in ("tokens", "promptTokens", "completionTokens", "costUsd")} == {
        "tokens": 1042,
        "promptTokens": 812,
        "completionTokens": 230,
        "costUsd": 0.00433,
    }
    account = usage["account"]  # the answer's record, as stored with its audit record
    assert (account["model"], account["billing"], account["attempts"], account["costUsd"]) == (
        "gpt-4o-2024-08-06",
        "standard",
        1,
        0.00433,
    )
    assert len(account["promptVersion"]) == 12
    (sent,) = openai_chat.requests
    assert (sent["temperature"], sent["max_completion_tokens"], sent["model"]) == (0.3, 1200, "gpt-4o-2024-08-06")
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert "- プロセス種別: 月次決算" in sent["messages"][0]["content"]


def test_given_a_second_turn_then_the_first_turn_is_sent_as_history(openai_chat: FakeOpenAIServer) -> None:
    openai_chat.enqueue(Reply(content=GOOD), Reply(content=GOOD))
    session_id = start_session()
    send(session_id, "最初")
    send(session_id, "次")
    roles = [(m["role"], m["content"][:2]) for m in openai_chat.requests[1]["messages"]]
    assert roles[1:] == [("user", "最初"), ("assistant", "月次"), ("user", "次")]


def test_given_broken_json_then_the_prose_is_returned_without_it_and_the_class_is_reported(
    openai_chat: FakeOpenAIServer, aws: Any
) -> None:
    openai_chat.enqueue(Reply(content='工程案です。\n```json\n{"schema": "' + SCHEMA + '", "answer": "案",}\n```'))
    answer = send(start_session(), "お願いします")
    ai = answer.body["aiResponse"]
    assert answer.status == 200 and ai["content"] == "工程案です。"
    assert (ai["templateDraft"]["ok"], ai["templateDraft"]["errorClass"]) == (False, "JsonParseError")
    assert items(aws, "ChatTable", "DRAFT#") == []
    (audit,) = items(aws, "ChatTable", "AUDIT#")
    assert audit["parseErrorClass"] == "JsonParseError" and "schemaId" not in audit  # None is not stored


def test_given_429_twice_then_fallback_d_is_answered_and_both_messages_are_stored(
    openai_chat: FakeOpenAIServer, aws: Any
) -> None:
    openai_chat.enqueue(Fault(status=429, retry_after=0.05), Fault(status=429, retry_after=0.05))
    answer = send(start_session(), "混んでいますか")
    ai = answer.body["aiResponse"]
    assert answer.status == 200 and ai["fallback"] is True and ai["errorCode"] == "RateLimited"
    assert "```" not in ai["content"] and answer.body["usage"]["tokens"] == 0
    assert [(m["role"], m["kind"]) for m in items(aws, "ChatTable", "MSG#")] == [
        ("user", "message"),
        ("assistant", "fallback"),
    ]
    (audit,) = items(aws, "ChatTable", "AUDIT#")
    assert (audit["errorType"], int(audit["retryCount"])) == ("rate_limit", 1) and int(audit["durationMs"]) >= 0
    assert len(openai_chat.requests) == 2


def test_given_429_then_an_answer_then_the_one_retry_succeeds(openai_chat: FakeOpenAIServer) -> None:
    openai_chat.enqueue(Fault(status=429, retry_after=0.05), Reply(content=GOOD))
    answer = send(start_session(), "どうぞ")
    assert answer.body["aiResponse"]["fallback"] is False and answer.body["aiResponse"]["templateDraft"]["ok"]


def test_given_a_timeout_on_both_attempts_then_the_timeout_fallback_is_stored(
    aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_openai(monkeypatch, fake_openai.base_url, timeout_s=0.2)
    fake_openai.enqueue(Slow(0.5, Reply(content=GOOD)), Slow(0.5, Reply(content=GOOD)))
    answer = send(start_session(), "遅いですか")
    assert answer.body["aiResponse"]["fallback"] is True and answer.body["aiResponse"]["errorCode"] == "Timeout"
    (audit,) = items(aws, "ChatTable", "AUDIT#")
    assert (audit["errorType"], int(audit["retryCount"])) == ("timeout", 1)


def test_given_5xx_twice_then_openai_unavailable(openai_chat: FakeOpenAIServer) -> None:
    openai_chat.enqueue(Fault(status=503), Fault(status=500))
    answer = send(start_session(), "落ちていますか")
    assert answer.body["aiResponse"]["errorCode"] == "OpenAIUnavailable"


def test_no_message_text_model_answer_or_key_reaches_the_logs(
    aws: Any,
    fake_openai: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    key, said, answered, context = "sk-canary-KEY-c4a1", "CANARY-USER-7e21", "CANARY-MODEL-90b3", "CANARY-CTX-33d8"
    use_fake_openai(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("AI_AUDIT_SALT", "salt")
    fake_openai.enqueue(
        Reply(content=GOOD.replace("月次決算の段取り", answered)),
        Reply(content=f"{answered}\n```json\n{{broken {answered}\n```"),
        Fault(status=500),
        Fault(status=500),
    )
    session_id = start_session(processType=context)
    with caplog.at_level("INFO", logger="lambda-agents"):
        statuses = [send(session_id, f"{said} {index}").status for index in range(3)]
    # every record with its extras (what the JSON log line holds), and whatever reached stdout
    logs = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records) + capfd.readouterr().out
    assert statuses == [200, 200, 200] and [r.getMessage() for r in caplog.records].count("chat turn") == 3
    assert "'error_class': 'JsonParseError'" in logs and "'errorType': 'server_error'" in logs
    for canary in (key, said, answered, context):
        assert canary not in logs
