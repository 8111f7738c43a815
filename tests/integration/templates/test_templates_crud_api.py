"""ProcessTemplatesFunction's read / update / delete routes and the near-duplicate warning on
create, on moto: a change is validated like a creation and written in one transaction guarded by
the template's version; a deletion leaves nothing in any table of the template."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.leftovers import items_mentioning
from tests.support.dynamo_faults import TRANSACTION_CANCELLED, dynamo_fault

from ..chat.chat_api import items, send, start_session, templates
from .test_templates_api import create, step

pytestmark = pytest.mark.integration


def path(template_id: str) -> str:
    return f"/process-templates/{template_id}"


def dto(name: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "stepTemplates": list(steps)}


def stored(aws: Any, template_id: str) -> list[dict[str, Any]]:
    return items(aws, "ProcessTemplatesTable", f"TEMPLATE#{template_id}")


def test_given_a_template_then_it_reads_back_with_its_version_as_etag(aws: Any) -> None:
    created = create("月次決算", step(1), step(2)).body

    answer = templates("GET", path(created["templateId"]))

    assert answer.status == 200, answer.body
    assert answer.headers["ETag"] == '"1"'
    assert answer.body["version"] == 1 and answer.body["updatedAt"] is None
    assert {key: answer.body[key] for key in ("templateId", "name", "steps")} == {
        key: created[key] for key in ("templateId", "name", "steps")
    }


def test_given_a_put_then_name_and_steps_are_replaced_together_and_old_steps_are_gone(aws: Any) -> None:
    created = create("月次決算", step(1), step(2), step(3, [1, 2])).body
    template_id = created["templateId"]

    answer = templates("PUT", path(template_id), dto("四半期決算", step(1), step(2)), headers={"If-Match": '"1"'})

    assert answer.status == 200, answer.body
    body = answer.body
    assert (body["name"], body["version"], body["stepCount"], answer.headers["ETag"]) == ("四半期決算", 2, 2, '"2"')
    assert body["updatedAt"] and body["createdAt"] == created["createdAt"]
    new_ids = {s["seq"]: s["stepId"] for s in body["steps"]}
    assert set(new_ids.values()).isdisjoint(s["stepId"] for s in created["steps"])  # replaced steps are new steps
    assert body["steps"][1]["dependsOn"] == [new_ids[1]]
    assert [i["sk"] for i in stored(aws, template_id)] == ["META", "STEP#001", "STEP#002"]
    assert templates("GET", path(template_id)).body == body
    found = templates("GET", "/process-templates", query={"search": "四半期決算"}).body["items"]
    assert [hit["templateId"] for hit in found] == [template_id]


def test_given_a_put_that_breaks_a_rule_then_400_names_it_and_the_template_is_unchanged(aws: Any) -> None:
    template_id = create("月次決算", step(1), step(2)).body["templateId"]
    before = stored(aws, template_id)

    answer = templates("PUT", path(template_id), dto("月次決算", step(1), step(2, [3]), step(3, [2])))

    assert answer.status == 400 and answer.body["error"]["details"]["errorClass"] == "DependencyCycle"
    assert stored(aws, template_id) == before


def test_given_a_stale_if_match_then_409_names_the_current_version_and_nothing_changes(aws: Any) -> None:
    template_id = create("月次決算", step(1), step(2)).body["templateId"]
    assert templates("PATCH", path(template_id), {"name": "月次決算v2"}, headers={"If-Match": '"1"'}).status == 200
    before = stored(aws, template_id)

    for method, body in (("PUT", dto("古い版からの変更", step(1))), ("PATCH", {"name": "古い版"}), ("DELETE", None)):
        answer = templates(method, path(template_id), body, headers={"If-Match": '"1"'})
        assert answer.status == 409, (method, answer.body)
        assert answer.body["error"]["code"] == "VERSION_CONFLICT"
        assert answer.body["error"]["details"] == {"currentVersion": 2} and answer.headers["ETag"] == '"2"'
    assert stored(aws, template_id) == before


def test_given_a_patch_of_the_name_then_the_steps_and_their_ids_stay(aws: Any) -> None:
    created = create("月次決算", step(1), step(2)).body

    answer = templates("PATCH", path(created["templateId"]), {"name": "  月次決算（改）  "})

    assert answer.status == 200, answer.body
    assert (answer.body["name"], answer.body["version"]) == ("月次決算（改）", 2)
    assert answer.body["steps"] == created["steps"]


def test_given_a_patch_of_the_steps_then_the_name_stays_and_the_rules_apply(aws: Any) -> None:
    created = create("月次決算", step(1), step(2)).body
    template_id = created["templateId"]

    bad = templates("PATCH", path(template_id), {"stepTemplates": [step(1), step(3)]})
    assert bad.status == 400 and bad.body["error"]["details"]["errorClass"] == "SeqGap"
    answer = templates("PATCH", path(template_id), {"stepTemplates": [step(1), step(2), step(3)]})

    assert answer.status == 200, answer.body
    assert (answer.body["name"], answer.body["stepCount"], answer.body["version"]) == ("月次決算", 3, 2)


@pytest.mark.parametrize("body", [{}, {"name": None, "stepTemplates": None}, {"name": ""}, {"colour": "red"}])
def test_given_a_patch_that_changes_nothing_or_is_malformed_then_400(aws: Any, body: dict[str, Any]) -> None:
    template_id = create("月次決算", step(1)).body["templateId"]
    answer = templates("PATCH", path(template_id), body)
    assert answer.status == 400 and answer.body["error"]["code"] == "VALIDATION_ERROR"


def test_given_a_concurrent_change_without_if_match_then_the_change_is_retried_on_the_new_version(aws: Any) -> None:
    template_id = create("月次決算", step(1), step(2)).body["templateId"]

    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, times=1, reasons=["ConditionalCheckFailed"]) as f:
        answer = templates("PUT", path(template_id), dto("月次決算", step(1)))

    assert f.fired == 1 and answer.status == 200 and answer.body["stepCount"] == 1
    assert [i["sk"] for i in stored(aws, template_id)] == ["META", "STEP#001"]


def test_given_a_template_when_it_is_deleted_then_nothing_of_it_is_left_in_any_table(aws: Any) -> None:
    template_id = create("月次決算", *[step(seq) for seq in range(1, 6)]).body["templateId"]
    other = create("採用", step(1)).body["templateId"]

    answer = templates("DELETE", path(template_id), headers={"If-Match": '"1"'})

    assert answer.status == 200 and answer.body == {"templateId": template_id, "deletedSteps": 5}
    assert items_mentioning(aws, template_id) == {}
    assert templates("GET", path(template_id)).status == 404
    assert templates("DELETE", path(template_id)).status == 404
    listed = templates("GET", "/process-templates").body["items"]
    assert [hit["templateId"] for hit in listed] == [other]
    assert templates("GET", path(other)).status == 200


def test_given_another_users_template_then_every_route_answers_404_and_changes_nothing(aws: Any) -> None:
    template_id = create("月次決算", step(1), user="owner").body["templateId"]
    before = stored(aws, template_id)

    for method, body in (
        ("GET", None),
        ("PUT", dto("乗っ取り", step(1))),
        ("PATCH", {"name": "乗っ取り"}),
        ("DELETE", None),
    ):
        answer = templates(method, path(template_id), body, user="intruder")
        assert answer.status == 404 and answer.body["error"]["code"] == "TEMPLATE_NOT_FOUND", method
    assert stored(aws, template_id) == before
    assert templates("GET", path("0" * 32)).status == 404


def test_if_match_follows_rfc_9110_star_any_version_lists_and_weak_tags(aws: Any) -> None:
    template_id = create("月次決算", step(1)).body["templateId"]

    assert templates("PATCH", path(template_id), {"name": "v2"}, headers={"If-Match": "*"}).status == 200
    weak = templates("PATCH", path(template_id), {"name": "v3"}, headers={"If-Match": 'W/"2"'})
    assert weak.status == 409 and weak.body["error"]["details"] == {"currentVersion": 2}  # weak never matches
    listed = templates("PATCH", path(template_id), {"name": "v3"}, headers={"If-Match": '"7", "2"'})
    assert listed.status == 200 and listed.body["version"] == 3
    assert templates("PATCH", path(template_id), {"name": "v4"}, headers={"If-Match": '"0"'}).status == 409
    assert templates("DELETE", path("0" * 32), headers={"If-Match": "*"}).status == 404  # no current version


@pytest.mark.parametrize(
    ("template_id", "headers", "field"),
    [
        ("not-an-id", {}, "path.templateId"),
        ("A" * 32, {}, "path.templateId"),
        ("0" * 32, {"If-Match": "**"}, "header.If-Match"),
        ("0" * 32, {"If-Match": '"x'}, "header.If-Match"),
        ("0" * 32, {"If-Match": 'W/"1", garbage'}, "header.If-Match"),
    ],
)
def test_given_a_malformed_id_or_if_match_then_400_names_it(
    aws: Any, template_id: str, headers: dict[str, str], field: str
) -> None:
    answer = templates("DELETE", path(template_id), headers=headers)
    assert answer.status == 400
    assert answer.body["error"]["details"][0]["field"].lower() == field.lower()


def test_given_a_template_stored_before_versions_then_it_reads_as_version_1_and_changes_as_such(aws: Any) -> None:
    template_id = create("月次決算", step(1)).body["templateId"]
    aws.update_item(
        TableName="ProcessTemplatesTable",
        Key={"pk": {"S": f"TEMPLATE#{template_id}"}, "sk": {"S": "META"}},
        UpdateExpression="REMOVE version",
    )
    assert templates("GET", path(template_id)).headers["ETag"] == '"1"'
    answer = templates("PATCH", path(template_id), {"name": "新しい名前"}, headers={"If-Match": "1"})
    assert answer.status == 200 and answer.body["version"] == 2


def test_given_a_similar_name_then_the_creation_succeeds_and_names_the_near_duplicates(aws: Any) -> None:
    first = create("月次決算プロセス", step(1))
    assert first.status == 201 and first.body["similar"] == []
    create("採用フロー", step(1))
    create("月次決算", step(1), user="user-2")  # another user's template is never a duplicate of mine

    second = create("経費精算", step(1))
    third = create("月次 決算・プロセス", step(1))

    assert second.status == 201 and second.body["similar"] == []
    assert third.status == 201
    assert [hit["templateId"] for hit in third.body["similar"]] == [first.body["templateId"]]
    assert third.body["similar"][0]["score"] == 1.0
    assert len(items(aws, "ProcessTemplatesTable", "META")) == 5  # every creation went through


def test_given_a_template_from_a_session_then_it_names_the_callers_near_duplicates_too(aws: Any) -> None:
    existing = create("中途採用のプロセス", step(1)).body["templateId"]
    session_id = start_session(processType="中途採用")
    assert send(session_id, "採用の段取りを作りたい").status == 200

    answer = templates("POST", f"/ai-agent/sessions/{session_id}/process-template")

    assert answer.status == 201, answer.body
    assert [hit["templateId"] for hit in answer.body["similar"]] == [existing]
    again = templates("POST", f"/ai-agent/sessions/{session_id}/process-template")
    assert again.status == 200 and [hit["templateId"] for hit in again.body["similar"]] == [existing]
