"""DELETE /nudges/profile on moto, through the real handlers: a user's nudge data is deleted
everywhere it was written (profile and TimezoneIndex, schedules, posts and PendingPostsIndex, the
generator's idempotency records), proved by scanning every table of the template; another user's
data stays; a deletion cut short is finished by the next DELETE; a generation under way for the
user cannot bring anything back."""

from __future__ import annotations

import time
from datetime import date, timedelta
from typing import Any

import pytest
from lambda_agents.nudges.records import post_records
from lambda_agents.storage.generation_records import DynamoGenerationRecords
from lambda_agents.storage.nudges import DynamoScheduleRepository
from lambda_agents.storage.users import DynamoUserRepository

from devtools.leftovers import item_count, items_mentioning
from functions.nudge_generator import app as generator_app
from tests.support.dynamo_faults import THROTTLED, dynamo_fault

from .conftest import TODAY, Aws, call_api, call_user_api, generate

pytestmark = pytest.mark.integration

LEAVER, STAYER = "leaver-7f3a", "stayer-2b9c"
YESTERDAY = (date.fromisoformat(TODAY) - timedelta(days=1)).isoformat()
PROFILE = {"problems": ["staying_up_late"], "preferredLanguage": "ja", "timezone": "Asia/Tokyo", "nudgesEnabled": True}


def job(user_id: str, local_date: str = TODAY) -> dict[str, str]:
    return {"userId": user_id, "localDate": local_date}


def with_two_days(user_id: str) -> None:
    assert call_user_api("PUT", "/nudges/profile", PROFILE, user=user_id)[0] == 201
    assert generate(job(user_id, YESTERDAY), job(user_id)) == {"batchItemFailures": []}


def delete(user_id: str = LEAVER) -> tuple[int, Any]:
    return call_user_api("DELETE", "/nudges/profile", user=user_id)


def post_ids(user_id: str) -> list[str]:
    schedules = DynamoScheduleRepository("SchedulesTable").user_schedules(user_id)
    return [post.post_id for s in schedules for post in post_records(user_id, s.local_date, s.agent_raw_output)]


def pending_owners() -> set[str]:
    owners = set()
    for platform, key in (("tiktok", "tiktokPosts"), ("x", "xPosts")):
        status, page = call_api("GET", f"/api/admin/{platform}/pending")
        assert status == 200, page
        owners |= {post["sourceUserId"] for post in page[key]}
    return owners


def record_ids(user_id: str, *dates: str) -> list[str]:
    return DynamoGenerationRecords("NudgeIdempotencyTable").record_ids(user_id, dates)


def stored_records(aws: Aws, ids: list[str]) -> list[dict[str, Any]]:
    found = [aws.dynamodb.get_item(TableName="NudgeIdempotencyTable", Key={"id": {"S": i}}).get("Item") for i in ids]
    return [item for item in found if item is not None]


def users_in_tokyo() -> list[str]:
    pages = DynamoUserRepository("UsersTable").pages_in_timezone("Asia/Tokyo")
    return [item["userId"] for page in pages for item in page]


def nothing_left_of(aws: Aws, user_id: str) -> None:
    """Every table of the template scanned: no item names the user, and no record computed from
    them (an in-progress record holds only its hashed id) is there."""
    assert items_mentioning(aws.dynamodb, user_id) == {}
    dates = [(date.fromisoformat(TODAY) + timedelta(days=offset)).isoformat() for offset in range(-5, 3)]
    assert stored_records(aws, record_ids(user_id, *dates)) == []


def test_given_a_users_nudge_data_when_they_delete_it_then_nothing_of_it_is_left_in_any_table(aws: Aws) -> None:
    with_two_days(LEAVER)
    with_two_days(STAYER)
    leaver_posts = post_ids(LEAVER)
    status, page = call_api("GET", "/api/admin/tiktok/pending", {"date": TODAY, "slot": "morning"})
    published = next(post["postId"] for post in page["tiktokPosts"] if post["sourceUserId"] == LEAVER)
    assert call_api("POST", f"/api/admin/tiktok/posts/{published}/posted")[0] == 200  # posted, no longer pending
    assert leaver_posts and pending_owners() == {LEAVER, STAYER}
    assert len(stored_records(aws, record_ids(LEAVER, TODAY, YESTERDAY))) == 2
    assert set(items_mentioning(aws.dynamodb, LEAVER)) == {"UsersTable", "SchedulesTable", "NudgeIdempotencyTable"}
    stayer_before = items_mentioning(aws.dynamodb, STAYER)

    status, body = delete()

    assert status == 200, body
    assert body == {"deleted": {"profiles": 1, "schedules": 2, "posts": len(leaver_posts), "generationRecords": 2}}
    nothing_left_of(aws, LEAVER)
    assert pending_owners() == {STAYER}  # the posting jobs are handed none of the leaver's posts
    assert call_api("POST", f"/api/admin/tiktok/posts/{published}/posted")[0] == 404
    assert users_in_tokyo() == [STAYER]  # out of TimezoneIndex: the scheduler queues them no more
    assert items_mentioning(aws.dynamodb, STAYER) == stayer_before
    assert item_count(aws.dynamodb, "NudgeIdempotencyTable") == 2  # the stayer's two days
    for method, path, query in (("GET", "/nudges/profile", None), ("GET", "/nudges/schedule", {"date": TODAY})):
        assert call_user_api(method, path, query=query, user=LEAVER)[0] == 404
    again = delete()
    assert again == (404, {"error": {"code": "PROFILE_NOT_FOUND", "message": again[1]["error"]["message"]}})


