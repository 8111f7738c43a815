"""The pending filter (docs/nudges.md#never-a-fallback-post) on the real handler and moto: enabled=false
excluded, enabled=true
and legacy (no ``enabled``) included; publishing is conditional and idempotent; admin auth; 400s."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from lambda_agents.nudges.records import ScheduleRecord
from lambda_agents.storage.nudges import DynamoScheduleRepository, schedule_key
from lambda_agents.storage.posts_backfill import backfill_legacy_posts

from .conftest import Aws, call_api

pytestmark = pytest.mark.integration
DATE = "2026-02-02"


def posts(enabled: bool | None, morning_only: bool = False) -> dict[str, Any]:
    def flag() -> dict[str, Any]:
        return {} if enabled is None else {"enabled": enabled}

    slots = ["morning"] if morning_only else ["morning", "evening"]
    return {
        "tiktokPosts": [
            {"slot": s, "caption": f"cap {s}", "hashtags": ["#a"], "tone": "gentle", "reasoning": "r", **flag()}
            for s in slots
        ],
        "xPosts": [{"slot": s, "text": f"x {s}", "reasoning": "r", **flag()} for s in slots],
    }


def store(user_id: str, enabled: bool | None, local_date: str = DATE) -> None:
    record = ScheduleRecord(
        user_id,
        local_date,
        "Asia/Tokyo",
        "en",
        "1.0",
        [],
        {"appNudges": [], **posts(enabled)},
        False,
        None,
        [],
        {},
        "m",
        datetime(2026, 2, 1, tzinfo=UTC).isoformat(),
    )
    assert DynamoScheduleRepository("SchedulesTable").create(record)


def store_legacy(user_id: str, output: dict[str, Any]) -> None:
    """A schedule written before post records and ``enabled`` existed."""
    from lambda_agents.storage.dynamodb import table

    table("SchedulesTable").put_item(
        Item={**schedule_key(user_id, DATE), "userId": user_id, "localDate": DATE, "agentRawOutput": output}
    )


def pending(platform: str, **query: str) -> list[dict[str, Any]]:
    status, body = call_api("GET", f"/api/admin/{platform}/pending", query or None)
    assert status == 200, body
    return body["tiktokPosts" if platform == "tiktok" else "xPosts"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("platform", ["tiktok", "x"])
def test_enabled_false_posts_are_excluded_and_enabled_true_included(aws: Aws, platform: str) -> None:
    store("on", True)
    store("off", False)
    got = pending(platform)
    assert sorted((p["sourceUserId"], p["slot"]) for p in got) == [("on", "evening"), ("on", "morning")]


@pytest.mark.parametrize("platform", ["tiktok", "x"])
def test_legacy_posts_without_enabled_are_included_after_the_backfill(aws: Aws, platform: str) -> None:
    store_legacy("legacy", posts(None, morning_only=True))
    store_legacy("legacy-off", posts(False, morning_only=True))
    assert pending(platform) == []  # not indexed yet
    assert backfill_legacy_posts("SchedulesTable").posts_written == 4
    assert backfill_legacy_posts("SchedulesTable").posts_written == 0  # idempotent
    got = pending(platform)
    assert [(p["sourceUserId"], p["slot"], p["enabled"]) for p in got] == [("legacy", "morning", True)]


def test_new_post_records_without_enabled_count_as_enabled(aws: Aws) -> None:
    store("no-flag", None)
    assert len(pending("x")) == 2


def test_tiktok_answer_has_the_spec_fields(aws: Aws) -> None:
    store("on", True)
    morning = pending("tiktok", slot="morning", date=DATE)
    assert len(morning) == 1
    assert {k: morning[0][k] for k in ("caption", "hashtags", "tone", "reasoning", "slot")} == {
        "caption": "cap morning",
        "hashtags": ["#a"],
        "tone": "gentle",
        "reasoning": "r",
        "slot": "morning",
    }
    assert morning[0]["scheduleId"] == f"on#{DATE}" and morning[0]["postId"].startswith("tiktok-")


def test_slot_and_date_filter(aws: Aws) -> None:
    store("a", True)
    store("a", True, local_date="2026-02-03")
    assert len(pending("x")) == 4
    assert len(pending("x", date="2026-02-03")) == 2
    assert [p["slot"] for p in pending("x", slot="evening")] == ["evening", "evening"]
    assert [(p["date"], p["slot"]) for p in pending("x", slot="evening", date=DATE)] == [(DATE, "evening")]


def test_pages_follow_next_token(aws: Aws) -> None:
    for index in range(3):
        store(f"user-{index}", True)
    status, first = call_api("GET", "/api/admin/tiktok/pending", {"limit": "4"})
    assert status == 200 and first["count"] == 4 and first["nextToken"]
    status, second = call_api("GET", "/api/admin/tiktok/pending", {"limit": "4", "nextToken": first["nextToken"]})
    assert status == 200 and second["count"] == 2
    assert not {p["postId"] for p in first["tiktokPosts"]} & {p["postId"] for p in second["tiktokPosts"]}


def test_marking_a_post_published_is_idempotent_and_it_is_never_pending_again(aws: Aws) -> None:
    store("on", True)
    post_id = pending("tiktok", slot="morning")[0]["postId"]
    status, body = call_api("POST", f"/api/admin/tiktok/posts/{post_id}/posted")
    assert (status, body["alreadyPosted"]) == (200, False)
    assert [p["slot"] for p in pending("tiktok")] == ["evening"]
    status, body = call_api("POST", f"/api/admin/tiktok/posts/{post_id}/posted")
    assert (status, body["alreadyPosted"]) == (200, True)
    assert len(pending("tiktok")) == 1


def test_publishing_a_disabled_fallback_post_is_a_conflict_unknown_posts_are_404_and_foreign_ids_400(
    aws: Aws,
) -> None:
    store("off", False)
    from lambda_agents.nudges.records import post_id

    disabled = post_id("x", "off", DATE, "morning")
    assert call_api("POST", f"/api/admin/x/posts/{disabled}/posted")[0] == 409
    assert call_api("POST", f"/api/admin/tiktok/posts/{disabled}/posted")[0] == 400  # not a TikTok post id
    assert call_api("POST", "/api/admin/x/posts/x-doesnotexist/posted")[0] == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api/admin/tiktok/pending"), ("GET", "/api/admin/x/pending"), ("POST", "/api/admin/x/posts/x-1/posted")],
)
def test_admin_routes_answer_401_without_an_iam_caller(aws: Aws, method: str, path: str) -> None:
    status, body = call_api(method, path, admin=None)
    assert status == 401 and body["error"]["code"] == "UNAUTHORIZED"


@pytest.mark.parametrize(
    ("query", "parameter", "codes"),
    [
        ({"slot": "noon"}, "slot", {"INVALID_QUERY", "VALIDATION_ERROR"}),
        ({"date": "2026-02-30"}, "date", {"INVALID_QUERY", "VALIDATION_ERROR"}),
        ({"limit": "500"}, "limit", {"INVALID_QUERY", "VALIDATION_ERROR"}),
        ({"nextToken": "bm90LWEtdG9rZW4="}, "nextToken", {"INVALID_CURSOR"}),  # as every listing's cursor
    ],
)
def test_malformed_query_values_get_a_400_naming_the_parameter(
    aws: Aws, query: dict[str, str], parameter: str, codes: set[str]
) -> None:
    status, body = call_api("GET", "/api/admin/x/pending", query)
    assert status == 400
    assert parameter in body["error"]["message"]
    assert body["error"]["code"] in codes


def test_given_two_legacy_posts_with_the_same_slot_then_the_backfill_keeps_both_pending(aws: Aws) -> None:
    output = posts(None, morning_only=True)
    output["xPosts"].append({"slot": "morning", "text": "second morning post", "reasoning": "r"})
    store_legacy("twice", output)
    assert backfill_legacy_posts("SchedulesTable").posts_written == 3
    assert sorted(p["text"] for p in pending("x")) == ["second morning post", "x morning"]


def test_given_many_legacy_schedules_then_bounded_runs_resume_until_every_post_is_indexed_once(aws: Aws) -> None:
    for n in range(7):
        store_legacy(f"user-{n}", posts(None, morning_only=True))
    store("new", True)  # already indexed: its posts stay as they are
    runs = []
    token = None
    while True:
        report = backfill_legacy_posts("SchedulesTable", resume_token=token, max_pages=1, page_size=3)
        runs.append(report)
        token = report.next_token
        if token is None:
            break
    assert len(runs) > 2 and all(r.items_read <= 3 for r in runs)
    assert sum(r.posts_written for r in runs) == 14
    again = backfill_legacy_posts("SchedulesTable")  # a repeated run: nothing left, nothing written twice
    assert (again.schedules, again.posts_written) == (0, 0)
    assert len(pending("tiktok")) == 7 + 2


def test_the_documented_command_runs_the_backfill_to_the_end(aws: Aws) -> None:
    from devtools.backfill_posts import main

    for n in range(3):
        store_legacy(f"cli-{n}", posts(None))
    assert main(["--table", "SchedulesTable", "--pages-per-run", "1"]) == 0
    assert len(pending("x")) == 6
    assert main(["--table", "SchedulesTable", "--resume", "not-a-token"]) == 2
