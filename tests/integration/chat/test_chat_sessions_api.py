"""ChatFunction's session routes on moto: a session read back with its history page by page,
the caller's sessions listed, and a deletion that leaves nothing anywhere (every table of the
template scanned), retry records and template references included."""

from __future__ import annotations

from typing import Any

import pytest
from lambda_agents.templates.models import chat_template_id

from devtools.leftovers import item_count, items_mentioning
from tests.support.dynamo_faults import THROTTLED, dynamo_fault

from .chat_api import chat, items, send, start_session, templates

pytestmark = pytest.mark.integration


def read(session_id: str, user: str = "user-1", **query: str) -> Any:
    return chat("GET", f"/ai-agent/sessions/{session_id}", user=user, query=query or None)


def delete(session_id: str, user: str = "user-1") -> Any:
    return chat("DELETE", f"/ai-agent/sessions/{session_id}", user=user)


def listing(user: str = "user-1", **query: str) -> Any:
    return chat("GET", "/ai-agent/sessions", user=user, query=query or None)


def test_given_a_session_with_turns_then_it_reads_back_with_its_messages_oldest_first(aws: Any) -> None:
    session_id = start_session(processType="中途採用")
    for text in ("一つ目", "二つ目"):
        assert send(session_id, text).status == 200

    answer = read(session_id)

    assert answer.status == 200, answer.body
    body = answer.body
    assert body["sessionId"] == session_id and body["context"]["processType"] == "中途採用"
    assert body["updatedAt"] >= body["createdAt"]
    assert [(m["seq"], m["role"]) for m in body["messages"]] == [
        (1, "user"),
        (2, "assistant"),
        (3, "user"),
        (4, "assistant"),
    ]
    assert body["messages"][0]["content"] == "一つ目" and body["messages"][1]["templateDraft"]["ok"] is True
    assert body["nextCursor"] is None


def test_given_a_long_history_then_pages_go_from_the_latest_back_to_the_first_without_gaps(aws: Any) -> None:
    session_id = start_session()
    for index in range(4):
        assert send(session_id, f"質問{index}").status == 200

    pages, cursor = [], None
    while True:
        query = {"limit": "3", **({"cursor": cursor} if cursor else {})}
        answer = read(session_id, **query)
        assert answer.status == 200, answer.body
        pages.append([m["seq"] for m in answer.body["messages"]])
        cursor = answer.body["nextCursor"]
        if cursor is None:
            break

    assert pages == [[6, 7, 8], [3, 4, 5], [1, 2]]


def test_given_exactly_a_page_of_messages_then_no_cursor_points_at_an_empty_page(aws: Any) -> None:
    session_id = start_session()
    assert send(session_id, "一つ目").status == 200
    answer = read(session_id, limit="2")
    assert [m["seq"] for m in answer.body["messages"]] == [1, 2] and answer.body["nextCursor"] is None


@pytest.mark.parametrize("cursor", ["not-a-cursor", "eyJ2IjoxfQ", "A" * 40])
def test_given_a_cursor_this_api_did_not_issue_then_400_names_it(aws: Any, cursor: str) -> None:
    session_id = start_session()
    answer = read(session_id, cursor=cursor)
    assert answer.status == 400 and answer.body["error"]["code"] == "INVALID_CURSOR"
    assert answer.body["error"]["details"] == [{"field": "query.cursor"}]


def test_a_cursor_is_bound_to_the_listing_it_came_from(aws: Any) -> None:
    first, second = start_session(), start_session()
    for _ in range(2):
        assert send(first, "質問").status == 200
    cursor = read(first, limit="1").body["nextCursor"]
    assert cursor is not None

    assert read(second, cursor=cursor).status == 400  # another session's history
    assert listing(cursor=cursor).status == 400  # the session listing
    assert read(first, cursor=cursor).status == 200


def test_the_callers_sessions_are_listed_newest_first_page_by_page_and_only_theirs(aws: Any) -> None:
    mine = [start_session(processType=f"工程{index}") for index in range(3)]
    theirs = start_session(user="user-2")

    first = listing(limit="2")
    assert first.status == 200, first.body
    assert [s["sessionId"] for s in first.body["items"]] == [mine[2], mine[1]]
    assert first.body["count"] == 2 and first.body["nextCursor"]
    second = listing(limit="2", cursor=first.body["nextCursor"])
    assert [s["sessionId"] for s in second.body["items"]] == [mine[0]] and second.body["nextCursor"] is None
    assert second.body["items"][0]["context"]["processType"] == "工程0"

    assert [s["sessionId"] for s in listing(user="user-2").body["items"]] == [theirs]
    assert listing(user="user-3").body == {"items": [], "count": 0, "nextCursor": None}
    assert listing(user="user-2", cursor=first.body["nextCursor"]).status == 400  # user-1's cursor