def test_given_a_job_queued_before_the_deletion_then_its_run_after_it_stores_and_keeps_nothing(aws: Aws) -> None:
    with_two_days(LEAVER)
    assert delete()[0] == 200

    assert generate(job(LEAVER, date.fromisoformat(TODAY).isoformat())) == {"batchItemFailures": []}

    nothing_left_of(aws, LEAVER)
    assert item_count(aws.dynamodb, "NudgeIdempotencyTable") == 0  # the skip released its record


def test_given_only_a_profile_then_the_deletion_deletes_it(aws: Aws) -> None:
    assert call_user_api("PUT", "/nudges/profile", PROFILE, user=LEAVER)[0] == 201
    assert delete() == (200, {"deleted": {"profiles": 1, "schedules": 0, "posts": 0, "generationRecords": 0}})
    nothing_left_of(aws, LEAVER)


def test_given_no_nudge_data_then_a_deletion_is_404_and_touches_no_one_else(aws: Aws) -> None:
    with_two_days(STAYER)
    before = items_mentioning(aws.dynamodb, STAYER)
    status, body = delete("never-had-one")
    assert status == 404 and body["error"]["code"] == "PROFILE_NOT_FOUND"
    assert items_mentioning(aws.dynamodb, STAYER) == before
    assert items_mentioning(aws.dynamodb, "never-had-one") == {}


def test_given_a_deletion_cut_short_then_nothing_is_readable_a_put_is_refused_and_a_second_delete_finishes(
    aws: Aws,
) -> None:
    with_two_days(LEAVER)
    posts = post_ids(LEAVER)

    with dynamo_fault("DeleteItem", THROTTLED) as fault:  # the profile item, the deletion's last step
        interrupted = delete()

    assert interrupted[0] == 503 and fault.fired >= 1
    assert pending_owners() == set()  # the posts went first
    for method, path, query in (("GET", "/nudges/profile", None), ("GET", "/nudges/schedule", {"date": TODAY})):
        assert call_user_api(method, path, query=query, user=LEAVER)[0] == 404
    assert call_user_api("PATCH", "/nudges/profile", {"nudgesEnabled": False}, user=LEAVER)[0] == 404
    status, body = call_user_api("PUT", "/nudges/profile", PROFILE, user=LEAVER)
    assert status == 409 and body["error"]["code"] == "PROFILE_BEING_DELETED"
    assert users_in_tokyo() == []
    assert generate(job(LEAVER)) == {"batchItemFailures": []}  # queued before: generates nothing
    assert items_mentioning(aws.dynamodb, LEAVER).keys() == {"UsersTable"}  # only the marked profile

    finished = delete()

    assert finished == (200, {"deleted": {"profiles": 1, "schedules": 0, "posts": 0, "generationRecords": 0}})
    assert posts and post_ids(LEAVER) == []
    nothing_left_of(aws, LEAVER)
    assert call_user_api("PUT", "/nudges/profile", PROFILE, user=LEAVER)[0] == 201  # a new start


def test_given_the_first_batch_deletion_fails_then_a_second_delete_deletes_everything(aws: Aws) -> None:
    with_two_days(LEAVER)
    with dynamo_fault("BatchWriteItem", THROTTLED):
        assert delete()[0] == 503
    assert pending_owners() == {LEAVER}  # not deleted yet: the client was told the deletion failed

    status, body = delete()

    assert status == 200 and body["deleted"]["schedules"] == 2 and body["deleted"]["generationRecords"] == 2
    nothing_left_of(aws, LEAVER)
    assert pending_owners() == set()


class ActsMidway:
    """Wraps a port of the running generator: ``action`` runs once, at the chosen moment."""

    def __init__(self, inner: Any, action: Any) -> None:
        self.inner, self.action, self.results = inner, action, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def act(self) -> None:
        if not self.results:
            self.results.append(self.action())


class DeletesDuringTheModelCall(ActsMidway):
    def complete(self, request: Any) -> Any:
        self.act()
        return self.inner.complete(request)


class DeletesRightAfterTheScheduleWrite(ActsMidway):
    def create(self, record: Any) -> bool:
        created = bool(self.inner.create(record))
        self.act()
        return created


