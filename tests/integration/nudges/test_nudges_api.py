"""NudgesApiFunction on moto: the app sets its user's profile (validated like a stored profile,
what the scheduler's TimezoneIndex and the generator then read) and reads the user's day of
nudges, own data only, without the agent's internals or the posts."""

from __future__ import annotations

from typing import Any

import pytest
from lambda_agents.storage.users import DynamoUserRepository

from .conftest import TODAY, Aws, call_user_api, generate

pytestmark = pytest.mark.integration
DATE = TODAY  # the generator makes only days around the user's today
PROFILE = {
    "problems": ["staying_up_late"],
    "preferredLanguage": "ja-JP",
    "timezone": "Asia/Tokyo",
    "nudgesEnabled": True,
    "appVersion": "2.4.0",
}


def users_in(timezone: str) -> list[str]:
    return [item["userId"] for page in DynamoUserRepository("UsersTable").pages_in_timezone(timezone) for item in page]


def stored_profile(aws: Aws, user_id: str = "user-1") -> dict[str, Any] | None:
    item: dict[str, Any] | None = aws.dynamodb.get_item(TableName="UsersTable", Key={"userId": {"S": user_id}}).get(
        "Item"
    )
    return item


def test_given_no_profile_when_the_app_puts_one_then_201_and_it_reads_back_normalised(aws: Aws) -> None:
    assert call_user_api("GET", "/nudges/profile") == (
        404,
        {"error": {"code": "PROFILE_NOT_FOUND", "message": "no nudge profile yet; PUT /nudges/profile creates it"}},
    )

    status, body = call_user_api("PUT", "/nudges/profile", PROFILE)

    assert status == 201, body
    assert body == {**PROFILE, "preferredLanguage": "ja"}
    assert call_user_api("GET", "/nudges/profile") == (200, body)
    again = call_user_api("PUT", "/nudges/profile", {**PROFILE, "problems": ["anxiety", "anxiety"]})
    assert again[0] == 200 and again[1]["problems"] == ["anxiety"]
    item = stored_profile(aws)
    assert item is not None and item["createdAt"]["S"] <= item["updatedAt"]["S"]


def test_a_profile_written_by_the_app_is_what_the_scheduler_index_and_the_generator_read(aws: Aws) -> None:
    assert call_user_api("PUT", "/nudges/profile", PROFILE)[0] == 201
    assert users_in("Asia/Tokyo") == ["user-1"]

    assert call_user_api("PATCH", "/nudges/profile", {"timezone": "Europe/Paris"})[0] == 200
    assert users_in("Asia/Tokyo") == [] and users_in("Europe/Paris") == ["user-1"]
    assert DynamoUserRepository("UsersTable").get("user-1").timezone == "Europe/Paris"  # type: ignore[union-attr]

    status, body = call_user_api("PATCH", "/nudges/profile", {"nudgesEnabled": False})
    assert status == 200 and body["nudgesEnabled"] is False and body["timezone"] == "Europe/Paris"
    assert users_in("Europe/Paris") == []  # the scheduler no longer queues the user


def test_given_the_days_nudges_then_the_app_reads_them_and_nothing_of_the_agents_internals(aws: Aws) -> None:
    assert call_user_api("PUT", "/nudges/profile", PROFILE)[0] == 201
    assert generate({"userId": "user-1", "localDate": DATE}) == {"batchItemFailures": []}

    status, body = call_user_api("GET", "/nudges/schedule", query={"date": DATE})

    assert status == 200, body
    assert (body["date"], body["timezone"], body["language"], body["count"]) == (DATE, "Asia/Tokyo", "ja", 6)
    assert set(body) == {"date", "timezone", "language", "generatedAt", "nudges", "count"}
    first = body["nudges"][0]
    assert set(first) == {"slotIndex", "localTime", "scheduledAt", "hook", "content", "tone"}
    assert (first["slotIndex"], first["localTime"], first["scheduledAt"]) == (0, "07:30", f"{DATE}T07:30:00+09:00")
    assert [n["slotIndex"] for n in body["nudges"]] == list(range(6))
    text = repr(body)
    assert "reasoning" not in text and "caption" not in text and "fallback" not in text.lower()


