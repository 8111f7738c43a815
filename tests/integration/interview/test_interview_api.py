"""InterviewFunction on moto (tables from template.yaml), offline model: the three routes, the
owner rule, validation that names the field, idempotent retries without a second model call,
and two concurrent turns of one session (409, nothing half-written)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from lambda_agents.llm.offline_model import OfflineModel
from lambda_agents.storage.run_steps import DynamoRunStepRecorder

from functions.interview import app as interview_app

from .conftest import (
    FIELDS,
    JOB,
    api_event,
    create,
    employer,
    get_interview,
    invoke,
    post_message,
    read_application,
    stored_items,
)

pytestmark = pytest.mark.integration

SCRIPT = [
    "こんにちは",
    "日本語でお願いします。日本に住んでいます。",
    "5年です。東京のカフェ森で働いていました。",
    "コーヒーが大好きで、お客様と話すのが好きだからです。",
]


def offline_model() -> OfflineModel:
    model = interview_app.dependencies().model
    assert isinstance(model, OfflineModel)
    return model


def start(aws: Any) -> str:
    answer = create()
    assert answer.status == 201, answer.body
    return str(answer.body["sessionId"])


def test_given_a_job_when_an_interview_is_created_then_it_starts_with_the_greeter_and_no_model_call(aws: Any) -> None:
    answer = create()
    assert answer.status == 201
    body = answer.body
    assert len(body["sessionId"]) == 32
    assert (body["jobId"], body["status"], body["currentAgent"], body["version"]) == (
        "job-barista-001",
        "in_progress",
        "greeter",
        0,
    )
    assert sorted(item["sk"] for item in stored_items(aws, body["sessionId"])) == ["JOB", "SESSION"]
    assert offline_model().calls == []


def test_a_whole_interview_through_the_api_ends_completed_with_facts_and_an_audit_summary(aws: Any) -> None:
    session_id = start(aws)
    answers = [post_message(session_id, text) for text in SCRIPT]

    assert all(answer.status == 200 for answer in answers), [a.body for a in answers]
    first, greeted, reviewed, last = (answer.body for answer in answers)
    assert (first["currentAgent"], first["awaitingUserResponse"], first["replyKind"]) == ("greeter", True, "question")
    assert (greeted["currentAgent"], greeted["currentFieldId"]) == ("interviewer", "experience")
    assert greeted["fieldStatuses"] == {"experience": "interviewing", "motivation": "pending"}
    assert reviewed["fieldStatuses"] == {"experience": "done", "motivation": "interviewing"}
    assert (last["status"], last["replyKind"], last["awaitingUserResponse"], last["currentAgent"]) == (
        "completed",
        "completed",
        False,
        None,
    )
    assert all(answer.body["usage"]["totalTokens"] > 0 for answer in answers)

    detail = get_interview(session_id)
    assert detail.status == 200
    view = detail.body
    assert view["state"] == {"language": "ja", "country": "JP", "timezone": "Asia/Tokyo"}
    assert [(f["field_id"], f["status"]) for f in view["fields"]] == [("experience", "done"), ("motivation", "done")]
    assert view["collectedFacts"]["experience"]["経験年数"] == SCRIPT[2]
    assert [m["role"] for m in view["messages"]] == ["user", "assistant"] * 4
    assert view["messages"][3]["data"]["plan"] == ["experience", "motivation"]  # additionalData for the UI
    assert view["usageTotal"]["totalTokens"] == sum(a.body["usage"]["totalTokens"] for a in answers)
    assert view["version"] == 5  # the consent, then four turns

    application = read_application(session_id).body
    assert application["audit"]["passed"] is True and application["audit"]["summary"].startswith("応募者の回答")
    assert application["messages"][-1]["data"]["audit"]["passed"] is True


def test_the_applicant_never_sees_the_audit_summary_or_violations_not_even_in_the_messages_data(aws: Any) -> None:
    session_id = start(aws)
    for text in SCRIPT:
        post_message(session_id, text)
    view = get_interview(session_id).body
    assert view["status"] == "completed"
    assert "audit" not in view
    assert all("audit" not in message["data"] for message in view["messages"])
    assert "応募者の回答" not in json.dumps(view, ensure_ascii=False)  # the offline Auditor's summary


def test_every_tool_execution_left_a_finished_run_step_with_input_output_and_duration(aws: Any) -> None:
    session_id = start(aws)
    for text in SCRIPT[:2]:
        post_message(session_id, text)
    steps = DynamoRunStepRecorder("InterviewsTable").for_session(session_id)
    assert [step["toolName"] for step in steps] == [
        "ask",
        "set_language",
        "set_country",
        "set_timezone",
        "create_plan",
        "ask",  # its QuickCheck ran inside it: no subtask writes the question first
    ]
    for step in steps:
        assert step["status"] == "finished"
        assert step["output"]["status"] == "success" and "message" in step["output"]["result"]
        assert step["durationMs"] >= 0 and step["input"] is not None


@pytest.mark.parametrize(
    "event",
    [
        api_event("POST", "/interviews", JOB, user=None),
        api_event("POST", "/interviews", {"nonsense": True}, user=None),
        api_event(
            "GET",
            "/interviews/0123456789abcdef0123456789abcdef",
            user=None,
            path_parameters={"sessionId": "0123456789abcdef0123456789abcdef"},
            resource="/interviews/{sessionId}",
        ),
    ],
    ids=["create", "create-invalid-body", "get"],
)
def test_given_no_identity_then_every_route_answers_401_first(aws: Any, event: dict[str, Any]) -> None:
    answer = invoke(event)
    assert (answer.status, answer.body["error"]["code"]) == (401, "UNAUTHORIZED")


def test_given_no_identity_on_a_message_then_401(aws: Any) -> None:
    session_id = start(aws)
    answer = post_message(session_id, "hello", user=None)
    assert answer.status == 401


def test_given_another_users_session_then_404_as_if_it_did_not_exist(aws: Any) -> None:
    session_id = start(aws)
    for answer in (get_interview(session_id, user="someone-else"), post_message(session_id, "hi", user="someone-else")):
        assert (answer.status, answer.body["error"]["code"]) == (404, "NOT_FOUND")
    assert offline_model().calls == []


def test_given_an_unknown_session_id_then_404(aws: Any) -> None:
    assert get_interview("0123456789abcdef0123456789abcdef").status == 404
    assert post_message("0123456789abcdef0123456789abcdef", "hi").status == 404


@pytest.mark.parametrize("session_id", ["not-a-session", "x" * 300, "0123456789ABCDEF0123456789ABCDEF"])
def test_given_a_malformed_session_id_then_400_naming_the_path_value_without_echoing_it(
    aws: Any, session_id: str
) -> None:
    for answer in (get_interview(session_id), post_message(session_id, "hi")):
        assert (answer.status, answer.body["error"]["code"]) == (400, "VALIDATION_ERROR")
        assert "sessionId" in answer.body["error"]["message"] and session_id not in json.dumps(answer.body)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"jobId": "j"}, "body.fields"),
        ({"jobId": "", "fields": FIELDS}, "body.jobId"),
        ({"jobId": "j", "fields": []}, "body.fields"),
        ({"jobId": "j", "fields": [FIELDS[0], FIELDS[0]]}, "body.fields"),
        ({"jobId": "j", "fields": [{**FIELDS[0], "done_criteria": ""}]}, "body.fields.0.done_criteria"),
        ({"jobId": "j", "fields": [{k: v for k, v in FIELDS[0].items() if k != "required"}]}, "body.fields.0.required"),
        ({"jobId": "j", "fields": [{**FIELDS[0], "field_id": "has space"}]}, "body.fields.0.field_id"),
        ({"jobId": "j", "fields": [{**FIELDS[0], "required": 0}]}, "body.fields.0.required"),
        ({"jobId": "j", "fields": [{**FIELDS[0], "required_facts": ["a", "A"]}]}, "body.fields.0.required_facts"),
        ({**JOB, "salary": 1}, "body.salary"),
    ],
)
def test_given_an_invalid_job_then_400_names_the_field(aws: Any, body: dict[str, Any], named: str) -> None:
    answer = employer("POST", "/api/admin/jobs", {"title": "Barista", **body})
    assert answer.status == 400
    assert answer.body["error"]["code"] == "VALIDATION_ERROR"
    assert named in [detail["field"] for detail in answer.body["error"]["details"]]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"title": "Bar\x00ista"}, "title contains the control character U+0000"),
        (
            {"fields": [{**FIELDS[0], "label": "Exp\x1b[31merience"}]},
            "fields[0].label contains the control character U+001B",
        ),
        ({"fields": [{**FIELDS[0], "required_facts": ["ye\nars"]}]}, "fields[0].required_facts[0]"),
        ({"fields": [{**FIELDS[0], "intent": "a\x07b"}]}, "fields[0].intent contains the control character U+0007"),
    ],
)
def test_given_a_job_text_with_a_control_character_then_400_names_where_and_nothing_is_stored(
    aws: Any, change: dict[str, Any], named: str
) -> None:
    answer = employer("POST", "/api/admin/jobs", {"title": "Barista", **JOB, **change})
    assert answer.status == 400 and answer.body["error"]["code"] == "VALIDATION_ERROR"
    assert named in json.dumps(answer.body["error"])
    assert employer("GET", "/api/admin/jobs").body.get("count", 0) == 0


def test_given_text_of_several_lines_then_its_line_breaks_are_kept(aws: Any) -> None:
    fields = [{**FIELDS[0], "intent": "first line\nsecond line\twith a tab"}, *FIELDS[1:]]
    answer = employer("POST", "/api/admin/jobs", {"title": "Barista", **JOB, "fields": fields})
    assert answer.status == 201, answer.body


def test_given_a_duplicate_field_id_then_the_message_says_which(aws: Any) -> None:
    answer = employer("POST", "/api/admin/jobs", {"title": "Barista", "jobId": "j", "fields": [FIELDS[0], FIELDS[0]]})
    assert "experience" in str(answer.body["error"]["details"])


@pytest.mark.parametrize(
    ("text", "key", "named"),
    [("   ", None, "body.text"), ("x" * 4001, None, "body.text"), ("hi", "has space", "header.idempotency-key")],
)
def test_given_an_invalid_message_then_400_names_it(aws: Any, text: str, key: str | None, named: str) -> None:
    session_id = start(aws)
    answer = post_message(session_id, text, key=key)
    assert answer.status == 400
    assert named in [detail["field"] for detail in answer.body["error"]["details"]]
    assert offline_model().calls == []


def test_given_a_retried_request_with_the_same_key_then_the_same_reply_without_running_the_agents(aws: Any) -> None:
    session_id = start(aws)
    first = post_message(session_id, SCRIPT[0], key="turn-1")
    calls = len(offline_model().calls)

    again = post_message(session_id, SCRIPT[0], key="turn-1")

    assert again.status == 200 and again.body == first.body
    assert len(offline_model().calls) == calls  # no second LLM call
    assert [item["sk"] for item in stored_items(aws, session_id) if item["sk"].startswith("MSG#")] == [
        "MSG#00000",
        "MSG#00001",
    ]


def test_given_the_same_key_with_another_message_then_409_and_nothing_runs(aws: Any) -> None:
    session_id = start(aws)
    post_message(session_id, SCRIPT[0], key="turn-1")
    calls = len(offline_model().calls)
    answer = post_message(session_id, "something else", key="turn-1")
    assert (answer.status, answer.body["error"]["code"]) == (409, "IDEMPOTENCY_KEY_REUSED")
    assert len(offline_model().calls) == calls


def test_without_a_key_the_same_text_twice_is_two_messages(aws: Any) -> None:
    session_id = start(aws)
    post_message(session_id, SCRIPT[0])
    post_message(session_id, SCRIPT[0])
    assert get_interview(session_id).body["version"] == 3  # the consent and two turns


def test_given_two_messages_to_one_session_at_once_then_the_later_write_is_409_and_nothing_of_it_is_stored(
    aws: Any,
) -> None:
    session_id = start(aws)
    model = offline_model()
    greeter = model._responders["interview.greeter"]
    nested: list[Any] = []
    raced: list[bool] = []

    def racing_greeter(request: Any) -> Any:
        if not raced:  # while the first turn runs, a second message to the same session is processed
            raced.append(True)
            nested.append(post_message(session_id, "Hello from a second tab", key="tab-2"))
        return greeter(request)

    model.register("interview.greeter", racing_greeter)
    loser = post_message(session_id, "Hello from the first tab", key="tab-1")

    assert nested[0].status == 200
    assert (loser.status, loser.body["error"]["code"]) == (409, "VERSION_CONFLICT")
    items = stored_items(aws, session_id)
    messages = sorted((item for item in items if item["sk"].startswith("MSG#")), key=lambda item: item["sk"])
    assert [m["content"] for m in messages] == ["Hello from a second tab", nested[0].body["reply"]]
    head = next(item for item in items if item["sk"] == "SESSION")
    assert (head["version"], head["messageCount"]) == (2, 2)

    model.register("interview.greeter", greeter)
    retried = post_message(session_id, "Hello from the first tab", key="tab-1")  # a 409 is not cached
    assert retried.status == 200 and retried.body["version"] == 3


def test_given_a_finished_interview_then_a_further_message_is_409(aws: Any) -> None:
    session_id = start(aws)
    for text in SCRIPT:
        post_message(session_id, text)
    answer = post_message(session_id, "one more thing")
    assert (answer.status, answer.body["error"]["code"]) == (409, "INTERVIEW_FINISHED")


def test_a_question_on_a_prohibited_topic_is_never_sent_and_the_turn_ends_gracefully(aws: Any) -> None:
    job = {
        "jobId": "job-x",
        "fields": [{**FIELDS[0], "field_id": "family", "label": "ご家族の職業", "required_facts": []}],
    }
    session_id = str(create(job).body["sessionId"])
    post_message(session_id, SCRIPT[0])
    answer = post_message(session_id, SCRIPT[1])
    assert (answer.status, answer.body["replyKind"]) == (200, "retry")  # every rephrasing failed its QuickCheck
    assert "家族" not in answer.body["reply"]
    assert all("家族" not in message["content"] for message in get_interview(session_id).body["messages"])
