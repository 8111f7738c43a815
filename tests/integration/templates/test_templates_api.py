"""ProcessTemplatesFunction over API Gateway events on moto: a template from a DTO and from a chat
session (TemplateDraftMapper), every step-plan rule (docs/chat-and-templates.md#step-plan-rules) as a 400 naming
its class with nothing stored, seq -> id resolution, ownership, and the tolerant search over the
caller's templates."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.chat.chat_api import items, send, start_session, templates

pytestmark = pytest.mark.integration


def step(seq: int, depends: list[int] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "seq": seq,
        "name": f"工程{seq}",
        "basis": "goal" if seq == 1 else "prev",
        "offsetDays": -14 if seq == 1 else 3,
        "requiredArtifacts": [{"kind": "報告書"}] if seq == 1 else [],
        "dependsOn": depends if depends is not None else ([] if seq == 1 else [seq - 1]),
        **extra,
    }


def create(name: str, *steps: dict[str, Any], user: str = "user-1") -> Any:
    return templates("POST", "/process-templates", {"name": name, "stepTemplates": list(steps)}, user=user)


def test_given_a_valid_dto_then_201_with_the_id_and_every_dependency_resolved_to_a_step_id(aws: Any) -> None:
    answer = create("月次決算", step(1), step(2), step(3, [1, 2]))
    assert answer.status == 201, answer.body
    body = answer.body
    ids = {s["seq"]: s["stepId"] for s in body["steps"]}
    assert [s["dependsOn"] for s in body["steps"]] == [[], [ids[1]], [ids[1], ids[2]]]
    assert body["created"] is True and body["stepCount"] == 3 and body["source"]["kind"] == "dto"
    stored = items(aws, "ProcessTemplatesTable")
    assert [i["sk"] for i in stored] == ["META", "STEP#001", "STEP#002", "STEP#003"]
    assert stored[0]["templateId"] == body["templateId"] and stored[0]["gsi1pk"] == "USER#user-1"
    assert stored[3]["dependsOn"] == [ids[1], ids[2]] and "gsi1pk" not in stored[3]


@pytest.mark.parametrize(
    ("steps", "error_class"),
    [
        ([step(1), step(2), step(4)], "SeqGap"),
        ([step(1), step(2), step(2)], "SeqDuplicate"),
        ([step(1), step(2, [3]), step(3, [1])], "ForwardReference"),
        ([step(1), step(2, [3]), step(3, [2])], "DependencyCycle"),
        ([step(1), step(2, [2])], "DependencyCycle"),
        ([step(1, basis="prev")], "InvalidBasis"),
        ([step(1), step(2, [9])], "UnknownDependency"),
        ([], "NoSteps"),
        ([step(i) for i in range(1, 52)], "TooManySteps"),
    ],
)
def test_given_a_plan_breaking_spec_a_then_400_names_the_class_and_nothing_is_stored(
    aws: Any, steps: list[dict[str, Any]], error_class: str
) -> None:
    answer = create("壊れた案", *steps)
    assert answer.status == 400 and answer.body["error"]["code"] == "TEMPLATE_INVALID"
    assert answer.body["error"]["details"]["errorClass"] == error_class
    assert answer.body["error"]["message"].startswith(error_class)
    assert items(aws, "ProcessTemplatesTable") == []


def test_given_fifty_steps_then_they_are_written_in_one_transaction(aws: Any) -> None:
    answer = create("長い案", *[step(i) for i in range(1, 51)])
    assert answer.status == 201 and len(items(aws, "ProcessTemplatesTable")) == 51


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "", "stepTemplates": [step(1)]}, "body.name"),
        ({"name": "x" * 201, "stepTemplates": [step(1)]}, "body.name"),
        ({"stepTemplates": [step(1)]}, "body.name"),
        ({"name": "x", "stepTemplates": [step(1, offsetDays=400)]}, "body.stepTemplates.0.offsetDays"),
        ({"name": "x", "stepTemplates": [step(1, offsetDays=1.5)]}, "body.stepTemplates.0.offsetDays"),
        ({"name": "x", "stepTemplates": [step(1, basis="start")]}, "body.stepTemplates.0.basis"),
        ({"name": "x", "stepTemplates": "none"}, "body.stepTemplates"),
        ({"name": "x", "stepTemplates": [step(1)], "owner": "me"}, "body.owner"),
    ],
)
def test_given_a_malformed_body_then_400_names_the_field(aws: Any, body: dict[str, Any], field: str) -> None:
    answer = templates("POST", "/process-templates", body)
    assert answer.status == 400 and answer.body["error"]["code"] == "VALIDATION_ERROR"
    assert field in answer.body["error"]["message"]
    assert items(aws, "ProcessTemplatesTable") == []


@pytest.mark.parametrize("path", ["/process-templates", "/ai-agent/sessions/abc/process-template"])
def test_given_an_array_body_then_400(aws: Any, path: str) -> None:
    from functions.process_templates import app as templates_app
    from tests.integration.chat.chat_api import api_event, context

    body = '[{"name": "x", "stepTemplates": [{"seq": 1, "name": "a", "basis": "goal", "offsetDays": 0}]}]'
    result = templates_app.lambda_handler(api_event("POST", path, raw_body=body), context())
    assert result["statusCode"] == 400
    assert items(aws, "ProcessTemplatesTable") == []


def test_given_no_identity_then_every_route_answers_401(aws: Any) -> None:
    assert create("x", step(1), user=None).status == 401  # type: ignore[arg-type]
    assert templates("GET", "/process-templates", user=None, query={"search": "x"}).status == 401
    assert templates("POST", "/ai-agent/sessions/abc/process-template", user=None).status == 401


def test_given_a_chat_session_then_its_latest_draft_becomes_a_template_once(aws: Any) -> None:
    session_id = start_session(processType="中途採用", goal="4月入社")
    send(session_id, "エンジニア採用の段取りを")
    send(session_id, "面接は2回にしてください")
    answer = templates("POST", f"/ai-agent/sessions/{session_id}/process-template")
    assert answer.status == 201, answer.body
    assert [s["name"] for s in answer.body["steps"]][2:4] == ["一次面接", "二次面接"]  # the latest draft
    assert answer.body["source"] == {"kind": "chat", "sessionId": session_id, "draftSeq": 4}
    again = templates("POST", f"/ai-agent/sessions/{session_id}/process-template")
    assert again.status == 200 and again.body["created"] is False
    assert again.body["templateId"] == answer.body["templateId"]
    assert len([i for i in items(aws, "ProcessTemplatesTable") if i["sk"] == "META"]) == 1


def test_given_a_name_in_the_body_then_the_template_takes_it(aws: Any) -> None:
    session_id = start_session(processType="中途採用")
    send(session_id, "お願いします")
    answer = templates("POST", f"/ai-agent/sessions/{session_id}/process-template", {"name": "エンジニア採用 2026"})
    assert answer.status == 201 and answer.body["name"] == "エンジニア採用 2026"


def test_given_another_users_session_then_404_and_nothing_is_stored(aws: Any) -> None:
    session_id = start_session(user="owner")
    send(session_id, "お願いします", user="owner")
    answer = templates("POST", f"/ai-agent/sessions/{session_id}/process-template", user="intruder")
    assert answer.status == 404 and answer.body["error"]["code"] == "SESSION_NOT_FOUND"
    assert templates("POST", "/ai-agent/sessions/nope/process-template").status == 404
    assert items(aws, "ProcessTemplatesTable") == []


def test_given_a_session_without_a_valid_draft_then_409(aws: Any) -> None:
    session_id = start_session()
    answer = templates("POST", f"/ai-agent/sessions/{session_id}/process-template")
    assert answer.status == 409 and answer.body["error"]["code"] == "NO_TEMPLATE_DRAFT"


def test_search_finds_near_duplicates_of_the_callers_templates_only(aws: Any) -> None:
    assert create("チェックリスト作成", step(1)).status == 201
    assert create("ＡＢＣ社 年次監査", step(1)).status == 201
    assert create("新卒採用", step(1)).status == 201
    assert create("チェックリスト作成", step(1), user="user-2").status == 201
    answer = templates("GET", "/process-templates", query={"search": "ﾁｪｯｸﾘｽﾄ　さくせい"})
    assert answer.status == 200
    names = [(hit["name"], hit["score"]) for hit in answer.body["items"]]
    assert names[0][0] == "チェックリスト作成" and len(names) == 1  # hiragana さくせい is not the kanji 作成
    exact = templates("GET", "/process-templates", query={"search": "abc社年次 監査"}).body["items"]
    assert [(hit["name"], hit["score"]) for hit in exact] == [("ＡＢＣ社 年次監査", 1.0)]
    assert templates("GET", "/process-templates", query={"search": "全く関係ない"}).body["items"] == []


def test_without_a_search_the_callers_newest_templates_are_listed_with_a_limit(aws: Any) -> None:
    for name in ("一", "二", "三"):
        create(name, step(1))
    listed = templates("GET", "/process-templates", query={"limit": "2"}).body
    assert [item["name"] for item in listed["items"]] == ["三", "二"] and listed["count"] == 2


@pytest.mark.parametrize(
    ("query", "field"),
    [({"search": "x" * 201}, "query.search"), ({"limit": "0"}, "query.limit"), ({"limit": "x"}, "query.limit")],
)
def test_given_a_bad_query_then_400_names_the_parameter(aws: Any, query: dict[str, str], field: str) -> None:
    answer = templates("GET", "/process-templates", query=query)
    assert answer.status == 400 and field in answer.body["error"]["message"]