def test_given_a_day_stored_by_another_version_then_the_app_reads_what_reads_and_never_a_500(aws: Aws) -> None:
    assert call_user_api("PUT", "/nudges/profile", PROFILE)[0] == 201
    assert generate({"userId": "user-1", "localDate": DATE}) == {"batchItemFailures": []}
    aws.dynamodb.update_item(
        TableName="SchedulesTable",
        Key={"pk": {"S": "USER#user-1"}, "sk": {"S": f"SCHEDULE#{DATE}"}},
        UpdateExpression="SET agentRawOutput.appNudges[0].tone = :tone, #tz = :zone, slotTable[1].#at = :bad",
        ExpressionAttributeNames={"#tz": "timezone", "#at": "localTime"},
        ExpressionAttributeValues={":tone": {"S": "motivational"}, ":zone": {"S": "Mars/Olympus"}, ":bad": {"S": "7h"}},
    )

    status, body = call_user_api("GET", "/nudges/schedule", query={"date": DATE})

    assert status == 200, body
    assert body["timezone"] == "Asia/Tokyo" and body["nudges"][0]["tone"] == "motivational"
    assert body["nudges"][0]["scheduledAt"] == f"{DATE}T07:30:00+09:00"
    assert [n["slotIndex"] for n in body["nudges"]] == [0, 2, 3, 4, 5]  # slot 1's time no longer reads


def test_a_user_reads_only_their_own_day(aws: Aws) -> None:
    assert call_user_api("PUT", "/nudges/profile", PROFILE)[0] == 201
    generate({"userId": "user-1", "localDate": DATE})

    status, body = call_user_api("GET", "/nudges/schedule", query={"date": DATE}, user="user-2")

    assert status == 404 and body["error"]["code"] == "SCHEDULE_NOT_FOUND"
    status, body = call_user_api("GET", "/nudges/schedule", user="user-2")  # today needs a profile
    assert status == 404 and body["error"]["code"] == "PROFILE_NOT_FOUND"
    assert call_user_api("GET", "/nudges/profile", user="user-2")[0] == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**PROFILE, "timezone": "Mars/Olympus"}, "body.timezone"),
        ({**PROFILE, "timezone": "posix/Asia/Tokyo"}, "body.timezone"),
        ({**PROFILE, "problems": ["anxiety", "procrastinating"]}, "body.problems.1"),
        ({**PROFILE, "preferredLanguage": "fr"}, "body.preferredLanguage"),
        ({**PROFILE, "nudgesEnabled": "false"}, "body.nudgesEnabled"),
        ({key: value for key, value in PROFILE.items() if key != "timezone"}, "body.timezone"),
        ({**PROFILE, "userId": "someone-else"}, "body.userId"),
        ({**PROFILE, "appVersion": "2.4 beta"}, "body.appVersion"),
    ],
)
def test_given_an_invalid_profile_then_400_names_the_field_and_nothing_is_stored(
    aws: Aws, body: dict[str, Any], field: str
) -> None:
    status, answer = call_user_api("PUT", "/nudges/profile", body)
    assert status == 400, answer
    assert answer["error"]["code"] == "VALIDATION_ERROR"
    assert field in [problem["field"] for problem in answer["error"]["details"]]
    assert stored_profile(aws) is None


def test_an_unknown_problem_is_named_with_the_known_ones(aws: Aws) -> None:
    status, answer = call_user_api("PUT", "/nudges/profile", {**PROFILE, "problems": ["smoking", "gaming"]})
    assert status == 400
    assert "'gaming'" in answer["error"]["message"] and "staying_up_late" in answer["error"]["message"]


@pytest.mark.parametrize("body", [{}, {"timezone": None}, {"timezone": "Nowhere/City"}, {"nudgesEnabled": 1}])
def test_given_an_invalid_patch_then_400_and_the_profile_is_unchanged(aws: Aws, body: dict[str, Any]) -> None:
    assert call_user_api("PUT", "/nudges/profile", PROFILE)[0] == 201
    before = stored_profile(aws)
    assert call_user_api("PATCH", "/nudges/profile", body)[0] == 400
    assert stored_profile(aws) == before


def test_given_no_profile_then_a_patch_is_404_and_stores_nothing(aws: Aws) -> None:
    status, body = call_user_api("PATCH", "/nudges/profile", {"timezone": "UTC"})
    assert status == 404 and body["error"]["code"] == "PROFILE_NOT_FOUND"
    assert stored_profile(aws) is None


@pytest.mark.parametrize("day", ["2026-02-30", "2026-2-2", "tomorrow", "２０２６-０２-０２"])
def test_given_a_date_that_is_not_a_calendar_date_then_400_names_it(aws: Aws, day: str) -> None:
    status, body = call_user_api("GET", "/nudges/schedule", query={"date": day})
    assert status == 400 and body["error"]["details"][0]["field"] == "query.date"


def test_given_no_identity_then_every_route_answers_401(aws: Aws) -> None:
    for method, path, body in (
        ("GET", "/nudges/profile", None),
        ("PUT", "/nudges/profile", PROFILE),
        ("PATCH", "/nudges/profile", {"timezone": "UTC"}),
        ("GET", "/nudges/schedule", None),
    ):
        status, answer = call_user_api(method, path, body, user=None)
        assert status == 401 and answer["error"]["code"] == "UNAUTHORIZED", path
    assert stored_profile(aws) is None