def test_given_another_users_session_then_reading_and_deleting_it_answer_404_and_change_nothing(aws: Any) -> None:
    session_id = start_session(user="owner")
    assert send(session_id, "秘密の相談", user="owner").status == 200
    before = items(aws, "ChatTable")

    for answer in (read(session_id, user="intruder"), delete(session_id, user="intruder")):
        assert answer.status == 404 and answer.body["error"]["code"] == "SESSION_NOT_FOUND"
    assert items(aws, "ChatTable") == before
    assert read("0" * 32).status == 404 and delete("0" * 32).status == 404


def test_given_a_session_when_it_is_deleted_then_nothing_of_it_is_left_in_any_table(aws: Any) -> None:
    session_id = start_session()
    assert send(session_id, "採用の段取りを作りたい", headers={"Idempotency-Key": "retry-1"}).status == 200
    assert send(session_id, "面接は2回にしてください").status == 200
    template = templates("POST", f"/ai-agent/sessions/{session_id}/process-template")
    assert template.status == 201
    assert item_count(aws, "ChatIdempotencyTable") == 1
    assert set(items_mentioning(aws, session_id)) == {"ChatTable", "ProcessTemplatesTable"}
    assert set(items_mentioning(aws, "採用の段取りを作りたい")) == {"ChatTable", "ChatIdempotencyTable"}  # its answer
    other = start_session()
    assert send(other, "別の相談", headers={"Idempotency-Key": "retry-1"}).status == 200  # same key, other session

    answer = delete(session_id)

    assert answer.status == 200, answer.body
    assert answer.body == {
        "sessionId": session_id,
        "deleted": {"messages": 4, "drafts": 2, "auditRecords": 2, "retryRecords": 1},
        "templatesDetached": 1,
    }
    assert items_mentioning(aws, session_id) == {}
    assert items_mentioning(aws, "採用の段取りを作りたい") == {} and items_mentioning(aws, "面接は2回") == {}
    kept = templates("GET", f"/process-templates/{template.body['templateId']}")
    assert kept.status == 200 and kept.body["source"] == {"kind": "chat", "sessionId": None, "draftSeq": None}
    # Nor does its id lead back to the session: it derives from a seed the session item took along.
    assert all(template.body["templateId"] != chat_template_id(session_id, seq) for seq in range(1, 20))
    assert [s["sessionId"] for s in listing().body["items"]] == [other]
    assert read(other).status == 200 and item_count(aws, "ChatIdempotencyTable") == 1  # the other session's
    assert read(session_id).status == 404 and delete(session_id).status == 404
    assert send(session_id, "まだ続けたい").status == 404


def test_given_a_deleted_session_then_a_retried_message_with_its_key_is_not_replayed(aws: Any) -> None:
    session_id = start_session()
    key = {"Idempotency-Key": "client-retry"}
    assert send(session_id, "採用の段取り", headers=key).status == 200
    assert delete(session_id).status == 200
    again = send(session_id, "採用の段取り", headers=key)
    assert again.status == 404  # the stored answer went with the session: nothing to replay


def test_given_a_deletion_cut_short_then_the_session_is_gone_for_readers_and_a_second_delete_finishes(
    aws: Any,
) -> None:
    session_id = start_session()
    for text in ("一つ目", "二つ目"):
        assert send(session_id, text).status == 200

    with dynamo_fault("BatchWriteItem", THROTTLED):
        interrupted = delete(session_id)

    assert interrupted.status == 503
    assert read(session_id).status == 404 and listing().body["items"] == []
    assert send(session_id, "三つ目").status == 404
    finished = delete(session_id)
    assert finished.status == 200 and finished.body["deleted"]["messages"] == 4
    assert items_mentioning(aws, session_id) == {}


def test_given_no_identity_then_the_session_routes_answer_401(aws: Any) -> None:
    session_id = start_session()
    assert read(session_id, user=None).status == 401  # type: ignore[arg-type]
    assert delete(session_id, user=None).status == 401  # type: ignore[arg-type]
    assert listing(user=None).status == 401  # type: ignore[arg-type]
    assert read(session_id).status == 200


@pytest.mark.parametrize(("query", "field"), [({"limit": "0"}, "query.limit"), ({"limit": "101"}, "query.limit")])
def test_given_a_bad_page_size_then_400_names_it(aws: Any, query: dict[str, str], field: str) -> None:
    answer = read(start_session(), **query)
    assert answer.status == 400 and answer.body["error"]["details"][0]["field"] == field