def test_given_a_generation_under_way_when_the_user_deletes_then_it_stores_nothing_and_a_repeat_finishes(
    aws: Aws,
) -> None:
    """The run read the profile before the deletion marked it; its model call is under way."""
    with_two_days(LEAVER)
    ports = generator_app.dependencies()
    midway = DeletesDuringTheModelCall(ports.service._model, delete)
    ports.service._model = midway

    tomorrow = (date.fromisoformat(TODAY) + timedelta(days=1)).isoformat()
    assert generate(job(LEAVER, tomorrow)) == {"batchItemFailures": []}

    ((status, body),) = midway.results
    assert status == 409 and body["error"]["code"] == "GENERATION_IN_PROGRESS", body
    assert DynamoScheduleRepository("SchedulesTable").get(LEAVER, tomorrow) is None  # the write was refused
    assert stored_records(aws, record_ids(LEAVER, tomorrow)) == []  # and its record released
    assert pending_owners() == set()  # the posts of the earlier days went at once
    finished = delete()
    assert finished[0] == 200 and finished[1]["deleted"]["schedules"] == 2, finished
    nothing_left_of(aws, LEAVER)


def test_given_a_generation_that_stored_its_day_just_before_the_deletion_then_its_late_record_is_deleted_too(
    aws: Aws,
) -> None:
    """The run's schedule landed before the mark; Powertools writes its record's outcome after the
    deletion read the record (as in progress), so the deletion answers 409 and a repeat deletes it."""
    assert call_user_api("PUT", "/nudges/profile", PROFILE, user=LEAVER)[0] == 201
    ports = generator_app.dependencies()
    midway = DeletesRightAfterTheScheduleWrite(ports.service._schedules, delete)
    ports.service._schedules = midway

    assert generate(job(LEAVER)) == {"batchItemFailures": []}

    ((status, body),) = midway.results
    assert status == 409 and body["error"]["code"] == "GENERATION_IN_PROGRESS", body
    assert pending_owners() == set()
    (record,) = stored_records(aws, record_ids(LEAVER, TODAY))
    assert record["status"]["S"] == "COMPLETED"  # saved after the deletion read it
    finished = delete()
    assert finished == (200, {"deleted": {"profiles": 1, "schedules": 1, "posts": 0, "generationRecords": 1}})
    nothing_left_of(aws, LEAVER)


def test_given_the_record_of_a_run_that_crashed_then_the_deletion_takes_it_without_waiting(aws: Aws) -> None:
    assert call_user_api("PUT", "/nudges/profile", PROFILE, user=LEAVER)[0] == 201
    (record_id,) = record_ids(LEAVER, TODAY)
    now = time.time()
    aws.dynamodb.put_item(
        TableName="NudgeIdempotencyTable",
        Item={
            "id": {"S": record_id},
            "status": {"S": "INPROGRESS"},
            "expiration": {"N": str(int(now) + 3600)},
            "in_progress_expiration": {"N": str(int(now * 1000) - 1)},  # its Lambda's deadline has passed
        },
    )

    assert delete() == (200, {"deleted": {"profiles": 1, "schedules": 0, "posts": 0, "generationRecords": 1}})
    nothing_left_of(aws, LEAVER)


def test_a_generated_days_record_is_named_by_the_id_the_deletion_computes(aws: Aws) -> None:
    with_two_days(LEAVER)
    scanned = aws.dynamodb.scan(TableName="NudgeIdempotencyTable")["Items"]
    assert sorted(item["id"]["S"] for item in scanned) == record_ids(LEAVER, TODAY, YESTERDAY)
    assert all(item["id"]["S"].startswith("nudge-generation#") for item in scanned)


def test_given_no_identity_then_the_deletion_is_401_and_deletes_nothing(aws: Aws) -> None:
    with_two_days(LEAVER)
    before = items_mentioning(aws.dynamodb, LEAVER)
    status, body = call_user_api("DELETE", "/nudges/profile", user=None)
    assert status == 401 and body["error"]["code"] == "UNAUTHORIZED"
    assert items_mentioning(aws.dynamodb, LEAVER) == before


def test_given_a_skip_whose_record_cannot_be_released_then_the_job_still_succeeds(aws: Aws) -> None:
    """Powertools raises its own error when it cannot delete the record of an outcome not kept;
    the skip stands (the record is freed when its run's in-progress expiry passes)."""
    ports = generator_app.dependencies()
    with dynamo_fault("DeleteItem", THROTTLED, client=ports.persistence.client) as fault:
        assert generate(job("nobody-here")) == {"batchItemFailures": []}
    assert fault.fired >= 1
    (record,) = aws.dynamodb.scan(TableName="NudgeIdempotencyTable")["Items"]
    assert record["status"]["S"] == "INPROGRESS" and "in_progress_expiration" in record
