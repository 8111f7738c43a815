"""A whole interview end to end: InterviewFunction on moto, the real openai client, the fake
OpenAI server answering a scripted model (one tool call per reply), the applicant in Japanese."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devtools.fake_openai import FakeOpenAIServer
from devtools.fake_openai.interview_replies import GREETING, asked, audited, reviewed, settings_and_plan

from .conftest import JOB, create, employer, get_interview, post_message, use_fake_openai

pytestmark = pytest.mark.integration

Q1 = "これまでのバリスタのご経験について、年数と勤務先を教えてください。"
Q2 = "この仕事を志望された理由を教えてください。"
PLAN = [
    {"field_id": "experience", "label": "バリスタ経験", "intent": "経験", "required": True},
    {"field_id": "motivation", "label": "志望動機", "intent": "動機", "required": True},
]


def test_a_whole_interview_through_the_real_openai_client_and_the_fake_server(
    aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    session_id = str(create().body["sessionId"])

    fake_openai.enqueue(*asked(GREETING))  # the greeting, too, goes out only after a QuickCheck
    first = post_message(session_id, "こんにちは、応募したいです。")
    assert (first.status, first.body["currentAgent"], first.body["replyKind"]) == (200, "greeter", "question")

    fake_openai.enqueue(*settings_and_plan(PLAN), *asked(Q1))  # QuickCheck, run by ask on the question as written
    second = post_message(session_id, "日本語でお願いします。東京に住んでいます。")
    assert second.status == 200, second.body
    assert (second.body["reply"], second.body["currentAgent"], second.body["currentFieldId"]) == (
        Q1,
        "interviewer",
        "experience",
    )

    experience = [{"name": "経験年数", "value": "5年"}, {"name": "勤務先", "value": "カフェ森"}]
    fake_openai.enqueue(*reviewed(experience), *asked(Q2))
    third = post_message(session_id, "カフェ森で5年間バリスタをしていました。")
    assert third.body["fieldStatuses"] == {"experience": "done", "motivation": "interviewing"}
    assert third.body["reply"] == Q2

    fake_openai.enqueue(
        *reviewed([{"name": "理由", "value": "コーヒーと接客が好き"}]),
        *audited("バリスタ経験5年（カフェ森）。志望動機はコーヒーと接客。"),
    )
    last = post_message(session_id, "コーヒーと接客が大好きだからです。")
    assert (last.body["status"], last.body["replyKind"], last.body["awaitingUserResponse"]) == (
        "completed",
        "completed",
        False,
    )

    detail = get_interview(session_id).body
    assert detail["state"] == {"language": "ja", "country": "JP", "timezone": "Asia/Tokyo"}
    assert detail["collectedFacts"] == {
        "experience": {"経験年数": "5年", "勤務先": "カフェ森"},
        "motivation": {"理由": "コーヒーと接客が好き"},
    }
    assert "audit" not in detail  # the audit is the employer's
    application = employer(
        "GET",
        f"/api/admin/jobs/{JOB['jobId']}/applications/{session_id}",
        resource="/api/admin/jobs/{jobId}/applications/{applicationId}",
        path_parameters={"jobId": JOB["jobId"], "applicationId": session_id},
    ).body
    assert application["audit"]["summary"].startswith("バリスタ経験5年")

    assert_the_requests_the_provider_got(fake_openai.requests)
    total = sum(answer.body["usage"]["totalTokens"] for answer in (first, second, third, last))
    assert detail["usageTotal"]["totalTokens"] == total > 0


def assert_the_requests_the_provider_got(sent: list[dict[str, Any]]) -> None:
    assert len(sent) == 16
    assert sent[1]["response_format"]["json_schema"]["name"] == "QuickCheckResult"
    sent = [sent[0], *sent[2:]]  # the interview's own calls, as numbered below
    greeter_tools = [tool["function"]["name"] for tool in sent[0]["tools"]]
    assert greeter_tools == ["ask", "set_language", "set_country", "set_timezone"]
    assert all(tool["function"]["strict"] is True for tool in sent[0]["tools"])
    assert all(body["parallel_tool_calls"] is False for body in sent if body.get("tools"))
    architect = sent[4]
    assert architect["tool_choice"] == {"type": "function", "function": {"name": "create_plan"}}
    assert sent[6]["response_format"]["json_schema"]["name"] == "QuickCheckResult"
    assert "## Question to check\n" + Q1 in sent[6]["messages"][-1]["content"]
    subtask_tool = next(tool["function"] for tool in sent[5]["tools"] if tool["function"]["name"] == "subtask")
    assert subtask_tool["parameters"]["properties"]["agent"]["enum"] == ["reviewer", "auditor"]  # no quick_check
    # the Reviewer's tool result went back to the model as a tool message, minimal
    tool_message = sent[9]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert json.loads(tool_message["content"])["status"] == "success"
    reviewer_prompt = sent[8]["messages"][-1]["content"]
    assert "## Current field\n- field_id: experience" in reviewer_prompt
    assert "- experience / 経験年数: 5年" in reviewer_prompt
    assert "Applicant: カフェ森で5年間バリスタをしていました。" in reviewer_prompt
